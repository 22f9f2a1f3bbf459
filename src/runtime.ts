/**
 * The composition root: config -> connections -> services -> roles. main.ts runs it for real; tests
 * run the very same wiring against their own database and queue prefix.
 */
import type { Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp, buildOpsApp } from './app.js';
import type { Config } from './config.js';
import { connectDatabase, type DbHandle } from './db/client.js';
import { prepareDatabase } from './db/migrate.js';
import { connectRedis, redisReady, withTimeout } from './lib/redis.js';
import { createFetchQueue, FetchEnqueuer } from './processing/fetch-queue.js';
import { createFetchWorkers } from './processing/fetch-worker.js';
import { IngestFirst } from './processing/ingest-first.js';
import { builtInHandlers, type HandlerRegistry } from './processing/handlers/index.js';
import { Relay } from './processing/relay.js';
import { startRetention } from './processing/retention.js';
import { createMetrics } from './lib/metrics.js';
import { listenForWebhookChanges, WebhookDirectory } from './receiver/attribution.js';
import { NotificationWriter } from './receiver/ingest.js';
import { NonceStore } from './receiver/nonces.js';
import { createServices } from './services/index.js';

const WORKER_DB_CONNECTIONS = 8;
/** A producer never waits longer than this for Redis: the relay covers what it could not queue. */
const ENQUEUE_TIMEOUT_MS = 1000;

export interface Runtime {
  /** The HTTP app (roles api and all; a worker's ops routes when OPS_PORT is set); not listening yet. */
  app?: FastifyInstance;
  /** The fetch workers (roles worker and all): several BullMQ Workers sharing one process's batchers. */
  workers: Worker[];
  /** Role all: holds processing while the receiver is flooded (processing/ingest-first.ts). */
  ingestFirst?: IngestFirst;
  api: DbHandle;
  relay: Relay;
  enqueuer: FetchEnqueuer;
  close(): Promise<void>;
}

export async function startRuntime(config: Config, log: Logger, opts: { handlers?: HandlerRegistry } = {}): Promise<Runtime> {
  await prepareDatabase(config.databaseUrl);
  const runsApi = config.role !== 'worker';
  const runsWorker = config.role !== 'api';

  // A worker-only process uses this pool for the relay alone; the worker has its own, sized to its concurrency.
  const api = connectDatabase(config.databaseUrl, { max: runsApi ? config.dbPoolSize : 3, applicationName: `skyhook-${config.role}` });
  const producer = connectRedis(config, 'producer', 'skyhook-producer');
  await redisReady(producer).catch(() => log.warn('Redis is not reachable yet: notifications are stored and will be queued by the relay when it is back'));

  const queue = createFetchQueue(producer, config.queuePrefix);
  queue.on('error', () => {}); // reported through enqueue failures and /readyz
  const enqueuer = new FetchEnqueuer(queue, producer, api.pool, { attempts: config.fetch.attempts, timeoutMs: ENQUEUE_TIMEOUT_MS }, log);
  const relay = new Relay(api.pool, enqueuer, { intervalMs: config.relayIntervalMs, graceMs: config.relayGraceMs }, log, producer);

  const metrics = createMetrics();
  const closers: (() => Promise<unknown>)[] = [];
  let app: FastifyInstance | undefined;
  let workers: Worker[] = [];
  // One event loop for both: the workers yield to a flooded receiver (processing/ingest-first.ts).
  const ingestFirst = runsApi && runsWorker ? new IngestFirst((n) => metrics.jobsHeld.set(n)) : undefined;

  if (runsApi) {
    const directory = new WebhookDirectory(api.db, config.secretKey);
    const listener = listenForWebhookChanges(config.databaseUrl, directory, (err) => log.debug({ err: String(err) }, 'webhook change listener reconnecting'));
    const writer = new NotificationWriter(api.pool, enqueuer);
    const services = createServices({ db: api.db, enqueuer, config, metrics, onWebhookChange: () => directory.invalidate() });
    app = await buildApp({
      logger: log,
      trustProxy: config.trustProxy,
      pool: api.pool,
      redis: producer,
      receiver: {
        directory,
        writer,
        // Twice the accepted skew: a nonce is remembered for both sides of the timestamp window.
        nonces: new NonceStore(producer, config.queuePrefix, config.oauthTimestampSkewS * 2),
        publicBaseUrl: config.publicBaseUrl,
        requireHttpsHrefs: config.requireHttpsHrefs,
        oauthTimestampSkewS: config.oauthTimestampSkewS,
        metrics,
        answered: ingestFirst && ((ms) => ingestFirst.answer(ms)),
      },
      admin: { adminToken: config.adminToken, ...services },
      queues: [queue],
      authFailures: { limit: config.authFailureLimit, windowMs: 60_000 },
      metrics,
    });
    closers.push(() => app!.close(), () => listener.stop());
  }

  if (runsWorker) {
    // The jobs share their statements (fetch-start.ts, snapshots.ts), so a few connections serve any
    // concurrency; the rest wait for rare per-job writes (a failure, a gone resource).
    const workerDb = connectDatabase(config.databaseUrl, { max: Math.min(config.fetch.concurrency, WORKER_DB_CONNECTIONS), applicationName: 'skyhook-worker' });
    const connection = connectRedis(config, 'worker', 'skyhook-worker');
    workers = createFetchWorkers({
      db: workerDb.db,
      pool: workerDb.pool,
      connection,
      prefix: config.queuePrefix,
      secretKey: config.secretKey,
      handlers: opts.handlers ?? builtInHandlers(),
      log,
      fetch: config.fetch,
      requeue: (companyId, href) => enqueuer.enqueue([{ companyId, href }]),
      metrics,
      admit: ingestFirst && (() => ingestFirst.admit()),
    });
    ingestFirst?.start();
    closers.push(async () => ingestFirst?.stop());
    const retention = await startRetention({ connection, prefix: config.queuePrefix, pool: workerDb.pool, retentionDays: config.retentionDays, log });
    for (const worker of workers) {
      worker.on('error', (err) => log.warn({ err: String(err) }, 'worker error'));
      worker.on('failed', (job, err) => log.debug({ jobId: job?.id, companyId: job?.data.companyId, err: err.message }, 'fetch attempt failed'));
    }
    // Running jobs finish (bounded); a job still running at the deadline is left to stalled-job recovery:
    // its lock lapses and another worker takes it (worker.close(true) would still wait for it).
    closers.push(
      () =>
        withTimeout(Promise.all(workers.map((w) => w.close())), config.shutdownTimeoutMs, 'worker close').catch(() => {
          log.warn('running fetch jobs did not finish in time; they return to the queue when their lock lapses');
          connection.disconnect();
        }),
      () => retention.close(),
      async () => {
        await workerDb.pool.end();
        connection.disconnect();
      },
    );
  }

  if (!runsApi && config.opsPort !== undefined) {
    app = await buildOpsApp(log, { pool: api.pool, redis: producer, metrics, queues: [queue] });
    closers.unshift(() => app!.close());
  }

  relay.start();
  closers.push(
    () => relay.stop(),
    () => queue.close().catch(() => {}),
    async () => producer.disconnect(),
    () => api.pool.end(),
  );

  return {
    app,
    workers,
    ingestFirst,
    api,
    relay,
    enqueuer,
    async close() {
      for (const close of closers) await close().catch((err) => log.warn({ err: String(err) }, 'error while closing'));
    },
  };
}
