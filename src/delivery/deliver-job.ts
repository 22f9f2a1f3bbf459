/**
 * Where a company's events are delivered to its own application (SPEC §5.2): one job per destination, the
 * only one sending to it across every worker, as a plain function of narrow dependencies (runDeliveryJob,
 * built in runtime.ts), top to bottom:
 * 1. its turn at the destination's gate (src/gate/): none while it is failing or disabled (the job ends,
 *    parked, until it resumes), a later one while it is held after a 429;
 * 2. its deliveries due, claimed a round at a time (destinations/postgres.ts claim): at most one per
 *    resource, its replay or its oldest version pending, so version n+1 is sent only once version n was
 *    delivered or ended; up to the destination's limit on their way at once, no faster than its rate;
 * 3. each request signed (sign.ts) over a body built from the event alone (body.ts) and sent (send.ts);
 * 4. each attempt recorded with what it does (deliver, retry on the schedule with Retry-After as a floor,
 *    fail after the last; five failures in a row open the destination's circuit, a 410 disables it: the
 *    job then stops claiming; a 429 holds the destination: the job waits out the hold);
 * 5. after a turn of TURN_MS, what is due is left to its follow-up (other destinations get their turn);
 *    with nothing due, the job waits for the next delivery's time, delayed (no poll), or a new delivery.
 * The same send serves a failing destination's probe (probeDestination). At the bottom, BullMQ's side.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { DestinationConnection } from '../destinations/connections.js';
import type { AttemptEffect, AttemptVerdict, DeliveryLifecycle, DeliveryToSend, DestinationKey } from '../destinations/lifecycle.js';
import { HOLD_FLOOR_MS, type GateAnswer, type GateStart, type GateStartRequest } from '../gate/gate.js';
import type { BatchSummary } from '../lib/batch-summary.js';
import type { Metrics } from '../lib/metrics.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { deliveryBody } from './body.js';
import { DELIVERY_QUEUE, deliveryJobSchema, deliveryWorkerOptions, gateItemOf, TURN_MS, type DeliveryJob } from './delivery.queue.js';
import type { Delivery, SendResult } from './send.js';
import { signatureHeaders, webhookIdOf } from './sign.js';

/** A Retry-After lengthens the next wait up to this, never more (SPEC §5.2). */
const MAX_RETRY_AFTER_MS = 3_600_000;
/** A next attempt this close is made now. */
const EARLY_MS = 25;
/** While requests are on their way and nothing more is due, the job looks for new deliveries this often. */
const LOOK_AGAIN_MS = 250;
/** The first round's claim, made before the destination's own limit is known (it comes with the rows): trimmed to that limit. */
const FIRST_CLAIM = 16;

export interface DeliveryJobDeps {
  /** The delivery's destination as it is now, its secrets opened (destinations/connections.ts). */
  connect(d: DeliveryToSend): DestinationConnection;
  claim: DeliveryLifecycle['claim'];
  nextDue: DeliveryLifecycle['nextDue'];
  record: DeliveryLifecycle['record'];
  /** The destination's gate: the start of a turn (batched with the other jobs'). */
  start(request: GateStartRequest): Promise<GateStart>;
  /** Gives the turn's place back, with what the destination answered last. */
  finish(key: DestinationKey, answer: GateAnswer): void;
  send(delivery: Delivery): Promise<SendResult>;
  /** Queues the destination's job again (a turn ended with deliveries due). */
  requeue(key: DestinationKey): Promise<void>;
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

export async function runDeliveryJob(deps: DeliveryJobDeps, key: DestinationKey): Promise<DeliveryJobEnd> {
  const claim = (sending: Iterable<string>, limit: number) => deps.claim(key.destinationId, [...sending], limit);
  let due = await claim([], FIRST_CLAIM);
  if (due.length === 0) return waitForNext(deps, key, 0);
  // Its turn: the destination's one place (its job); none while it is failing or disabled, later while held.
  const turn = await deps.start({ ...gateItemOf(key), max: 1, paused: due[0]!.destination.paused, retried: false });
  if (turn.kind === 'wait') return { next: 'delay', ms: turn.ms };
  if (turn.kind === 'park') return { next: 'done', summary: 'parked' };

  const limit = deps.connect(due[0]!).maxConcurrency;
  due = due.slice(0, limit);
  const ends = Date.now() + TURN_MS;
  const sending = new Map<string, Promise<void>>();
  let stop: 'parked' | { heldMs: number } | undefined;
  let answer: GateAnswer = { kind: 'none' };
  let nextStart = 0;
  let sent = 0;
  /** A send that threw (PostgreSQL out of reach while recording): the turn ends, and the job throws it once the others are done. */
  let failure: unknown;

  /** Sends one delivery, no sooner than the destination's rate allows, and notes what its answer asks of the turn. */
  const send = async (d: DeliveryToSend, dest: DestinationConnection): Promise<void> => {
    const at = Math.max(nextStart, Date.now());
    nextStart = at + (dest.ratePerSecond > 0 ? 1000 / dest.ratePerSecond : 0);
    if (at > Date.now()) await new Promise((r) => setTimeout(r, at - Date.now()));
    try {
      const { result, effect } = await attemptDelivery(deps, dest, d, { probe: false });
      sent++;
      // A refusal to go faster holds the whole destination: an answer to a request sent beside it does not undo it.
      if (answer.kind !== 'throttled') answer = gateAnswerOf(result);
      if (effect.circuitOpened || effect.disabled) stop = 'parked';
      else if (answer.kind === 'throttled') stop ??= { heldMs: Math.max(answer.retryAfterMs ?? 0, HOLD_FLOOR_MS) };
    } catch (err) {
      failure ??= err;
      stop = 'parked';
    } finally {
      sending.delete(d.href);
    }
  };

  for (;;) {
    // A round's rows carry the destination as it was read with them: its secrets opened once a round.
    const dest = due.length > 0 ? deps.connect(due[0]!) : undefined;
    for (const d of due) sending.set(d.href, send(d, dest!));
    if (sending.size === 0) break;
    // Claims come in rounds: once half the places are free again (a resource's next version becomes due when its last ends).
    while (sending.size > limit / 2) await Promise.race(sending.values());
    due = stop === undefined && Date.now() < ends ? await claim(sending.keys(), limit - sending.size) : [];
    if (due.length === 0 && sending.size > 0) {
      // Nothing more due yet: the next end, or a look again shortly (a new delivery, while these hang).
      await Promise.race([...sending.values(), new Promise((r) => setTimeout(r, LOOK_AGAIN_MS))]);
      due = stop === undefined && Date.now() < ends ? await claim(sending.keys(), limit - sending.size) : [];
    }
  }
  deps.finish(key, answer);
  // BullMQ retries the job: what it had not recorded is pending still, sent again with its webhook-id.
  if (failure !== undefined) throw failure;
  if (stop === 'parked') return { next: 'done', summary: 'parked' };
  if (stop !== undefined) return { next: 'delay', ms: stop.heldMs };
  if (Date.now() >= ends) {
    // Its turn is over: what is due goes to its follow-up, behind the other destinations' jobs.
    await deps.requeue(key);
    return { next: 'done', summary: `sent ${sent}, more due` };
  }
  return waitForNext(deps, key, sent);
}

/** Nothing due now: the job waits for its next delivery's time, delayed (a new delivery wakes it), or ends. */
async function waitForNext(deps: Pick<DeliveryJobDeps, 'nextDue' | 'now'>, key: DestinationKey, sent: number): Promise<DeliveryJobEnd> {
  const nextDue = await deps.nextDue(key.destinationId);
  if (nextDue === null) return { next: 'done', summary: sent > 0 ? `sent ${sent}` : 'nothing pending' };
  return { next: 'delay', ms: Math.max(EARLY_MS, nextDue.getTime() - deps.now().getTime()) };
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
