/**
 * The `deliver` queue's contract, in one place (SPEC §5.2): one job per destination. BullMQ's deduplication
 * (keepLastIfActive) keeps at most one job of a destination waiting and one follow-up while it runs, so one
 * runs at a time across every worker: it alone sends the destination's deliveries, up to its limit at
 * once, one version of a resource at a time, in order. A job with nothing due waits for the next delivery's
 * time by being delayed (no poll, no BullMQ attempt spent); a new delivery wakes it (`reschedule`).
 * BullMQ's own retries are only for a job that threw (PostgreSQL out of reach, say). Deliveries have a queue
 * and workers of their own, so a slow destination never takes a fetch's place.
 */
import { Queue, type JobsOptions, type WorkerOptions } from 'bullmq';
import { z } from 'zod';
import type { RedisClient } from '../lib/redis/connection.js';

export const DELIVERY_QUEUE = 'deliver';

export const deliveryJobSchema = z.object({ companyId: z.uuid(), destinationId: z.uuid() });
export type DeliveryJob = z.infer<typeof deliveryJobSchema>;

export function createDeliveryQueue(connection: RedisClient, prefix: string): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(DELIVERY_QUEUE, { connection, prefix });
}

/** A job that threw is tried again this many times, a little later each time; the relay covers the rest. */
const THROWN_ATTEMPTS = 10;

export const deliveryJobOptions = (destinationId: string, priority: number): JobsOptions => ({
  // A job delayed to its next due delivery is woken by a new one (reschedule: its delay becomes 0).
  deduplication: { id: destinationId, keepLastIfActive: true, reschedule: true },
  priority,
  attempts: THROWN_ATTEMPTS,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: { count: 1000 },
});

/** A dead worker's jobs return to the queue about LOCK_MS + STALLED_CHECK_MS after its death (within 15 s), and are sent again with the same webhook-id. */
const LOCK_MS = 6000;
const STALLED_CHECK_MS = 3000;

export const deliveryWorkerOptions = (connection: RedisClient, prefix: string, concurrency: number): WorkerOptions => ({
  connection,
  prefix,
  concurrency,
  autorun: false,
  lockDuration: LOCK_MS,
  stalledInterval: STALLED_CHECK_MS,
  maxStalledCount: 2,
});

/** A job sends for this long, then leaves what is due to its follow-up: every destination gets its turn. */
export const TURN_MS = 5000;
/** Its place at its destination's gate lapses this long after a turn and a request's longest run (a dead worker's). */
const LEASE_MS = TURN_MS + 60_000 + 30_000;

/** The destinations' gate (src/gate/, kind `destination`): one place, the destination's job, held for a turn's longest run. */
export const destinationGateOptions = () => ({ defaultMax: 1, leaseMs: LEASE_MS });

/** A destination's job as its gate parks it and hands it out: the item is the destination, the payload its company. */
export const gateItemOf = (key: DeliveryJob) => ({ id: key.destinationId, item: key.destinationId, payload: key.companyId });
export const keyOfHandedOut = (h: { id: string; payload: string }): DeliveryJob => ({ destinationId: h.id, companyId: h.payload });
