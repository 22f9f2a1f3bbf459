/**
 * The relay (transactional outbox): queues notifications that were committed but never queued,
 * for example while Redis was down, within seconds of Redis being back. It also re-adds a job for
 * rows left `queued` for long (a Redis that lost its data, or an api process that died between a commit
 * and its add: receiver/ingest.ts inserts rows `queued`); BullMQ deduplication makes that a no-op
 * for keys whose job still exists; when Redis restarted (its run_id changed; on a cluster, any master's)
 * it does so at once, since a Redis without persistence comes back empty. Safe to run in every process:
 * rows are taken with SKIP LOCKED.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { redisRunId, type RedisClient } from '../lib/redis.js';
import type { FetchEnqueuer } from './fetch-queue.js';

const BATCH = 1000;
const STALE_QUEUED_MS = 60_000;

interface KeyRow {
  id: string;
  company_id: string;
  href: string;
}

export class Relay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastStaleScan = 0;
  private redisRunId: string | undefined;
  /** Where the stale scan resumes: the last key it re-added. */
  private staleCursor: { companyId: string; href: string } | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly enqueuer: FetchEnqueuer,
    private readonly opts: { intervalMs: number; graceMs: number },
    private readonly log: Logger,
    private readonly redis: RedisClient,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.runOnce().catch(() => 0).then(() => (this.running = undefined));
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Queues what is waiting; returns how many notifications it queued. Throws when Redis is down. */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.queueUnqueued();
      total += n;
      if (n < BATCH) break;
    }
    const runId = await redisRunId(this.redis);
    const restarted = this.redisRunId !== undefined && runId !== undefined && runId !== this.redisRunId;
    if (restarted) {
      // An empty Redis lost every job: all keys with queued rows get one again, page by page.
      this.log.warn('Redis restarted: queueing again every notification left queued');
      this.staleCursor = undefined;
      let more = true;
      while (more) more = await this.requeueStale(0);
      this.lastStaleScan = Date.now();
    } else if (Date.now() - this.lastStaleScan > STALE_QUEUED_MS / 2) {
      // One page per pass, resumed where the last pass stopped: every key is reached in turn.
      await this.requeueStale(STALE_QUEUED_MS);
      this.lastStaleScan = Date.now();
    }
    // Only once its requeue has succeeded: a failure (Redis still loading, say) is retried next pass.
    this.redisRunId = runId ?? this.redisRunId;
    if (total > 0) this.log.info({ count: total }, 'relay queued notifications that were committed but not queued');
    return total;
  }

  private async queueUnqueued(): Promise<number> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<KeyRow>(
        `SELECT id, company_id, href FROM notifications
         WHERE status = 'received' AND received_at < now() - make_interval(secs => $1::double precision / 1000)
         ORDER BY received_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
        [this.opts.graceMs],
      );
      if (rows.length > 0) {
        await this.enqueuer.enqueue(rows.map((r) => ({ companyId: r.company_id, href: r.href })));
        await client.query(`UPDATE notifications SET status = 'queued' WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
      }
      await client.query('COMMIT');
      return rows.length;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Re-adds a job for the next page of keys (company, href) that have rows left `queued` for longer than
   * `olderThanMs`; deduplication makes that a no-op for keys whose job still exists. Returns whether more
   * pages follow.
   */
  private async requeueStale(olderThanMs: number): Promise<boolean> {
    const after = this.staleCursor;
    const { rows } = await this.pool.query<{ company_id: string; href: string }>(
      `SELECT DISTINCT company_id, href FROM notifications
       WHERE status = 'queued' AND received_at < now() - make_interval(secs => $1::double precision / 1000)
         AND ($2::uuid IS NULL OR (company_id, href) > ($2::uuid, $3::text))
       ORDER BY company_id, href LIMIT ${BATCH}`,
      [olderThanMs, after?.companyId ?? null, after?.href ?? null],
    );
    if (rows.length > 0) await this.enqueuer.enqueue(rows.map((r) => ({ companyId: r.company_id, href: r.href })));
    const last = rows.at(-1);
    this.staleCursor = rows.length === BATCH && last ? { companyId: last.company_id, href: last.href } : undefined;
    return this.staleCursor !== undefined;
  }
}
