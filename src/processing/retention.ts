/**
 * Retention (SPEC §5): a BullMQ job scheduler runs `purge` hourly; it deletes final notifications
 * (processed, failed, discarded) older than RETENTION_DAYS in batches of short transactions, so no
 * long lock is held. Pending ones are never purged (that would lose work); snapshots and events stay.
 */
import { Queue, Worker } from 'bullmq';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { RedisClient } from '../lib/redis.js';

export const MAINTENANCE_QUEUE = 'maintenance';
const PURGE_EVERY_MS = 3_600_000;
const BATCH = 5000;

export async function purgeOldNotifications(pool: pg.Pool, retentionDays: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await pool.query(
      `DELETE FROM notifications WHERE id IN (
         SELECT id FROM notifications
         WHERE received_at < now() - make_interval(days => $1) AND status IN ('processed', 'failed', 'discarded')
         ORDER BY id LIMIT ${BATCH})`,
      [retentionDays],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < BATCH) return total;
  }
}

/** Schedules the purge (idempotent: every worker upserts the same scheduler) and consumes it. */
export async function startRetention(deps: { connection: RedisClient; prefix: string; pool: pg.Pool; retentionDays: number; log: Logger }): Promise<{ close: () => Promise<void> }> {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: deps.connection, prefix: deps.prefix });
  queue.on('error', () => {}); // Redis outages are reported by /readyz, not as raw stderr
  await queue.upsertJobScheduler('purge-notifications', { every: PURGE_EVERY_MS }, { name: 'purge', opts: { removeOnComplete: 10, removeOnFail: 10 } });
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    async () => {
      const purged = await purgeOldNotifications(deps.pool, deps.retentionDays);
      if (purged > 0) deps.log.info({ purged, retentionDays: deps.retentionDays }, 'purged old notifications');
      return purged;
    },
    { connection: deps.connection, prefix: deps.prefix, concurrency: 1 },
  );
  worker.on('error', () => {});
  return {
    close: async () => {
      await worker.close();
      await queue.close();
    },
  };
}
