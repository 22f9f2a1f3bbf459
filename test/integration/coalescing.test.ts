/**
 * The coalescing rules of SPEC §5 (C1–C5), each against real Redis/BullMQ, real PostgreSQL and the
 * simulator: the simulator's log of resource GETs is the witness of how many fetches ran, and when.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchKey } from '../../src/processing/fetch.queue.js';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';
import { Gate } from '../../src/gate/gate.js';
import { FetchStarts } from '../../src/processing/fetch-job.js';
import { REDIS_URL } from '../helpers/database.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const finalSnapshotVersion = async (s: Scenario, href: string) => {
  const { rows } = await s.sql.query<{ body: { version: number } }>('SELECT body FROM resources WHERE href = $1', [href]);
  return rows[0]?.body.version;
};

describe('coalescing of fetches per (company, href)', () => {
  it('C1: notifications that arrive while the fetch waits add no fetch', async () => {
    // No worker yet: every notification is stored and queued, and waits.
    scenario = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '0' } });
    const { companyId } = await scenario.company('acme');
    const [first] = await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c1', count: 20 });
    const href = first!.notification.href;
    await eventually(async () => (await scenario!.statusCounts()).queued === 20, '20 queued notifications');

    await scenario.addSkyhook({ role: 'worker' });
    await scenario.settled(20);
    expect(scenario.fetchesOf(href)).toHaveLength(1);
    expect(await scenario.statusCounts()).toEqual({ processed: 20 });
    expect(await finalSnapshotVersion(scenario, href)).toBe(20);
    expect(companyId).toBeTruthy();
  });

  it('C2: a notification arriving while the fetch runs causes exactly one more fetch afterwards', async () => {
    // The interval (500 ms) is shorter than the GET (1,500 ms): it never delays the follow-up here, and it
    // keeps the slot key visible while the GET runs.
    scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '500' }, sim: { faults: { resourceLatencyMs: 1500 } } });
    const { companyId } = await scenario.company('acme');
    const [first] = await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c2' });
    const href = first!.notification.href;
    // The worker reserves the key's fetch slot right before its GET: once it exists, the GET is under way.
    const redis = new Redis(REDIS_URL);
    try {
      await eventually(async () => (await redis.exists(`${scenario!.prefix}:fetch-slot:${fetchKey({ companyId, href })}`)) === 1, 'fetch under way');
    } finally {
      redis.disconnect();
    }
    // The resource changes three times while the slow GET runs (it may have read the old version).
    await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c2', count: 3 });
    await scenario.settled(4);

    expect(scenario.fetchesOf(href)).toHaveLength(2);
    expect(await finalSnapshotVersion(scenario, href)).toBe(4); // no lost update
    // The first is covered by the first fetch's version; the three later ones by the second fetch's, which is a
    // new version only when the first GET read the resource before the three changes (else the same body is
    // no new version: SPEC §5.2).
    const { rows } = await scenario.sql.query<{ snapshot_version: number }>('SELECT snapshot_version FROM notifications ORDER BY id');
    const { rows: stored } = await scenario.sql.query<{ version: number }>('SELECT version FROM resources WHERE href = $1', [href]);
    expect(rows.map((r) => r.snapshot_version)).toEqual([1, stored[0]!.version, stored[0]!.version, stored[0]!.version]);
  });

  it('C3: at most one fetch per (company, href) runs at a time across workers', async () => {
    scenario = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '0', WORKER_CONCURRENCY: '8' }, sim: { faults: { resourceLatencyMs: 150 } } });
    await scenario.company('acme');
    await scenario.addSkyhook({ role: 'worker' });
    await scenario.addSkyhook({ role: 'worker' });
    let href = '';
    for (let wave = 0; wave < 6; wave++) {
      const [n] = await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c3', count: 5 });
      href = n!.notification.href;
      await new Promise((r) => setTimeout(r, 60));
    }
    await scenario.settled(30);
    const fetches = scenario.fetchesOf(href).map((f) => ({ start: Date.parse(f.startedAt), end: Date.parse(f.at) }));
    expect(fetches.length).toBeGreaterThanOrEqual(2);
    fetches.sort((a, b) => a.start - b.start);
    for (let i = 1; i < fetches.length; i++) expect(fetches[i]!.start).toBeGreaterThanOrEqual(fetches[i - 1]!.end);
    expect(await finalSnapshotVersion(scenario, href)).toBe(30);
  });

  it('C4: every notification ends processed, covered by a fetch that started after it was received', async () => {
    scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '100' }, sim: { faults: { resourceLatencyMs: 20 } } });
    await scenario.company('acme');
    const fired = [];
    for (let i = 0; i < 5; i++) {
      fired.push(...(await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 20, resources: 4 })));
      await new Promise((r) => setTimeout(r, 40));
    }
    await scenario.settled(fired.length);
    expect(await scenario.statusCounts()).toEqual({ processed: fired.length });
    // Every stored snapshot is the resource's final version: a processed notification was never
    // covered by a fetch that read the resource before the change it announced.
    for (const r of scenario.sim.report().resources) {
      expect(await finalSnapshotVersion(scenario, r.href)).toBe(r.version);
    }
  });

  it('C5: a burst costs one fetch at its start and one after it, FETCH_MIN_INTERVAL_MS apart', async () => {
    scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '1000' } });
    await scenario.company('acme');
    const firedAt = Date.now();
    // The burst in two waves, the second once the first fetch has started: had all of it been committed
    // before that fetch's claim (a slow CI machine), one fetch would have covered it all, which C5 allows.
    const [n] = await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c5', count: 25 });
    const href = n!.notification.href;
    await eventually(async () => scenario!.fetchesOf(href).length > 0, 'the first fetch');
    await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c5', count: 25 });
    await scenario.settled(50);
    const starts = scenario.fetchesOf(href).map((f) => Date.parse(f.startedAt)).sort();
    expect(starts).toHaveLength(2);
    expect(await finalSnapshotVersion(scenario, href)).toBe(50);
    expect(starts[0]! - firedAt).toBeLessThan(800); // the quiet resource's first fetch starts at once
    // Seen from the simulator, which records a GET when its event loop gets to it: at the first fetch it
    // is busy delivering the burst, and under CPU load it recorded that GET up to 53 ms late while
    // Skyhook's own starts were 1,010 ms or more apart. The slot's exact timing is the next test's.
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(900);
  });

  it('C5: the next fetch waits FETCH_MIN_INTERVAL_MS from when a fetch starts, not from before its claim', async () => {
    // No worker: the test starts the fetches itself, with a claim the database holds up.
    scenario = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '1000' } });
    const { companyId } = await scenario.company('acme');
    const [n] = await scenario.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-c5-slow' });
    await eventually(async () => (await scenario!.statusCounts()).queued === 1, 'the notification queued');
    const href = n!.notification.href;
    const { starts, close } = fetchStarts(scenario, 1000);
    const lock = await scenario.sql.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE');
      const first = starts.begin(request(companyId, href)); // the claim waits, and the slot is reserved after it
      await new Promise((r) => setTimeout(r, 400));
      await lock.query('COMMIT');
      expect((await first).kind).toBe('claimed');
      const second = await starts.begin(request(companyId, href));
      // About 600 ms if the interval ran from before the claim.
      expect(second.kind === 'wait' && second.waitMs).toBeGreaterThan(900);
    } finally {
      lock.release();
      await close();
    }
  });

  it('C5: a fetch that finds nothing pending reserves no slot, so the next notification is fetched at once', async () => {
    scenario = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '1000' } });
    const { companyId } = await scenario.company('acme');
    const { starts, close } = fetchStarts(scenario, 1000);
    try {
      const href = 'http://marketplace.test/api/rfqs/nothing-pending'; // nothing was ever received for it
      expect((await starts.begin(request(companyId, href))).kind).toBe('empty');
      // Had a slot been reserved, this start would wait about 1,000 ms.
      expect((await starts.begin(request(companyId, href))).kind).toBe('empty');
    } finally {
      await close();
    }
  });

  it('C5: a start whose claim fails reserves no slot', async () => {
    scenario = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '1000' } });
    const { companyId } = await scenario.company('acme');
    const broken = fetchStarts(scenario, 1000);
    const working = fetchStarts(scenario, 1000);
    try {
      const href = 'http://marketplace.test/api/rfqs/claim-fails';
      await broken.pool.end(); // its claim in PostgreSQL fails
      await expect(broken.starts.begin(request(companyId, href))).rejects.toThrow();
      // Had a slot been reserved, this start would wait about 1,000 ms.
      expect((await working.starts.begin(request(companyId, href))).kind).toBe('empty');
    } finally {
      await broken.close();
      await working.close();
    }
  });
});

/** A first start of a resource of a company that is not paused, under a limit it does not reach. */
const request = (companyId: string, href: string) => ({ resource: { companyId, href }, max: 64, paused: false, retried: false });

/** The worker's fetch starts outside a worker, on their own connections, for tests that drive them by hand. */
function fetchStarts(s: Scenario, minIntervalMs: number): { starts: FetchStarts; pool: pg.Pool; close: () => Promise<void> } {
  const pool = new pg.Pool({ connectionString: s.db.url, max: 1 });
  const redis = new Redis(REDIS_URL);
  const gate = new Gate(redis, s.prefix, 'company', { defaultMax: 64, leaseMs: 60_000 });
  const starts = new FetchStarts(createNotificationsRepository(pool), gate, s.prefix, minIntervalMs);
  return {
    starts,
    pool,
    close: async () => {
      if (!pool.ended) await pool.end();
      redis.disconnect();
    },
  };
}
