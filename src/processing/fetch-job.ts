/**
 * Where a notification's resource is fetched: one fetch job, as a plain function of narrow dependencies
 * (runJob below, its dependencies built in runtime.ts), top to bottom:
 * 1. for one resource of a company it claims the pending notifications, then passes the company's gate
 *    and reserves the C5 slot, batched with the other starting jobs (FetchStarts; src/gate/);
 * 2. GETs the href exactly as received with the company's token, through the one marketplace client
 *    (SPEC §5, §14), and classifies the answer (fetchResource);
 * 3. applies what the answer means to the claimed notifications (applyOutcome, SPEC §5):
 *    - 2xx: the snapshot is stored, with what changed (snapshots.ts); the notifications are processed;
 *    - 404/410: processed, outcome `gone`; the stored snapshot is kept and flagged;
 *    - a soft error, another 4xx: failed;
 *    - 401/403, or client credentials the token endpoint refused: the company paused until its credentials
 *      are replaced (unless they were replaced meanwhile), the notifications left waiting (SPEC §5.1 F4);
 *    - a network error, a timeout, 408, 429, 5xx: retried with backoff, failed after the last attempt;
 * 4. tells the gate how the marketplace answered (a 429 holds the company, SPEC §5.1 F3).
 * Every attempt is recorded with the notifications it covered (notifications/postgres.ts). Rows that
 * arrive while it runs are not claimed: BullMQ (keepLastIfActive) runs one more job for the resource
 * afterwards (C2). At the bottom, BullMQ's side (createFetchWorker): the payload checked, the job run, and
 * its end turned into BullMQ's (done, delayed without an attempt, retried with backoff).
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { CLAIM_LIMIT, type Claimed, type FetchAttempt, type FetchedSnapshot, type NotificationLifecycle, type Stored } from '../notifications/lifecycle.js';
import type { BatchSummary } from '../lib/batch-summary.js';
import type { Metrics } from '../lib/metrics.js';
import { Batcher } from '../lib/batcher.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { endsWith, type FetchSpan, type Tracing } from '../lib/tracing.js';
import { dataOf, isTransientStatus, MarketplaceError, MAX_ANSWER_BYTES, parseRetryAfter, softErrors, type ApiConnection, type MarketplaceClient } from '../marketplace/client.js';
import type { CompanyConnection } from '../companies/connections.js';
import type { CompanyStates } from '../companies/states.js';
import type { Gate, GateAnswer, GateStartRequest } from '../gate/gate.js';
import { FETCH_QUEUE, fetchJobSchema, fetchKey, fetchWorkerOptions, RetryableFetchError, type FetchJob, type ResourceKey } from './fetch.queue.js';
import { changesBetween } from './snapshots.js';
export interface FetchJobDeps extends OutcomeDeps {
  /** Role `all`: resolves when a job may start; a flooded receiver holds processing (ingest-first.ts). */
  admit?: () => Promise<void>;
  company(companyId: string): Promise<CompanyConnection | null>;
  /** The C4 claim, then the company's gate and the C5 slot (FetchStarts). */
  begin(request: StartRequest): Promise<FetchStart>;
  /** Frees the job's place at its company's gate, with what the marketplace answered (src/gate/). */
  finish(resource: FetchJob, max: number, answer: GateAnswer): void;
  get(href: string, connection: ApiConnection): Promise<FetchResult>;
  metrics: Pick<Metrics, 'fetchOutcomes' | 'processingLatency'>;
  /** Counts the notifications each fetch finished, by company and outcome, for the per-batch log line. */
  finished: Pick<BatchSummary, 'add'>;
}

/** What the job asks of its queue when it ends. */
export type JobEnd =
  | { next: 'done'; summary: string }
  /** Try again in `ms` without spending an attempt (the C5 slot is taken, the company is held or paced). */
  | { next: 'delay'; ms: number }
  /** Spend an attempt and try again with backoff. */
  | { next: 'retry'; error: Error };

export async function runFetchJob(
  deps: FetchJobDeps,
  job: { resource: FetchJob; attemptsMade: number; attempts: number; /** This run's span, when traces are exported. */ trace?: FetchSpan },
): Promise<JobEnd> {
  const { resource, trace } = job;
  // Before the claim: rows that arrive while the job is held are claimed with the rest.
  await deps.admit?.();

  const company = await deps.company(resource.companyId);
  if (!company) return { next: 'done', summary: 'company deleted' };

  // The C4 claim, then the company's gate and the C5 slot, batched with the other starting jobs.
  const start = await deps.begin({ resource, max: company.maxFetches, paused: company.paused, retried: job.attemptsMade > 0 });
  if (start.kind === 'wait') return { next: 'delay', ms: start.waitMs };
  // Its href waits in the gate's parked set, no job for it, until its company has a slot or new credentials.
  if (start.kind === 'park') return { next: 'done', summary: 'parked' };
  if (start.kind === 'empty') {
    deps.finish(resource, company.maxFetches, { kind: 'none' });
    return { next: 'done', summary: 'nothing pending' };
  }
  const { claimed } = start;
  trace?.claimed(claimed.ids);

  const startedAt = deps.now();
  const get = trace?.get(resource.href, job.attemptsMade);
  let result: FetchResult;
  try {
    result = await deps.get(resource.href, company.connection);
  } catch (err) {
    get?.end(undefined, err);
    deps.finish(resource, company.maxFetches, { kind: 'none' });
    throw err;
  }
  get?.end(result);
  deps.metrics.fetchOutcomes.inc({ outcome: result.kind });
  let applied;
  try {
    applied = await applyOutcome(result, { resource, company, claimed, startedAt, attemptsMade: job.attemptsMade, lastAttempt: job.attemptsMade + 1 >= job.attempts, trace }, deps);
  } finally {
    deps.finish(resource, company.maxFetches, gateAnswer(result));
  }
  if (applied.final) {
    const now = Date.now();
    for (const at of claimed.receivedAt) deps.metrics.processingLatency.observe({ status: applied.final }, (now - at) / 1000);
    deps.finished.add(resource.companyId, result.kind === 'gone' && applied.final === 'processed' ? 'gone' : applied.final, claimed.ids.length);
  }
  if (applied.next === 'retry') return { next: 'retry', error: applied.error };
  // The company is paused (companies/ says so in the log): its notifications wait, parked.
  if (applied.next === 'parked') return { next: 'done', summary: 'parked' };
  // One claim takes at most CLAIM_LIMIT rows: the rest of a large backlog gets a job of its own.
  if (claimed.ids.length >= CLAIM_LIMIT) await deps.requeue(resource);
  return { next: 'done', summary: result.kind };
}

/** What an answer tells the company's gate: a refusal to go faster holds the company (SPEC §5.1 F3). */
function gateAnswer(result: FetchResult): GateAnswer {
  // A refusal of the credentials pauses the company (applyOutcome): it says nothing of its pace.
  if (result.kind === 'unauthorized') return { kind: 'none' };
  if (result.kind !== 'retry') return { kind: 'answered' };
  if (result.noAnswer) return { kind: 'no_answer', why: result.message };
  if (result.status === 429 || (result.status === 503 && result.retryAfterMs !== undefined)) {
    return { kind: 'throttled', retryAfterMs: result.retryAfterMs, why: result.message };
  }
  return { kind: 'answered' };
}

// 1. The start: the claim, the gate, the C5 slot.

export type FetchStart =
  /** The key's previous fetch started less than FETCH_MIN_INTERVAL_MS ago, or its company is held or paced: try again in `waitMs`. */
  | { kind: 'wait'; waitMs: number }
  /** The company is paused or at its limit: the href is parked at its gate until it has a place. */
  | { kind: 'park' }
  /** Nothing is pending for the key (an earlier fetch covered it). */
  | { kind: 'empty' }
  /** The slot is reserved and these rows, committed before now, are what this fetch covers (C4). */
  | { kind: 'claimed'; claimed: Claimed };

/** What a starting job tells the gate about itself. */
export interface StartRequest extends Pick<GateStartRequest, 'max' | 'paused' | 'retried'> {
  resource: ResourceKey;
}

/**
 * The start of a fetch, batched across the worker's concurrent jobs: first one SELECT claims the pending
 * notifications of every job in the batch (C4: what a fetch starting now covers); then, for the jobs that
 * found something pending, one Redis script passes each company's gate (src/gate/: paused, held, paced,
 * at its limit) and reserves the C5 fetch slot, right before the GET. A job whose slot is taken or whose
 * company is held waits (it is delayed; what it claimed is claimed again when it starts again); a parked
 * one ends; a job with nothing pending reserves nothing, so the next notification for that key is
 * fetched at once.
 */
export class FetchStarts {
  private readonly batcher: Batcher<StartRequest, FetchStart>;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'claimPending'>,
    /** The companies' gate. */
    private readonly gate: Pick<Gate, 'start'>,
    private readonly prefix: string,
    private readonly minIntervalMs: number,
  ) {
    // Not split on failure (as writes are): nothing here fails for one key alone. A failed batch fails its
    // jobs, which BullMQ retries; it reserved no slot if its claim failed.
    this.batcher = new Batcher(async (keys) => (await this.startMany(keys)).map((value) => ({ ok: true, value })), { maxBatch: 500 });
  }

  begin(request: StartRequest): Promise<FetchStart> {
    return this.batcher.add(request);
  }

  /**
   * The claim before the gate: the C5 slot is reserved once the claim is done, right before the GET, and
   * only for a fetch that will happen (C5 is about when the marketplace sees the GETs).
   */
  private async startMany(requests: StartRequest[]): Promise<FetchStart[]> {
    const claims = await this.notifications.claimPending(requests.map((r) => r.resource));
    const pending = requests.flatMap((r, i) => (claims[i] ? [i] : []));
    const gated = await this.gate.start(
      pending.map((i) => {
        const r = requests[i]!;
        const key = fetchKey(r.resource);
        return { id: r.resource.companyId, item: key, payload: r.resource.href, max: r.max, paused: r.paused, retried: r.retried, slot: `${this.prefix}:fetch-slot:${key}` };
      }),
      this.minIntervalMs,
    );
    const starts: FetchStart[] = requests.map(() => ({ kind: 'empty' }));
    pending.forEach((i, n) => {
      const gate = gated[n]!;
      starts[i] = gate.kind === 'go' ? { kind: 'claimed', claimed: claims[i]! } : gate.kind === 'wait' ? { kind: 'wait', waitMs: gate.ms } : { kind: 'park' };
    });
    return starts;
  }
}

// 2. The GET, and what its answer is.

/** What one GET found; `status` is the HTTP status, null when no answer came (a network error, a timeout). */
export type FetchResult =
  | { kind: 'ok'; status: number; resource: unknown }
  | { kind: 'soft_error'; status: number; message: string }
  | { kind: 'gone'; status: number }
  /** `status` null: the OAuth token endpoint refused the client credentials, so the GET was never sent. */
  | { kind: 'unauthorized'; status: number | null; message: string }
  /** `noAnswer` says why no answer came (status null). */
  | { kind: 'retry'; status: number | null; message: string; retryAfterMs?: number; noAnswer?: 'timeout' | 'network' }
  | { kind: 'failed'; status: number; message: string };

/** What a 401 or 403 refused, in the admin's words. */
function refusedWhat(conn: ApiConnection, status: number): string {
  if (conn.oauth) return status === 401 ? 'the OAuth access token was refused, a newly fetched one too' : 'the OAuth access token was refused';
  return conn.profile === 'avinode' ? 'the auth token or API token was refused' : 'the API token was refused';
}

export async function fetchResource(client: MarketplaceClient, href: string, conn: ApiConnection): Promise<FetchResult> {
  let answer;
  try {
    answer = await client.exchange(href, conn);
  } catch (err) {
    if (err instanceof MarketplaceError && err.kind === 'token_refused') return { kind: 'unauthorized', status: null, message: err.message };
    // The notification keeps its href: its error says what went wrong, not where (failures group by reason).
    const request = `GET ${href}`;
    if (err instanceof MarketplaceError) {
      const message = err.message.startsWith(request) ? `the GET ${err.message.slice(request.length).trim()}` : err.message;
      return { kind: 'retry', status: null, message, noAnswer: err.kind === 'timeout' ? 'timeout' : 'network' };
    }
    throw err;
  }
  const { status, text } = answer;
  if (status === 401 || status === 403) return { kind: 'unauthorized', status, message: `marketplace answered ${status}: ${refusedWhat(conn, status)}` };
  if (status === 404 || status === 410) return { kind: 'gone', status };
  if (isTransientStatus(status)) return { kind: 'retry', status, message: `marketplace answered ${status}`, retryAfterMs: parseRetryAfter(answer.header('retry-after')) };
  if (status < 200 || status >= 300) return { kind: 'failed', status, message: `marketplace answered ${status}` };
  if (text === null) return { kind: 'failed', status, message: `resource larger than ${MAX_ANSWER_BYTES} bytes` };

  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // A 2xx without JSON is taken for a passing fault (a proxy's page, say): asked again with backoff.
    return { kind: 'retry', status, message: `marketplace answered ${status} without a JSON body` };
  }
  const errors = softErrors(body);
  if (errors) return { kind: 'soft_error', status, message: errors };
  return { kind: 'ok', status, resource: dataOf(body) };
}

// 3. What each answer does to the claimed notifications.

/** One fetch as its outcome sees it. */
interface FetchContext {
  resource: ResourceKey;
  company: CompanyConnection;
  claimed: Claimed;
  startedAt: Date;
  /** Attempts of this job made before this one. */
  attemptsMade: number;
  /** Whether this is the job's last attempt. */
  lastAttempt: boolean;
  /** The run's span, when traces are exported: storing the snapshot is a span under it. */
  trace?: FetchSpan;
}

export interface OutcomeDeps {
  retry: NotificationLifecycle['retry'];
  fail: NotificationLifecycle['fail'];
  /** Stores the snapshot (batched with the other running jobs) and processes what it covers. */
  store(snapshot: FetchedSnapshot): Promise<Stored>;
  /** 404/410: the snapshot flagged gone and the attempt recorded, together. */
  markGone(attempt: FetchAttempt): Promise<void>;
  /** 401/403: the company paused if the refused credentials are still its own, the href parked (companies/); false: replaced meanwhile. */
  pause: CompanyStates['pause'];
  /** Forgets the cached connection of a company whose token was refused. */
  forgetCompany(companyId: string): void;
  requeue(resource: ResourceKey): Promise<void>;
  now(): Date;
}

/** What became of the covered notifications, and what the job does next. */
type Applied =
  | { final: 'processed' | 'failed' | null; next: 'done' }
  /** The company was paused: the notifications wait, parked, for its new credentials. */
  | { final: null; next: 'parked' }
  /** Spend an attempt and try again with backoff (BullMQ's retry). */
  | { final: null; next: 'retry'; error: Error };

const attemptOf = (ctx: FetchContext, result: FetchResult, finishedAt: Date, outcome: FetchAttempt['outcome'], error: string | null): FetchAttempt => ({
  companyId: ctx.resource.companyId,
  href: ctx.resource.href,
  startedAt: ctx.startedAt,
  finishedAt,
  httpStatus: result.status,
  outcome,
  error,
  ids: ctx.claimed.ids,
});

const gaveUp = (ctx: FetchContext, why: string) => `gave up after ${ctx.attemptsMade + 1} attempts: ${why}`;

async function stored(result: Extract<FetchResult, { kind: 'ok' }>, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  const span = ctx.trace?.snapshot();
  try {
    await endsWith(
      span,
      deps.store({
        companyId: ctx.resource.companyId,
        href: ctx.resource.href,
        claimed: ctx.claimed,
        fetchStartedAt: ctx.startedAt,
        fetchFinishedAt: deps.now(),
        httpStatus: result.status,
        resource: result.resource,
        changes: changesBetween(ctx.claimed.previous, result.resource),
        trace: span,
      }),
    );
    return { final: 'processed', next: 'done' };
  } catch (err) {
    // A handler (or the store) failed: its transaction rolled back, nothing is half-written.
    const why = `storing the snapshot failed: ${err instanceof Error ? err.message : String(err)}`;
    return retryOrFail(result, ctx, deps, why, err instanceof Error ? err : new Error(why));
  }
}

/** An attempt to try again: recorded, and BullMQ retries the job with backoff; on the last attempt, the notifications fail. */
async function retryOrFail(result: FetchResult, ctx: FetchContext, deps: OutcomeDeps, why: string, error: Error): Promise<Applied> {
  if (ctx.lastAttempt) {
    await deps.fail(attemptOf(ctx, result, deps.now(), 'failed', why), gaveUp(ctx, why));
    return { final: 'failed', next: 'done' };
  }
  await deps.retry(attemptOf(ctx, result, deps.now(), 'retry', why));
  return { final: null, next: 'retry', error };
}

async function gone(result: Extract<FetchResult, { kind: 'gone' }>, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  await deps.markGone(attemptOf(ctx, result, deps.now(), 'gone', null));
  return { final: 'processed', next: 'done' };
}

async function refused(result: Extract<FetchResult, { kind: 'soft_error' | 'failed' }>, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  const error = result.kind === 'soft_error' ? `soft error: ${result.message}` : result.message;
  await deps.fail(attemptOf(ctx, result, deps.now(), result.kind, result.message), error);
  return { final: 'failed', next: 'done' };
}

async function unauthorized(result: Extract<FetchResult, { kind: 'unauthorized' }>, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  const { companyId, href } = ctx.resource;
  deps.forgetCompany(companyId);
  // Recorded, and its notifications stay pending: parked at the paused company's gate, none failed (F4).
  await deps.retry(attemptOf(ctx, result, deps.now(), 'unauthorized', result.message));
  const paused = await deps.pause(companyId, { revision: ctx.company.revision, reason: `GET ${href}: ${result.message}`, hrefs: [href] });
  if (paused) return { final: null, next: 'parked' };
  // Not this job's failure: the token was replaced meanwhile; fetch again with it (no attempt spent).
  await deps.requeue(ctx.resource);
  return { final: null, next: 'done' };
}

/** Applies one GET's answer to the notifications the fetch covered. */
export function applyOutcome(result: FetchResult, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  switch (result.kind) {
    case 'ok':
      return stored(result, ctx, deps);
    case 'gone':
      return gone(result, ctx, deps);
    case 'soft_error':
    case 'failed':
      return refused(result, ctx, deps);
    case 'unauthorized':
      return unauthorized(result, ctx, deps);
    case 'retry':
      return retryOrFail(result, ctx, deps, result.message, new RetryableFetchError(result.message, result.retryAfterMs));
  }
}

// 4. BullMQ's side: each job's payload is checked against the queue's contract (fetch.queue.ts) when it is
// taken, the job runs as the plain function above, and its end becomes BullMQ's.

export function createFetchWorker(deps: {
  job: FetchJobDeps;
  /** Worker connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  concurrency: number;
  backoff: { backoffBaseMs: number; backoffMaxMs: number };
  /** Set when traces are exported: each run is a span in the trace its job carries (lib/tracing.ts). */
  tracing?: Pick<Tracing, 'fetch'>;
}): Worker<FetchJob> {
  const { tracing } = deps;
  const processor = async (job: Job<FetchJob>, token?: string): Promise<string> => {
    const payload = fetchJobSchema.safeParse(job.data);
    // A job no code of this version adds: retrying it would change nothing.
    if (!payload.success) throw new UnrecoverableError(`not a fetch job: ${payload.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    const resource = payload.data;
    const trace = tracing?.fetch({
      traceparent: resource.traceparent,
      id: job.id,
      companyId: resource.companyId,
      href: resource.href,
      fetchKey: fetchKey(resource),
      enqueuedAt: job.timestamp,
      takenAt: job.processedOn ?? Date.now(),
      attemptsStarted: job.attemptsStarted,
      attemptsMade: job.attemptsMade,
    });
    const running = runFetchJob(deps.job, { resource, attemptsMade: job.attemptsMade, attempts: job.opts.attempts ?? 1, trace });
    const end = trace ? await traced(trace, running) : await running;
    switch (end.next) {
      case 'done':
        return end.summary;
      case 'delay':
        await job.moveToDelayed(Date.now() + end.ms, token);
        throw new DelayedError();
      case 'retry':
        throw end.error;
    }
  };
  return new Worker<FetchJob>(FETCH_QUEUE, processor, fetchWorkerOptions(deps.connection, deps.prefix, deps.concurrency, deps.backoff));
}

/** Ends the run's span with what the job asks of the queue (or the error it threw). */
async function traced(trace: FetchSpan, running: Promise<JobEnd>): Promise<JobEnd> {
  let end: JobEnd;
  try {
    end = await running;
  } catch (err) {
    trace.end({ next: 'retry', error: err });
    throw err;
  }
  trace.end(end.next === 'done' ? { next: 'done', summary: end.summary } : end.next === 'retry' ? { next: 'retry', error: end.error } : { next: 'delay' });
  return end;
}
