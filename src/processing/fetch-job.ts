/**
 * One fetch job, as a plain function of narrow dependencies (built in runtime.ts): for one resource of a
 * company it passes the company's gate (company-gate.ts), claims the pending notifications, GETs the href
 * with the company's token, applies the outcome (fetch-outcomes.ts) and tells the gate how the marketplace
 * answered. Rows that arrive while it runs are not claimed: BullMQ (keepLastIfActive) runs one more job for
 * the resource afterwards (C2). The BullMQ side (delays, retries) is fetch-worker.ts.
 */
import type { Logger } from 'pino';
import { CLAIM_LIMIT } from '../notifications/lifecycle.js';
import type { BatchSummary } from '../lib/batch-summary.js';
import type { Metrics } from '../lib/metrics.js';
import type { FetchSpan } from '../lib/tracing.js';
import type { ApiConnection } from '../marketplace/connection.js';
import type { CompanyConnection } from './company-connections.js';
import type { GateAnswer } from './company-gate.js';
import type { FetchStart, StartRequest } from './fetch-start.js';
import { applyOutcome, type OutcomeDeps } from './fetch-outcomes.js';
import type { FetchResult } from './fetch-resource.js';
import type { FetchJob } from './fetch.queue.js';

export interface FetchJobDeps extends OutcomeDeps {
  /** Role `all`: resolves when a job may start; a flooded receiver holds processing (ingest-first.ts). */
  admit?: () => Promise<void>;
  company(companyId: string): Promise<CompanyConnection | null>;
  /** The company's gate, the C5 slot and the C4 claim (fetch-start.ts). */
  begin(request: StartRequest): Promise<FetchStart>;
  /** Frees the job's place at its company's gate, with what the marketplace answered (company-gate.ts). */
  finish(resource: FetchJob, max: number, answer: GateAnswer): void;
  get(href: string, connection: ApiConnection): Promise<FetchResult>;
  metrics: Pick<Metrics, 'fetchOutcomes' | 'processingLatency'>;
  /** Counts the notifications each fetch finished, by company and outcome, for the per-batch log line. */
  finished: Pick<BatchSummary, 'add'>;
  log: Logger;
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
  job: { resource: FetchJob; attemptsMade: number; attempts: number; id?: string; /** This run's span, when traces are exported. */ trace?: FetchSpan },
): Promise<JobEnd> {
  const { resource, trace } = job;
  // Before the claim: rows that arrive while the job is held are claimed with the rest.
  await deps.admit?.();

  const company = await deps.company(resource.companyId);
  if (!company) return { next: 'done', summary: 'company deleted' };

  // The company's gate, the C5 slot and the C4 claim, batched with the other running jobs.
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
  if (applied.next === 'parked') {
    deps.log.warn({ companyId: resource.companyId, jobId: job.id }, 'marketplace refused the company credentials; the company is paused and its notifications wait for new credentials');
    return { next: 'done', summary: 'parked' };
  }
  // One claim takes at most CLAIM_LIMIT rows: the rest of a large backlog gets a job of its own.
  if (claimed.ids.length >= CLAIM_LIMIT) await deps.requeue(resource);
  return { next: 'done', summary: result.kind };
}

/** What an answer tells the company's gate: a refusal to go faster holds the company (SPEC §5.1 F3). */
function gateAnswer(result: FetchResult): GateAnswer {
  // A refusal of the credentials pauses the company (fetch-outcomes.ts): it says nothing of its pace.
  if (result.kind === 'unauthorized') return { kind: 'none' };
  if (result.kind !== 'retry') return { kind: 'answered' };
  if (result.noAnswer) return { kind: 'no_answer', why: result.message };
  if (result.status === 429 || (result.status === 503 && result.retryAfterMs !== undefined)) {
    return { kind: 'throttled', retryAfterMs: result.retryAfterMs, why: result.message };
  }
  return { kind: 'answered' };
}
