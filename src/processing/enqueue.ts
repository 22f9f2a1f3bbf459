/**
 * Adding fetch jobs (the queue's contract is fetch.queue.ts): after each commit, one job per distinct
 * resource of the batch, deduplicated by BullMQ (C1-C3), while its company has a free place at its gate;
 * else its href is parked there until one frees (src/gate/, SPEC §5.1). One script (lua/admit-fetches.lua)
 * admits the batch and leaves out the adds BullMQ would ignore (their key's job covers them already), so
 * that under a flood BullMQ's dear add script runs only when it changes something.
 */
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Gate, HandedOut } from '../gate/gate.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { luaScript, type Script } from '../lib/redis/scripts.js';
import { withTimeout } from '../lib/timeout.js';
import type { SpanRef, Tracing } from '../lib/tracing.js';
import { fetchJobOptions, fetchKey, type FetchJob, type ResourceKey } from './fetch.queue.js';

/** Resources queued per enqueue when a company resumes. */
const RESUME_BATCH = 1000;

/** What lua/covered.lua reads of the queue: where BullMQ keeps its deduplication keys, its jobs and its delayed set. */
interface QueueKeys {
  dedup: string;
  job: string;
  delayed: string;
}

/** A committed row whose job is added after the commit (receiver/ingest.ts stored it `queued` when Redis was up). */
interface CommittedRow extends ResourceKey {
  id: number;
  status: 'received' | 'queued';
  /** The request's wait for the commit, when traces are exported: the job's trace continues from it. */
  trace?: SpanRef;
}

/** A resource to queue; a traced one's job carries its trace (the relay's and requeues' rows carry none). */
type Queued = ResourceKey & { trace?: SpanRef };

const idsIn = (rows: CommittedRow[], status: CommittedRow['status']) => rows.filter((r) => r.status === status).map((r) => r.id);

export class FetchEnqueuer {
  private redisDown = false;
  private readonly queueKeys: QueueKeys;
  private readonly admitScript: Script<number[]>;

  constructor(
    private readonly queue: Queue<FetchJob>,
    redis: RedisClient,
    private readonly notifications: Pick<NotificationLifecycle, 'queue' | 'unqueue' | 'pendingResources'>,
    /** The companies' gate (runtime.ts: kind `company`). */
    private readonly gate: Pick<Gate, 'fields' | 'pausedSet'>,
    private readonly opts: { attempts: number; timeoutMs: number },
    private readonly log: Logger,
    /** Set when traces are exported: each job added is a span, and carries its traceparent. */
    private readonly tracing?: Pick<Tracing, 'enqueue'>,
  ) {
    this.queueKeys = { dedup: `${queue.keys.de}:`, job: queue.keys['']!, delayed: queue.keys.delayed! };
    this.admitScript = luaScript(redis, 'skyhookAdmitFetches', new URL('./lua/admit-fetches.lua', import.meta.url));
  }

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
        () => this.notifications.queue(idsIn(rows, 'received')),
        (err: unknown) => {
          // Logged once per outage, not once per request.
          if (!this.redisDown) this.log.warn({ err: String(err), companyIds: companiesOf(rows) }, 'queueing after commit failed; the relay will queue these notifications');
          this.redisDown = true;
          return this.notifications.unqueue(idsIn(rows, 'queued'));
        },
      )
      .catch((err: unknown) => {
        // Left `queued` without a job: the relay's scan of long-queued rows adds it (relay.ts).
        this.log.warn({ err: String(err), companyIds: companiesOf(rows) }, 'setting notifications back to received failed; the relay will queue them again');
      });
  }

  /** Adds one job per distinct resource (deduplicated by BullMQ). Bounded in time; throws on failure. */
  async enqueue(rows: Queued[]): Promise<void> {
    const byKey = new Map<string, Queued>();
    // The first row of a key is the one whose trace the job continues.
    for (const r of rows) {
      const key = fetchKey(r);
      if (!byKey.has(key)) byKey.set(key, r);
    }
    await withTimeout(this.admitAndAdd([...byKey]), this.opts.timeoutMs, 'enqueue');
    this.redisDown = false;
  }

  /**
   * Adds the jobs of resources their company's gate handed out as a place freed: they had no job while
   * parked, so neither the precheck nor the admission is asked again.
   */
  async addHandedOut(handedOut: HandedOut[]): Promise<void> {
    const jobs = handedOut.map((h) => ({ companyId: h.id, href: h.payload, priority: h.priority }));
    await withTimeout(Promise.all(jobs.map((r) => this.add(fetchKey(r), r, r.priority))), this.opts.timeoutMs, 'enqueue');
  }

  /** Queues again every resource a company has pending (it resumed): read from PostgreSQL; answers how many. */
  async queueWaiting(companyId: string): Promise<number> {
    const resources = await this.notifications.pendingResources(companyId);
    for (let i = 0; i < resources.length; i += RESUME_BATCH) await this.enqueue(resources.slice(i, i + RESUME_BATCH));
    return resources.length;
  }

  /** Per resource, -1 (its key's job covers it already), 0 (parked at its company's gate) or its job's priority. */
  private async admitAndAdd(keyed: [string, Queued][]): Promise<void> {
    if (keyed.length === 0) return;
    const items = keyed.map(([key, row]) => ({ id: row.companyId, item: key, payload: row.href }));
    const admitted = await this.admitScript([this.gate.pausedSet], [JSON.stringify(this.gate.fields({ queue: this.queueKeys, items }))]);
    // One add per job, not addBulk: addBulk sends its adds through an ioredis pipeline, onto which ioredis
    // copies every script defined on the connection (BullMQ's 64), dearer than a batch's one or two adds.
    await Promise.all(keyed.flatMap(([key, row], i) => {
      const priority = admitted[i]!;
      return priority > 0 ? [this.add(key, row, priority)] : [];
    }));
  }

  private add(key: string, row: Queued, priority: number): Promise<unknown> {
    const data: FetchJob = { companyId: row.companyId, href: row.href };
    if (!this.tracing || !row.trace) return this.queue.add('fetch', data, fetchJobOptions(key, this.opts.attempts, priority));
    const send = this.tracing.enqueue(row.trace, { companyId: row.companyId, fetchKey: key });
    data.traceparent = send.traceparent;
    return this.queue.add('fetch', data, fetchJobOptions(key, this.opts.attempts, priority)).then(
      (job) => send.added(job.id),
      (err: unknown) => {
        send.failed(err);
        throw err;
      },
    );
  }
}

const companiesOf = (rows: CommittedRow[]): string[] => [...new Set(rows.map((r) => r.companyId))];
