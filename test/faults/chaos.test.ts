/**
 * Every simulator fault at once — duplicate deliveries, lost acknowledgements, delivery latency, resource
 * GETs answering 503 and 429 (Retry-After) — over a few thousand notifications of four companies (BASIC
 * and OAuth, own and shared targetURIs), fired in waves of bursts on a few resources each.
 *
 * Proves: every delivered notification is stored (at least once, at most once per attempt or duplicate)
 * and processed; each resource's final snapshot is the simulator's final state; every GET carried the
 * owner's token; and the coalescing rules hold under it all: two GETs of one resource always start at
 * least FETCH_MIN_INTERVAL_MS apart (C5, retries included), so the GET count per resource stays far
 * below its number of notifications.
 */
import diagnostics from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { expectNothingMissing, sleep, type FaultCompany } from './support.js';

/** The default. */
const INTERVAL_MS = 1000;
/** Between the worker's slot reservation in Redis and its GET: one event-loop turn under load. */
const JITTER_MS = 150;

/**
 * When Skyhook starts each resource GET, seen where the HTTP client creates the request (Skyhook runs in
 * this process; undici reports every request on the `undici:request:create` diagnostics channel), not
 * where the simulator receives it: on this machine loopback segments are sometimes dropped under bursts
 * and retransmitted after a 200 ms+ RTO, so a GET can reach the simulator seconds after it was sent
 * (measured: the simulator's arrival times were up to 3.5 s after the call). Subscribing only observes.
 */
const getStarts = new Map<string, number[]>();
const onRequest = (message: unknown) => {
  const { request } = message as { request: { method: string; origin: string | URL; path: string } };
  const href = new URL(request.path, request.origin).href;
  // Resource GETs only: not the settings list with which a new company's credentials are checked.
  const resource = s && href.startsWith(`${s.sim.apiBaseUrl}/`) && !href.startsWith(`${s.sim.apiBaseUrl}/webhooks/`);
  if (request.method === 'GET' && resource) getStarts.set(href, [...(getStarts.get(href) ?? []), Date.now()]);
};

let s: Scenario;
beforeAll(async () => {
  diagnostics.subscribe('undici:request:create', onRequest);
  s = await startScenario({
    env: { FETCH_MIN_INTERVAL_MS: String(INTERVAL_MS), WORKER_CONCURRENCY: '64' },
    sim: {
      faults: { duplicateRate: 0.1, lostAckRate: 0.1, deliveryLatencyMs: 5, resource5xxRate: 0.1, resource429Rate: 0.05 },
    },
  });
});
afterAll(async () => {
  diagnostics.unsubscribe('undici:request:create', onRequest);
  await s?.close();
});

describe('chaos: all simulator faults at once', () => {
  it('processes every notification, ends on the simulator’s final state, and coalesces fetches', async () => {
    const companies: Record<string, FaultCompany> = {};
    const specs = [
      { id: 'alpha', authType: 'BASIC', sharedTarget: false },
      { id: 'bravo', authType: 'BASIC', sharedTarget: true },
      { id: 'charlie', authType: 'OAUTH', sharedTarget: false },
      { id: 'delta', authType: 'OAUTH', sharedTarget: true },
    ] as const;
    for (const c of specs) companies[c.id] = await s.company(c.id, { authType: c.authType, sharedTarget: c.sharedTarget });

    // Per company: 12 trip requests and 4 leads, each changed again and again, in 3 waves.
    const resourceIds: Record<string, { eventType: 'TripRequest' | 'ClientLeads'; id: string }[]> = {};
    let fired = 0;
    for (let wave = 0; wave < 3; wave++) {
      for (const c of specs) {
        if (wave === 0) {
          const trips = await s.sim.fire({ companyId: c.id, eventType: 'TripRequest', count: 12, resources: 12 });
          const leads = await s.sim.fire({ companyId: c.id, eventType: 'ClientLeads', count: 4, resources: 4 });
          resourceIds[c.id] = [
            ...trips.map((n) => ({ eventType: 'TripRequest' as const, id: n.notification.id })),
            ...leads.map((n) => ({ eventType: 'ClientLeads' as const, id: n.notification.id })),
          ];
          fired += 16;
        }
        // A burst on each resource: 15 changes to each trip request, 10 to each lead.
        for (const r of resourceIds[c.id]!) {
          const count = r.eventType === 'TripRequest' ? 15 : 10;
          await s.sim.fire({ companyId: c.id, eventType: r.eventType, resourceId: r.id, count });
          fired += count;
        }
      }
      await sleep(800);
    }
    expect(fired).toBeGreaterThanOrEqual(2500);

    await s.sim.idle();
    const report = s.sim.report();
    expect(report.gaveUp).toBe(0);
    expect(report.delivered).toBe(fired);
    // The faults really happened.
    expect(report.duplicatesSent).toBeGreaterThan(0);
    expect(report.lostAcks).toBeGreaterThan(0);
    await s.settled(fired, 120_000);

    // Stored: at least once each; at most once per attempt plus one duplicate.
    await expectNothingMissing(s.sql, s.sim.report(), companies, { allowExtraPerResource: (n, attempts) => attempts + n });
    const final = s.sim.report();
    expect(final.fetches.some((f) => f.status === 503)).toBe(true);
    expect(final.fetches.some((f) => f.status === 429)).toBe(true);
    for (const f of final.fetches) expect(f.tokenCompanyId, f.href).toBe(f.ownerCompanyId);

    // Coalescing: per resource, GETs (retries included) start >= FETCH_MIN_INTERVAL_MS apart (C5) …
    const { rows } = await s.sql.query<{ href: string; n: number }>('SELECT href, count(*)::int AS n FROM notifications GROUP BY href');
    const notificationsPerHref = new Map(rows.map((r) => [r.href, r.n]));
    // Every GET the simulator answered was one Skyhook started (and the other way round).
    expect([...getStarts.values()].reduce((n, a) => n + a.length, 0)).toBe(final.fetches.length);
    const startsPerHref = getStarts;
    const tooClose: string[] = [];
    let gets = 0;
    let stored = 0;
    for (const [href, notifications] of notificationsPerHref) {
      const starts = (startsPerHref.get(href) ?? []).sort((a, b) => a - b);
      expect(starts.length, `${href} was fetched`).toBeGreaterThan(0);
      for (let i = 1; i < starts.length; i++) {
        if (starts[i]! - starts[i - 1]! < INTERVAL_MS - JITTER_MS) tooClose.push(`${href}: GETs ${starts[i]! - starts[i - 1]!} ms apart`);
      }
      // … so a resource costs far fewer GETs than its notifications.
      expect(starts.length, `${href}: ${starts.length} GETs for ${notifications} notifications`).toBeLessThan(notifications / 2);
      gets += starts.length;
      stored += notifications;
    }
    expect(tooClose, 'GETs of one resource closer than FETCH_MIN_INTERVAL_MS (C5)').toEqual([]);
    console.log(`chaos: ${fired} fired, ${stored} stored (duplicates and lost acks included), ${gets} GETs for ${notificationsPerHref.size} resources`);
    expect(gets, 'GETs in all, against notifications stored').toBeLessThan(stored / 5);
  }, 180_000);
});
