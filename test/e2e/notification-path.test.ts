/**
 * End to end: the simulator, started for real, delivers BASIC and OAUTH notifications for two
 * companies (one on its own targetURI, one on the shared one); Skyhook ends with every notification
 * processed, the right snapshots, and no request carrying one company's token to another's data.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';

let s: Scenario;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '200' }, sim: { faults: { resourceLatencyMs: 5 } } });
});
afterAll(async () => s?.close());

it('delivers, stores, fetches and snapshots every notification of two companies, each with its own token', async () => {
  const acme = await s.company('acme', { authType: 'BASIC', sharedTarget: false });
  const zeta = await s.company('zeta', { authType: 'OAUTH', sharedTarget: true });
  const webhooks = await s.skyhook.admin('GET', `/companies/${zeta.companyId}/webhooks`);
  expect(webhooks.body.items[0].targetURI).toBe(`${s.skyhook.url}/hooks`);

  const fired = [];
  for (const companyId of ['acme', 'zeta']) {
    fired.push(...(await s.sim.fire({ companyId, eventType: 'TripRequest', count: 40, resources: 8 })));
    fired.push(...(await s.sim.fire({ companyId, eventType: 'ClientLeads', count: 10, resources: 5 })));
    fired.push(...(await s.sim.fire({ companyId, eventType: 'TripChatFromBuyer', count: 10 })));
  }
  await s.sim.idle();
  await s.settled(fired.length, 30_000);

  const report = s.sim.report();
  expect(report.gaveUp).toBe(0);
  expect(report.delivered).toBe(fired.length);
  expect(await s.statusCounts()).toEqual({ processed: fired.length });

  // Attribution: each notification stored under the company it was fired for, authenticated its way.
  const { rows: byCompany } = await s.sql.query<{ company_id: string; authenticated_by: string; n: string }>(
    'SELECT company_id, authenticated_by, count(*) AS n FROM notifications GROUP BY 1, 2 ORDER BY 1',
  );
  expect(Object.fromEntries(byCompany.map((r) => [r.company_id, [r.authenticated_by, Number(r.n)]]))).toEqual({
    [acme.companyId]: ['basic', fired.length / 2],
    [zeta.companyId]: ['oauth', fired.length / 2],
  });

  // Snapshots: one per resource, each the simulator's final version, under the owning company.
  const companyOf: Record<string, string> = { acme: acme.companyId, zeta: zeta.companyId };
  const { rows: snapshots } = await s.sql.query<{ company_id: string; href: string; type: string; body: { version: number } }>('SELECT * FROM resources');
  expect(snapshots).toHaveLength(report.resources.length);
  for (const r of report.resources) {
    const snap = snapshots.find((x) => x.href === r.href);
    expect(snap, r.href).toBeDefined();
    expect(snap!.company_id).toBe(companyOf[r.companyId]);
    expect(snap!.type).toBe(r.type);
    expect(snap!.body.version).toBe(r.version);
  }

  // Tenant isolation: every GET carried the token of the resource's owner.
  expect(report.fetches.length).toBeGreaterThan(0);
  for (const f of report.fetches) expect(f.tokenCompanyId).toBe(f.ownerCompanyId);

  // Events: one row per stored version (a fetch that read the stored body again stores none: SPEC §5.2).
  const { rows: events } = await s.sql.query<{ n: string; versions: string }>('SELECT (SELECT count(*) FROM events) AS n, (SELECT sum(version) FROM resources) AS versions');
  expect(Number(events[0]!.n)).toBe(Number(events[0]!.versions));
  expect(Number(events[0]!.n)).toBeLessThanOrEqual(report.fetches.filter((f) => f.status === 200).length);
});
