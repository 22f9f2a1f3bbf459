/**
 * OAuth 2.0 access tokens of the connections that hold client credentials (SPEC §14): one per company,
 * cached in this process until shortly before it expires, fetched once however many calls want it at the
 * same moment (single-flight), and forgotten after a 401 so that the next call gets a new one.
 *
 * Per process, not shared through Redis (docs/decisions.md, "OAuth access tokens"): an access token is a
 * secret that would otherwise sit in Redis, an `api` process calls the marketplace while Redis is down,
 * and a token per process and lifetime (a handful an hour per company) is no load on a token endpoint.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { ApiConnection, OAuthClientCredentials } from './connection.js';

/** A token as the token endpoint answered it. */
export interface AccessToken {
  value: string;
  /** Seconds it lives from when it was answered. */
  lifetimeS: number;
}

/** A cached token is renewed this long before it expires, or a tenth of its lifetime when that is shorter. */
const RENEW_MARGIN_MS = 60_000;
/** More companies than this with cached tokens, and the cache starts afresh (each then asks once more). */
const MAX_CACHED = 10_000;

export type OAuthConnection = ApiConnection & { oauth: OAuthClientCredentials };

/** The cache's key: the company, or the client credentials for a connection that is not a stored company's. */
const keyOf = (conn: OAuthConnection): string => conn.companyId ?? `${conn.oauth.tokenUrl} ${conn.oauth.clientId}`;

/** What the token was got with: a token of replaced credentials is never used. The secret only as a digest. */
const fingerprintOf = (conn: OAuthConnection): string =>
  [conn.revision ?? 0, conn.oauth.tokenUrl, conn.oauth.clientId, hash('sha256', conn.oauth.clientSecret, 'base64')].join(' ');

export class AccessTokens {
  /** Each entry is renewed at its own renewAt (by the injected clock); the cache only bounds how many there are. */
  private readonly cached = new LRUCache<string, { fingerprint: string; value: string; renewAt: number }>({ max: MAX_CACHED });
  private readonly pending = new Map<string, { fingerprint: string; promise: Promise<string> }>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * The company's current token: the cached one while it is fresh, else the one `request` gets, which every
   * caller asking meanwhile shares. A failed request is not cached: the next caller asks again.
   */
  async get(conn: OAuthConnection, request: () => Promise<AccessToken>): Promise<string> {
    const key = keyOf(conn);
    const fingerprint = fingerprintOf(conn);
    const hit = this.cached.get(key);
    if (hit && hit.fingerprint === fingerprint && hit.renewAt > this.now()) return hit.value;
    const inFlight = this.pending.get(key);
    if (inFlight && inFlight.fingerprint === fingerprint) return inFlight.promise;

    const promise = request().then((token) => {
      const lifetimeMs = token.lifetimeS * 1000;
      this.cached.set(key, { fingerprint, value: token.value, renewAt: this.now() + lifetimeMs - Math.min(RENEW_MARGIN_MS, lifetimeMs / 10) });
      return token.value;
    });
    const settled = () => {
      if (this.pending.get(key)?.promise === promise) this.pending.delete(key);
    };
    promise.then(settled, settled);
    this.pending.set(key, { fingerprint, promise });
    return promise;
  }

  /**
   * The marketplace answered 401 to `value`: it is forgotten, unless a newer token already replaced it (ten
   * calls refused at once cost one new token, not ten).
   */
  invalidate(conn: OAuthConnection, value: string): void {
    const key = keyOf(conn);
    if (this.cached.get(key)?.value === value) this.cached.delete(key);
  }
}
