/**
 * Deliveries to a company's own application (SPEC §5.2), end to end: the simulator notifies Skyhook, Skyhook
 * fetches and stores each version, and delivers it to a real HTTP receiver that verifies every request with
 * the reference Standard Webhooks library; a receiver that fails, rate-limits, redirects or is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { startReceiver, type Received, type TestReceiver } from '../helpers/receiver.js';
import { eventually } from '../helpers/skyhook.js';
import type { FaultCompany } from '../faults/support.js';

let s: Scenario;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  // A fast retry schedule: 8 attempts 150 ms apart; a failing destination's probes as often.
  s = await startScenario({ env: { DELIVERY_RETRY_SCHEDULE: '0,150,150,150,150,150,150,150', FETCH_MIN_INTERVAL_MS: '0' } });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await s?.close();
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function destinationFor(company: FaultCompany, r: TestReceiver, body: Record<string, unknown> = {}) {
  const created = await s.skyhook.admin('POST', `/companies/${company.companyId}/destinations`, { url: r.url, description: 'our CRM', ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  r.secrets = [created.body.secret];
  return created.body as { id: string; secret: string };
}

/** Fires one event on `resourceId` and waits until its version is stored (so each firing makes a version). */
async function version(company: FaultCompany, resourceId: string, n: number, eventType: 'TripRequest' | 'TripChatFromBuyer' = 'TripRequest') {
  await s.sim.fire({ companyId: company.simId, eventType, resourceId });
  await eventually(async () => {
    const { rows } = await s.sql.query('SELECT version FROM resources WHERE company_id = $1 AND resource_id = $2', [company.companyId, resourceId]);
    return rows[0]?.version >= n;
  }, `version ${n} of ${resourceId}`);
}

const versionsOf = (got: Received[], resourceId: string) => got.filter((r) => r.event.resource?.id === resourceId).map((r) => r.event.resource!.version);

describe('deliveries (SPEC §5.2)', () => {
  it('delivers each stored version, signed as Standard Webhooks says, with the resource, what changed and the snapshot', async () => {
    const company = await s.company('acme-deliver');
    const r = await receiver();
    await destinationFor(company, r);
    await version(company, 'r1', 1);
    await version(company, 'r1', 2);
    await eventually(async () => r.received.length >= 2, 'two deliveries');
    expect(r.received.map((x) => x.verifiedWith)).toEqual([0, 0]);
    const [first, second] = r.received;
    expect(first!.event).toMatchObject({ type: 'rfqs.created', companyId: company.companyId, resource: { type: 'rfqs', id: 'r1', version: 1, previousVersion: null }, eventTypes: ['TripRequest'], changes: null });
    expect(second!.event).toMatchObject({ type: 'rfqs.updated', resource: { version: 2, previousVersion: 1 } });
    expect(Array.isArray(second!.event.changes)).toBe(true);
    expect(second!.event.snapshot).toMatchObject({ id: 'r1' });
    // The delivery's id is the webhook-id; the event's id the body's (the same in the pull feed).
    // Each answer is recorded just after the receiver had the request (attempts are written in batches).
    const list = await eventually(async () => {
      const shown = await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries`);
      return shown.body.items.every((d: { status: string }) => d.status === 'delivered') && shown;
    }, 'both recorded delivered');
    expect(list.body.items.map((d: { webhookId: string; status: string }) => [d.webhookId, d.status])).toEqual(r.received.map((x) => [x.webhookId, 'delivered']).reverse());
    const pulled = await s.skyhook.admin('GET', `/companies/${company.companyId}/events`);
    expect(pulled.body.items.map((e: { id: number }) => e.id)).toEqual(r.received.map((x) => x.event.id));
    expect(JSON.parse(r.received[1]!.body)).toEqual(Object.fromEntries(Object.entries(pulled.body.items[1]).filter(([k]) => k !== 'cursor')));
  });

  it('a rotated secret: both sign during the grace period, and the receiver verifies either', async () => {
    const company = await s.company('acme-rotate');
    const r = await receiver();
    const dest = await destinationFor(company, r);
    const rotated = await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { rotateSecret: { graceSeconds: 3600 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(dest.secret);
    // The receiver still knows only the old secret: the request verifies with it.
    await version(company, 'rot1', 1);
    await eventually(async () => r.received.length >= 1, 'a delivery');
    expect(r.received[0]!.signature.split(' ')).toHaveLength(2);
    expect(r.received[0]!.verifiedWith).toBe(0);
    // It learns the new one only: the next verifies with it.
    r.secrets = [rotated.body.secret];
    await version(company, 'rot1', 2);
    await eventually(async () => r.received.length >= 2, 'a second delivery');
    expect(r.received[1]!.verifiedWith).toBe(0);
    const secret = await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}/secret`);
    expect(secret.body).toMatchObject({ secret: rotated.body.secret, previousSecret: dest.secret });
    // A rotation with no grace (a leak): only the new secret signs.
    const leaked = await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { rotateSecret: { graceSeconds: 0 } });
    r.secrets = [leaked.body.secret];
    await version(company, 'rot1', 3);
    await eventually(async () => r.received.length >= 3, 'a third delivery');
    expect(r.received[2]!.signature.split(' ')).toHaveLength(1);
    expect(r.received[2]!.verifiedWith).toBe(0);
  });

  it('in order per resource: version 2 waits while version 1 fails; another resource flows meanwhile', async () => {
    const company = await s.company('acme-order');
    const r = await receiver();
    let refusals = 4;
    r.answer = (x) => (x.event.resource?.id === 'slow' && x.event.resource.version === 1 && refusals-- > 0 ? { status: 503 } : { status: 200 });
    const dest = await destinationFor(company, r);
    await version(company, 'slow', 1);
    await version(company, 'slow', 2);
    await version(company, 'fast', 1);
    await eventually(async () => versionsOf(r.received, 'slow').length === 2, 'both versions of slow');
    expect(versionsOf(r.attempts, 'slow')).toEqual([1, 1, 1, 1, 1, 2]);
    const fastAt = r.received.find((x) => x.event.resource?.id === 'fast')!.at;
    expect(fastAt).toBeLessThan(r.received.find((x) => x.event.resource?.id === 'slow' && x.event.resource.version === 1)!.at);
    // Every attempt of one delivery carries its one webhook-id.
    const ids = new Set(r.attempts.filter((x) => x.event.resource?.id === 'slow' && x.event.resource.version === 1).map((x) => x.webhookId));
    expect(ids.size).toBe(1);
    // What the destination's page says of its last 24 h: 3 delivered of 7 attempts (4 refused), none waiting.
    const stats = async () => (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).body.stats;
    await eventually(async () => (await stats()).delivered24h === 3, 'the last answer recorded');
    const got = { body: { stats: await stats() } };
    expect(got.body.stats).toMatchObject({ pending: 0, oldestPendingAt: null, delivered24h: 3, failed24h: 0, successRate24h: 3 / 7 });
    expect(got.body.stats.latencyP50Ms24h).toBeGreaterThanOrEqual(0);
  });

  it('five failures in a row open the circuit (failing, parked behind a probe); the first answered probe sends everything, in order', async () => {
    const company = await s.company('acme-circuit');
    const r = await receiver();
    let down = true;
    r.answer = () => (down ? { status: 500 } : { status: 200 });
    const dest = await destinationFor(company, r);
    for (let v = 1; v <= 3; v++) await version(company, 'c1', v);
    await eventually(async () => (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).body.state.status === 'failing', 'the circuit open');
    const tried = r.attempts.length;
    await new Promise((done) => setTimeout(done, 500));
    // Parked: no retries run meanwhile (the probe waits its schedule).
    expect(r.attempts.length - tried).toBeLessThanOrEqual(1);
    down = false;
    await eventually(async () => versionsOf(r.received, 'c1').length === 3, 'all delivered after a probe', 20_000);
    expect(versionsOf(r.received, 'c1')).toEqual([1, 2, 3]);
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).body.state.status).toBe('ok');
  });

  it('redirects are never followed; a 410 disables the destination; enabling it sends what waited', async () => {
    const company = await s.company('acme-gone');
    const r = await receiver();
    let answer: 'redirect' | 'gone' | 'ok' = 'redirect';
    r.answer = () => (answer === 'redirect' ? { status: 307, headers: { location: 'http://127.0.0.1:9/elsewhere' } } : answer === 'gone' ? { status: 410 } : { status: 200 });
    const dest = await destinationFor(company, r);
    await version(company, 'g1', 1);
    await eventually(async () => r.attempts.length >= 2, 'the redirect retried');
    const delivery = (await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries`)).body.items[0];
    expect(delivery).toMatchObject({ status: 'pending', lastStatus: 307 });
    answer = 'gone';
    await eventually(async () => (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).body.state.status === 'disabled', 'disabled by a 410');
    const shown = (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).body;
    expect(shown).toMatchObject({ active: false, state: { status: 'disabled', by: 'skyhook', reason: expect.stringContaining('410') } });
    answer = 'ok';
    const enabled = await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { active: true });
    expect(enabled.body.state.status).toBe('ok');
    await eventually(async () => r.received.length >= 1, 'delivered once enabled');
    // The answer is recorded just after the receiver had the request (attempts are written in batches).
    const detail = await eventually(async () => {
      const shownNow = await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries/${delivery.id}`);
      return shownNow.body.status === 'delivered' && shownNow;
    }, 'the delivery recorded delivered');
    expect(detail.body.attemptsList.map((a: { httpStatus: number }) => a.httpStatus).slice(0, 2)).toEqual([307, 307]);
    expect(detail.body.attemptsList.at(-1).httpStatus).toBe(200);
  });

  it('filters by resource type and event type; a replay sends the same request again, outside the order', async () => {
    const company = await s.company('acme-filter');
    const r = await receiver();
    const dest = await destinationFor(company, r, { filter: { resourceTypes: ['tripmsgs'] } });
    await version(company, 'm1', 1, 'TripChatFromBuyer');
    await version(company, 'not-me', 1, 'TripRequest');
    await eventually(async () => r.received.length >= 1, 'the chat delivered');
    await new Promise((done) => setTimeout(done, 300));
    expect(r.received.map((x) => x.event.resource?.type)).toEqual(['tripmsgs']);
    const [only] = (await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries?destinationId=${dest.id}`)).body.items;
    const replayed = await s.skyhook.admin('POST', `/companies/${company.companyId}/deliveries/${only.id}/replay`);
    expect(replayed.status).toBe(200);
    await eventually(async () => r.received.length >= 2, 'replayed');
    expect(r.received[1]!.webhookId).toBe(r.received[0]!.webhookId);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    // The receiver has the replay before Skyhook has recorded its answer: the delivery is delivered again once it has.
    const dryRun = () => s.skyhook.admin('POST', `/companies/${company.companyId}/destinations/${dest.id}/replay`, { status: 'delivered', dryRun: true });
    await eventually(async () => (await dryRun()).body.matched === 1, 'the replay recorded delivered');
    expect((await dryRun()).body).toEqual({ matched: 1, replayed: 0, created: 0 });
    // A change of one of the filter's lists keeps the other.
    const narrowed = await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { filter: { eventTypes: ['TripChatFromBuyer'] } });
    expect(narrowed.body.filter).toEqual({ resourceTypes: ['tripmsgs'], eventTypes: ['TripChatFromBuyer'] });
  });

  it('a widened filter: a replay since a time delivers what the old filter left out, each once, in version order; again, it creates none', async () => {
    const company = await s.company('acme-widen');
    const r = await receiver();
    const dest = await destinationFor(company, r, { filter: { resourceTypes: ['tripmsgs'] } });
    const before = new Date(Date.now() - 1000);
    await version(company, 'w-chat', 1, 'TripChatFromBuyer');
    await version(company, 'w-rfq', 1);
    await version(company, 'w-rfq', 2);
    await version(company, 'w-other', 1);
    await eventually(async () => r.received.length >= 1, 'the chat delivered');
    await new Promise((done) => setTimeout(done, 300));
    expect(r.received.map((x) => x.event.resource?.id)).toEqual(['w-chat']);
    const widened = await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { filter: { resourceTypes: null } });
    expect(widened.body.filter).toEqual({ resourceTypes: null, eventTypes: null });
    // The edited filter applies to later events only: nothing is sent until a replay asks.
    await new Promise((done) => setTimeout(done, 300));
    expect(r.attempts).toHaveLength(1);
    // w-rfq's first version is refused once: its second waits for it (the created ones keep their resource's order).
    let refusals = 1;
    r.answer = (x) => (x.event.resource?.id === 'w-rfq' && x.event.resource.version === 1 && refusals-- > 0 ? { status: 503 } : { status: 200 });
    const replay = (body: Record<string, unknown>) => s.skyhook.admin('POST', `/companies/${company.companyId}/destinations/${dest.id}/replay`, { since: before.toISOString(), ...body });
    await eventually(async () => (await replay({ status: 'delivered', dryRun: true })).body.matched === 1, 'the chat recorded delivered');
    // A status selects deliveries that exist: none is created.
    expect((await replay({ status: 'delivered', dryRun: true })).body).toEqual({ matched: 1, replayed: 0, created: 0 });
    expect((await replay({ dryRun: true })).body).toEqual({ matched: 4, replayed: 0, created: 3 });
    expect((await replay({})).body).toEqual({ matched: 4, replayed: 4, created: 3 });
    await eventually(async () => r.received.length >= 5, 'the chat again and the three left out');
    expect(versionsOf(r.attempts, 'w-rfq')).toEqual([1, 1, 2]);
    expect(versionsOf(r.received, 'w-rfq')).toEqual([1, 2]);
    expect(versionsOf(r.received, 'w-other')).toEqual([1]);
    expect(r.received.filter((x) => x.event.resource?.id === 'w-chat').map((x) => x.webhookId)).toEqual([r.received[0]!.webhookId, r.received[0]!.webhookId]);
    const w2 = r.received.find((x) => x.event.resource?.id === 'w-rfq' && x.event.resource.version === 2)!;
    expect(w2.event).toMatchObject({ type: 'rfqs.updated', resource: { version: 2, previousVersion: 1 } });
    // The same replay again: the four exist now, so they are sent again and none is created.
    const delivered = async () => (await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries?destinationId=${dest.id}`)).body.items as { webhookId: string; status: string; resource: { id: string; version: number } }[];
    await eventually(async () => (await delivered()).every((d) => d.status === 'delivered'), 'all recorded delivered');
    expect((await replay({})).body).toEqual({ matched: 4, replayed: 4, created: 0 });
    await eventually(async () => r.received.length >= 9, 'the four sent again');
    const items = await delivered();
    expect(items.map((d) => `${d.resource.id}@${d.resource.version}`).sort()).toEqual(['w-chat@1', 'w-other@1', 'w-rfq@1', 'w-rfq@2']);
    expect(new Set(r.received.map((x) => x.webhookId))).toEqual(new Set(items.map((d) => d.webhookId)));
    // The audit entry: one, with the filter and the counts.
    const { rows } = await s.sql.query(`SELECT details FROM audit_log WHERE action LIKE '%/destinations/:destinationId/replay' AND details->'filter'->>'since' = $1 AND NOT (details->'filter' ? 'dryRun') ORDER BY id`, [before.toISOString()]);
    expect(rows.map((x) => [x.details.matched, x.details.replayed, x.details.created])).toEqual([[4, 4, 3], [4, 4, 0]]);
  });

  it('a replay since a time after some events creates only the later ones, and none past the deliveries\' retention', async () => {
    const company = await s.company('acme-widen-later');
    const r = await receiver();
    const dest = await destinationFor(company, r, { filter: { resourceTypes: ['tripmsgs'] } });
    await version(company, 'l-rfq', 1);
    await new Promise((done) => setTimeout(done, 50));
    const since = new Date();
    await new Promise((done) => setTimeout(done, 50));
    await version(company, 'l-rfq', 2);
    await version(company, 'l-new', 1);
    await version(company, 'l-chat', 1, 'TripChatFromBuyer');
    await eventually(async () => r.received.length >= 1, 'the chat delivered');
    await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { filter: { resourceTypes: ['rfqs', 'tripmsgs'] } });
    const replay = (body: Record<string, unknown>) => s.skyhook.admin('POST', `/companies/${company.companyId}/destinations/${dest.id}/replay`, body);
    await eventually(async () => (await replay({ since: since.toISOString(), status: 'delivered', dryRun: true })).body.matched === 1, 'the chat recorded delivered');
    expect((await replay({ since: since.toISOString() })).body).toEqual({ matched: 3, replayed: 3, created: 2 });
    await eventually(async () => r.received.length >= 4, 'the chat again and the two later ones');
    await new Promise((done) => setTimeout(done, 300));
    expect(versionsOf(r.received, 'l-rfq')).toEqual([2]);
    expect(versionsOf(r.received, 'l-new')).toEqual([1]);
    expect(r.received.find((x) => x.event.resource?.id === 'l-rfq')!.event.resource).toMatchObject({ version: 2, previousVersion: 1 });
    // Without `since` nothing is created: l-rfq's first version stays without a delivery.
    expect((await replay({ dryRun: true })).body.created).toBe(0);
    // An event stored before the deliveries' retention (RETENTION_DAYS, 30) may have had one, dropped since: none is created.
    await s.sql.query("UPDATE events SET created_at = now() - interval '40 days' WHERE company_id = $1 AND resource_id = 'l-rfq' AND snapshot_version = 1", [company.companyId]);
    expect((await replay({ since: new Date(Date.now() - 60 * 86_400_000).toISOString(), dryRun: true })).body.created).toBe(0);
    await s.sql.query("UPDATE events SET created_at = now() - interval '1 day' WHERE company_id = $1 AND resource_id = 'l-rfq' AND snapshot_version = 1", [company.companyId]);
    const longAgo = new Date(Date.now() - 60 * 86_400_000).toISOString();
    expect((await replay({ since: longAgo, dryRun: true })).body.created).toBe(1);
    // Two such replays at once create it once (one at a time per destination).
    const both = await Promise.all([replay({ since: longAgo }), replay({ since: longAgo })]);
    expect(both.map((x) => x.body.created).sort()).toEqual([0, 1]);
    const { rows } = await s.sql.query("SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND resource_id = 'l-rfq' AND version = 1", [dest.id]);
    expect(rows[0].n).toBe(1);
    await eventually(async () => versionsOf(r.received, 'l-rfq').includes(1), 'the first version delivered at last');
  });

  it('a test event: signed, sent now, answered with the attempt', async () => {
    const company = await s.company('acme-test');
    const r = await receiver();
    const dest = await destinationFor(company, r);
    const tested = await s.skyhook.admin('POST', `/companies/${company.companyId}/destinations/${dest.id}/test`);
    expect(tested.body).toMatchObject({ delivered: true, httpStatus: 200 });
    expect(r.received[0]).toMatchObject({ verifiedWith: 0, event: { type: 'test' } });
  });
});
