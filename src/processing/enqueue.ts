/**
 * Adding fetch jobs (the queue's contract is fetch.queue.ts): after each commit, one job per distinct
 * resource of the batch, deduplicated by BullMQ (C1-C3), while its company has a free slot; else its href
 * is parked at the company's gate until one frees (company-gate.ts, SPEC §5.1).
 *
 * Under a flood most adds find their key's job still waiting, and BullMQ's add script then does nothing
 * useful at a high price. So each batch first asks, in one small script, which adds BullMQ would ignore,
 * and makes only the rest: a speed mechanism kept for its measured gain (docs/decisions.md, "Speed
 * mechanisms").
 */
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import { type RedisClient } from '../lib/redis/connection.js';
import { redisScript } from '../lib/redis/scripts.js';
import { withTimeout } from '../lib/timeout.js';
import type { SpanRef, Tracing } from '../lib/tracing.js';
import type { Admitted, CompanyGate } from './company-gate.js';
import { fetchJobOptions, fetchKey, type FetchJob, type ResourceKey } from './fetch.queue.js';

/**
 * 1 for each key whose add BullMQ would ignore, else 0. Mirrors the deduplicate path of BullMQ's add
 * script (keepLastIfActive): the key's job exists and
 *  - is not active (waiting, or delayed): the add does nothing (C1). Safe to skip: when the job runs it
 *    claims every row committed before its claim, and this batch's rows are committed before this check;
 *  - or is active and its follow-up is already stored (`dn:<id>`): the add would only store the same
 *    follow-up again (C2). The follow-up job is created when the active one ends and claims these rows.
 * Anything else (no job, a job whose hash is gone, an active job without a follow-up) gets BullMQ's add.
 * "Active" is read from the job itself, in constant time: BullMQ sets `processedOn` in the same script
 * that moves a job to `active`, and an active job is not in the `delayed` set. A job that ran before and
 * waits again (a retry, a stalled job) also counts as active: the side that adds.
 * Reads BullMQ's key layout (`de:<id>` holds the job id; the job is the hash `<queue>:<jobId>`; `delayed`
 * is a sorted set); test/integration/fetch-queue.test.ts holds it to the pinned BullMQ's behaviour.
 */
const ADD_WOULD_BE_NO_OP = `
local prefix, delayed = ARGV[1], ARGV[2]
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = 0
  local id = redis.call('GET', key)
  if id and redis.call('EXISTS', prefix .. id) == 1 then
    local mayBeActive = redis.call('HEXISTS', prefix .. id, 'processedOn') == 1 and not redis.call('ZSCORE', delayed, id)
    if not mayBeActive or redis.call('EXISTS', prefix .. 'dn:' .. ARGV[i + 2]) == 1 then out[i] = 1 end
  end
end
return out`;

type AddWouldBeNoOp = (keys: string[]) => Promise<number[]>;

function addWouldBeNoOp(redis: RedisClient, queue: Queue<FetchJob>): AddWouldBeNoOp {
  const script = redisScript<number[]>(redis, 'skyhookAddWouldBeNoOp', ADD_WOULD_BE_NO_OP);
  return (keys) => script(keys.map((key) => `${queue.keys.de}:${key}`), [queue.keys['']!, queue.keys.delayed!, ...keys]);
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
  private readonly addWouldBeNoOp: AddWouldBeNoOp;

  constructor(
    private readonly queue: Queue<FetchJob>,
    /** The connection the queue was created on. */
    private readonly redis: RedisClient,
    private readonly notifications: Pick<NotificationLifecycle, 'queue' | 'unqueue'>,
    private readonly gate: Pick<CompanyGate, 'admit'>,
    private readonly opts: { attempts: number; timeoutMs: number },
    private readonly log: Logger,
    /** Set when traces are exported: each job added is a span, and carries its traceparent. */
    private readonly tracing?: Pick<Tracing, 'enqueue'>,
  ) {
    this.addWouldBeNoOp = addWouldBeNoOp(redis, queue);
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
    await withTimeout(this.addUnlessNoOp([...byKey]), this.opts.timeoutMs, 'enqueue');
    this.redisDown = false;
  }

  /**
   * Adds the jobs of resources their company's gate admitted as a place freed (company-gate.ts): they had
   * no job while parked, so neither the precheck nor the admission is asked again.
   */
  async addAdmitted(resources: Admitted[]): Promise<void> {
    await withTimeout(Promise.all(resources.map((r) => this.add(fetchKey(r), r, r.priority))), this.opts.timeoutMs, 'enqueue');
  }

  private async addUnlessNoOp(keyed: [string, Queued][]): Promise<void> {
    if (keyed.length === 0) return;
    const noOp = await this.addWouldBeNoOp(keyed.map(([key]) => key));
    const candidates = keyed.filter((_, i) => noOp[i] !== 1);
    if (candidates.length === 0) return;
    const priorities = await this.gate.admit(candidates.map(([key, row]) => ({ companyId: row.companyId, href: row.href, fetchKey: key })));
    // One add per job, not addBulk: addBulk sends its adds through an ioredis pipeline, onto which ioredis
    // copies every script defined on the connection (BullMQ's 64), dearer than a batch's one or two adds.
    await Promise.all(candidates.flatMap(([key, row], i) => (priorities[i] ? [this.add(key, row, priorities[i])] : [])));
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
