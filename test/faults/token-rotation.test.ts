/**
 * Replacing a company's API token (PATCH /admin/companies/{id} {apiToken}) while its resources are being
 * fetched (SPEC §5: 401/403 pause the company "until the token is replaced (then they resume by
 * themselves)"). A marketplace that issues a new token revokes the old one; a fetch that still carries the
 * old token after the replacement gets 401.
 *
 * Proves (or, today, disproves): a 401 earned by the old token does not pause a company whose token has
 * already been replaced; notifications fired right after the replacement are processed with the new one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';
import { createCompany, settled, statusCounts } from './support.js';

let s: Scenario;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
});
afterAll(async () => s?.close());

describe('API token replacement', () => {
  it('a fetch right after the token was replaced uses the new token, and the company is not paused', async () => {
    const acme = await createCompany(s.skyhook.admin, s.sim, 'acme');
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 1 });
    await s.sim.idle();
    await settled(s.sql, 1, 10_000);

    // The marketplace issues a new token (and stops accepting the old one); the operator replaces it.
    const newToken = `token-acme-new-${Date.now()}`;
    s.sim.addCompany({ id: 'acme', token: newToken });
    expect((await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { apiToken: newToken })).status).toBe(200);
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 1 });
    await s.sim.idle();
    await eventually(async () => {
      const c = await statusCounts(s.sql);
      return !c.received && !c.queued ? c : undefined;
    }, 'the second notification finished', 15_000).catch(() => undefined);

    const company = (await s.skyhook.admin('GET', `/companies/${acme.companyId}`)).body;
    const { rows } = await s.sql.query<{ status: string; last_error: string | null }>('SELECT status, last_error FROM notifications ORDER BY id');
    // A fetch may still carry the old token once (and be refused); what must not happen is a pause of a
    // company whose token is already the new one, or a notification failed for it.
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
