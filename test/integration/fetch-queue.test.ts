/**
 * The enqueuer's precheck (processing/enqueue.ts) against the pinned BullMQ and real Redis: an add is
 * skipped exactly when BullMQ's own add would change nothing, so C1 and C2 hold as BullMQ gives them.
 * BullMQ counts every add its script sees (the queue's `id` key), which tells a skipped add from one made.
 */
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import pino from 'pino';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gate } from '../../src/gate/gate.js';
import { FetchEnqueuer } from '../../src/processing/enqueue.js';
import { createFetchQueue, FETCH_QUEUE, type FetchJob } from '../../src/processing/fetch.queue.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { eventually } from '../helpers/skyhook.js';

const prefix = testQueuePrefix();
const COMPANY = '00000000-0000-4000-8000-000000000001';
let db: TestDatabase;
let pool: pg.Pool;
let producer: Redis;
let queue: ReturnType<typeof createFetchQueue>;
let enqueuer: FetchEnqueuer;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  producer = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  queue = createFetchQueue(producer, prefix);
  const gate = new Gate(producer, prefix, 'company', { defaultMax: 10_000, leaseMs: 60_000 });
  enqueuer = new FetchEnqueuer(queue, producer, createNotificationsRepository(pool), gate, { attempts: 3, timeoutMs: 2000 }, pino({ level: 'silent' }));
});

afterAll(async () => {
  await queue?.obliterate({ force: true }).catch(() => {});
  await queue?.close();
  producer?.disconnect();
  await pool?.end();
  await db?.drop();
});

/** Jobs waiting to be taken: every fetch job has a priority, so they wait in BullMQ's prioritized set. */
const waitingCount = async () => {
  const counts = await queue.getJobCounts('wait', 'prioritized');
  return (counts.wait ?? 0) + (counts.prioritized ?? 0);
};

/** How many adds BullMQ's script has seen so far. */
const addsSeen = async () => Number((await producer.get(`${prefix}:${FETCH_QUEUE}:id`)) ?? 0);
const add = (href: string) => enqueuer.enqueue([{ companyId: COMPANY, href }]);

/** Runs `fn` with a BullMQ Worker on the queue (a processor, or null to take jobs by hand), then closes it. */
async function withWorker(processor: ((job: Job<FetchJob>) => Promise<void>) | null, opts: { concurrency?: number }, fn: (worker: Worker<FetchJob>) => Promise<void>) {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const worker = new Worker<FetchJob>(FETCH_QUEUE, processor, { connection, prefix, ...opts });
  try {
    await fn(worker);
  } finally {
    await worker.close();
    connection.disconnect();
  }
}

describe('the enqueuer skips the adds BullMQ would ignore', () => {
  it('a key whose job waits: the second add is skipped, and one job runs', async () => {
    const href = 'http://api.test/rfqs/waiting';
    const before = await addsSeen();
    await add(href);
    expect(await addsSeen()).toBe(before + 1);
    await add(href);
    await add(href);
    expect(await addsSeen()).toBe(before + 1);
    expect(await waitingCount()).toBe(1);
    await queue.drain();
  });

  it('a key whose job runs: the first add stores the follow-up (C2), later ones are skipped, and exactly one more job runs', async () => {
    const href = 'http://api.test/rfqs/active';
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const processor = async (job: Job<FetchJob>) => {
      runs.push(job.id!);
      if (runs.length === 1) await gate;
    };
    await withWorker(processor, { concurrency: 1 }, async () => {
      await add(href);
      await eventually(async () => runs.length === 1, 'the first job is running');
      const before = await addsSeen();
      await add(href); // while it runs: BullMQ must see this one, or the change would be lost
      expect(await addsSeen()).toBe(before + 1);
      await add(href);
      await add(href);
      expect(await addsSeen()).toBe(before + 1);

      release();
      await eventually(async () => runs.length === 2 && (await queue.getActiveCount()) === 0, 'the follow-up ran');
      await new Promise((r) => setTimeout(r, 200));
      expect(runs).toHaveLength(2);

      // Nothing left for the key: the next add is made again.
      const after = await addsSeen();
      await add(href);
      expect(await addsSeen()).toBe(after + 1);
      await eventually(async () => runs.length === 3, 'the next job ran');
    });
  });

  it('a key whose job is delayed: the add is skipped, as BullMQ would ignore it', async () => {
    const href = 'http://api.test/rfqs/delayed';
    await add(href);
    const [job] = await queue.getJobs(['wait', 'prioritized']);
    // As a fetch that must wait for its C5 slot: the job goes back to delayed (BullMQ's own move).
    await withWorker(null, {}, async (worker) => {
      const token = 'test-token';
      const taken = await worker.getNextJob(token);
      expect(taken?.id).toBe(job!.id);
      await taken!.moveToDelayed(Date.now() + 60_000, token);
      expect(await queue.getDelayedCount()).toBe(1);

      const before = await addsSeen();
      await add(href);
      expect(await addsSeen()).toBe(before);
      expect(await queue.getDelayedCount()).toBe(1);
      expect(await waitingCount()).toBe(0);
    });
  });

  it("a key whose job is gone but whose dedup key was left behind gets BullMQ's add (which recovers it)", async () => {
    const href = 'http://api.test/rfqs/stale';
    await add(href);
    const [job] = await queue.getJobs(['wait', 'prioritized']);
    await producer.del(`${prefix}:${FETCH_QUEUE}:${job!.id}`);
    // Jobs carry their company's priority (company-gate.ts): a waiting one is in the prioritized set.
    await producer.zrem(`${prefix}:${FETCH_QUEUE}:prioritized`, job!.id!);
    const before = await addsSeen();
    await add(href);
    expect(await addsSeen()).toBe(before + 1);
    expect(await waitingCount()).toBe(1);
  });
});
