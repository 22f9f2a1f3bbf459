/**
 * One fetch job, as a plain function of narrow dependencies (built in runtime.ts): for one resource of a
 * company it claims the pending notifications, GETs the href with the company's token, and applies the
 * outcome (fetch-outcomes.ts). Rows that arrive while it runs are not claimed: BullMQ (keepLastIfActive)
 * runs one more job for the resource afterwards (C2). The BullMQ side (delays, retries) is fetch-worker.ts.
 */
import type { Logger } from 'pino';
import { CLAIM_LIMIT } from '../db/notifications.repository.js';
import type { BatchSummary } from '../lib/batch-summary.js';
import type { Metrics } from '../lib/metrics.js';
import type { FetchSpan } from '../lib/tracing.js';
import type { ApiConnection } from '../marketplace/connection.js';
import type { CompanyConnection } from './company-connections.js';
import type { FetchStart } from './fetch-start.js';
import { applyOutcome, type OutcomeDeps } from './fetch-outcomes.js';
import type { FetchResult } from './fetch-resource.js';
import type { FetchJob } from './fetch.queue.js';

/** How often a paused company's jobs look again whether its token was replaced. */
export const PAUSED_RECHECK_MS = 5000;

export interface FetchJobDeps extends OutcomeDeps {
  /** Role `all`: resolves when a job may start; a flooded receiver holds processing (ingest-first.ts). */
  admit?: () => Promise<void>;
  company(companyId: string): Promise<CompanyConnection | null>;
  /** The C5 slot and the C4 claim (fetch-start.ts). */
  begin(resource: FetchJob): Promise<FetchStart>;
  get(href: string, connection: ApiConnection): Promise<FetchResult>;
  metrics: Pick<Metrics, 'fetchOutcomes' | 'processingLatency'>;
  /** Counts the notifications each fetch finished, by company and outcome, for the per-batch log line. */
  finished: Pick<BatchSummary, 'add'>;
  log: Logger;
}

/** What the job asks of its queue when it ends. */
export type JobEnd =
  | { next: 'done'; summary: string }
  /** Try again in `ms` without spending an attempt (the C5 slot is taken, the company is paused). */
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
  // 401/403 paused this company: wait, without touching its rows, until its credentials are replaced.
  if (company.paused) return { next: 'delay', ms: PAUSED_RECHECK_MS };

  // C5 slot and C4 claim, batched with the other running jobs.
  const start = await deps.begin(resource);
  if (start.kind === 'wait') return { next: 'delay', ms: start.waitMs };
  if (start.kind === 'empty') return { next: 'done', summary: 'nothing pending' };
  const { claimed } = start;
  trace?.claimed(claimed.ids);

  const startedAt = deps.now();
  const get = trace?.get(resource.href, job.attemptsMade);
  let result: FetchResult;
  try {
    result = await deps.get(resource.href, company.connection);
  } catch (err) {
    get?.end(undefined, err);
    throw err;
  }
  get?.end(result);
  deps.metrics.fetchOutcomes.inc({ outcome: result.kind });
  const applied = await applyOutcome(result, { resource, company, claimed, startedAt, attemptsMade: job.attemptsMade, lastAttempt: job.attemptsMade + 1 >= job.attempts, trace }, deps);
  if (applied.final) {
    const now = Date.now();
    for (const at of claimed.receivedAt) deps.metrics.processingLatency.observe({ status: applied.final }, (now - at) / 1000);
    deps.finished.add(resource.companyId, result.kind === 'gone' && applied.final === 'processed' ? 'gone' : applied.final, claimed.ids.length);
  }
  if (result.kind === 'unauthorized' && applied.final === 'failed') {
    deps.log.warn({ companyId: resource.companyId, jobId: job.id }, 'marketplace refused the company credentials; its fetches are paused until they are replaced');
  }
  if (applied.next === 'retry') return { next: 'retry', error: applied.error };
  // One claim takes at most CLAIM_LIMIT rows: the rest of a large backlog gets a job of its own.
  if (claimed.ids.length >= CLAIM_LIMIT) await deps.requeue(resource);
  return { next: 'done', summary: result.kind };
}
