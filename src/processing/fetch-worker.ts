/**
 * The fetch queue's worker: BullMQ's side of a fetch job. Each job's payload is checked against the
 * queue's contract (fetch.queue.ts) when it is taken, the job runs as a plain function (fetch-job.ts), and
 * its end becomes BullMQ's: done, delayed without spending an attempt, or retried with backoff.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisClient } from '../lib/redis/connection.js';
import { runFetchJob, type FetchJobDeps } from './fetch-job.js';
import { FETCH_QUEUE, fetchJobSchema, fetchWorkerOptions, type FetchJob } from './fetch.queue.js';

export function createFetchWorker(deps: {
  job: FetchJobDeps;
  /** Worker connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  concurrency: number;
  backoff: { backoffBaseMs: number; backoffMaxMs: number };
}): Worker<FetchJob> {
  const processor = async (job: Job<FetchJob>, token?: string): Promise<string> => {
    const payload = fetchJobSchema.safeParse(job.data);
    // A job no code of this version adds: retrying it would change nothing.
    if (!payload.success) throw new UnrecoverableError(`not a fetch job: ${payload.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    const end = await runFetchJob(deps.job, { resource: payload.data, attemptsMade: job.attemptsMade, attempts: job.opts.attempts ?? 1, id: job.id });
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
