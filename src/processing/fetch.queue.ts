/**
 * The `fetch` queue's contract, in one place: its name, what a job carries (checked when a job is taken),
 * how jobs are added and retried, and how workers hold them.
 *
 * One job per (company, href): the coalescing rules of SPEC §5 come from BullMQ deduplication in
 * keepLastIfActive mode, keyed by the resource:
 *  - C1: while the key's job waits (or is delayed), adding again is a no-op;
 *  - C2: adding while it runs stores exactly one follow-up job, created when the running one ends;
 *  - C3: so at most one job per key exists outside "waiting for the active one", hence runs at a time;
 *  - C5 is enforced by the worker (fetch-job.ts FetchStarts: a slot per key); C4 by the worker's claim of pending rows.
 */
import { hash } from 'node:crypto';
import { Queue, type JobsOptions, type WorkerOptions } from 'bullmq';
import { z } from 'zod';
import type { RedisClient } from '../lib/redis/connection.js';

export const FETCH_QUEUE = 'fetch';
const FETCH_BACKOFF = 'fetch-backoff';

/** A resource of a company: what a fetch job is about, and what coalescing keys on. */
const resourceKeySchema = z.object({ companyId: z.uuid(), href: z.url() });
export type ResourceKey = z.infer<typeof resourceKeySchema>;

/** W3C Trace Context: version 00, trace id, parent span id, flags. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * A fetch job's payload: its resource, and (when traces are exported) the W3C traceparent of the
 * notification whose commit added it, so the fetch continues that trace (docs/decisions.md, "Traces").
 * A job whose resource does not match is refused, never retried; a malformed traceparent is only dropped
 * (the fetch then starts a trace of its own).
 */
export const fetchJobSchema = resourceKeySchema.extend({ traceparent: z.string().regex(TRACEPARENT).optional().catch(undefined) });
export type FetchJob = z.infer<typeof fetchJobSchema>;

/** The coalescing key of a resource; the href hashed, so a long href makes no long Redis key. */
export const fetchKey = (key: ResourceKey): string => `${key.companyId}:${hash('sha256', key.href, 'base64url').slice(0, 32)}`;

export function createFetchQueue(connection: RedisClient, prefix: string): Queue<FetchJob> {
  return new Queue<FetchJob>(FETCH_QUEUE, { connection, prefix });
}

/**
 * How a job of `key` is added: deduplicated by its resource, retried with fetchBackoff, and ordered by its
 * company's gate (src/gate/): `priority` is how many jobs its company has queued or running, so a
 * quiet company's job goes ahead of a busy one's backlog (SPEC §5.1 F1).
 */
export const fetchJobOptions = (key: string, attempts: number, priority: number): JobsOptions => ({
  deduplication: { id: key, keepLastIfActive: true },
  priority,
  attempts,
  backoff: { type: FETCH_BACKOFF },
  removeOnComplete: true,
  removeOnFail: { count: 1000 },
});

/**
 * A running fetch job's lock, renewed by its worker every half of it whatever the fetch takes, and how
 * often workers look for jobs whose lock lapsed: a dead worker's jobs (SIGKILL, a lost machine) go back to
 * the queue about FETCH_LOCK_MS + STALLED_CHECK_MS after its death (SPEC §5: within 15 s; decisions.md);
 * a live one, however slow its fetch (FETCH_TIMEOUT_MS), keeps renewing and is never taken for stalled.
 */
const FETCH_LOCK_MS = 6000;
const STALLED_CHECK_MS = 3000;
/** A job found stalled more often than this fails (BullMQ's safeguard against a job that kills its worker). */
const MAX_STALLED_COUNT = 2;

/** A running fetch's place at its company's gate lapses this long after its fetch timeout (a dead worker's). */
const LEASE_MARGIN_MS = 30_000;

/** The companies' gate (src/gate/, kind `company`), the same in every process: COMPANY_FETCH_CONCURRENCY, and a place held for a fetch's longest run. */
export const companyGateOptions = (fetch: { companyConcurrency: number; timeoutMs: number }) => ({ defaultMax: fetch.companyConcurrency, leaseMs: fetch.timeoutMs + LEASE_MARGIN_MS });

/** A Worker of the fetch queue: its share of the concurrency, started by the runtime (runtime.ts), the locks above, the backoff below. */
export const fetchWorkerOptions = (
  connection: RedisClient,
  prefix: string,
  concurrency: number,
  backoff: { backoffBaseMs: number; backoffMaxMs: number },
): WorkerOptions => ({
  connection,
  prefix,
  concurrency,
  autorun: false,
  lockDuration: FETCH_LOCK_MS,
  stalledInterval: STALLED_CHECK_MS,
  maxStalledCount: MAX_STALLED_COUNT,
  settings: {
    backoffStrategy: (attemptsMade, type, err) => (type === FETCH_BACKOFF ? fetchBackoff(attemptsMade, err, backoff) : 1000),
  },
});

/** A fetch to try again: its reason, and how long the marketplace asked to wait, if it did. */
export class RetryableFetchError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/**
 * Exponential backoff with jitter (half the step fixed, half random). The marketplace's Retry-After is a
 * floor on the next wait, never a replacement (SPEC §5): a `Retry-After: 1` must not use up the attempts in
 * seconds, so the attempts still span the schedule's hour. A Retry-After beyond FETCH_BACKOFF_MAX_MS is
 * capped there: one answer must not park a notification for days.
 */
export function fetchBackoff(attemptsMade: number, err: unknown, opts: { backoffBaseMs: number; backoffMaxMs: number }, random = Math.random): number {
  const ceiling = Math.min(opts.backoffMaxMs, opts.backoffBaseMs * 2 ** Math.max(0, attemptsMade - 1));
  const backoff = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  const retryAfter = (err as RetryableFetchError | undefined)?.retryAfterMs;
  return retryAfter === undefined ? backoff : Math.max(backoff, Math.min(retryAfter, opts.backoffMaxMs));
}
