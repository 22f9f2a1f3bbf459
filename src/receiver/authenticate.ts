/**
 * Who sent a notification (SPEC §4), before its body is read:
 * - attribution: which webhook (hence which company) it belongs to, by the path's endpoint key or by the
 *   clientIdentifier in its credentials. Lookups are cached briefly in memory (least recently used out
 *   first, unknown keys apart): the hot path must not pay a query and a decryption per request, and a flood
 *   of unknown keys must not push the known webhooks out (SPEC §10). Changes made through the admin API
 *   invalidate the cache here and, through NOTIFY skyhook_webhooks, in every process;
 * - the Basic secret (current or previous, compared in constant time), or the OAuth 1.0a signature and
 *   timestamp (oauth1.ts) and its nonce, accepted once per clientIdentifier (NonceStore, in Redis).
 */
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import { listen } from '../db/listen.js';
import { companies, webhooks } from '../db/schema/index.js';
import { Batcher } from '../lib/batcher.js';
import { constantTimeEqual, decryptSecret, sha256 } from '../lib/crypto.js';
import type { ErrorReporter } from '../lib/error-reporter.js';
import { storableText } from '../lib/json-body.js';
import { Problem, serviceUnavailable } from '../lib/problem.js';
import { type RedisClient } from '../lib/redis/connection.js';
import { reserveKeys } from '../lib/redis/scripts.js';
import { bodyHashMatches, readOAuthHeader, verifyOAuthHeader, type OAuthHeaderCheck } from './oauth1.js';

export const WEBHOOK_CHANGES_CHANNEL = 'skyhook_webhooks';

export interface WebhookCredentials {
  webhookId: string;
  companyId: string;
  clientIdentifier: string;
  endpointKey: string;
  authType: 'BASIC' | 'OAUTH';
  active: boolean;
  apiBaseUrl: URL;
  /** Further base URLs the company's token may go to (SPEC §14 `connection.baseUrls`): an href under none of these nor the API's is stored, never fetched. */
  extraBaseUrls: URL[];
  /** BASIC: SHA-256 of the current secret and of the previous one while its grace period lasts. */
  secretSha256: Buffer | null;
  previousSecretSha256: Buffer | null;
  /** OAUTH: the secrets themselves (a signature cannot be checked against a hash). */
  secret: string | null;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
}

const FOUND_TTL_MS = 30_000;
const FOUND_MAX = 50_000;
/** Unknown keys are remembered briefly, and in a cache of their own: a flood of random keys churns only this one. */
const MISSING_TTL_MS = 2_000;
const MISSING_MAX = 10_000;

/** Which webhook a request names: by the path's endpoint key, or by the clientIdentifier in its credentials. */
export type WebhookKey = { endpointKey: string } | { clientIdentifier: string };
type LoadWebhook = (key: WebhookKey) => Promise<WebhookCredentials | null>;

export class WebhookDirectory {
  // Least recently used first out, each entry for its TTL: a known webhook stays while it is in use.
  private readonly found = new LRUCache<string, WebhookCredentials>({ max: FOUND_MAX, ttl: FOUND_TTL_MS });
  private readonly missing = new LRUCache<string, true>({ max: MISSING_MAX, ttl: MISSING_TTL_MS });

  constructor(private readonly load: LoadWebhook) {}

  byEndpointKey(endpointKey: string): Promise<WebhookCredentials | null> {
    return this.lookup(`k:${endpointKey}`, endpointKey, { endpointKey });
  }

  byClientIdentifier(clientIdentifier: string): Promise<WebhookCredentials | null> {
    return this.lookup(`c:${clientIdentifier}`, clientIdentifier, { clientIdentifier });
  }

  invalidate(): void {
    this.found.clear();
    this.missing.clear();
  }

  private async lookup(cacheKey: string, key: string, by: WebhookKey): Promise<WebhookCredentials | null> {
    // No webhook has such a key, and the database would refuse it as a parameter: unknown, like any other.
    if (!storableText(key)) return null;
    const hit = this.found.get(cacheKey);
    if (hit) return hit;
    if (this.missing.has(cacheKey)) return null;
    const value = await this.load(by);
    if (value) this.found.set(cacheKey, value);
    else this.missing.set(cacheKey, true);
    return value;
  }
}

/** Reads a webhook's credentials from the database, its company's API base URL with it, secrets decrypted. */
export function loadWebhookFrom(db: Database, secretKey: Buffer): LoadWebhook {
  return async (key) => {
    const where = 'endpointKey' in key ? eq(webhooks.endpointKey, key.endpointKey) : eq(webhooks.clientIdentifier, key.clientIdentifier);
    const [row] = await db
      .select({ webhook: webhooks, apiBaseUrl: companies.apiBaseUrl, extraBaseUrls: companies.extraBaseUrls })
      .from(webhooks)
      .innerJoin(companies, eq(companies.id, webhooks.companyId))
      .where(where)
      .limit(1);
    if (!row) return null;
    const w = row.webhook;
    const open = (sealed: string | null) => (sealed ? decryptSecret(secretKey, sealed) : null);
    return {
      webhookId: w.id,
      companyId: w.companyId,
      clientIdentifier: w.clientIdentifier,
      endpointKey: w.endpointKey,
      authType: w.authType,
      active: w.active,
      apiBaseUrl: new URL(row.apiBaseUrl),
      extraBaseUrls: row.extraBaseUrls.map((u) => new URL(u)),
      secretSha256: w.secretSha256,
      previousSecretSha256: w.previousSecretSha256,
      secret: open(w.secretEncrypted),
      previousSecret: open(w.previousSecretEncrypted),
      previousSecretExpiresAt: w.previousSecretExpiresAt?.getTime() ?? null,
    };
  };
}

/** The previous secret counts only inside its rotation grace period. */
const previousSecretValid = (w: WebhookCredentials): boolean => w.previousSecretExpiresAt !== null && w.previousSecretExpiresAt > Date.now();

/**
 * Keeps every process's cache honest: a change made through any process's admin API sends
 * NOTIFY skyhook_webhooks, and each listener drops its cache. The cache is dropped too when the
 * listener loses its connection (db/listen.ts tells every loss, a silent one within its liveness bound)
 * and when it listens again (a change may have been missed between); the short TTL bounds what is
 * cached during the gap.
 */
export function listenForWebhookChanges(databaseUrl: string, directory: WebhookDirectory, onError: (err: unknown) => void): { stop: () => Promise<void> } {
  return listen(databaseUrl, [WEBHOOK_CHANGES_CHANNEL], {
    onNotification: () => directory.invalidate(),
    onConnected: () => directory.invalidate(),
    onError: (err) => {
      directory.invalidate();
      onError(err);
    },
  });
}

/**
 * The OAuth nonce store: a nonce is accepted once per clientIdentifier, and remembered in Redis for as long
 * as its timestamp could be accepted again. Concurrent requests' checks go to Redis together, as one script
 * that takes every new key (lib/redis/scripts.ts reserveKeys: one command, one round trip).
 */
export class NonceStore {
  private readonly batcher: Batcher<{ key: string; ttlMs: number }, boolean>;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    /** The accepted timestamp skew, OAUTH_TIMESTAMP_SKEW_S. */
    private readonly skewSeconds: number,
  ) {
    const reserve = reserveKeys(redis);
    this.batcher = new Batcher(
      async (reservations) => {
        // 0: the nonce was not seen, and is now remembered.
        const replies = await reserve(
          reservations.map((r) => r.key),
          reservations.map((r) => r.ttlMs),
        );
        return reservations.map((_, i) => ({ ok: true, value: replies[i] === 0 }));
      },
      { maxBatch: 1000 },
    );
  }

  /**
   * True the first time a nonce is seen; rejects when Redis cannot say (the caller answers 503).
   * `timestampSeconds` is the request's accepted oauth_timestamp: the nonce is kept while it could be.
   */
  firstUse(clientIdentifier: string, nonce: string, timestampSeconds: number): Promise<boolean> {
    // Under the queue prefix's hash tag: on a Redis Cluster every key of a batch is in one slot.
    return this.batcher.add({
      key: `${this.prefix}:nonce:${clientIdentifier}:${nonce}`,
      // Counted from the check, not from when the batch leaves: the wait only makes the key live longer.
      ttlMs: nonceTtlMs(timestampSeconds, this.skewSeconds, Date.now()),
    });
  }
}

/** The least a nonce is kept, whatever its timestamp. */
const MIN_TTL_MS = 1000;
/** A replay verified just before its timestamp lapses reaches Redis a little later (the batch ahead, the round trip). */
const MARGIN_MS = 1000;

/**
 * How long a nonce must be kept. verifyOAuthHeader accepts a timestamp while |floor(now / 1000) - timestamp|
 * <= skew, that is until (timestamp + skew + 1) s.
 */
function nonceTtlMs(timestampSeconds: number, skewSeconds: number, nowMs: number): number {
  return Math.max(MIN_TTL_MS, Math.ceil((timestampSeconds + skewSeconds + 1) * 1000 + MARGIN_MS - nowMs));
}

export const BASIC_CHALLENGE = 'Basic realm="skyhook"';
const OAUTH_CHALLENGE = 'OAuth realm="skyhook"';

/** One answer for "unknown webhook" and "wrong secret" alike: never reveal which part was wrong. */
export const unauthorized = (challenge: string, detail = 'The credentials were not accepted.') =>
  new Problem(401, 'Unauthorized', detail, { code: 'unauthorized', headers: { 'www-authenticate': challenge } });

export interface AuthDeps {
  directory: WebhookDirectory;
  nonces: Pick<NonceStore, 'firstUse'>;
  publicBaseUrl: string;
  oauthTimestampSkewS: number;
  /** Counts and logs (rate-limited) what is answered 503 here: the nonce store not answering. */
  reporter: Pick<ErrorReporter, 'report'>;
}

export interface Authenticated {
  webhook: WebhookCredentials;
  by: 'basic' | 'oauth';
  /** OAuth: the checked header, whose body hash is compared once the body is read. */
  oauth?: OAuthHeaderCheck;
}

/** What the receiver knows of a request before its body: the path's endpoint key, if any, and its URL. */
interface RequestLine {
  method: string;
  /** The path and query as received. */
  url: string;
  endpointKey?: string;
}

/**
 * The webhook a request names: by its path key when it has one (then the credentials must name the
 * same webhook), else by the clientIdentifier in its credentials.
 */
async function resolveWebhook(directory: WebhookDirectory, endpointKey: string | undefined, clientIdentifier: string): Promise<WebhookCredentials | null> {
  if (endpointKey !== undefined) {
    const webhook = await directory.byEndpointKey(endpointKey);
    return webhook && webhook.clientIdentifier === clientIdentifier ? webhook : null;
  }
  return directory.byClientIdentifier(clientIdentifier);
}

/** Basic: the webhook the user name (and path) names, if the secret is its current or previous one; else 401. */
export async function authenticateBasic(deps: Pick<AuthDeps, 'directory'>, request: RequestLine, clientIdentifier: string, secret: string): Promise<Authenticated> {
  const webhook = await resolveWebhook(deps.directory, request.endpointKey, clientIdentifier);
  if (!webhook || webhook.authType !== 'BASIC' || !basicSecretMatches(webhook, secret)) throw unauthorized(BASIC_CHALLENGE);
  return { webhook, by: 'basic' };
}

function basicSecretMatches(webhook: WebhookCredentials, secret: string): boolean {
  const given = sha256(secret);
  // Both comparisons always run, so timing does not tell which secret matched.
  const current = webhook.secretSha256 !== null && constantTimeEqual(given, webhook.secretSha256);
  const previous = webhook.previousSecretSha256 !== null && previousSecretValid(webhook) && constantTimeEqual(given, webhook.previousSecretSha256);
  return current || previous;
}

/** OAuth 1.0a: signature (current or previous secret), timestamp, then the nonce; else 401 (503 without the nonce store). */
export async function authenticateOAuth(deps: AuthDeps, request: RequestLine, header: string): Promise<Authenticated> {
  const parsed = readOAuthHeader(header);
  if (!parsed) throw unauthorized(OAUTH_CHALLENGE, 'The OAuth header is malformed.');
  const webhook = await resolveWebhook(deps.directory, request.endpointKey, parsed.clientIdentifier);
  if (!webhook || webhook.authType !== 'OAUTH' || !webhook.secret) throw unauthorized(OAUTH_CHALLENGE);

  const secrets = [webhook.secret, ...(webhook.previousSecret && previousSecretValid(webhook) ? [webhook.previousSecret] : [])];
  const url = new URL(deps.publicBaseUrl + request.url);
  const check = verifyOAuthHeader(parsed, { method: request.method, url }, secrets, {
    nowSeconds: Math.floor(Date.now() / 1000),
    skewSeconds: deps.oauthTimestampSkewS,
  });
  if (!check.ok) throw unauthorized(OAUTH_CHALLENGE, check.reason === 'stale_timestamp' ? 'The OAuth timestamp is outside the accepted window.' : undefined);

  let fresh: boolean;
  try {
    fresh = await deps.nonces.firstUse(webhook.clientIdentifier, check.nonce, check.timestamp);
  } catch (err) {
    // Without the nonce store a replay cannot be ruled out: refuse for now, the marketplace retries.
    deps.reporter.report('nonce_store', err, 'the OAuth nonce store (Redis) did not answer: OAuth notifications are answered 503 until it does', { companyId: webhook.companyId });
    throw serviceUnavailable('The OAuth nonce store is unavailable; retry later.', 'nonce_store_unavailable');
  }
  if (!fresh) throw unauthorized(OAUTH_CHALLENGE, 'The OAuth nonce was already used.');
  return { webhook, by: 'oauth', oauth: check };
}

/** The OAuth body hash, once the body is read: 401 when it does not match. */
export function checkBodyHash(auth: Authenticated, raw: Buffer): void {
  if (auth.oauth && !bodyHashMatches(auth.oauth, raw)) throw unauthorized(OAUTH_CHALLENGE);
}
