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

/** A committed row whose job is added after the commit (receiver/ingest.ts stored it `queued` when Redis was up). */
export interface CommittedRow extends FetchKeyRow {
  status: 'received' | 'queued';
}

const idsIn = (rows: CommittedRow[], status: CommittedRow['status']) => rows.filter((r) => r.status === status).map((r) => r.id);

export class FetchEnqueuer {
  private redisDown = false;

  constructor(
    private readonly queue: Queue<FetchJobData>,
    private readonly pool: pg.Pool,
    private readonly opts: { attempts: number; timeoutMs: number },
    private readonly log: Logger,
  ) {}

  /** Whether newly committed rows can be stored `queued`: false from a failed add until one succeeds. */
  get queueing(): boolean {
    return !this.redisDown;
  }

  /**
   * Called once rows are committed. Never awaited by a request: if Redis is slow or down, rows stored
   * `queued` go back to `received` and the relay queues them when it is back; rows stored `received`
   * (Redis was known to be down) become `queued` if the add succeeds after all.
   */
  afterCommit(rows: CommittedRow[]): void {
    if (rows.length === 0) return;
    void this.enqueue(rows)
      .then(
        () => this.moveStatus(idsIn(rows, 'received'), 'received', 'queued'),
        (err: unknown) => {
          // Logged once per outage, not once per request.
          if (!this.redisDown) this.log.warn({ err: String(err) }, 'queueing after commit failed; the relay will queue these notifications');
          this.redisDown = true;
          return this.moveStatus(idsIn(rows, 'queued'), 'queued', 'received');
        },
      )
      .catch((err: unknown) => {
        // Left `queued` without a job: the relay's scan of long-queued rows adds it (relay.ts).
        this.log.warn({ err: String(err) }, 'setting notifications back to received failed; the relay will queue them again');
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

  markQueued(ids: number[]): Promise<void> {
    return this.moveStatus(ids, 'received', 'queued');
  }

  /** Rows still `from` become `to`; a row a worker has moved on meanwhile is left alone. */
  private async moveStatus(ids: number[], from: CommittedRow['status'], to: CommittedRow['status']): Promise<void> {
    if (ids.length === 0) return;
    await this.pool.query(`UPDATE notifications SET status = $2 WHERE id = ANY($1::bigint[]) AND status = $3`, [ids, to, from]);
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
