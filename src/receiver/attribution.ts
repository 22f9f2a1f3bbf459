/**
 * Attribution: which webhook (hence which company) a notification belongs to, found by the path's
 * endpoint key or by the clientIdentifier in its credentials. Lookups are cached briefly in memory
 * (least recently used out first, unknown keys apart): the receiver's hot path must not pay a query and a
 * decryption per request, and a flood of unknown keys must not push the known webhooks out (SPEC §10). Changes made through
 * the admin API invalidate the cache here and, through NOTIFY skyhook_webhooks, in every process.
 */
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import { listen } from '../db/listen.js';
import { companies, webhooks } from '../db/schema/index.js';
import { decryptSecret } from '../lib/crypto.js';
import { storableText } from '../lib/json-body.js';

export const WEBHOOK_CHANGES_CHANNEL = 'skyhook_webhooks';

export interface WebhookCredentials {
  webhookId: string;
  companyId: string;
  clientIdentifier: string;
  endpointKey: string;
  authType: 'BASIC' | 'OAUTH';
  active: boolean;
  apiBaseUrl: URL;
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
      .select({ webhook: webhooks, apiBaseUrl: companies.apiBaseUrl })
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
      secretSha256: w.secretSha256,
      previousSecretSha256: w.previousSecretSha256,
      secret: open(w.secretEncrypted),
      previousSecret: open(w.previousSecretEncrypted),
      previousSecretExpiresAt: w.previousSecretExpiresAt?.getTime() ?? null,
    };
  };
}

/** The previous secret counts only inside its rotation grace period. */
export const previousSecretValid = (w: WebhookCredentials, now = Date.now()): boolean =>
  w.previousSecretExpiresAt !== null && w.previousSecretExpiresAt > now;

/**
 * Keeps every process's cache honest: a change made through any process's admin API sends
 * NOTIFY skyhook_webhooks, and each listener drops its cache. While the listener is disconnected the
 * cache is dropped too (a change may be missed), and the short TTL bounds staleness.
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
