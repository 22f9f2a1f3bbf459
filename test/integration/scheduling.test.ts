/**
 * The scheduling product's event types against the simulator (SPEC §14): subscribed to like the rest; their
 * hrefs, on a base URL of the marketplace other than the API's, are kept and shown but never fetched (nor sent
 * the token) until the company's connection lists that base URL (`connection.baseUrls`), then fetched and
 * stored like any other; a notification of a type Skyhook does not know is stored and processed, never refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleClient } from '../helpers/console-client.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const uid = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;

let s: Scenario;
let company: { companyId: string; simId: string };
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  company = await s.company('sched', { eventTypes: ['TripRequest', 'SchedAeroContacts', 'SchedAeroPassengers', 'SchedAeroLogistics'] });
});
afterAll(async () => s?.close());

/** The stored notification of a fired event, once it reached a final status. */
async function finished(href: string): Promise<Json> {
  return eventually(async () => {
    const res = await s.skyhook.admin('GET', `/notifications?companyId=${company.companyId}&href=${encodeURIComponent(href)}`);
    const n = res.body.items[0];
    return n && n.status !== 'received' && n.status !== 'queued' ? n : undefined;
  }, `the notification of ${href} finished`);
}

describe("the scheduling product's event types", () => {
  it('can be subscribed to: the webhook and the marketplace setting list them', async () => {
    const hooks = await s.skyhook.admin('GET', `/companies/${company.companyId}/webhooks`);
    expect(hooks.body.items[0].eventTypes).toEqual(['TripRequest', 'SchedAeroContacts', 'SchedAeroPassengers', 'SchedAeroLogistics']);
  });

  it("an href on the scheduling host, not allowed for the company, is kept and shown, processed not_fetched, never sent the token, never replayed", async () => {
    const [fired] = await s.sim.fire({ companyId: company.simId, eventType: 'SchedAeroContacts', resourceId: uid('contact') });
    const href = fired!.notification.href;
    expect(href.startsWith(s.sim.schedulingBaseUrl)).toBe(true);
    const n = await finished(href);
    expect(n).toMatchObject({ status: 'processed', outcome: 'not_fetched', type: 'contacts' });
    const got = await s.skyhook.admin('GET', `/notifications/${n.id}`);
    expect(got.body.body).toMatchObject({ platformTripId: expect.stringMatching(/^trip_contact-/), href });
    expect(s.fetchesOf(href)).toEqual([]);
    const replay = await s.skyhook.admin('POST', `/notifications/${n.id}/replay`);
    expect(replay.status).toBe(409);
    expect(s.fetchesOf(href)).toEqual([]);

    // The console shows it with why, and offers no Replay.
    const web = consoleClient(() => s.skyhook.url);
    const { cookie } = await web.signIn();
    const page = await (await web.get(`/notifications/${n.id}`, cookie)).text();
    expect(page).toContain('outcome <strong>not_fetched</strong>');
    expect(page).toContain("Its href is under none of the company's base URLs");
    expect(page).not.toContain('<button type="submit">Replay</button>');
  });

  it("a base URL given to the connection (validated, shown) lets the company's token go there: fetched and stored like the rest", async () => {
    const bad = await s.skyhook.admin('PATCH', `/companies/${company.companyId}`, { connection: { profile: 'bearer', baseUrls: ['ftp://elsewhere'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual(['connection.baseUrls.0']);

    const patched = await s.skyhook.admin('PATCH', `/companies/${company.companyId}`, { connection: { profile: 'bearer', baseUrls: [`${s.sim.schedulingBaseUrl}/`] } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.connection.baseUrls).toEqual([s.sim.schedulingBaseUrl]);
    expect(patched.body.credentials.status).toBe('accepted');

    // The receivers drop their cached webhooks on the change's NOTIFY: the next notifications are fetched.
    const stored = await eventually(async () => {
      const [fired] = await s.sim.fire({ companyId: company.simId, eventType: 'SchedAeroPassengers', resourceId: uid('pax') });
      const n = await finished(fired!.notification.href);
      return n.outcome === 'stored' ? n : undefined;
    }, 'a scheduling notification fetched');
    expect(stored).toMatchObject({ status: 'processed', type: 'passengers' });
    expect(s.fetchesOf(stored.href)).toEqual([expect.objectContaining({ status: 200, tokenCompanyId: company.simId })]);
    const web = consoleClient(() => s.skyhook.url);
    const { cookie } = await web.signIn();
    const companyPage = await (await web.get(`/companies/${company.companyId}`, cookie)).text();
    expect(companyPage).toContain(`<code>${s.sim.schedulingBaseUrl}</code> <span class="muted small">(also allowed)</span>`);
    const resources = await s.skyhook.admin('GET', `/resources?companyId=${company.companyId}&type=passengers`);
    expect(resources.body.items.find((r: Json) => r.href === stored.href)?.body).toMatchObject({ platformTripId: expect.stringMatching(/^trip_pax-/) });
  });

  it('a notification of a type Skyhook does not know is stored and processed (the fallback: its snapshot and event), never refused', async () => {
    const [fired] = await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId: uid('odd'), extra: { type: 'crewRosters' } });
    const n = await finished(fired!.notification.href);
    expect(n).toMatchObject({ status: 'processed', outcome: 'stored', type: 'crewRosters' });
    const events = await s.sql.query('SELECT type FROM events WHERE company_id = $1 AND href = $2', [company.companyId, n.href]);
    expect(events.rows).toEqual([{ type: 'crewRosters' }]);
  });
});
