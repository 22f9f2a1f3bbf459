/**
 * Replacing a company's API token (PATCH /admin/companies/{id} {apiToken}) while one of its resources is
 * being fetched (SPEC §5: 401/403 pause the company "until the token is replaced (then they resume by
 * themselves)"). A marketplace that issues a new token revokes the old one; a fetch that still carries the
 * old token after the replacement gets 401.
 *
 * The simulator answers resource GETs slowly (resourceLatencyMs), so the replacement lands while a GET
 * with the old token is in flight, and that GET is answered 401 after it (scripted: the simulator checks
 * the token when a request arrives, the marketplace may refuse a token revoked while it answers).
 *
 * Proves: a 401 earned by the old token and arriving after the replacement neither pauses the company nor
 * fails a notification (the resource is fetched again with the new token); notifications fired right
 * after the replacement are processed with the new one.
 */
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';
import { sleep } from './support.js';

/** How long the simulator takes to answer a resource GET: the window in which the token is replaced. */
const LATENCY_MS = 1500;

let s: Scenario;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' }, sim: { faults: { resourceLatencyMs: LATENCY_MS } } });
});
afterAll(async () => s?.close());

/** Resolves when the simulator (an HTTP server in this process) receives a GET of `path`. */
function arrivalOf(path: string): Promise<void> {
  return new Promise((resolve) => {
    const onStart = (message: unknown) => {
      const { request } = message as { request: IncomingMessage };
      if (request.method !== 'GET' || request.url !== path) return;
      diagnostics.unsubscribe('http.server.request.start', onStart);
      resolve();
    };
    diagnostics.subscribe('http.server.request.start', onStart);
  });
}

describe('API token replacement', () => {
  it('an old-token 401 arriving after the token was replaced neither pauses the company nor fails a notification', async () => {
    const acme = await s.company('acme');
    const href = `${s.sim.apiBaseUrl}/rfqs/rfq-in-flight`;
    // Its first GET carries the old token: accepted on arrival, then answered 401 once the token is revoked.
    s.sim.programResource({ href, responses: [{ status: 401 }] });
    const arrived = arrivalOf(new URL(href).pathname);
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-in-flight' });
    await arrived;
    await sleep(50); // its token check (the simulator's onRequest hook) has run

    // Mid-fetch, the marketplace issues a new token (and stops accepting the old one); the operator replaces it.
    const newToken = `token-acme-new-${Date.now()}`;
    s.sim.addCompany({ id: 'acme', token: newToken });
    expect((await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { apiToken: newToken })).status).toBe(200);
    const replacedAt = Date.now();
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 1 });
    await s.sim.idle();
    await eventually(async () => {
      const c = await s.statusCounts();
      return !c.received && !c.queued ? c : undefined;
    }, 'the second notification finished', 15_000).catch(() => undefined);

    // The race happened: the old token's GET was in flight during the replacement and refused after it.
    const refused = s.sim.report().fetches.find((f) => f.href === href && f.status === 401);
    expect(refused, 'the in-flight GET answered 401').toBeDefined();
    expect(Date.parse(refused!.startedAt)).toBeLessThan(replacedAt);
    expect(Date.parse(refused!.at)).toBeGreaterThan(replacedAt);

    const company = (await s.skyhook.admin('GET', `/companies/${acme.companyId}`)).body;
    const { rows } = await s.sql.query<{ status: string; last_error: string | null }>('SELECT status, last_error FROM notifications ORDER BY id');
    // What must not happen is a pause of a company whose token is already the new one, or a notification
    // failed for it.
    expect({ connectionStatus: company.connectionStatus, connectionError: company.connectionError, notifications: rows }).toEqual({
      connectionStatus: 'ok',
      connectionError: null,
      notifications: [
        { status: 'processed', last_error: null },
        { status: 'processed', last_error: null },
      ],
    });
  });
});
