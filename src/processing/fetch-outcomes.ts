/**
 * What each answer to a resource GET does (SPEC §5), one small function per outcome, over narrow
 * dependencies (built in runtime.ts; exercised against the simulator in test/integration/fetch-outcomes.test.ts):
 *  - 2xx: the snapshot is stored, with what changed; the notifications are processed;
 *  - 404/410: processed, outcome `gone`; the stored snapshot is kept and flagged;
 *  - a soft error, another 4xx: failed;
 *  - 401/403, or client credentials the token endpoint refused: the company paused until its credentials are
 *    replaced (unless they were replaced meanwhile), the notifications left waiting for them (SPEC §5.1 F4);
 *  - a network error, a timeout, 408, 429, 5xx: retried with backoff, failed after the last attempt.
 * Every attempt is recorded with the notifications it covered (notifications/postgres.ts).
 */
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { Claimed, FetchAttempt, FetchedSnapshot, Stored } from '../notifications/lifecycle.js';
import { endsWith, type FetchSpan } from '../lib/tracing.js';
import type { CompanyConnection } from './company-connections.js';
import type { FetchResult } from './fetch-resource.js';
import { RetryableFetchError, type ResourceKey } from './fetch.queue.js';
import { changesBetween } from './snapshots.js';

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
  /** The attempt recorded, its notifications left pending for the next one. */
  retry: NotificationLifecycle['retry'];
  /** The attempt recorded, its notifications failed. */
  fail: NotificationLifecycle['fail'];
  /** Stores the snapshot (batched with the other running jobs) and processes what it covers. */
  store(snapshot: FetchedSnapshot): Promise<Stored>;
  /** 404/410: the snapshot flagged gone and the attempt recorded, together. */
  markGone(attempt: FetchAttempt): Promise<void>;
  /**
   * 401/403: pauses the company if `revision` is still its credentials revision, recording the attempt (the
   * notifications stay pending), together, and parks the href; answers whether it did (false: the
   * credentials were replaced meanwhile).
   */
  pause(attempt: FetchAttempt, revision: number, why: string): Promise<boolean>;
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
    const attempt = attemptOf(ctx, result, deps.now(), ctx.lastAttempt ? 'failed' : 'retry', why);
    if (ctx.lastAttempt) {
      await deps.fail(attempt, gaveUp(ctx, why));
      return { final: 'failed', next: 'done' };
    }
    await deps.retry(attempt);
    return { final: null, next: 'retry', error: err instanceof Error ? err : new Error(why) };
  }
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
  const why = result.message;
  deps.forgetCompany(ctx.resource.companyId);
  const paused = await deps.pause(attemptOf(ctx, result, deps.now(), 'unauthorized', why), ctx.company.revision, why);
  if (paused) return { final: null, next: 'parked' };
  // Not this job's failure: the token was replaced meanwhile; fetch again with it (no attempt spent).
  await deps.requeue(ctx.resource);
  return { final: null, next: 'done' };
}

async function retry(result: Extract<FetchResult, { kind: 'retry' }>, ctx: FetchContext, deps: OutcomeDeps): Promise<Applied> {
  if (ctx.lastAttempt) {
    await deps.fail(attemptOf(ctx, result, deps.now(), 'failed', result.message), gaveUp(ctx, result.message));
    return { final: 'failed', next: 'done' };
  }
  await deps.retry(attemptOf(ctx, result, deps.now(), 'retry', result.message));
  return { final: null, next: 'retry', error: new RetryableFetchError(result.message, result.retryAfterMs) };
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
      return retry(result, ctx, deps);
  }
}
