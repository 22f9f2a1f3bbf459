/**
 * Connections that expire, against the simulator (SPEC §14): the marketplace deactivates a connection it has not
 * seen used for 60 days, and OAuth client secrets expire. Skyhook records the last successful call (not a write
 * per call), warns ten days before the limit and two weeks before a recorded secret expiry (API, metric), keeps
 * a quiet company's connection alive with one harmless call, and a connection the simulator deactivated or a
 * secret it expired pauses the company instead of failing its notifications.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleClient } from '../helpers/console-client.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

const DAY_MS = 86_400_000;
const uid = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;

let s: Scenario;
beforeAll(async () => {
  // The companies' loop (probes, keep-alives) every 5 s.
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', PAUSED_PROBE_INTERVAL_MS: '10000' } });
});
afterAll(async () => s?.close());

const company = async (id: string) => (await s.skyhook.admin('GET', `/companies/${id}`)).body;
const metrics = async () => (await fetch(`${s.skyhook.url}/metrics`)).text();

describe('connections that expire', () => {
  it("records the company's last successful call, not a write per call", async () => {
    const c = await s.company(uid('used'), { eventTypes: ['TripRequest'] });
    const first = await eventually(async () => (await company(c.companyId)).connectionLastUsedAt as string | null, 'the creation check recorded as a use');
    expect(Date.now() - Date.parse(first)).toBeLessThan(60_000);
    await Promise.all([1, 2, 3].map((i) => s.sim.fire({ companyId: c.simId, eventType: 'TripRequest', resourceId: uid(`rfq${i}`) })));
    await s.settled(3);
    expect(s.sim.report().fetches.filter((f) => f.tokenCompanyId === c.simId && f.status === 200).length).toBeGreaterThanOrEqual(3);
    // Three successful fetches within the minute of the check: the column was not written again.
    expect((await company(c.companyId)).connectionLastUsedAt).toBe(first);
  });

  it('warns ten days before the 60-day limit (API, metric), and a quiet connection gets one harmless call that clears it', async () => {
    const c = await s.company(uid('quiet'), { eventTypes: ['TripRequest'] });
    // 55 days pass without a call, on both sides.
    s.sim.ageConnection(c.simId, 55);
    await s.sql.query(`UPDATE companies SET connection_last_used_at = now() - interval '55 days', created_at = now() - interval '90 days' WHERE id = $1`, [c.companyId]);
    const warned = await company(c.companyId);
    expect(warned.connectionWarnings).toEqual([{ kind: 'connection_unused', at: expect.any(String), message: expect.stringContaining('60 days') }]);
    expect(Date.parse(warned.connectionWarnings[0].at) - Date.now()).toBeGreaterThan(4 * DAY_MS);
    await eventually(async () => (await metrics()).includes(`skyhook_connection_warning{company="${c.companyId}",kind="connection_unused"} 1`), 'the warning on /metrics');

    // Quiet for more than 30 days: the companies' loop makes the credentials check, which the simulator counts as use.
    const cleared = await eventually(async () => {
      const now = await company(c.companyId);
      return now.connectionWarnings.length === 0 ? now : undefined;
    }, 'the keep-alive call made', 20_000);
    expect(Date.now() - Date.parse(cleared.connectionLastUsedAt)).toBeLessThan(60_000);
    expect(cleared.credentials.status).toBe('accepted');
  });

  it('a connection the marketplace deactivated (unused for 60 days) pauses the company, its notifications waiting', async () => {
    const c = await s.company(uid('stale'), { eventTypes: ['TripRequest'] });
    s.sim.ageConnection(c.simId, 61);
    await s.sim.fire({ companyId: c.simId, eventType: 'TripRequest', resourceId: uid('rfq') });
    const paused = await eventually(async () => {
      const now = await company(c.companyId);
      return now.state.status === 'paused' ? now : undefined;
    }, 'the company paused');
    expect(paused.state.reason).toContain('401');
    const { rows } = await s.sql.query("SELECT status FROM notifications WHERE company_id = $1", [c.companyId]);
    expect(rows).toEqual([{ status: 'queued' }]);
  });

  it('records an OAuth client secret expiry (validated, shown), warns two weeks before it, and an expired secret pauses the company', async () => {
    const simId = uid('oauth');
    s.sim.addCompany({ id: simId, clientId: `client-${simId}`, clientSecret: `secret-${simId}` });
    const connection = { profile: 'bearer', tokenUrl: `${s.sim.apiBaseUrl}/oauth/token`, clientId: `client-${simId}`, clientSecret: `secret-${simId}` };
    const bad = await s.skyhook.admin('POST', '/companies', { name: simId, apiBaseUrl: s.sim.apiBaseUrl, connection: { profile: 'bearer', clientSecretExpiresAt: 'next week' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('body.connection.clientSecretExpiresAt');

    const expiresAt = new Date(Date.now() + 10 * DAY_MS).toISOString();
    const created = await s.skyhook.admin('POST', '/companies', { name: simId, apiBaseUrl: s.sim.apiBaseUrl, connection: { ...connection, clientSecretExpiresAt: expiresAt } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ connection: { clientSecretExpiresAt: expiresAt }, credentials: { status: 'accepted' } });
    expect(created.body.connectionWarnings).toEqual([{ kind: 'client_secret_expiring', at: expiresAt, message: expect.stringContaining('expires') }]);
    await eventually(async () => (await metrics()).includes(`skyhook_connection_warning{company="${created.body.id}",kind="client_secret_expiring"} 1`), 'the warning on /metrics');

    const web = consoleClient(() => s.skyhook.url);
    const { cookie } = await web.signIn();
    const page = await (await web.get(`/companies/${created.body.id}`, cookie)).text();
    expect(page).toContain(`<p class="notice warn" role="status">the OAuth client secret expires ${expiresAt}`);

    // The marketplace lets the secret expire: the next token request is refused, and the company waits for a new one.
    s.sim.expireClientSecret(simId);
    s.sim.revokeTokens(simId);
    const probe = await s.skyhook.admin('PATCH', `/companies/${created.body.id}`, { connection: { ...connection, clientSecretExpiresAt: expiresAt } });
    expect(probe.body.credentials.status).toBe('refused');
    expect(probe.body.state.status).toBe('paused');
  });
});
