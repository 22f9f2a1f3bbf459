/**
 * What an admin CLI command runs on: the same services as the admin API, over its own small pool and
 * a producer Redis connection (replays enqueue; if Redis is down the relay of a running Skyhook
 * queues them). Configuration comes from the same environment variables as `skyhook start`.
 */
import { loadConfig, type Config } from '../../config.js';
import { connectDatabase } from '../../db/client.js';
import { DatabaseStartError, prepareDatabase } from '../../db/migrate.js';
import { createNotificationsRepository, type NotificationsRepository } from '../../notifications/postgres.js';
import { describeError } from '../../lib/error-reporter.js';
import { createLogger } from '../../lib/logger.js';
import { connectRedis, redisReady } from '../../lib/redis/connection.js';
import { createCompanyStates } from '../../companies/postgres.js';
import type { DbHandle } from '../../db/client.js';
import { Gate } from '../../gate/gate.js';
import type { RedisClient } from '../../lib/redis/connection.js';
import { MarketplaceClient } from '../../marketplace/client.js';
import { webhookSettingsApi } from '../../marketplace/webhook-settings.js';
import { FetchEnqueuer } from '../../processing/enqueue.js';
import { companyGateOptions, createFetchQueue, fetchKey } from '../../processing/fetch.queue.js';
import { createDestinationStates } from '../../destinations/postgres.js';
import { createDeliveryQueue, destinationGateOptions } from '../../delivery/delivery.queue.js';
import { DeliveryEnqueuer } from '../../delivery/enqueue.js';
import { ConnectionUsage } from '../../companies/usage.js';
import { createServices, type Services } from '../../services/index.js';

export interface AdminContext {
  config: Config;
  services: Services;
  /** For what reads notifications beyond the services (the live tail). */
  notifications: NotificationsRepository;
  close(): Promise<void>;
}

/** A failed call's row left `sending` (send-once.ts): said once on stderr, beside the call's own error. */
function cleanupNote(err: unknown): void {
  process.stderr.write(`skyhook: note: the call's row could not be settled (${describeError(err)}): it stays sending, and a repeat takes it over once stale\n`);
}

/** What a command that only reads is given to queue with. */
const queuesNothing = () => Promise.reject(new Error('a command that only reads queues nothing'));

/** That Redis is out of reach and what follows, said once on stderr (stdout may be a --json document). */
function redisNote(consequence: string): (err: unknown) => void {
  let said = false;
  return (err) => {
    if (said) return;
    said = true;
    process.stderr.write(`skyhook: note: Redis is not reachable (${describeError(err)}): ${consequence}\n`);
  };
}

/** A successful call's use of the company's connection, written as `skyhook start` writes it (companies/usage.ts). */
function usageOf(handle: DbHandle, log: ReturnType<typeof createLogger>): (companyId: string | undefined) => void {
  const usage = new ConnectionUsage(handle.db, (err) => log.warn({ err: describeError(err) }, "a company's last use of its connection could not be written"));
  return (companyId) => usage.used(companyId);
}

/** The companies' states over the CLI's pool and Redis connection, as `skyhook start` has them (runtime.ts). */
function companyStates(config: Config, handle: DbHandle, redis: RedisClient, queueWaiting: (companyId: string) => Promise<number>, onGateError: (err: unknown) => void, log: ReturnType<typeof createLogger>) {
  return createCompanyStates({
    db: handle.db,
    gate: new Gate(redis, config.queuePrefix, 'company', companyGateOptions(config.fetch)),
    redis,
    prefix: config.queuePrefix,
    secretKey: config.secretKey,
    settings: webhookSettingsApi(new MarketplaceClient({ timeoutMs: config.marketplaceTimeoutMs, onUsed: usageOf(handle, log) })),
    queueWaiting,
    fetchKey,
    defaultMaxFetches: config.fetch.companyConcurrency,
    probeIntervalMs: config.fetch.pausedProbeIntervalMs,
    gateTimeoutMs: 2000,
    log,
    onGateError,
  });
}

/**
 * Destinations' states and deliveries over the CLI's pool and Redis: replays are queued as `skyhook start` queues them.
 * `ready`: what a read of the gates waits for first (Redis connected), as the companies' states do.
 */
function destinationParts(config: Config, handle: DbHandle, redis: RedisClient, onGateError: (err: unknown) => void, log: ReturnType<typeof createLogger>, opts: { queue: boolean; ready?: () => Promise<void> }) {
  const gate = new Gate(redis, config.queuePrefix, 'destination', destinationGateOptions());
  const queue = opts.queue ? createDeliveryQueue(redis, config.queuePrefix) : undefined;
  queue?.on('error', onGateError);
  const enqueuer = queue && new DeliveryEnqueuer(queue, gate, 2000);
  const states = createDestinationStates({ db: handle.db, gate, wake: async (key) => enqueuer?.enqueue([key]), schedule: config.delivery.schedule, log, onGateError });
  const enqueue = enqueuer ? (keys: Parameters<DeliveryEnqueuer['enqueue']>[0]) => enqueuer.enqueue(keys) : queuesNothing;
  const views: Gate['views'] = async (ids) => (await opts.ready?.(), gate.views(ids));
  return { parts: { states, gate: { views }, enqueue }, close: async () => queue?.close() };
}

/** `migrate`: create and migrate the database first, as `skyhook start` does (commands that write); a read opens it as it is. */
export async function openAdminContext(env: Record<string, string | undefined>, opts: { migrate: boolean }): Promise<AdminContext> {
  const config = loadConfig(env);
  const log = createLogger({ env: config.env, logLevel: 'silent' });
  if (opts.migrate) await prepareDatabase(config.databaseUrl);
  const handle = connectDatabase(config.databaseUrl, { max: 2, applicationName: 'skyhook-cli' });
  const notifications = createNotificationsRepository(handle.pool);
  if (!opts.migrate) {
    // A read touches PostgreSQL only: one round trip first, so that a database out of reach (or not
    // created yet) is said in one line naming DATABASE_URL.
    await handle.pool.query('SELECT 1').catch(async (err: unknown) => {
      await handle.pool.end();
      throw new DatabaseStartError(config.databaseUrl, err);
    });
    const readOnly = { enqueue: queuesNothing };
    // The companies' states read their gates in Redis; without Redis they show what PostgreSQL knows.
    const gateNote = redisNote('company states show what PostgreSQL knows');
    const redis = connectRedis(config, 'producer', 'skyhook-cli');
    const read = companyStates(config, handle, redis, readOnly.enqueue, gateNote, log);
    // Only a command that shows companies or destinations waits for Redis, and only once.
    let ready: Promise<void> | undefined;
    const waitForRedis = () => (ready ??= redisReady(redis, 1000).catch(gateNote));
    const states = { ...read, states: async (rows: Parameters<typeof read.states>[0]) => (await waitForRedis(), read.states(rows)), troubled: async () => (await waitForRedis(), read.troubled()) };
    return {
      config,
      notifications,
      services: createServices({ db: handle.db, notifications, enqueuer: readOnly, config, states, onUsed: usageOf(handle, log), destinations: destinationParts(config, handle, redis, gateNote, log, { queue: false, ready: waitForRedis }).parts, onOutboundCleanupError: cleanupNote, onBackgroundError: gateNote }),
      close: async () => {
        redis.disconnect();
        await handle.pool.end();
      },
    };
  }
  // Only replays need Redis: without it their notifications stay `received` and a running Skyhook's relay queues them.
  const replayNote = redisNote("replayed notifications are queued by a running Skyhook's relay");
  const redis = connectRedis(config, 'producer', 'skyhook-cli');
  await redisReady(redis, 2000).catch(replayNote);
  const queue = createFetchQueue(redis, config.queuePrefix);
  queue.on('error', replayNote);
  const enqueuer = new FetchEnqueuer(queue, redis, notifications, new Gate(redis, config.queuePrefix, 'company', companyGateOptions(config.fetch)), { attempts: config.fetch.attempts, timeoutMs: 2000 }, log);
  const states = companyStates(config, handle, redis, (companyId) => enqueuer.queueWaiting(companyId), replayNote, log);
  const destinations = destinationParts(config, handle, redis, replayNote, log, { queue: true });
  return {
    config,
    notifications,
    services: createServices({ db: handle.db, notifications, enqueuer, config, states, onUsed: usageOf(handle, log), destinations: destinations.parts, onOutboundCleanupError: cleanupNote, onBackgroundError: replayNote }),
    async close() {
      await queue.close().catch(replayNote);
      await destinations.close().catch(replayNote);
      redis.disconnect();
      await handle.pool.end();
    },
  };
}
