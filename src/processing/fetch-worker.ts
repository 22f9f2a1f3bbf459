/**
 * The fetch worker: for one (company, href) it claims the pending notifications, fetches href with
 * the company's token, stores what it got and marks the claimed rows. Rows that arrive while it runs
 * are not claimed: BullMQ (keepLastIfActive) runs one more job for the key afterwards (C2).
 */
import { DelayedError, Worker, type Job } from 'bullmq';
import { and, eq, inArray } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Database } from '../db/client.js';
import { companies, notifications } from '../db/schema/index.js';
import type { Metrics } from '../lib/metrics.js';
import { FETCH_BACKOFF, FETCH_QUEUE, fetchKey, type FetchJobData } from './fetch-queue.js';
import { CompanyConnections } from './company-connections.js';
import { fetchResource } from './fetch-resource.js';
import type { HandlerRegistry } from './handlers/index.js';
import { markFailed, markGone, recordAttempt, storeSnapshot, type Claimed } from './snapshots.js';

/** How often a paused company's jobs look again whether its token was replaced. */
export const PAUSED_RECHECK_MS = 5000;
/** Claimed per job; a larger backlog for one href is taken by the follow-up job. */
const CLAIM_LIMIT = 5000;

export interface FetchWorkerDeps {
  db: Database;
  /** Worker connection (maxRetriesPerRequest: null). */
  connection: Redis;
  prefix: string;
  secretKey: Buffer;
  handlers: HandlerRegistry;
  log: Logger;
  fetch: { minIntervalMs: number; timeoutMs: number; attempts: number; backoffBaseMs: number; backoffMaxMs: number; concurrency: number };
  metrics: Pick<Metrics, 'fetchOutcomes' | 'processingLatency'>;
  /** Re-adds a job for a key (used when one job could not claim the whole backlog). */
  requeue: (companyId: string, href: string) => Promise<void>;
}

export class RetryableFetchError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** Exponential backoff with full jitter, or the marketplace's Retry-After when it gave one. */
export function fetchBackoff(attemptsMade: number, err: unknown, opts: { backoffBaseMs: number; backoffMaxMs: number }, random = Math.random): number {
  const retryAfter = (err as RetryableFetchError | undefined)?.retryAfterMs;
  if (retryAfter !== undefined) return Math.min(retryAfter, opts.backoffMaxMs);
  const ceiling = Math.min(opts.backoffMaxMs, opts.backoffBaseMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * C5: reserves the key's fetch slot for `intervalMs`. Returns 0 when this fetch may start now, else
 * how long to wait. SET NX PX makes it atomic across every worker.
 */
const slotKey = (prefix: string, key: string) => `${prefix}:fetch-slot:${key}`;

export async function reserveFetchSlot(redis: Redis, prefix: string, key: string, intervalMs: number): Promise<number> {
  if (intervalMs <= 0) return 0;
  const taken = await redis.set(slotKey(prefix, key), '1', 'PX', intervalMs, 'NX');
  if (taken === 'OK') return 0;
  return Math.max(1, await fetchSlotWait(redis, prefix, key));
}

/** How long the key's slot stays taken (0 when free); reads only, reserves nothing. */
export async function fetchSlotWait(redis: Redis, prefix: string, key: string): Promise<number> {
  return Math.max(0, await redis.pttl(slotKey(prefix, key)));
}

export function createFetchWorker(deps: FetchWorkerDeps): Worker<FetchJobData> {
  const connections = new CompanyConnections(deps.db, deps.secretKey);
  const process = (job: Job<FetchJobData>, token?: string) => processFetch(deps, connections, job, token);
  return new Worker<FetchJobData>(FETCH_QUEUE, process, {
    connection: deps.connection,
    prefix: deps.prefix,
    concurrency: deps.fetch.concurrency,
    settings: {
      backoffStrategy: (attemptsMade, type, err) => (type === FETCH_BACKOFF ? fetchBackoff(attemptsMade, err, deps.fetch) : 1000),
    },
  });
}

async function delay(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}

export async function processFetch(deps: FetchWorkerDeps, connections: CompanyConnections, job: Job<FetchJobData>, token?: string): Promise<string> {
  const { db } = deps;
  const { companyId, href } = job.data;
  const log = deps.log.child({ companyId, jobId: job.id });
  const key = fetchKey(companyId, href);

  const company = await connections.get(companyId);
  if (!company) return 'company deleted';
  // 401/403 paused this company: wait, without touching its rows, until its token is replaced.
  if (company.paused) return delay(job, token, PAUSED_RECHECK_MS);

  // A fetch of this key started less than FETCH_MIN_INTERVAL_MS ago: wait, before asking the database anything.
  const busy = await fetchSlotWait(deps.connection, deps.prefix, key);
  if (busy > 0) return delay(job, token, busy);

  const claimed = await claimPending(db, companyId, href);
  if (!claimed) return 'nothing pending';

  const wait = await reserveFetchSlot(deps.connection, deps.prefix, key, deps.fetch.minIntervalMs);
  if (wait > 0) return delay(job, token, wait);

  const fetchStartedAt = new Date();
  const result = await fetchResource(href, company.apiToken, deps.fetch.timeoutMs);
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  deps.metrics.fetchOutcomes.inc({ outcome: result.kind });
  const finished = (status: 'processed' | 'failed') => {
    const now = Date.now();
    for (const at of claimed.receivedAt) deps.metrics.processingLatency.observe({ status }, (now - at) / 1000);
  };

  switch (result.kind) {
    case 'ok':
      try {
        await storeSnapshot(db, deps.handlers, { companyId, href, claimed, fetchStartedAt, resource: result.resource });
        finished('processed');
      } catch (err) {
        // A handler (or the store) failed: the transaction rolled back, nothing is half-written.
        const why = `storing the snapshot failed: ${err instanceof Error ? err.message : String(err)}`;
        if (lastAttempt) {
          await markFailed(db, claimed.ids, `gave up after ${job.attemptsMade + 1} attempts: ${why}`);
          finished('failed');
          break;
        }
        await recordAttempt(db, claimed.ids, why);
        throw err;
      }
      break;
    case 'gone':
      await markGone(db, { companyId, href, ids: claimed.ids, fetchStartedAt });
      finished('processed');
      break;
    case 'soft_error':
      await markFailed(db, claimed.ids, `soft error: ${result.message}`);
      finished('failed');
      break;
    case 'failed':
      await markFailed(db, claimed.ids, result.message);
      finished('failed');
      break;
    case 'unauthorized': {
      const why = `GET ${href} answered ${result.status}: the API token was refused`;
      connections.forget(companyId);
      // Only the token this fetch used is refused: if it was replaced meanwhile, try again with the new one.
      const paused = await db.transaction(async (tx) => {
        const updated = await tx
          .update(companies)
          .set({ connectionStatus: 'unauthorized', connectionError: why, updatedAt: new Date() })
          .where(and(eq(companies.id, companyId), eq(companies.apiTokenEncrypted, company.sealedToken)))
          .returning({ id: companies.id });
        if (updated.length > 0) await markFailed(tx, claimed.ids, why);
        return updated.length > 0;
      });
      if (!paused) throw new RetryableFetchError(`${why}, but the token was replaced meanwhile`, 0);
      finished('failed');
      log.warn('marketplace refused the company token; its fetches are paused until the token is replaced');
      break;
    }
    case 'retry':
      if (lastAttempt) {
        await markFailed(db, claimed.ids, `gave up after ${job.attemptsMade + 1} attempts: ${result.message}`);
        finished('failed');
        break;
      }
      await recordAttempt(db, claimed.ids, result.message);
      throw new RetryableFetchError(result.message, result.retryAfterMs);
  }
  if (claimed.ids.length >= CLAIM_LIMIT) await deps.requeue(companyId, href);
  return result.kind;
}

/** The pending rows of (company, href) committed before this fetch starts: the ones it covers (C4). */
async function claimPending(db: Database, companyId: string, href: string): Promise<(Claimed & { receivedAt: number[] }) | null> {
  const rows = await db
    .select({ id: notifications.id, type: notifications.type, resourceId: notifications.resourceId, receivedAt: notifications.receivedAt })
    .from(notifications)
    .where(and(eq(notifications.companyId, companyId), eq(notifications.href, href), inArray(notifications.status, ['received', 'queued'])))
    .orderBy(notifications.id)
    .limit(CLAIM_LIMIT);
  const last = rows.at(-1);
  if (!last) return null;
  return { ids: rows.map((r) => r.id), type: last.type, resourceId: last.resourceId, receivedAt: rows.map((r) => r.receivedAt.getTime()) };
}

