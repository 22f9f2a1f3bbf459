/**
 * Retention (SPEC §5.3): a BullMQ job scheduler runs `maintain-partitions` hourly. It ends deliveries still
 * pending past RETENTION_DAYS (or EVENTS_RETENTION_DAYS, when shorter: their events go then) `expired`
 * (said in the log per destination), purges what deleted companies left (companies/purge.ts), then makes the growing tables'
 * partitions ahead and drops the days past their retention (db/partitions.ts): notifications with their
 * fetch attempts and replays, and deliveries with their attempts, after RETENTION_DAYS; events after
 * EVENTS_RETENTION_DAYS; the audit log after AUDIT_RETENTION_DAYS. A day that still holds a notification not
 * final (a paused company's, parked) or a pending delivery is kept, whole, until that work ends: retention
 * never removes unfinished work. Dropping a partition costs the same whatever it holds. Last, a resource not
 * fetched for EVENTS_RETENTION_DAYS (its latest snapshot, the one row left of its history) is forgotten.
 */
import { Queue, Worker } from 'bullmq';
import type pg from 'pg';
import type { Logger } from 'pino';
import { appendBySkyhook } from '../access/audit.js';
import { purgeDeletedCompanies } from '../companies/purge.js';
import { inChange } from '../db/client.js';
import { maintainPartitions, type MaintainResult, type Retentions } from '../db/partitions.js';
import type { DeliveryLifecycle } from '../destinations/lifecycle.js';
import { deliveryGuard } from '../destinations/transitions.js';
import type { NotificationsRepository } from '../notifications/postgres.js';
import { fromGuard } from '../notifications/transitions.js';
import type { RedisClient } from '../lib/redis/connection.js';

const MAINTENANCE_QUEUE = 'maintenance';
const MAINTAIN_EVERY_MS = 3_600_000;
/** Resources forgotten per statement: one row each (the latest snapshot), in short transactions. */
const RESOURCES_BATCH = 5000;

/** The rows a day's partition may not be dropped with: notifications retention may not purge, deliveries still to expire. */
export const UNFINISHED = { notifications: `NOT (${fromGuard('purge')})`, deliveries: deliveryGuard('expire') };

/** The audit log's action for deliveries retention ended `expired`. */
export const EXPIRED_ACTION = 'retention: pending deliveries expired';

/** One pass: pending deliveries past retention end expired, then the partitions are made ahead and the old ones dropped. */
export async function retentionPass(deps: {
  pool: pg.Pool;
  resources: Pick<NotificationsRepository, 'forgetQuietResources'>;
  deliveries: Pick<DeliveryLifecycle, 'expire'>;
  countExpired: (n: number) => void;
  retentions: Retentions;
  log: Logger;
  now?: Date;
}): Promise<MaintainResult> {
  // A delivery is sent with its event's body: with EVENTS_RETENTION_DAYS the shorter, it ends when its event would go.
  const retentionDays = Math.min(deps.retentions.notifications, deps.retentions.events);
  // Counted and audited (SPEC §5.2): an entry by Skyhook per destination, in the transaction that ends them.
  const ended = await inChange({ $client: deps.pool }, async (change) => {
    const rows = await deps.deliveries.expire(retentionDays, change);
    await appendBySkyhook(change, rows.map((r) => ({ action: EXPIRED_ACTION, companyId: r.companyId, targets: { destinationId: r.destinationId }, details: { retentionDays, expired: r.expired } })));
    return rows;
  });
  for (const { companyId, destinationId, expired } of ended) {
    deps.countExpired(expired);
    deps.log.warn({ companyId, destinationId, expired, retentionDays }, 'deliveries still pending past retention ended expired');
  }
  // What a deletion's own purge left (a process stopped halfway, a row written in the deletion's moment): before the days are judged.
  const purged = await purgeDeletedCompanies(deps.pool);
  if (purged > 0) deps.log.info({ rows: purged }, "deleted companies' rows purged");
  const result = await maintainPartitions(deps.pool, { now: deps.now, retentions: deps.retentions, unfinished: UNFINISHED });
  // A role that may not change the schema leaves them to the owner's `skyhook partitions maintain`: said only when that falls behind.
  if (!result.owner && result.daysAhead < 2) deps.log.warn({ daysAhead: result.daysAhead }, 'partitions run out soon, and this role may not make them: run `skyhook partitions maintain` as the database owner');
  if (result.made.length > 0) deps.log.info({ made: result.made.length }, 'partitions made ahead');
  if (result.dropped.length > 0) deps.log.info({ dropped: result.dropped, retentions: deps.retentions }, 'partitions past retention dropped');
  for (const { day, reason } of result.kept) deps.log.warn({ day, reason }, 'a day past retention is kept');
  let forgotten = 0;
  for (let n = RESOURCES_BATCH; n === RESOURCES_BATCH; forgotten += n) n = await deps.resources.forgetQuietResources(deps.retentions.events, RESOURCES_BATCH);
  if (forgotten > 0) deps.log.info({ resources: forgotten, retentionDays: deps.retentions.events }, 'resources not notified for EVENTS_RETENTION_DAYS forgotten');
  return result;
}

/**
 * The pass's scheduler (idempotent: every worker upserts the same one) and its consumer. Nothing waits for
 * Redis: start() asks for the scheduler in the background (the worker connection holds the command until
 * Redis answers), so a process started while Redis is down starts all the same.
 */
export function createRetention(deps: Parameters<typeof retentionPass>[0] & {
  connection: RedisClient;
  prefix: string;
  onError: (err: unknown) => void;
}): { start: () => void; close: (force: boolean) => Promise<void> } {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: deps.connection, prefix: deps.prefix });
  queue.on('error', deps.onError);
  const worker = new Worker(MAINTENANCE_QUEUE, async () => (await retentionPass(deps)).dropped.length, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: 1,
    autorun: false,
  });
  worker.on('error', deps.onError);
  worker.on('failed', (_job, err) => deps.onError(err));
  return {
    start: () => {
      queue.upsertJobScheduler('maintain-partitions', { every: MAINTAIN_EVERY_MS }, { name: 'maintain', opts: { removeOnComplete: 10, removeOnFail: 10 } }).catch(deps.onError);
      worker.run().catch(deps.onError);
    },
    /** `force`: do not wait for a running pass (nor for Redis, when it is down). */
    close: async (force) => {
      await worker.close(force);
      await queue.close();
    },
  };
}
