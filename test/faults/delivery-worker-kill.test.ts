/**
 * A worker process (`ROLE=worker`, `node bin/skyhook.js start`) is killed with SIGKILL while it POSTs
 * deliveries (SPEC §5.2): the company's application holds each first request open, so the dead worker's
 * destination's delivery job is mid-request, its attempts unrecorded. BullMQ's stalled-job recovery hands it
 * to the other worker process (delivery/delivery.queue.ts: a 6 s lock and a 3 s stalled check).
 *
 * Proves: each delivery the dead worker was sending is sent again by the other worker with the SAME
 * webhook-id (the receiver's idempotency key), versions stored while it lay dead follow in order, and nothing stored is left undelivered: every event
 * of the company has its delivery, delivered, and nothing is sent twice afterwards.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { destinationFor } from '../helpers/destinations.js';
import { killAllChildren, spawnSkyhook, type SkyhookProcess } from '../helpers/processes.js';
import { startReceiver, type Answer, type TestReceiver } from '../helpers/receiver.js';
import { eventually, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';
import { createCompany, sleep } from './support.js';

const RESOURCES = 8;
/** The requests in flight when worker A dies: every resource's first version (the destination's limit, 16, is more). */
const FIRST_LIMIT = RESOURCES;

let db: TestDatabase;
let sim: Simulator;
let api: TestSkyhook;
let sql: pg.Pool;
let receiver: TestReceiver;
const prefix = testQueuePrefix();
/** The first requests, held open: let go at the end (their worker is long dead). */
const held: (() => void)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  sim = await startSimulator({ timeScale: 0.001 });
  api = await startSkyhook({ databaseUrl: db.url, queuePrefix: prefix, role: 'api' });
  sql = new pg.Pool({ connectionString: db.url, max: 3 });
  sql.on('error', () => {});
  receiver = await startReceiver();
});

afterAll(async () => {
  await killAllChildren();
  for (const let_go of held) let_go();
  await receiver?.close();
  await api?.stop();
  await sim?.stop();
  await sql?.end();
  await db?.drop();
});

const spawnWorker = (): Promise<SkyhookProcess> => spawnSkyhook({ databaseUrl: db.url, queuePrefix: prefix, role: 'worker', env: { FETCH_MIN_INTERVAL_MS: '0', DESTINATION_TIMEOUT_MS: '60000' } });

/** Fires one event on each resource and waits until each has its version `n` stored. */
async function versions(companyId: string, simId: string, n: number): Promise<void> {
  for (let i = 0; i < RESOURCES; i++) await sim.fire({ companyId: simId, eventType: 'TripRequest', resourceId: `k${i}` });
  await eventually(async () => {
    const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM resources WHERE company_id = $1 AND version >= $2', [companyId, n]);
    return rows[0]!.n === RESOURCES;
  }, `version ${n} of every resource stored`, 30_000);
}

describe('a worker process killed with SIGKILL in the middle of delivery POSTs', () => {
  it('another worker sends each again with the same webhook-id; nothing stored is left undelivered', async () => {
    const workerA = await spawnWorker();
    const company = await createCompany(api.admin, sim, 'acme', { authType: 'BASIC' });
    // Worker A's requests are held open (no answer: their sender dies with them); after it died, all are answered at once.
    let holding = true;
    receiver.answer = () => (holding ? new Promise<Answer>((resolve) => held.push(() => resolve({ status: 503 }))) : { status: 200 });
    const dest = await destinationFor(api.admin, company, receiver);

    await versions(company.companyId, company.simId, 1);
    await eventually(async () => receiver.attempts.length === FIRST_LIMIT, 'worker A in the middle of its first POSTs', 30_000);
    await sleep(500);
    expect(receiver.attempts.length, 'one request per resource: its next version waits for it').toBe(FIRST_LIMIT);
    const inFlight = new Map(receiver.attempts.map((r) => [r.event.resource!.id, r.webhookId]));

    // Worker B is up before A dies: nothing is left for it to take until A's jobs are found stalled.
    const workerB = await spawnWorker();
    workerA.kill('SIGKILL');
    expect(await workerA.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now();
    holding = false;
    // No attempt was recorded: the dead worker's requests never ended (its timeout is a minute).
    expect((await sql.query('SELECT started_at, error FROM delivery_attempts')).rows).toEqual([]);

    // New versions while A's jobs lie with the dead worker: stored by B, delivered after their version 1.
    await versions(company.companyId, company.simId, 2);

    await eventually(async () => receiver.received.length === 2 * RESOURCES, 'every version delivered', 60_000);
    const retried = receiver.received.filter((r) => inFlight.get(r.event.resource!.id) === r.webhookId);
    console.log(`delivery-worker-kill: every delivery of the killed worker sent again ${Math.max(...retried.map((r) => r.at)) - killedAt} ms after SIGKILL`);

    // Every version once, in order, verified; where the dead worker had a request open, with its webhook-id.
    for (let i = 0; i < RESOURCES; i++) {
      const delivered = receiver.received.filter((r) => r.event.resource!.id === `k${i}`);
      expect(delivered.map((r) => [r.event.resource!.version, r.verifiedWith]), `k${i}`).toEqual([
        [1, 0],
        [2, 0],
      ]);
      expect(delivered[0]!.at).toBeGreaterThan(killedAt);
      if (inFlight.has(`k${i}`)) expect(delivered[0]!.webhookId, `k${i}: the same webhook-id`).toBe(inFlight.get(`k${i}`));
    }
    expect(inFlight.size).toBe(FIRST_LIMIT);

    // Nothing stored is left undelivered: one delivery per event, each delivered. The answers are recorded
    // after they arrive (a round's attempts in one batch), so the receiver can have them all a moment earlier.
    const counts = async () =>
      (
        await sql.query<{ events: number; delivered: number; other: number }>(
          `SELECT (SELECT count(*)::int FROM events WHERE company_id = $1) AS events,
                  (SELECT count(*)::int FROM deliveries WHERE destination_id = $2 AND status = 'delivered') AS delivered,
                  (SELECT count(*)::int FROM deliveries WHERE destination_id = $2 AND status <> 'delivered') AS other`,
          [company.companyId, dest.id],
        )
      ).rows[0]!;
    await eventually(async () => (await counts()).delivered === 2 * RESOURCES, 'every delivery recorded delivered', 10_000);
    expect(await counts()).toEqual({ events: 2 * RESOURCES, delivered: 2 * RESOURCES, other: 0 });
    const { rows: missing } = await sql.query('SELECT e.id FROM events e WHERE e.company_id = $1 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)', [company.companyId]);
    expect(missing).toEqual([]);
    // Nothing more is sent afterwards (no duplicate from a job left behind).
    const sent = receiver.attempts.length;
    await sleep(2000);
    expect(receiver.attempts.length).toBe(sent);
    expect(sent).toBe(FIRST_LIMIT + 2 * RESOURCES);
    expect(workerB.exitInfo()).toBeUndefined();
    await workerB.stop();
  }, 150_000);
});
