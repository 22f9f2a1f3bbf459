/**
 * Small fixtures for receiver tests: companies and webhooks written straight into a test database
 * (secrets stored the way Skyhook stores them), the two Authorization headers the marketplace sends,
 * a notification body, one POST to the receiver, and a row count. The simulator has its own signer
 * (src/simulator/sign.ts); this one exposes the knobs tests need (method, timestamp, token, realm).
 */
import { createHash, createHmac } from 'node:crypto';
import { count, eq } from 'drizzle-orm';
import OAuth from 'oauth-1.0a';
import { connectDatabase, type Database, type DbHandle } from '../../src/db/client.js';
import { companies, notifications, webhooks, type NotificationRow } from '../../src/db/schema/index.js';
import { encryptSecret, randomToken, sha256 } from '../../src/lib/crypto.js';

/** A direct connection to a test database, for seeding and for reading what the receiver stored. */
export const connectFixtures = (databaseUrl: string): DbHandle => connectDatabase(databaseUrl, { max: 4, applicationName: 'skyhook-test-fixtures' });

export interface SeededCompany {
  id: string;
  apiBaseUrl: string;
}

export async function seedCompany(db: Database, secretKey: Buffer, opts: { name?: string; apiBaseUrl?: string; apiToken?: string } = {}): Promise<SeededCompany> {
  const apiBaseUrl = opts.apiBaseUrl ?? 'http://127.0.0.1:9/api';
  const [row] = await db
    .insert(companies)
    .values({
      name: opts.name ?? `company-${randomToken(6)}`,
      apiBaseUrl,
      apiTokenEncrypted: encryptSecret(secretKey, opts.apiToken ?? randomToken(24)),
    })
    .returning({ id: companies.id });
  return { id: row!.id, apiBaseUrl };
}

export interface SeededWebhook {
  id: string;
  companyId: string;
  authType: 'BASIC' | 'OAUTH';
  endpointKey: string;
  clientIdentifier: string;
  secret: string;
  /** Where the marketplace posts: `<publicBaseUrl>/hooks/<endpointKey>`, or `<publicBaseUrl>/hooks` when shared. */
  targetURI: string;
  /** The path part of targetURI. */
  path: string;
}

export interface SeedWebhookOptions {
  companyId: string;
  authType: 'BASIC' | 'OAUTH';
  /** PUBLIC_BASE_URL of the Skyhook that receives. */
  publicBaseUrl: string;
  /** Reached at the shared `/hooks` instead of its own `/hooks/<endpointKey>`. */
  shared?: boolean;
  active?: boolean;
  secret?: string;
  previousSecret?: string;
  previousSecretExpiresAt?: Date;
}

/** A webhook row with fresh random endpoint key and clientIdentifier (the receiver caches lookups, misses too). */
export async function seedWebhook(db: Database, secretKey: Buffer, opts: SeedWebhookOptions): Promise<SeededWebhook> {
  const endpointKey = randomToken(24);
  const clientIdentifier = `skh_${randomToken(18)}`;
  const secret = opts.secret ?? randomToken(32);
  const path = opts.shared ? '/hooks' : `/hooks/${endpointKey}`;
  const targetURI = `${opts.publicBaseUrl}${path}`;
  const basic = opts.authType === 'BASIC';
  const previous = opts.previousSecret;
  const [row] = await db
    .insert(webhooks)
    .values({
      companyId: opts.companyId,
      remoteId: `remote-${randomToken(8)}`,
      endpointKey,
      targetUri: targetURI,
      clientIdentifier,
      authType: opts.authType,
      secretSha256: basic ? sha256(secret) : null,
      secretEncrypted: basic ? null : encryptSecret(secretKey, secret),
      previousSecretSha256: previous !== undefined && basic ? sha256(previous) : null,
      previousSecretEncrypted: previous !== undefined && !basic ? encryptSecret(secretKey, previous) : null,
      previousSecretExpiresAt: opts.previousSecretExpiresAt ?? null,
      eventTypes: ['TripRequest'],
      displayName: 'test webhook',
      active: opts.active ?? true,
    })
    .returning({ id: webhooks.id });
  return { id: row!.id, companyId: opts.companyId, authType: opts.authType, endpointKey, clientIdentifier, secret, targetURI, path };
}

export const basicAuthorization = (clientIdentifier: string, secret: string): string =>
  `Basic ${Buffer.from(`${clientIdentifier}:${secret}`).toString('base64')}`;

export interface OAuthSigning {
  clientIdentifier: string;
  secret: string;
  /** The URL signed (the targetURI, query included). */
  url: string;
  rawBody: string;
  method?: string;
  signatureMethod?: 'HMAC-SHA1' | 'HMAC-SHA256';
  /** The oauth_body_hash digest; the signature method's algorithm when omitted (oauthlib always sends sha1). */
  bodyHashAlgorithm?: 'sha1' | 'sha256';
  includeBodyHash?: boolean;
  /** Unix seconds; now when omitted. */
  timestamp?: number;
  token?: { key: string; secret: string };
  realm?: string;
}

/**
 * `Authorization: OAuth ...` as the marketplace simulator makes it: oauth-1.0a, consumer
 * {key: clientIdentifier, secret}, HMAC signature in base64, and oauth_body_hash as a plain digest of the
 * raw body with the signature method's algorithm, or with `bodyHashAlgorithm` when given.
 */
export function oauthAuthorization(s: OAuthSigning): string {
  const algorithm = s.signatureMethod === 'HMAC-SHA256' ? 'sha256' : 'sha1';
  const oauth = new OAuth({
    consumer: { key: s.clientIdentifier, secret: s.secret },
    signature_method: s.signatureMethod ?? 'HMAC-SHA1',
    hash_function: (base, key) => createHmac(algorithm, key).update(base).digest('base64'),
    body_hash_function: (body) => createHash(s.bodyHashAlgorithm ?? algorithm).update(body).digest('base64'),
    ...(s.realm !== undefined ? { realm: s.realm } : {}),
  });
  if (s.timestamp !== undefined) {
    const timestamp = s.timestamp;
    oauth.getTimeStamp = () => timestamp;
  }
  const signed = oauth.authorize({ url: s.url, method: s.method ?? 'POST', data: s.rawBody, includeBodyHash: s.includeBodyHash ?? true }, s.token);
  return oauth.toHeader(signed).Authorization;
}

/** A valid notification for a company whose API lives at apiBaseUrl; `extra` is merged last. */
export function notificationBody(apiBaseUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const id = `rfq-${randomToken(9)}`;
  return { id, type: 'rfqs', href: `${apiBaseUrl.replace(/\/+$/, '')}/rfqs/${id}`, ...extra };
}

/** A receiver's JSON answer: `{status, id}` on success, a problem (RFC 9457) otherwise. */
export interface AnswerBody {
  [key: string]: unknown;
  errors?: { field: string; message: string }[];
}

export interface ReceiverAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body, when it is JSON. */
  json: AnswerBody | undefined;
}

/** One POST to the receiver. `contentType: null` sends none. */
export async function postNotification(
  baseUrl: string,
  path: string,
  opts: { authorization?: string; body: string | Buffer; contentType?: string | null },
): Promise<ReceiverAnswer> {
  const headers: Record<string, string> = {};
  if (opts.authorization !== undefined) headers.authorization = opts.authorization;
  const contentType = opts.contentType === undefined ? 'application/json' : opts.contentType;
  if (contentType !== null) headers['content-type'] = contentType;
  // Bytes, so fetch adds no Content-Type of its own.
  const body = typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body;
  return readAnswer(await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body }));
}

/** The body as JSON when it is JSON (undefined otherwise). */
export function parseAnswerBody(text: string): AnswerBody | undefined {
  try {
    return text ? (JSON.parse(text) as AnswerBody) : undefined;
  } catch {
    return undefined;
  }
}

/** A fetch Response read whole: status, headers, text and (when JSON) the parsed body. */
export async function readAnswer(res: Response): Promise<ReceiverAnswer> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parseAnswerBody(text) };
}

/** Notification rows stored, for one webhook or in the whole (per-file) database. */
export async function countNotifications(db: Database, webhookId?: string): Promise<number> {
  const query = db.select({ n: count() }).from(notifications);
  const [row] = await (webhookId ? query.where(eq(notifications.webhookId, webhookId)) : query);
  return row!.n;
}

export async function notificationRows(db: Database, webhookId: string): Promise<NotificationRow[]> {
  return db.select().from(notifications).where(eq(notifications.webhookId, webhookId)).orderBy(notifications.id);
}
