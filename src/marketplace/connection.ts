/**
 * How Skyhook authenticates its calls to the marketplace (SPEC §14), per company, in one place: every
 * call's headers (admin calls, leads, quotes, webhook settings, the worker's href fetches) and the OAuth 2.0
 * token request's come from here. The simulator checks requests against the same names.
 *
 * Two profiles:
 *  - `bearer` (the default, the seed's reading, SPEC §6): `Authorization: Bearer <apiToken>`;
 *  - `avinode` (the real marketplace's documented headers): `Authorization: Bearer <authToken>`,
 *    `X-Avinode-ApiToken: <apiToken>`, `X-Avinode-SentTimestamp: <now>`, `X-Avinode-Product` and, when
 *    configured, `X-Avinode-ApiVersion`.
 * Either profile may take its bearer token from OAuth 2.0 client credentials instead (marketplace/oauth2.ts).
 */
import { createRequire } from 'node:module';

export const CONNECTION_PROFILES = ['bearer', 'avinode'] as const;
type ConnectionProfile = (typeof CONNECTION_PROFILES)[number];

/** Header names, as the marketplaces spell them (HTTP header names are case-insensitive). */
export const HEADERS = {
  authorization: 'Authorization',
  avinodeApiToken: 'X-Avinode-ApiToken',
  avinodeSentTimestamp: 'X-Avinode-SentTimestamp',
  avinodeProduct: 'X-Avinode-Product',
  avinodeApiVersion: 'X-Avinode-ApiVersion',
  avinodeActAsAccount: 'X-Avinode-ActAsAccount',
  /** (assumed, the seed's name) The act-as header of the bearer profile. */
  serviceActAsAccount: 'X-Service-ActAsAccount',
} as const;

/** (assumed) How the bearer profile sends a company's API token on every call: the seed's reading. */
export const authorizationHeader = (token: string): string => `Bearer ${token}`;

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
/** `X-Avinode-Product` when the connection names none: this product, by name and version. */
export const DEFAULT_PRODUCT = `Skyhook ${version}`;

/** OAuth 2.0 client credentials (RFC 6749 §4.4): Skyhook gets the bearer token from `tokenUrl`. */
export interface OAuthClientCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
}

/** A company's connection as a call needs it: decrypted, never logged, never returned by the admin API. */
export interface ApiConnection {
  baseUrl: string;
  /** The OAuth token cache is per company; absent for a connection that is not a stored company's. */
  companyId?: string;
  /** The company's credentials revision: a cached OAuth token of older credentials is not used. */
  revision?: number;
  profile: ConnectionProfile;
  /** bearer: the Authorization token (absent with OAuth); avinode: X-Avinode-ApiToken. */
  apiToken?: string;
  /** avinode: the fixed Authorization token (absent with OAuth). */
  authToken?: string;
  product?: string;
  apiVersion?: string;
  oauth?: OAuthClientCredentials;
}

/** The bearer token a connection sends when it is fixed (not from OAuth); undefined when OAuth gives it. */
export function fixedBearerToken(conn: ApiConnection): string | undefined {
  if (conn.oauth) return undefined;
  return conn.profile === 'avinode' ? conn.authToken : conn.apiToken;
}

/** The headers every avinode request carries besides Authorization, the token request's included. */
function avinodeHeaders(conn: ApiConnection, now: Date): Record<string, string> {
  return {
    ...(conn.apiToken !== undefined ? { [HEADERS.avinodeApiToken]: conn.apiToken } : {}),
    [HEADERS.avinodeSentTimestamp]: now.toISOString(),
    [HEADERS.avinodeProduct]: conn.product ?? DEFAULT_PRODUCT,
    ...(conn.apiVersion !== undefined ? { [HEADERS.avinodeApiVersion]: conn.apiVersion } : {}),
  };
}

/**
 * The authentication headers of one call, built afresh for each request (a retry gets a new sent
 * timestamp). `bearer` is the fixed token or the OAuth access token.
 */
export function callHeaders(conn: ApiConnection, bearer: string, now: Date = new Date()): Record<string, string> {
  const authorization = { [HEADERS.authorization]: authorizationHeader(bearer) };
  return conn.profile === 'avinode' ? { ...authorization, ...avinodeHeaders(conn, now) } : authorization;
}

/** The headers of an OAuth token request besides its form: the avinode profile's identify the application there too. */
export function tokenRequestHeaders(conn: ApiConnection, now: Date = new Date()): Record<string, string> {
  return conn.profile === 'avinode' ? avinodeHeaders(conn, now) : {};
}

/** The header that names the user a call acts as (a quote's `actAsAccount`). */
export const actAsAccountHeader = (profile: ConnectionProfile): string =>
  profile === 'avinode' ? HEADERS.avinodeActAsAccount : HEADERS.serviceActAsAccount;

/**
 * (assumed) How far the simulator lets `X-Avinode-SentTimestamp` stray from its clock, both ways; the real
 * marketplace does not publish its tolerance.
 */
export const SENT_TIMESTAMP_SKEW_MS = 5 * 60_000;
