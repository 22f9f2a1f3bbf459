/**
 * The `deliver` queue's contract, in one place (SPEC §5.2): one job per (destination, resource), the unit
 * of order. BullMQ's deduplication (keepLastIfActive) keeps at most one job of a key waiting and one
 * follow-up while it runs, so one job per key runs at a time, across every worker: version n+1 of a
 * resource is sent by the same job, after version n, or by the job after it. A job waits for its delivery's
 * next attempt by being delayed (no poll, no BullMQ attempt spent); BullMQ's own retries are only for a job
 * that threw (PostgreSQL out of reach, say). Deliveries have a queue and workers of their own, so a slow
 * destination never takes a fetch's place.
 */
import { hash } from 'node:crypto';
import { Queue, type JobsOptions, type WorkerOptions } from 'bullmq';
import { z } from 'zod';
import type { RedisClient } from '../lib/redis/connection.js';

export const DELIVERY_QUEUE = 'deliver';

export const deliveryJobSchema = z.object({ companyId: z.uuid(), destinationId: z.uuid(), href: z.string().min(1) });
export type DeliveryJob = z.infer<typeof deliveryJobSchema>;

/** The key of a (destination, resource): its href hashed, so a long href makes no long Redis key. */
export const deliveryKey = (job: Pick<DeliveryJob, 'destinationId' | 'href'>): string => `${job.destinationId}:${hash('sha256', job.href, 'base64url').slice(0, 32)}`;

export function createDeliveryQueue(connection: RedisClient, prefix: string): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(DELIVERY_QUEUE, { connection, prefix });
}

/** A job that threw is tried again this many times, a little later each time; the relay covers the rest. */
const THROWN_ATTEMPTS = 10;

export const deliveryJobOptions = (key: string, priority: number): JobsOptions => ({
  deduplication: { id: key, keepLastIfActive: true },
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

/** A running request's place at its destination's gate lapses this long after its timeout (a dead worker's). */
const LEASE_MARGIN_MS = 30_000;

/** The destinations' gate (src/gate/, kind `destination`): DESTINATION_CONCURRENCY, a place held for a request's longest run. */
export const destinationGateOptions = (d: { concurrency: number; timeoutMs: number }) => ({ defaultMax: d.concurrency, leaseMs: d.timeoutMs + LEASE_MARGIN_MS });

/** A key as its gate parks it and hands it out: the item is deliveryKey(), the payload `<companyId> <href>`. */
export const gateItemOf = (key: DeliveryJob) => ({ id: key.destinationId, item: deliveryKey(key), payload: `${key.companyId} ${key.href}` });
export const keyOfHandedOut = (h: { id: string; payload: string }): DeliveryJob => {
  const space = h.payload.indexOf(' ');
  return { destinationId: h.id, companyId: h.payload.slice(0, space), href: h.payload.slice(space + 1) };
};
