/**
 * The HTTP app (buildApp) over in-memory fakes of its narrow dependencies, for the unit tier: requests go
 * through `app.inject`, nothing listens, and no PostgreSQL or Redis is involved. The receiver's storage is
 * the real NotificationWriter over the in-memory lifecycle (test/helpers/memory-lifecycle.ts); the webhook lookup is the real
 * WebhookDirectory over a fake loader; the OAuth nonces are remembered in a Set.
 */
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { pino } from 'pino';
import { buildApp } from '../../../src/app.js';
import type { AdminDeps } from '../../../src/admin/routes.js';
import type { ConsoleDeps } from '../../../src/console/kit.js';
import type { InsertedStatus, NewNotification, NotificationLifecycle } from '../../../src/notifications/lifecycle.js';
import { sha256 } from '../../../src/lib/crypto.js';
import { BatchSummary } from '../../../src/lib/batch-summary.js';
import { ErrorReporter } from '../../../src/lib/error-reporter.js';
import { createMetrics, type Metrics } from '../../../src/lib/metrics.js';
import type { RedisClient } from '../../../src/lib/redis/connection.js';
import { WebhookDirectory, type WebhookCredentials, type WebhookKey } from '../../../src/receiver/authenticate.js';
import { NotificationWriter } from '../../../src/receiver/ingest.js';
import { createMemoryLifecycle } from '../../helpers/memory-lifecycle.js';

export const PUBLIC_BASE_URL = 'https://skyhook.example';
export const API_BASE_URL = 'https://api.marketplace.example/v1';
export const ADMIN_TOKEN = 'unit-admin-token-0123456789abcdef';

export interface FakeWebhook {
  webhookId: string;
  companyId: string;
  clientIdentifier: string;
  endpointKey: string;
  authType: 'BASIC' | 'OAUTH';
  secret: string;
  active?: boolean;
  apiBaseUrl?: string;
  /** The company's further base URLs (connection.baseUrls). */
  extraBaseUrls?: string[];
  previousSecret?: string;
  previousSecretExpiresAt?: number;
}

export interface StoredRow extends NewNotification {
  id: number;
  status: InsertedStatus;
}

/** What stands behind the app: change it between requests to make a dependency fail. */
export interface Backstage {
  /** Rows committed by the fake repository. */
  rows: StoredRow[];
  /** Rows whose fetch jobs the commit follow-up was asked to add. */
  queued: number[];
  /** Set to make the repository's insert fail as an unreachable PostgreSQL does. */
  databaseDown: boolean;
  /** Set to make the nonce store fail as an unreachable Redis does. */
  nonceStoreDown: boolean;
  /** False until "started": only the probes and metrics answer. */
  started: boolean;
  /** How many times the webhook loader was called (the directory caches). */
  lookups: number;
  metrics: Metrics;
  logLines: Record<string, unknown>[];
}

const unreachable = (what: string) => Object.assign(new Error(`connect ECONNREFUSED (${what})`), { code: 'ECONNREFUSED' });

function credentials(w: FakeWebhook): WebhookCredentials {
  return {
    webhookId: w.webhookId,
    companyId: w.companyId,
    clientIdentifier: w.clientIdentifier,
    endpointKey: w.endpointKey,
    authType: w.authType,
    active: w.active ?? true,
    apiBaseUrl: new URL(w.apiBaseUrl ?? API_BASE_URL),
    extraBaseUrls: (w.extraBaseUrls ?? []).map((u) => new URL(u)),
    secretSha256: w.authType === 'BASIC' ? sha256(w.secret) : null,
    previousSecretSha256: w.authType === 'BASIC' && w.previousSecret ? sha256(w.previousSecret) : null,
    secret: w.authType === 'OAUTH' ? w.secret : null,
    previousSecret: w.authType === 'OAUTH' ? (w.previousSecret ?? null) : null,
    previousSecretExpiresAt: w.previousSecretExpiresAt ?? null,
  };
}

/** The admin services this test uses; every other call fails the test loudly. */
export type FakeServices = Partial<{ [K in Exclude<keyof AdminDeps, 'adminToken' | 'stream'>]: Partial<AdminDeps[K]> }>;

function services(given: FakeServices): Omit<AdminDeps, 'stream'> {
  const names = ['companies', 'webhooks', 'deletions', 'notifications', 'leads', 'quotes', 'declines', 'destinations', 'events', 'keys', 'audit'] as const;
  // The events' follower is closed with the app whatever a test fakes.
  // Changes are audited whatever a test fakes: here each entry is opened and settled, and written nowhere (the services are fakes).
  const entry = { by: 'unit', change: () => Promise.reject(new Error('the unit tier has no database')), call: <T>(_r: unknown, work: () => Promise<T>) => work(), begin: async () => {}, settle: async () => {} };
  const defaults: FakeServices = { events: { close: async () => {} }, audit: { open: () => entry } };
  const entries = names.map((name) => {
    const fake = { ...defaults[name], ...given[name] } as Record<string, unknown>;
    return [
      name,
      new Proxy(fake, {
        get: (target, prop) => {
          if (prop in target) return target[prop as string];
          throw new Error(`the unit test called ${name}.${String(prop)}, which it did not fake`);
        },
      }),
    ];
  });
  return Object.fromEntries(entries) as Omit<AdminDeps, 'stream'>;
}

/** What follows a commit (processing/enqueue.ts in Skyhook): here, by default, only recorded. */
type CommitFollowUp = ConstructorParameters<typeof NotificationWriter>[1];

export async function unitApp(
  opts: {
    webhooks?: FakeWebhook[];
    services?: FakeServices;
    requireHttpsHrefs?: boolean;
    /** The lifecycle the receiver stores through (test/unit/flow.test.ts shares it with the fetch job). */
    lifecycle?: Pick<NotificationLifecycle, 'accept'>;
    followUp?: CommitFollowUp;
  } = {},
): Promise<{ app: FastifyInstance; backstage: Backstage }> {
  const metrics = createMetrics();
  const backstage: Backstage = { rows: [], queued: [], databaseDown: false, nonceStoreDown: false, started: true, lookups: 0, metrics, logLines: [] };
  const logger = pino({ level: 'debug' }, { write: (line: string) => void backstage.logLines.push(JSON.parse(line) as Record<string, unknown>) });
  const hooks = new Map<string, WebhookCredentials>();
  for (const w of opts.webhooks ?? []) hooks.set(w.webhookId, credentials(w));

  const directory = new WebhookDirectory(async (key: WebhookKey) => {
    backstage.lookups++;
    if (backstage.databaseDown) throw unreachable('PostgreSQL');
    return [...hooks.values()].find((w) => ('endpointKey' in key ? w.endpointKey === key.endpointKey : w.clientIdentifier === key.clientIdentifier)) ?? null;
  });
  const lifecycle = opts.lifecycle ?? createMemoryLifecycle();
  const writer = new NotificationWriter(
    {
      // The in-memory lifecycle, behind a database that can be down.
      accept: async (rows, queueing) => {
        if (backstage.databaseDown) throw unreachable('PostgreSQL');
        const accepted = await lifecycle.accept(rows, queueing);
        rows.forEach((row, i) => backstage.rows.push({ ...row, ...accepted[i]! }));
        return accepted;
      },
    },
    opts.followUp ?? { queueing: true, afterCommit: (rows) => backstage.queued.push(...rows.map((r) => r.id)) },
    (err) => backstage.logLines.push({ followUpError: String(err) }),
  );
  const seen = new Set<string>();
  const nonces = {
    firstUse: async (clientIdentifier: string, nonce: string) => {
      if (backstage.nonceStoreDown) throw unreachable('Redis');
      const key = `${clientIdentifier}:${nonce}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    },
  };

  const stream = { close: async () => {}, subscribe: () => () => {}, listening: async () => {} } as unknown as AdminDeps['stream'];
  const admin = { ...services(opts.services ?? {}), stream };
  const reporter = new ErrorReporter(logger, metrics.errors);
  const app = await buildApp({
    logger,
    trustProxy: [],
    requestTimeoutMs: 10_000,
    started: () => backstage.started,
    // The probes' and gauges' own connections: no unit test asks /readyz or /metrics' gauges.
    pool: { query: () => Promise.reject(unreachable('PostgreSQL')) } as unknown as pg.Pool,
    redis: { ping: () => Promise.reject(unreachable('Redis')) } as unknown as RedisClient,
    companyStates: () => Promise.reject(unreachable('PostgreSQL')),
    connectionWarnings: async () => [],
    destinationStates: () => Promise.reject(unreachable('PostgreSQL')),
    receiver: { directory, writer, nonces, publicBaseUrl: PUBLIC_BASE_URL, requireHttpsHrefs: opts.requireHttpsHrefs ?? true, oauthTimestampSkewS: 300, metrics, summary: new BatchSummary(logger, (n) => `received ${n} notifications`), reporter },
    admin,
    // The console is tested against the real services (test/integration, test/browser): here it only
    // has to exist, with no session ever found.
    console: {
      adminToken: ADMIN_TOKEN,
      services: { ...admin, overview: {} as ConsoleDeps['services']['overview'] },
      stream,
      sessions: { find: async () => undefined } as unknown as ConsoleDeps['sessions'],
      keys: { authenticate: async () => 'unknown' as const },
      publicBaseUrl: PUBLIC_BASE_URL,
    },
    // ADMIN_TOKEN only: keys are tested against PostgreSQL (test/integration/access.test.ts).
    access: { adminToken: ADMIN_TOKEN, keys: { authenticate: async () => 'unknown' as const } },
    queues: [],
    authFailures: { limit: 1000, windowMs: 60_000 },
    metrics,
    reporter,
  });
  await app.ready();
  return { app, backstage };
}
