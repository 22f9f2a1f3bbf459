/**
 * A resync against the simulator (SPEC §14): after notifications the marketplace gave up on (its 48 hours of
 * retries), every resource Skyhook stored for the company is fetched again, through the company's gate and
 * within its limit, so what changed meanwhile is stored as new versions; audited like other admin changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

const uid = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;

let s: Scenario;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
});
afterAll(async () => s?.close());

describe('skyhook resync', () => {
  it("fetches again every resource of the company, one at a time under a limit of 1, and stores what changed while its notifications were lost", async () => {
    const company = await s.company('resync', { eventTypes: ['TripRequest'] });
    const ids = [uid('rfq'), uid('rfq'), uid('rfq'), uid('rfq')];
    const fired = (await Promise.all(ids.map((resourceId) => s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId })))).flat();
    await s.settled(ids.length);
    expect((await s.skyhook.admin('PATCH', `/companies/${company.companyId}`, { fetchConcurrency: 1 })).status).toBe(200);

    // The marketplace changes each RFQ, and its notifications never reach Skyhook.
    for (const id of ids) s.sim.state.changeResource(company.simId, 'rfqs', id, { status: 'changed while down' });
    const since = new Date().toISOString();

    const res = await s.skyhook.admin('POST', `/companies/${company.companyId}/resync`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ companyId: company.companyId, resources: 4, queued: 4, outOfScope: 0 });

    const hrefs = fired.map((f) => f.notification.href);
    const stored = await eventually(async () => {
      const list = await s.skyhook.admin('GET', `/resources?companyId=${company.companyId}&type=rfqs`);
      const mine = list.body.items.filter((r: { href: string }) => hrefs.includes(r.href));
      return mine.length === 4 && mine.every((r: { version: number }) => r.version === 2) ? mine : undefined;
    }, 'every RFQ stored again');
    expect(stored.map((r: { body: { status: string } }) => r.body.status)).toEqual(Array(4).fill('changed while down'));

    // Through the company's gate: under its limit of 1, no two of these fetches overlapped.
    const fetches = s.sim
      .report()
      .fetches.filter((f) => hrefs.includes(f.href) && f.startedAt >= since)
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(fetches).toHaveLength(4);
    for (let i = 1; i < fetches.length; i++) expect(fetches[i]!.startedAt >= fetches[i - 1]!.at, `fetch ${i} started before ${i - 1} was answered`).toBe(true);

    const { rows } = await s.sql.query("SELECT status, body->>'resync' AS resync FROM notifications WHERE company_id = $1 AND authenticated_by = 'resync'", [company.companyId]);
    expect(rows).toEqual(Array(4).fill({ status: 'processed', resync: 'true' }));
    const audit = await s.skyhook.admin('GET', `/audit?companyId=${company.companyId}&limit=1`);
    expect(audit.body.items[0]).toMatchObject({ action: 'POST /admin/companies/:companyId/resync', outcome: 'ok', details: { resources: 4, queued: 4 } });
  });

  it('answers 404 for an unknown company and 409 for a company without a webhook, queuing nothing', async () => {
    expect((await s.skyhook.admin('POST', '/companies/00000000-0000-4000-8000-000000000000/resync')).status).toBe(404);
    const company = await s.company('no-hooks', { eventTypes: ['TripRequest'] });
    expect((await s.skyhook.admin('DELETE', `/companies/${company.companyId}/webhooks/${company.webhookId}`)).status).toBe(204);
    const res = await s.skyhook.admin('POST', `/companies/${company.companyId}/resync`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('no_webhook');
  });
});
