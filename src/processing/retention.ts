/**
 * Retention (SPEC §5, §5.2): a BullMQ job scheduler runs `purge` hourly; it deletes final notifications
 * (processed, failed, discarded) older than RETENTION_DAYS, with their history (fetch attempts no kept
 * notification shares, replays), and final deliveries with their attempts. Pending notifications are never
 * purged (that would lose work); a delivery still pending past RETENTION_DAYS ends `expired` first, said in
 * the log per destination. Snapshots and events stay.
 */
import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { DeliveryLifecycle } from '../destinations/lifecycle.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { RedisClient } from '../lib/redis/connection.js';

const MAINTENANCE_QUEUE = 'maintenance';
const PURGE_EVERY_MS = 3_600_000;
const BATCH = 5000;

/** Purges in batches of short transactions, so no long lock is held; answers how many rows went. */
export async function purgeInBatches(purgeBatch: (retentionDays: number, limit: number) => Promise<number>, retentionDays: number): Promise<number> {
  let total = 0;
  for (;;) {
    const purged = await purgeBatch(retentionDays, BATCH);
    total += purged;
    if (purged < BATCH) return total;
  }
}

/**
 * The purge's scheduler (idempotent: every worker upserts the same one) and its consumer. Nothing waits for
 * Redis: start() asks for the scheduler in the background (the worker connection holds the command until
 * Redis answers), so a process started while Redis is down starts all the same.
 */
export function createRetention(deps: {
  connection: RedisClient;
  prefix: string;
  notifications: Pick<NotificationLifecycle, 'purgeBatch'>;
  deliveries: Pick<DeliveryLifecycle, 'expire' | 'purgeBatch'>;
  /** Counts the deliveries that ended expired (skyhook_deliveries_total{outcome="expired"}). */
  countExpired: (n: number) => void;
  retentionDays: number;
  log: Logger;
  onError: (err: unknown) => void;
}): { start: () => void; close: (force: boolean) => Promise<void> } {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: deps.connection, prefix: deps.prefix });
  queue.on('error', deps.onError);
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    async () => {
      const purged = await purgeInBatches(deps.notifications.purgeBatch, deps.retentionDays);
      if (purged > 0) deps.log.info({ purged, retentionDays: deps.retentionDays }, 'purged old notifications');
      for (const { destinationId, expired } of await deps.deliveries.expire(deps.retentionDays)) {
        deps.countExpired(expired);
        deps.log.warn({ destinationId, expired, retentionDays: deps.retentionDays }, 'deliveries still pending past retention ended expired');
      }
      const deliveries = await purgeInBatches(deps.deliveries.purgeBatch, deps.retentionDays);
      if (deliveries > 0) deps.log.info({ purged: deliveries, retentionDays: deps.retentionDays }, 'purged old deliveries');
      return purged + deliveries;
    },
    { connection: deps.connection, prefix: deps.prefix, concurrency: 1, autorun: false },
  );
  worker.on('error', deps.onError);
  worker.on('failed', (_job, err) => deps.onError(err));
  return {
    start: () => {
      queue.upsertJobScheduler('purge-notifications', { every: PURGE_EVERY_MS }, { name: 'purge', opts: { removeOnComplete: 10, removeOnFail: 10 } }).catch(deps.onError);
      worker.run().catch(deps.onError);
    },
    /** `force`: do not wait for a running purge (nor for Redis, when it is down). */
    close: async (force) => {
      await worker.close(force);
      await queue.close();
    },
  };
}
