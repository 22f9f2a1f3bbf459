/**
 * The `fetch` queue: one job per (company, href). The coalescing rules of SPEC §5 come from BullMQ
 * deduplication in keepLastIfActive mode, keyed by (company, href):
 *  - C1: while the key's job waits (or is delayed), adding again is a no-op;
 *  - C2: adding while it runs stores exactly one follow-up job, created when the running one ends;
 *  - C3: so at most one job per key exists outside "waiting for the active one", hence runs at a time;
 *  - C5 is enforced by the worker (fetch-start.ts: a slot per key); C4 by the worker's claim of pending rows.
 */
import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type pg from 'pg';
import type { Logger } from 'pino';
import { withTimeout, type RedisClient } from '../lib/redis.js';

export const FETCH_QUEUE = 'fetch';
export const FETCH_BACKOFF = 'fetch-backoff';

export interface FetchJobData {
  companyId: string;
  href: string;
}

export interface FetchKeyRow {
  id: number;
  companyId: string;
  href: string;
}

/** The coalescing key of (company, href); hashed so a long href makes no long Redis key. */
export const fetchKey = (companyId: string, href: string): string =>
  `${companyId}:${createHash('sha256').update(href).digest('base64url').slice(0, 32)}`;

export function createFetchQueue(connection: RedisClient, prefix: string): Queue<FetchJobData> {
  return new Queue<FetchJobData>(FETCH_QUEUE, { connection, prefix });
}

/**
 * How long `queued` marks gather before one UPDATE writes them. The mark is bookkeeping (the job is
 * in Redis already), so it need not be immediate: at a steady trickle this is a few UPDATEs a second
 * instead of one per commit, and a row processed meanwhile is simply never marked.
 */
const MARK_QUEUED_EVERY_MS = 250;

export class FetchEnqueuer {
  private redisDown = false;
  private unmarked: number[] = [];
  private markTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly queue: Queue<FetchJobData>,
    private readonly pool: pg.Pool,
    private readonly opts: { attempts: number; timeoutMs: number },
    private readonly log: Logger,
  ) {}

  /**
   * Called once rows are committed. Never awaited by a request: if Redis is slow or down the rows
   * stay `received` and the relay queues them when it is back.
   */
  afterCommit(rows: FetchKeyRow[]): void {
    if (rows.length === 0) return;
    void this.enqueue(rows)
      .then(() => this.markQueuedSoon(rows.map((r) => r.id)))
      .catch((err) => {
        // Logged once per outage, not once per request.
        if (!this.redisDown) this.log.warn({ err: String(err) }, 'queueing after commit failed; the relay will queue these notifications');
        this.redisDown = true;
      });
  }

  /** Adds one job per distinct key (deduplicated by BullMQ). Bounded in time; throws on failure. */
  async enqueue(rows: Pick<FetchKeyRow, 'companyId' | 'href'>[]): Promise<void> {
    const byKey = new Map<string, FetchJobData>();
    for (const r of rows) byKey.set(fetchKey(r.companyId, r.href), { companyId: r.companyId, href: r.href });
    const jobs = [...byKey].map(([key, data]) => ({ name: 'fetch', data, opts: this.jobOptions(key) }));
    await withTimeout(this.queue.addBulk(jobs), this.opts.timeoutMs, 'enqueue');
    this.redisDown = false;
  }

  async markQueued(ids: number[]): Promise<void> {
    // Only `received` rows: a fast worker may already have processed them.
    await this.pool.query(`UPDATE notifications SET status = 'queued' WHERE id = ANY($1::bigint[]) AND status = 'received'`, [ids]);
  }

  /** A row left `received` (a mark lost to a failure or a shutdown) is queued again by the relay: deduplication makes that harmless. */
  private markQueuedSoon(ids: number[]): void {
    for (const id of ids) this.unmarked.push(id);
    this.markTimer ??= setTimeout(() => {
      const marks = this.unmarked;
      this.unmarked = [];
      this.markTimer = undefined;
      this.markQueued(marks).catch((err) => this.log.debug({ err: String(err) }, 'marking notifications queued failed; the relay will queue them again'));
    }, MARK_QUEUED_EVERY_MS).unref();
  }

  private jobOptions(key: string): JobsOptions {
    return {
      deduplication: { id: key, keepLastIfActive: true },
      attempts: this.opts.attempts,
      backoff: { type: FETCH_BACKOFF },
      removeOnComplete: true,
      removeOnFail: { count: 1000 },
    };
  }
}
