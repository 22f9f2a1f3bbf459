/**
 * Many companies, each on its own (SPEC §5.1), against the simulator, PostgreSQL and Redis, with several
 * Skyhook processes where the rule is about them: F1 fair share, F2 a limit shared by every worker, F3 a
 * hold met by one worker and honoured by the others, F4 a paused company parked (through a restart) and
 * resumed, F5 one state.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { FetchRecord } from '../../src/simulator/index.js';
import { ADMIN_TOKEN, eventually } from '../helpers/skyhook.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

let seq = 0;
/** Fires one notification on each of `n` distinct resources of a company; answers their hrefs. */
async function fireDistinct(scenario: Scenario, simId: string, n: number): Promise<string[]> {
  const fired = await Promise.all(
    Array.from({ length: n }, () => scenario.sim.fire({ companyId: simId, eventType: 'TripRequest', resourceId: `rfq-${simId}-${++seq}` })),
  );
  return fired.map(([f]) => f!.notification.href);
}

/** The notifications of a company, by status. */
async function statuses(scenario: Scenario, companyId: string): Promise<Record<string, number>> {
  const { rows } = await scenario.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM notifications WHERE company_id = $1 GROUP BY status', [companyId]);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Waits until the company has `n` notifications stored and every one processed. */
const allProcessed = (scenario: Scenario, companyId: string, n: number, timeoutMs = 20_000) =>
  eventually(async () => ((await statuses(scenario, companyId)).processed === n ? true : undefined), `${n} notifications of ${companyId} processed`, timeoutMs);

/** The most GETs that were under way at once, from what the marketplace saw. */
function mostAtOnce(fetches: FetchRecord[]): number {
  const edges = fetches.flatMap((f) => [
    { at: Date.parse(f.startedAt), d: 1 },
    { at: Date.parse(f.at), d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (now += e.d));
  return most;
}

const fetchesOfCompany = (scenario: Scenario, simId: string) => scenario.sim.report().fetches.filter((f) => f.ownerCompanyId === simId);

describe('many companies, each on its own (SPEC §5.1)', () => {
  it("F1: a company's notifications do not wait behind another company's backlog, and that backlog keeps progressing", async () => {
    s = await startScenario({ env: { WORKER_CONCURRENCY: '4', FETCH_MIN_INTERVAL_MS: '0' }, sim: { faults: { resourceLatencyMs: 400 } } });
    const a = await s.company('flood');
    const b = await s.company('quiet');
    // 80 fetches of 400 ms, 4 at a time (the worker's slots): A's backlog lasts about 8 s. Once A's limit has
    // grown (it starts at 4 and grows with each answer), about 25 of its jobs wait in the queue: in one FIFO
    // B would wait 2.5 s behind them. Its jobs' priorities put B's first job ahead.
    await fireDistinct(s, 'flood', 80);
    await eventually(async () => ((await statuses(s!, a.companyId)).processed ?? 0) >= 24, "A's limit grown", 20_000);
    await fireDistinct(s, 'quiet', 3);
    await allProcessed(s, b.companyId, 3);
    const { rows } = await s.sql.query<{ waited: number }>('SELECT extract(epoch FROM processed_at - received_at)::float AS waited FROM notifications WHERE company_id = $1', [b.companyId]);
    // One GET of 400 ms and scheduling, not A's backlog.
    for (const r of rows) expect(r.waited).toBeLessThan(1.5);
    const aNow = await statuses(s, a.companyId);
    expect(aNow.queued ?? 0).toBeGreaterThan(0); // A is not done...
    expect(aNow.processed ?? 0).toBeGreaterThan(24); // ...but it kept its share
    await allProcessed(s, a.companyId, 80);
  });

  it('F2: two worker processes share one limit of a company', async () => {
    s = await startScenario({ role: 'api', env: { WORKER_CONCURRENCY: '8', FETCH_MIN_INTERVAL_MS: '0' }, sim: { faults: { resourceLatencyMs: 300 } } });
    await s.addSkyhook({ role: 'worker' });
    await s.addSkyhook({ role: 'worker' });
    const c = await s.company('limited');
    await s.skyhook.admin('PATCH', `/companies/${c.companyId}`, { fetchConcurrency: 3 });
    await fireDistinct(s, 'limited', 18);
    await allProcessed(s, c.companyId, 18);
    const most = mostAtOnce(fetchesOfCompany(s, 'limited'));
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2); // the limit, not one at a time
  });

  it("F3: a 429 met by one worker holds the company's fetches in every worker for the time asked; other companies and the refused fetch carry on", async () => {
    s = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '0' } });
    await s.addSkyhook({ role: 'worker' });
    await s.addSkyhook({ role: 'worker' });
    const c = await s.company('limited');
    const d = await s.company('neighbour');
    const leadBody = readFileSync('examples/lead.json', 'utf8');
    const sendLead = (body: string) =>
      fetch(`${s!.skyhook.url}/admin/companies/${c.companyId}/leads`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body });
    // A lead made before the hold: repeated during it, it is answered as stored.
    expect((await sendLead(leadBody)).status).toBe(201);
    const leadsBefore = s.sim.report().calls.leads ?? 0;
    const refusedHref = `${s.sim.apiBaseUrl}/rfqs/rfq-429`;
    s.sim.programResource({ href: refusedHref, responses: [{ status: 429, headers: { 'retry-after': '2' } }] });
    await s.sim.fire({ companyId: 'limited', eventType: 'TripRequest', resourceId: 'rfq-429' });
    const refusal = await eventually(async () => s!.fetchesOf(refusedHref).find((f) => f.status === 429), 'the 429');
    const heldFrom = Date.parse(refusal.at);
    // The worker tells the gate once it has recorded the attempt: a moment after the simulator answered.
    const throttled = await eventually(async () => {
      const view = (await s!.skyhook.admin('GET', `/companies/${c.companyId}`)).body;
      return view.state.status === 'throttled' ? view : undefined;
    }, 'the company throttled', 2000);
    expect(throttled.state).toMatchObject({ until: expect.any(String), reason: expect.stringContaining('429') });
    // Its new leads wait too: a clear 503 with Retry-After, nothing sent; a repeat is answered as stored (SPEC §6).
    const lead = await sendLead(JSON.stringify({ ...JSON.parse(leadBody), clientIdentifier: 'lead-during-the-hold' }));
    expect(lead.status).toBe(503);
    expect(Number(lead.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await lead.json()).toMatchObject({ code: 'company_throttled' });
    const repeat = await sendLead(leadBody);
    expect(repeat.status).toBe(200);
    expect((s.sim.report().calls.leads ?? 0) - leadsBefore).toBe(0);

    await fireDistinct(s, 'limited', 6);
    await fireDistinct(s, 'neighbour', 2);
    await allProcessed(s, d.companyId, 2, 5000); // the neighbour is not held
    await allProcessed(s, c.companyId, 7);
    const afterRefusal = fetchesOfCompany(s, 'limited').filter((f) => Date.parse(f.startedAt) > heldFrom);
    // Nothing of the company was asked during the 2 s asked for (a few ms of slack for the clocks of one machine).
    expect(afterRefusal.filter((f) => Date.parse(f.startedAt) < heldFrom + 1950)).toEqual([]);
    // The refused fetch was retried (an attempt spent) and processed (the lead made before may have brought a notification of its own).
    await eventually(async () => (await s!.sql.query('SELECT status FROM notifications WHERE href = $1 ORDER BY id LIMIT 1', [refusedHref])).rows[0]?.status === 'processed', 'the refused fetch processed');
  });

  it('F4: a paused company parks its notifications (nothing fetched, nothing failed, through a worker restart); new credentials resume them all at once', async () => {
    s = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '0' } });
    const worker = await s.addSkyhook({ role: 'worker' });
    const p = await s.company('revoked');
    // The marketplace no longer accepts the token Skyhook holds.
    const newToken = `token-revoked-new-${Date.now()}`;
    s.sim.addCompany({ id: 'revoked', token: newToken });
    await fireDistinct(s, 'revoked', 1);
    await eventually(async () => ((await s!.skyhook.admin('GET', `/companies/${p.companyId}`)).body.state.status === 'paused' ? true : undefined), 'paused');
    await fireDistinct(s, 'revoked', 40);
    await eventually(async () => ((await statuses(s!, p.companyId)).queued === 41 ? true : undefined), '41 stored and waiting');
    const before = s.sim.report().fetches.length;

    // The worker restarts while the company is paused: nothing is lost, nothing is asked with the refused token.
    await worker.stop();
    await s.addSkyhook({ role: 'worker' });
    await new Promise((r) => setTimeout(r, 1500));
    expect(s.sim.report().fetches.length).toBe(before);
    expect(await statuses(s, p.companyId)).toEqual({ queued: 41 });
    const view = (await s.skyhook.admin('GET', `/companies/${p.companyId}`)).body;
    expect(view.state).toMatchObject({ status: 'paused', since: expect.any(String), reason: expect.stringContaining('401') });
    expect(view.fetches.running).toBe(0);

    const patched = await s.skyhook.admin('PATCH', `/companies/${p.companyId}`, { apiToken: newToken });
    expect(patched.body).toMatchObject({ state: { status: 'ok' }, credentials: { status: 'accepted' } });
    await allProcessed(s, p.companyId, 41);
    expect(await statuses(s, p.companyId)).toEqual({ processed: 41 });
  });

  it('F4: a refusal the marketplace takes back resumes the company by itself, after one probe', async () => {
    s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', PAUSED_PROBE_INTERVAL_MS: '10000' } });
    const p = await s.company('flaky');
    s.sim.programResource({ href: `${s.sim.apiBaseUrl}/rfqs/rfq-flaky-401`, responses: [{ status: 401 }] });
    await s.sim.fire({ companyId: 'flaky', eventType: 'TripRequest', resourceId: 'rfq-flaky-401' });
    await eventually(async () => ((await s!.skyhook.admin('GET', `/companies/${p.companyId}`)).body.state.status === 'paused' ? true : undefined), 'paused');
    // The token is good: the probe (the settings list) is accepted and everything that waited is fetched.
    await fireDistinct(s, 'flaky', 1);
    await eventually(async () => ((await statuses(s!, p.companyId)).processed === 2 ? true : undefined), 'resumed by the probe', 40_000);
    expect((await s.skyhook.admin('GET', `/companies/${p.companyId}`)).body.state.status).toBe('ok');
  }, 60_000);

  it('F5: a company created with credentials the marketplace refuses is paused at once, and no fetch starts with them', async () => {
    s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
    s.sim.addCompany({ id: 'wrong', token: 'the-real-token-of-wrong' });
    const created = await s.skyhook.admin('POST', '/companies', { name: 'wrong', apiBaseUrl: s.sim.apiBaseUrl, apiToken: 'not-the-token-0123456789' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ state: { status: 'paused', reason: expect.stringContaining('credentials check') }, connectionStatus: 'unauthorized', credentials: { status: 'refused' } });
    const listed = (await s.skyhook.admin('GET', '/companies')).body.items.find((c: { id: string }) => c.id === created.body.id);
    expect(listed.state.status).toBe('paused');
    const metrics = await (await fetch(`${s.skyhook.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^skyhook_company_state\\{company="${created.body.id}",state="paused"\\} 1$`, 'm'));
    // A webhook, then a notification: stored, waiting, and never fetched with the refused token.
    const hook = await s.skyhook.admin('POST', `/companies/${created.body.id}/webhooks`, { eventTypes: ['TripRequest'], authType: 'BASIC' });
    expect(hook.status).toBe(502); // the marketplace refuses the settings call too: nothing to receive with
    expect(s.sim.report().fetches).toEqual([]);
  });
});
