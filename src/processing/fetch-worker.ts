/**
 * The fetch worker: for one (company, href) it claims the pending notifications, fetches href with
 * the company's token, stores what it got and marks the claimed rows. Rows that arrive while it runs
 * are not claimed: BullMQ (keepLastIfActive) runs one more job for the key afterwards (C2).
 */
import { DelayedError, Worker, type Job } from 'bullmq';
import { and, eq } from 'drizzle-orm';
import type pg from 'pg';
import type { Logger } from 'pino';
import { CachedPlans } from '../db/cached-plans.js';
import type { Database } from '../db/client.js';
import { companies } from '../db/schema/index.js';
import type { Metrics } from '../lib/metrics.js';
import { gatherWrites, type RedisClient } from '../lib/redis.js';
import { FETCH_BACKOFF, FETCH_QUEUE, type FetchJobData } from './fetch-queue.js';
import { CLAIM_LIMIT, CLAIM_STATEMENT, FetchStarts } from './fetch-start.js';
import { CompanyConnections } from './company-connections.js';
import { MarketplaceClient } from '../marketplace/client.js';
import { fetchResource } from './fetch-resource.js';
import type { HandlerRegistry } from './handlers/index.js';
import { markFailed, markGone, recordAttempt, SnapshotStore, STORE_STATEMENT } from './snapshots.js';

/** How often a paused company's jobs look again whether its token was replaced. */
export const PAUSED_RECHECK_MS = 5000;

export interface FetchWorkerDeps {
  db: Database;
  /** The same pool as `db`, for the batched statements. */
  pool: pg.Pool;
  /** Worker connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  secretKey: Buffer;
  handlers: HandlerRegistry;
  log: Logger;
  fetch: { minIntervalMs: number; timeoutMs: number; attempts: number; backoffBaseMs: number; backoffMaxMs: number; concurrency: number };
  metrics: Pick<Metrics, 'fetchOutcomes' | 'processingLatency'>;
  /** Re-adds a job for a key (used when one job could not claim the whole backlog). */
  requeue: (companyId: string, href: string) => Promise<void>;
  /** Role `all`: resolves when a job may start; a flooded receiver holds processing (ingest-first.ts). */
  admit?: () => Promise<void>;
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

/** What the jobs of one worker share: caches and the batchers that let concurrent jobs share round trips. */
interface WorkerParts {
  connections: CompanyConnections;
  starts: FetchStarts;
  snapshots: SnapshotStore;
  marketplace: MarketplaceClient;
}

/**
 * BullMQ's Worker takes new jobs one after another, each a Redis round trip, however high its
 * concurrency: one Worker caps how fast a process picks up jobs that arrive one by one (measured:
 * about 30 ms queueing at 500 notifications/s). A few Workers in one process, sharing the caches and
 * the batchers, pick up in parallel; the concurrency is split between them.
 */
const WORKERS_PER_PROCESS = 4;

/** Worker i's share of a total concurrency split over `count` workers (every worker gets at least 1). */
export const concurrencyShare = (total: number, count: number, i: number): number =>
  Math.max(1, Math.floor(total / count) + (i < total % count ? 1 : 0));

export function createFetchWorkers(deps: FetchWorkerDeps): Worker<FetchJobData>[] {
  const plans = new CachedPlans(deps.pool, [CLAIM_STATEMENT, STORE_STATEMENT], deps.log);
  const parts: WorkerParts = {
    connections: new CompanyConnections(deps.db, deps.secretKey),
    starts: new FetchStarts(deps.pool, plans, deps.connection, deps.prefix, deps.fetch.minIntervalMs),
    // A stored batch's jobs all complete in one turn, each with a BullMQ script: sent in one write.
    snapshots: new SnapshotStore(deps.db, deps.pool, plans, deps.handlers, () => gatherWrites(deps.connection)),
    marketplace: new MarketplaceClient({ timeoutMs: deps.fetch.timeoutMs, connections: deps.fetch.concurrency }),
  };
  const process = (job: Job<FetchJobData>, token?: string) => processFetch(deps, parts, job, token);
  const count = Math.min(WORKERS_PER_PROCESS, deps.fetch.concurrency);
  return Array.from(
    { length: count },
    (_, i) =>
      new Worker<FetchJobData>(FETCH_QUEUE, process, {
        connection: deps.connection,
        prefix: deps.prefix,
        // Split so the process runs at most WORKER_CONCURRENCY jobs at once.
        concurrency: concurrencyShare(deps.fetch.concurrency, count, i),
        settings: {
          backoffStrategy: (attemptsMade, type, err) => (type === FETCH_BACKOFF ? fetchBackoff(attemptsMade, err, deps.fetch) : 1000),
        },
      }),
  );
}

async function delay(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}

async function processFetch(deps: FetchWorkerDeps, parts: WorkerParts, job: Job<FetchJobData>, token?: string): Promise<string> {
  const { db } = deps;
  const { connections } = parts;
  const { companyId, href } = job.data;
  // Before the claim: rows that arrive while the job is held are claimed with the rest.
  await deps.admit?.();

  const company = await connections.get(companyId);
  if (!company) return 'company deleted';
  // 401/403 paused this company: wait, without touching its rows, until its token is replaced.
  if (company.paused) return delay(job, token, PAUSED_RECHECK_MS);

  // C5 slot and C4 claim, batched with the other running jobs.
  const start = await parts.starts.begin(companyId, href);
  if (start.kind === 'wait') return delay(job, token, start.waitMs);
  if (start.kind === 'empty') return 'nothing pending';
  const { claimed } = start;

  const fetchStartedAt = new Date();
  const result = await fetchResource(parts.marketplace, href, company.apiToken);
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  deps.metrics.fetchOutcomes.inc({ outcome: result.kind });
  const finished = (status: 'processed' | 'failed') => {
    const now = Date.now();
    for (const at of claimed.receivedAt) deps.metrics.processingLatency.observe({ status }, (now - at) / 1000);
  };

  switch (result.kind) {
    case 'ok':
      try {
        await parts.snapshots.store({ companyId, href, claimed, fetchStartedAt, resource: result.resource });
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
      if (!paused) {
        // Not this job's failure: fetch again with the new token (a follow-up job, no attempt spent).
        await deps.requeue(companyId, href);
        return 'token replaced meanwhile: queued again';
      }
      finished('failed');
      deps.log.warn({ companyId, jobId: job.id }, 'marketplace refused the company token; its fetches are paused until the token is replaced');
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
