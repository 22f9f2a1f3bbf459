/**
 * Where a company's events are delivered to its own application (SPEC §5.2): one job per (destination,
 * resource), as a plain function of narrow dependencies (runDeliveryJob, built in runtime.ts), top to bottom:
 * 1. the next delivery of the key: a replay first, else the oldest version pending (destinations/postgres.ts),
 *    so version n+1 is sent only once version n was delivered or ended; one whose next attempt is later
 *    makes the job wait for it (delayed: no poll, no attempt);
 * 2. its destination's gate (src/gate/): its limit, its rate, a hold after a 429; paused while failing or
 *    disabled, when the job ends and the key waits parked;
 * 3. the request, signed (sign.ts) over a body built from the event alone (body.ts), sent (send.ts);
 * 4. the attempt recorded with what it does (deliver, retry on the schedule with Retry-After as a floor,
 *    fail after the last attempt; five failures in a row open the destination's circuit, a 410 disables it),
 *    then the next version, until the key has none left.
 * The same send serves a failing destination's probe (probeDestination). At the bottom, BullMQ's side.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { DestinationConnection } from '../destinations/connections.js';
import type { AttemptEffect, AttemptVerdict, DeliveryKey, DeliveryLifecycle, DeliveryToSend } from '../destinations/lifecycle.js';
import type { GateAnswer, GateStart, GateStartRequest } from '../gate/gate.js';
import type { BatchSummary } from '../lib/batch-summary.js';
import type { Metrics } from '../lib/metrics.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { deliveryBody } from './body.js';
import { DELIVERY_QUEUE, deliveryJobSchema, deliveryKey, deliveryWorkerOptions, gateItemOf, type DeliveryJob } from './delivery.queue.js';
import type { Delivery, SendResult } from './send.js';
import { signatureHeaders, webhookIdOf } from './sign.js';

/** A Retry-After lengthens the next wait up to this, never more (SPEC §5.2). */
const MAX_RETRY_AFTER_MS = 3_600_000;
/** A job sends at most this many versions of its resource, then leaves the rest to its follow-up: others get a turn. */
const MAX_PER_RUN = 50;
/** A next attempt this close is made now. */
const EARLY_MS = 25;

export interface DeliveryJobDeps {
  /** The delivery's destination as it is now, its secrets opened (destinations/connections.ts). */
  connect(d: DeliveryToSend): DestinationConnection;
  next: DeliveryLifecycle['next'];
  record: DeliveryLifecycle['record'];
  /** The destination's gate: the start of one request (batched with the other jobs'). */
  start(request: GateStartRequest): Promise<GateStart>;
  /** Gives the request's place back, with what the destination answered. */
  finish(key: DeliveryKey, max: number, answer: GateAnswer): void;
  send(delivery: Delivery): Promise<SendResult>;
  /** Queues the key again (a job that sent MAX_PER_RUN versions leaves the rest to another). */
  requeue(key: DeliveryKey): Promise<void>;
  /** DELIVERY_RETRY_SCHEDULE: the wait before each attempt. */
  schedule: number[];
  /** DELIVERY_BODY_LIMIT_BYTES. */
  bodyLimit: number;
  metrics: Pick<Metrics, 'deliveries' | 'deliveryLatency'>;
  /** Counts the attempts by company and outcome, for the per-batch log line (`sent N deliveries`). */
  sent: Pick<BatchSummary, 'add'>;
  log: Pick<Logger, 'debug' | 'warn'>;
  now(): Date;
}

export type DeliveryJobEnd = { next: 'done'; summary: string } | { next: 'delay'; ms: number };

/** What an answer means for the delivery (SPEC §5.2): delivered, gone (410), or another attempt on the schedule, or failed after the last. */
export function verdictOf(result: SendResult, attemptsBefore: number, schedule: number[], now: Date): AttemptVerdict {
  if (result.kind === 'answered' && result.status >= 200 && result.status < 300) return { kind: 'delivered' };
  if (result.kind === 'answered' && result.status === 410) return { kind: 'gone' };
  // A refusal to go faster is an answer: it holds the destination, and does not count toward its circuit.
  const throttled = result.kind === 'answered' && (result.status === 429 || (result.status === 503 && result.retryAfterMs !== undefined));
  const made = attemptsBefore + 1;
  if (made >= schedule.length) return { kind: 'failed', countsAgainst: !throttled };
  const floor = result.kind === 'answered' ? Math.min(result.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS) : 0;
  return { kind: 'retry', nextAt: new Date(now.getTime() + Math.max(schedule[made]!, floor)), countsAgainst: !throttled };
}

/** What an answer tells the destination's gate (as a fetch's tells its company's). */
function gateAnswerOf(result: SendResult): GateAnswer {
  if (result.kind === 'no_answer') return { kind: 'no_answer', why: result.error };
  if (result.status === 429 || (result.status === 503 && result.retryAfterMs !== undefined)) return { kind: 'throttled', retryAfterMs: result.retryAfterMs, why: `answered ${result.status}` };
  return { kind: 'answered' };
}

/** One attempt of one delivery: signed, sent, recorded; answers what it did. */
export async function attemptDelivery(deps: Pick<DeliveryJobDeps, 'send' | 'record' | 'schedule' | 'bodyLimit' | 'metrics' | 'sent' | 'log' | 'now'>, dest: DestinationConnection, d: DeliveryToSend, opts: { probe: boolean }) {
  const body = deliveryBody(d, deps.bodyLimit);
  const startedAt = deps.now();
  const result = await deps.send({
    destinationId: dest.id,
    companyId: dest.companyId,
    url: dest.url,
    body,
    headers: signatureHeaders(webhookIdOf(d.id), body, dest.secrets, startedAt),
    timeoutMs: dest.timeoutMs,
  });
  const verdict = verdictOf(result, d.attempts, deps.schedule, deps.now());
  const effect: AttemptEffect = await deps.record(
    {
      deliveryId: d.id,
      companyId: d.companyId,
      destinationId: dest.id,
      startedAt,
      durationMs: result.durationMs,
      url: dest.url,
      httpStatus: result.kind === 'answered' ? result.status : null,
      error: result.kind === 'no_answer' ? result.error : null,
      response: result.kind === 'answered' ? result.response : null,
    },
    verdict,
    opts,
  );
  deps.metrics.deliveries.inc({ outcome: verdict.kind });
  if (verdict.kind === 'delivered') deps.metrics.deliveryLatency.observe((Date.now() - d.event.occurredAt.getTime()) / 1000);
  deps.sent.add(d.companyId, verdict.kind);
  deps.log.debug(
    { companyId: d.companyId, destinationId: dest.id, deliveryId: d.id, outcome: verdict.kind, httpStatus: result.kind === 'answered' ? result.status : null, error: result.kind === 'no_answer' ? result.error : undefined, probe: opts.probe },
    'delivery attempt',
  );
  return { result, verdict, effect };
}

export async function runDeliveryJob(deps: DeliveryJobDeps, key: DeliveryKey): Promise<DeliveryJobEnd> {
  const item = deliveryKey(key);
  for (let sent = 0; sent < MAX_PER_RUN; sent++) {
    // A deleted destination's pending deliveries were skipped with it: none is next.
    const d = await deps.next(key);
    if (!d) return { next: 'done', summary: sent > 0 ? 'delivered' : 'nothing pending' };
    const dest = deps.connect(d);
    const wait = d.nextAttemptAt.getTime() - deps.now().getTime();
    if (wait > EARLY_MS) return { next: 'delay', ms: wait };

    const start = await deps.start({
      id: dest.id,
      item,
      payload: gateItemOf(key).payload,
      max: dest.maxConcurrency,
      paused: dest.paused,
      retried: d.attempts > 0,
      ...(dest.ratePerSecond > 0 ? { minGap: Math.ceil(1000 / dest.ratePerSecond) } : {}),
    });
    if (start.kind === 'wait') return { next: 'delay', ms: start.ms };
    // Parked at its gate, no job, until a place frees or the destination resumes (which queues the key again).
    if (start.kind === 'park') return { next: 'done', summary: 'parked' };

    // A throw (PostgreSQL out of reach) leaves the place to its lease; BullMQ retries the job, the same webhook-id.
    const { result, verdict, effect } = await attemptDelivery(deps, dest, d, { probe: false });
    deps.finish(key, dest.maxConcurrency, gateAnswerOf(result));
    if (effect.circuitOpened || effect.disabled) return { next: 'done', summary: 'parked' };
    if (verdict.kind === 'retry') return { next: 'delay', ms: Math.max(0, verdict.nextAt.getTime() - deps.now().getTime()) };
    if (verdict.kind === 'gone') return { next: 'done', summary: 'parked' };
  }
  await deps.requeue(key);
  return { next: 'done', summary: 'more pending' };
}

/**
 * A failing destination's probe (SPEC §5.2): its oldest pending delivery, sent once; a 2xx closes its
 * circuit (record() resumes it: everything waiting is queued again, in order). Answers whether it answered.
 */
export async function probeDestination(
  deps: Pick<DeliveryJobDeps, 'connect' | 'send' | 'record' | 'schedule' | 'bodyLimit' | 'metrics' | 'sent' | 'log' | 'now'> & { oldestPending: DeliveryLifecycle['oldestPending'] },
  destinationId: string,
): Promise<'answered' | 'failed' | 'nothing pending'> {
  const d = await deps.oldestPending(destinationId);
  if (!d) return 'nothing pending';
  const { verdict } = await attemptDelivery(deps, deps.connect(d), d, { probe: true });
  return verdict.kind === 'delivered' ? 'answered' : 'failed';
}

// BullMQ's side: each job's payload is checked against the queue's contract (delivery.queue.ts) when it is
// taken, the job runs as the plain function above, and its end becomes BullMQ's.

export function createDeliveryWorker(deps: { job: DeliveryJobDeps; connection: RedisClient; prefix: string; concurrency: number }): Worker<DeliveryJob> {
  const processor = async (job: Job<DeliveryJob>, token?: string): Promise<string> => {
    const payload = deliveryJobSchema.safeParse(job.data);
    if (!payload.success) throw new UnrecoverableError(`not a delivery job: ${payload.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    const end = await runDeliveryJob(deps.job, payload.data);
    if (end.next === 'done') return end.summary;
    await job.moveToDelayed(Date.now() + end.ms, token);
    throw new DelayedError();
  };
  return new Worker<DeliveryJob>(DELIVERY_QUEUE, processor, deliveryWorkerOptions(deps.connection, deps.prefix, deps.concurrency));
}
