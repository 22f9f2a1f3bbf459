/**
 * The fetch queue's worker: BullMQ's side of a fetch job. Each job's payload is checked against the
 * queue's contract (fetch.queue.ts) when it is taken, the job runs as a plain function (fetch-job.ts), and
 * its end becomes BullMQ's: done, delayed without spending an attempt, or retried with backoff.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../lib/redis/connection.js';
import type { FetchSpan, Tracing } from '../lib/tracing.js';
import { runFetchJob, type FetchJobDeps, type JobEnd } from './fetch-job.js';
import { FETCH_QUEUE, fetchJobSchema, fetchKey, fetchWorkerOptions, type FetchJob } from './fetch.queue.js';

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
    const running = runFetchJob(deps.job, { resource, attemptsMade: job.attemptsMade, attempts: job.opts.attempts ?? 1, id: job.id, trace });
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
