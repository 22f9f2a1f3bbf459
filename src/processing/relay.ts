/**
 * The relay (transactional outbox): queues notifications that were committed but never queued,
 * for example while Redis was down, within seconds of Redis being back. It also re-adds a job for
 * rows left `queued` for long (a Redis that lost its data, or an api process that died between a commit
 * and its add: receiver/ingest.ts inserts rows `queued`); BullMQ deduplication makes that a no-op
 * for keys whose job still exists; when Redis restarted (its run_id changed; on a cluster, any master's)
 * it does so at once, since a Redis without persistence comes back empty. Safe to run in every process:
 * rows are taken with SKIP LOCKED.
 */
import type { Logger } from 'pino';
import { every } from '../lib/every.js';
import type { NotificationLifecycle, ResourceRef } from '../notifications/lifecycle.js';
import type { FetchEnqueuer } from './enqueue.js';

const BATCH = 1000;
const STALE_QUEUED_MS = 60_000;

export class Relay {
  private loop: { stop: () => Promise<void> } | undefined;
  private lastStaleScan = 0;
  private lastRunId: string | undefined;
  /** Where the stale scan resumes: the last key it re-added. */
  private staleCursor: ResourceRef | undefined;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'queueUnqueued' | 'staleQueuedKeys'>,
    private readonly enqueuer: Pick<FetchEnqueuer, 'enqueue'>,
    private readonly opts: { intervalMs: number; graceMs: number },
    private readonly log: Logger,
    /** Redis's run_id (on a cluster, its masters'): a change says Redis restarted, maybe empty (lib/redis/connection.ts redisRunId). */
    private readonly redisRunId: () => Promise<string | undefined>,
    /** A pass that failed (Redis or PostgreSQL down, say): the next pass tries again. */
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.loop = every(this.opts.intervalMs, () => this.runOnce(), this.onError);
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  /** Queues what is waiting; returns how many notifications it queued. Throws when Redis is down. */
  async runOnce(): Promise<number> {
    let total = 0;
    const byCompany: Record<string, { queued: number }> = {};
    for (;;) {
      const n = await this.queueUnqueued(byCompany);
      total += n;
      if (n < BATCH) break;
    }
    const runId = await this.redisRunId();
    const restarted = this.lastRunId !== undefined && runId !== undefined && runId !== this.lastRunId;
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
    this.lastRunId = runId ?? this.lastRunId;
    if (total > 0) this.log.info({ count: total, byCompany }, 'relay queued notifications that were committed but not queued');
    return total;
  }

  /** In one transaction: the rows are locked, their jobs added, and they become `queued`; a failed add leaves them `received`. */
  private async queueUnqueued(byCompany: Record<string, { queued: number }>): Promise<number> {
    const rows = await this.notifications.queueUnqueued(this.opts.graceMs, BATCH, (rows) => this.enqueuer.enqueue(rows));
    // Counted once committed: the log line names the companies whose notifications it queued.
    for (const r of rows) (byCompany[r.companyId] ??= { queued: 0 }).queued++;
    return rows.length;
  }

  /**
   * Re-adds a job for the next page of keys (company, href) that have rows left `queued` for longer than
   * `olderThanMs`; deduplication makes that a no-op for keys whose job still exists. Returns whether more
   * pages follow.
   */
  private async requeueStale(olderThanMs: number): Promise<boolean> {
    const rows = await this.notifications.staleQueuedKeys(olderThanMs, this.staleCursor, BATCH);
    if (rows.length > 0) await this.enqueuer.enqueue(rows);
    const last = rows.at(-1);
    this.staleCursor = rows.length === BATCH && last ? last : undefined;
    return this.staleCursor !== undefined;
  }
}
