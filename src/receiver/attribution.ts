/**
 * Attribution: which webhook (hence which company) a notification belongs to, found by the path's
 * endpoint key or by the clientIdentifier in its credentials. Lookups are cached briefly in memory:
 * the receiver's hot path must not pay a query and a decryption per request. Changes made through
 * the admin API invalidate the cache here and, through NOTIFY skyhook_webhooks, in every process.
 */
import { eq } from 'drizzle-orm';
import pg from 'pg';
import type { Database } from '../db/client.js';
import { companies, webhooks } from '../db/schema/index.js';
import { decryptSecret } from '../lib/crypto.js';

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

interface CacheEntry {
  value: WebhookCredentials | null;
  expiresAt: number;
}

const FOUND_TTL_MS = 30_000;
const MISSING_TTL_MS = 2_000;
const MAX_ENTRIES = 50_000;

export class WebhookDirectory {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly db: Database,
    private readonly secretKey: Buffer,
  ) {}

  byEndpointKey(endpointKey: string): Promise<WebhookCredentials | null> {
    return this.lookup(`k:${endpointKey}`, () => this.load(eq(webhooks.endpointKey, endpointKey)));
  }

  byClientIdentifier(clientIdentifier: string): Promise<WebhookCredentials | null> {
    return this.lookup(`c:${clientIdentifier}`, () => this.load(eq(webhooks.clientIdentifier, clientIdentifier)));
  }

  invalidate(): void {
    this.cache.clear();
  }

  private async lookup(key: string, load: () => Promise<WebhookCredentials | null>): Promise<WebhookCredentials | null> {
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    const value = await load();
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(key, { value, expiresAt: now + (value ? FOUND_TTL_MS : MISSING_TTL_MS) });
    return value;
  }

  private async load(where: ReturnType<typeof eq>): Promise<WebhookCredentials | null> {
    const [row] = await this.db
      .select({ webhook: webhooks, apiBaseUrl: companies.apiBaseUrl })
      .from(webhooks)
      .innerJoin(companies, eq(companies.id, webhooks.companyId))
      .where(where)
      .limit(1);
    if (!row) return null;
    const w = row.webhook;
    const open = (sealed: string | null) => (sealed ? decryptSecret(this.secretKey, sealed) : null);
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
  }
}

/** The previous secret counts only inside its rotation grace period. */
export const previousSecretValid = (w: WebhookCredentials, now = Date.now()): boolean =>
  w.previousSecretExpiresAt !== null && w.previousSecretExpiresAt > now;

/**
 * Keeps every process's cache honest: a change made through any process's admin API sends
 * NOTIFY skyhook_webhooks, and each listener drops its cache. While the listener is disconnected the
 * cache is dropped too, and the short TTL bounds staleness.
 */
export function listenForWebhookChanges(databaseUrl: string, directory: WebhookDirectory, onError: (err: unknown) => void): { stop: () => Promise<void> } {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    const c = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 });
    client = c;
    c.on('notification', () => directory.invalidate());
    c.on('error', (err) => {
      onError(err);
      reconnect();
    });
    c.on('end', () => reconnect());
    try {
      await c.connect();
      await c.query(`LISTEN ${WEBHOOK_CHANGES_CHANNEL}`);
      directory.invalidate();
    } catch (err) {
      onError(err);
      reconnect();
    }
  };
  const reconnect = () => {
    directory.invalidate();
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, 1000);
    retry.unref();
  };

  void connect();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
