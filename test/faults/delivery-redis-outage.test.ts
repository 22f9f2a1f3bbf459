/**
 * Redis restarts empty while deliveries wait (SPEC §5.2, §2): Skyhook runs on a redis-server of this file's
 * own, which the test stops and starts again on the same port, without persistence. What Redis held of
 * the deliveries is gone: the jobs waiting for a retry, the keys parked at a destination's gate behind its
 * limit, the pause of a failing destination. PostgreSQL holds every delivery; the deliveries' loop
 * (delivery/loop.ts, every 5 s) rebuilds the rest from it: the relay queues a pending delivery of an
 * answering destination once it is RELAY_GRACE_MS (10 s) past due, repair() pauses a failing destination's
 * gate again, and its probe, due on the retry schedule, resumes it. So a delivery due when Redis returns
 * is sent again within about 15 s (the grace and one pass of the loop), a later one 15 s after it is due.
 *
 * Proves: every delivery, of the three kinds of destination, is delivered afterwards, in order per
 * resource, with events stored while Redis was down delivered too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllRedisServers, startOwnRedis, type OwnRedis } from '../helpers/redis-server.js';
import { destinationFor, destinationView } from '../helpers/destinations.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';
import type { FaultCompany } from './support.js';

/** A failed attempt is tried again 8 s later: long enough that none is retried before Redis restarts. */
const RETRY_MS = 8000;

let redis: OwnRedis;
let s: Scenario;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  redis = await startOwnRedis();
  s = await startScenario({ env: { REDIS_URL: redis.url, FETCH_MIN_INTERVAL_MS: '0', DELIVERY_RETRY_SCHEDULE: [0, ...Array(7).fill(RETRY_MS)].join(',') } });
});

afterAll(async () => {
  // Closing BullMQ against a Redis that is down would wait for it: bring it back first.
  if (redis && !redis.running()) await redis.start(); // a failure to start is the run's to see
  for (const r of receivers) await r.close();
  await s?.close();
  await redis?.stop();
  killAllRedisServers();
});

async function receiver(answer: TestReceiver['answer']): Promise<TestReceiver> {
  const r = await startReceiver();
  r.answer = answer;
  receivers.push(r);
  return r;
}

/** Fires `count` events round-robin over `resources` new resources of a company; answers the resources' ids. */
async function fire(company: FaultCompany, count: number, resources = count): Promise<string[]> {
  const fired = await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', count, resources });
  return [...new Set(fired.map((n) => n.notification.id))];
}

const count = async (query: string, params: unknown[] = []) => (await s.sql.query<{ n: number }>(query, params)).rows[0]!.n;

describe('Redis restarted empty while deliveries wait (SPEC §5.2)', () => {
  it('every delivery is delivered afterwards, in order per resource, rebuilt from PostgreSQL', async () => {
    // Parked: one request at a time, answered slowly; the rest wait at its gate, in Redis only.
    const parked = await s.company('parked');
    let slow = true;
    const rParked = await receiver(() => ({ status: 200, delayMs: slow ? 1500 : 0 }));
    const dParked = await destinationFor(s.skyhook.admin, parked, rParked, { maxConcurrency: 1 });
    // Retrying: each first attempt refused; its retry is a delayed job, in Redis only.
    const retrying = await s.company('retrying');
    let refusing = true;
    const rRetrying = await receiver(() => ({ status: refusing ? 503 : 200 }));
    const dRetrying = await destinationFor(s.skyhook.admin, retrying, rRetrying);
    // Failing: five failures in a row opened its circuit; its gate's pause is in Redis, its probe due in PostgreSQL.
    const failing = await s.company('failing');
    let down = true;
    const rFailing = await receiver(() => ({ status: down ? 500 : 200 }));
    const dFailing = await destinationFor(s.skyhook.admin, failing, rFailing);

    await fire(parked, 8, 4);
    const retried = await fire(retrying, 3);
    await fire(failing, 6);
    await eventually(async () => rParked.attempts.length >= 1, 'the parked destination sending its first');
    await eventually(async () => rRetrying.attempts.length === 3, 'each retrying delivery refused once');
    await eventually(async () => (await destinationView(s.skyhook.admin, failing.companyId, dFailing.id)).state.status === 'failing', 'the failing destination’s circuit open');
    expect((await destinationView(s.skyhook.admin, retrying.companyId, dRetrying.id)).state.status, 'retrying: still answering').toBe('ok');
    expect(await count(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`)).toBeGreaterThanOrEqual(4 + 3 + 6);

    // Redis goes, and comes back empty. New versions of the retrying resources meanwhile (BASIC notifications wait `received`).
    await redis.stop();
    for (const resourceId of retried) await s.sim.fire({ companyId: retrying.simId, eventType: 'TripRequest', resourceId });
    await eventually(async () => (await count(`SELECT count(*)::int AS n FROM notifications WHERE status = 'received'`)) === retried.length, 'the notifications of the outage stored');
    await redis.start();
    const back = Date.now();
    slow = false;
    refusing = false;
    down = false;

    // Every event stored (the outage's versions included) has its delivery, delivered.
    const stored = async () => count('SELECT count(*)::int AS n FROM events');
    await eventually(async () => (await stored()) >= 4 + 3 + 6 + retried.length && (await count(`SELECT count(*)::int AS n FROM deliveries WHERE status <> 'delivered'`)) === 0, 'every delivery delivered', 60_000);
    const recoveryMs = Date.now() - back;
    const events = await stored();
    console.log(`delivery-redis-outage: all ${events} deliveries delivered ${recoveryMs} ms after Redis returned empty`);
    // Bounded by the relay's grace past the latest retry due (RETRY_MS after its refusal) and a pass of the loop, not by any timeout.
    expect(recoveryMs).toBeLessThan(RETRY_MS + 10_000 + 5000 + 5000);
    expect(await count('SELECT count(*)::int AS n FROM deliveries')).toBe(events);

    for (const [r, d] of [[rParked, dParked], [rRetrying, dRetrying], [rFailing, dFailing]] as const) {
      const { rows } = await s.sql.query<{ id: string }>('SELECT id FROM deliveries WHERE destination_id = $1', [d.id]);
      const firstOfEach = r.received.filter((x, i) => r.received.findIndex((y) => y.webhookId === x.webhookId) === i);
      expect(new Set(firstOfEach.map((x) => x.webhookId)), `${d.id}: every delivery received`).toEqual(new Set(rows.map((x) => `msg_${x.id}`)));
      expect(r.received.every((x) => x.verifiedWith === 0)).toBe(true);
      // In order per resource: its versions received in ascending order.
      const byResource = new Map<string, number[]>();
      for (const x of firstOfEach) byResource.set(x.event.resource!.id, [...(byResource.get(x.event.resource!.id) ?? []), x.event.resource!.version]);
      for (const [resourceId, versions] of byResource) expect(versions, `${resourceId}: in order`).toEqual([...versions].sort((a, b) => a - b));
      expect(r.received.length - firstOfEach.length, `${d.id}: delivered twice`).toBe(0);
    }
    expect(rRetrying.received.filter((x) => x.event.resource!.version === 2)).toHaveLength(retried.length);
    expect((await destinationView(s.skyhook.admin, failing.companyId, dFailing.id)).state.status).toBe('ok');
  }, 120_000);
});
