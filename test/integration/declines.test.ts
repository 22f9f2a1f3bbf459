/**
 * Declines through the admin API against the simulator, and where quotes and declines are sent: every
 * validation rule (one error per bad field, nothing stored or sent), idempotency by (company, requestId)
 * under concurrent repeats, the act-as header, the outcome held `unknown` until resent on purpose, and the
 * RFQ snapshot's action hrefs used (checked against the company's API origin) instead of the assumed path.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tailQuote } from '../fixtures/requests.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { consoleClient } from '../helpers/console-client.js';
import { ADMIN_TOKEN, eventually } from '../helpers/skyhook.js';

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const decline = { message: 'No aircraft that day, sorry.', declineReason: 'AIRCRAFT_NOT_AVAILABLE', suppressNotification: false };
const uid = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;
const fields = (res: { body: { errors?: { field: string }[] } }) => (res.body.errors ?? []).map((e) => e.field);

let s: Scenario;
let acme: { companyId: string; simId: string };
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  acme = await s.company('acme', { eventTypes: ['TripRequest'] });
});
afterAll(async () => s?.close());

const postDecline = (body: unknown, companyId = acme.companyId) => s.skyhook.admin('POST', `/companies/${companyId}/declines`, body);
const stored = async (requestId: string) => Number((await s.sql.query('SELECT count(*) AS n FROM declines WHERE request_id = $1', [requestId])).rows[0].n);

/** Fires a new RFQ for acme and waits until Skyhook has fetched and stored it; answers its body as stored. */
async function fetchedRfq(): Promise<Json> {
  const [fired] = await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest', resourceId: uid('rfq') });
  const href = fired!.notification.href;
  return eventually(async () => {
    const res = await s.skyhook.admin('GET', `/resources?companyId=${acme.companyId}&type=rfqs`);
    return res.body.items.find((r: Json) => r.href === href)?.body;
  }, 'the RFQ stored');
}

describe('a decline is validated before anything is sent', () => {
  it.each([
    ['decline.declineReason', { ...decline, declineReason: 'TOO_FAR' }],
    ['decline.declineReason', { message: 'no' }],
    ['decline.suppressNotification', { ...decline, suppressNotification: 'yes' }],
    ['decline.message', { ...decline, message: 'x'.repeat(10_001) }],
    ['decline', { ...decline, reason: 'OTHER' }],
  ])('refuses %s with a 400 naming it; nothing stored, nothing sent', async (field, body) => {
    const requestId = uid('lift');
    const calls = s.sim.report().calls.declines;
    const res = await postDecline({ requestId, decline: body });
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual([`body.${field}`]);
    expect(await stored(requestId)).toBe(0);
    expect(s.sim.report().calls.declines).toBe(calls);
  });

  it('answers a problem+json that names the valid reasons', async () => {
    const res = await fetch(`${s.skyhook.url}/admin/companies/${acme.companyId}/declines`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: uid('lift'), decline: { declineReason: 'BUSY' } }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const body = (await res.json()) as Json;
    expect(body.errors[0].message).toContain('AIRCRAFT_NOT_AVAILABLE, CABOTAGE, CREW_NOT_AVAILABLE, OWNER_DECLINED, UNATTRACTIVE_TRIP, UNKNOWN, OTHER');
  });

  it.each(['..', 'a/b', 'lift 1'])('refuses requestId %j naming body.requestId', async (requestId) => {
    const calls = s.sim.report().calls.declines;
    const res = await postDecline({ requestId, decline });
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual(['body.requestId']);
    expect(s.sim.report().calls.declines).toBe(calls);
  });

  it('names every bad field at once', async () => {
    const res = await postDecline({ requestId: 'a/b', actAsAccount: '', decline: { declineReason: 'NOPE', suppressNotification: 1 } });
    expect(res.status).toBe(400);
    expect(fields(res).sort()).toEqual(['body.actAsAccount', 'body.decline.declineReason', 'body.decline.suppressNotification', 'body.requestId']);
  });

  it('answers 404 for an unknown company', async () => {
    const res = await postDecline({ requestId: uid('lift'), decline }, '00000000-0000-4000-8000-000000000000');
    expect(res.status).toBe(404);
  });
});

describe('a decline is sent once', () => {
  it('without a stored RFQ: to the assumed path, with the act-as header; stored with the answer; got and listed', async () => {
    const requestId = uid('lift');
    const res = await postDecline({ requestId, actAsAccount: 'jane.dispatcher', decline });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      requestId,
      status: 'created',
      actAsAccount: 'jane.dispatcher',
      decline,
      target: 'assumed_path',
      targetUrl: `${s.sim.apiBaseUrl}/tripmsgs/${requestId}/decline`,
      tripMessageId: expect.stringMatching(/^tm_/),
    });
    const sent = s.sim.report().declines.find((d) => d.requestId === requestId);
    expect(sent).toMatchObject({ via: 'assumed_path', actAsAccount: 'jane.dispatcher', declineReason: 'AIRCRAFT_NOT_AVAILABLE', tripMessageId: res.body.tripMessageId });

    const got = await s.skyhook.admin('GET', `/companies/${acme.companyId}/declines/${res.body.id}`);
    expect(got.body).toEqual(res.body);
    const listed = await s.skyhook.admin('GET', `/companies/${acme.companyId}/declines?requestId=${requestId}`);
    expect(listed.body).toEqual({ items: [res.body], nextCursor: null });
    const missing = await s.skyhook.admin('GET', `/companies/${acme.companyId}/declines/00000000-0000-4000-8000-000000000000`);
    expect(missing.status).toBe(404);
  });

  it('ten parallel identical requests make one marketplace call and one decline; a later repeat with another reason answers the stored one', async () => {
    const requestId = uid('burst');
    const calls = s.sim.report().calls.declines;
    const answers = await Promise.all(Array.from({ length: 10 }, () => postDecline({ requestId, decline })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(s.sim.report().calls.declines).toBe(calls + 1);

    const repeat = await postDecline({ requestId, decline: { declineReason: 'OTHER', message: 'changed my mind' } });
    expect(repeat.status).toBe(200);
    expect(repeat.body.decline).toEqual(decline);
    expect(s.sim.report().calls.declines).toBe(calls + 1);
  });

  it('keeps nothing when the marketplace cannot be reached, so a repeat sends it', async () => {
    const requestId = uid('unreachable');
    const { rows } = await s.sql.query('SELECT api_base_url FROM companies WHERE id = $1', [acme.companyId]);
    await s.sql.query(`UPDATE companies SET api_base_url = 'http://127.0.0.1:9/api' WHERE id = $1`, [acme.companyId]); // nothing listens on port 9
    try {
      const refused = await postDecline({ requestId, decline });
      expect(refused.status).toBe(502);
      expect(refused.body.code).toBe('marketplace_network');
      expect(await stored(requestId)).toBe(0);
    } finally {
      await s.sql.query('UPDATE companies SET api_base_url = $2 WHERE id = $1', [acme.companyId, rows[0].api_base_url]);
    }
    expect((await postDecline({ requestId, decline })).status).toBe(201);
  });
});

describe("where an RFQ is stored, quotes and declines go to the hrefs it gives", () => {
  it("a decline of one requested lift goes to that lift's decline href", async () => {
    const rfq = await fetchedRfq();
    const lift = rfq.sellerLift[0];
    const res = await postDecline({ requestId: lift.id, decline });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ target: 'snapshot_href', targetUrl: lift.actions.decline.href });
    expect(s.sim.report().declines.find((d) => d.requestId === lift.id)?.via).toBe('action_href');
  });

  it("a decline of the whole RFQ goes to its decline href", async () => {
    const rfq = await fetchedRfq();
    const res = await postDecline({ requestId: rfq.id, decline: { declineReason: 'CABOTAGE' } });
    expect(res.body).toMatchObject({ status: 'created', target: 'snapshot_href', targetUrl: rfq.actions.decline.href });
    expect(s.sim.report().declines.find((d) => d.requestId === rfq.id)?.via).toBe('action_href');
  });

  it("a quote on a requested lift goes to that lift's submitQuote href; one on an unknown request to the assumed path", async () => {
    const rfq = await fetchedRfq();
    const lift = rfq.sellerLift[1];
    const quoted = await s.skyhook.admin('POST', `/companies/${acme.companyId}/quotes`, { requestId: lift.id, submission: tailQuote(uid('q')) });
    expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);
    expect(quoted.body).toMatchObject({ target: 'snapshot_href', targetUrl: lift.actions.submitQuote.href });
    expect(s.sim.report().quotes.find((q) => q.tripMessageId === quoted.body.tripMessageId)?.via).toBe('action_href');

    const elsewhere = await s.skyhook.admin('POST', `/companies/${acme.companyId}/quotes`, { requestId: uid('lift'), submission: tailQuote(uid('q')) });
    expect(elsewhere.body).toMatchObject({ target: 'assumed_path', targetUrl: expect.stringMatching(/\/tripmsgs\/lift-[a-z0-9]+\/submitQuote$/) });
    expect(s.sim.report().quotes.find((q) => q.tripMessageId === elsewhere.body.tripMessageId)?.via).toBe('assumed_path');
  });

  it.each([
    ['on another host', 'https://attacker.example/api/rfqs/x/decline', "must be on the company's API host"],
    ['outside the API base path', 'BASE_ORIGIN/elsewhere/decline', "must be under the company's API base path"],
    ['not a URL', 'decline-here', 'must be an absolute URL'],
  ])('refuses an action href %s with a 422 naming where it was found; nothing stored, nothing sent', async (_case, href, reason) => {
    const rfqId = uid('rfq-bad');
    const liftId = uid('lift-bad');
    const body = { id: rfqId, actions: { decline: { href: href.replace('BASE_ORIGIN', new URL(s.sim.apiBaseUrl).origin) } }, sellerLift: [{ id: liftId, actions: { decline: { href } } }] };
    await s.sql.query(`INSERT INTO resources (company_id, href, type, resource_id, fetched_at, body) VALUES ($1, $2, 'rfqs', $3, now(), $4)`, [
      acme.companyId,
      `${s.sim.apiBaseUrl}/rfqs/${rfqId}`,
      rfqId,
      JSON.stringify(body),
    ]);
    const calls = s.sim.report().calls.declines;
    const res = await postDecline({ requestId: rfqId, decline });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body).toMatchObject({ code: 'href_out_of_scope', errors: [{ field: 'rfq.actions.decline.href', message: expect.stringContaining(reason) }] });
    const forLift = await postDecline({ requestId: liftId, decline });
    expect(forLift.status).toBe(422);
    expect(fields(forLift)).toEqual(['rfq.sellerLift.0.actions.decline.href']);
    expect(await stored(rfqId)).toBe(0);
    expect(s.sim.report().calls.declines).toBe(calls);
  });

  it("links a decline to its trip message once Skyhook stored it, whichever of the two comes first", async () => {
    const { companyId } = await s.company('responder', { eventTypes: ['TripRequestSellerResponse'] });
    const res = await postDecline({ requestId: uid('lift'), decline }, companyId);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const linked = await eventually(async () => {
      const got = await s.skyhook.admin('GET', `/companies/${companyId}/declines/${res.body.id}`);
      return got.body.resourceHref ? got.body : undefined;
    }, 'the decline linked to its trip message');
    expect(linked).toMatchObject({ resourceHref: `${s.sim.apiBaseUrl}/tripmsgs/${res.body.tripMessageId}`, snapshotVersion: 1 });

    // Stored before the decline's answer named it (its notification came first): linked from the stored message.
    await s.sql.query('UPDATE declines SET resource_href = NULL, snapshot_version = NULL WHERE id = $1', [res.body.id]);
    const repeat = await postDecline({ requestId: res.body.requestId, decline }, companyId);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ id: res.body.id, resourceHref: linked.resourceHref, snapshotVersion: 1 });
  });

  it("finds the RFQ of a requested lift through an index, not by reading the company's RFQs", async () => {
    // A company with many RFQs, as after months of traffic, each with its requested lifts.
    const { companyId } = await s.company('many-rfqs', { eventTypes: ['TripRequest'] });
    await s.sql.query(
      `INSERT INTO resources (company_id, href, type, resource_id, fetched_at, body)
       SELECT $1, 'https://x.test/api/rfqs/r' || g, 'rfqs', 'r' || g, now(), jsonb_build_object('id', 'r' || g, 'sellerLift', jsonb_build_array(jsonb_build_object('id', 'l' || g)))
       FROM generate_series(1, 20000) g`,
      [companyId],
    );
    await s.sql.query('ANALYZE resources');
    const { rows } = await s.sql.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) SELECT resource_id FROM resources WHERE company_id = $1 AND type = 'rfqs' AND gone = false
         AND (body -> 'sellerLift' @> $2::jsonb OR body -> 'sellerLift' @> $3::jsonb) ORDER BY fetched_at DESC LIMIT 1`,
      [companyId, JSON.stringify([{ id: 'l777' }]), JSON.stringify({ id: 'l777' })],
    );
    const plan = JSON.stringify(rows[0]['QUERY PLAN']);
    expect(plan).toContain('"Index Name":"resources_lifts_idx"');
    expect(plan).not.toContain('resources_company_type_id_idx');
  });

  it('the OpenAPI document describes the decline routes', async () => {
    const res = await fetch(`${s.skyhook.url}/openapi.json`);
    const doc = (await res.json()) as Json;
    expect(Object.keys(doc.paths['/admin/companies/{companyId}/declines'])).toEqual(['post', 'get']);
    expect(doc.paths['/admin/companies/{companyId}/declines/{declineId}'].get.summary).toBe('Get a decline');
  });
});

/** The console's "Quote…" and "Decline…" on an RFQ's page, and the "Leads & quotes" page, over HTTP. */
describe("the console's RFQ answers", () => {
  const web = consoleClient(() => s.skyhook.url);
  let session: { cookie: string; csrf: string };
  let rfq: Json;
  let rfqHref: string;
  beforeAll(async () => {
    session = await web.signIn();
    rfq = await fetchedRfq();
    rfqHref = `${s.sim.apiBaseUrl}/rfqs/${rfq.id}`;
  });
  const rfqPage = async () => (await web.get(`/resources?companyId=${acme.companyId}&href=${encodeURIComponent(rfqHref)}`, session.cookie)).text();
  const submit = (action: 'rfq-declines' | 'rfq-quotes', form: Record<string, string>) =>
    web.post(`/companies/${acme.companyId}/${action}`, { _csrf: session.csrf, href: rfqHref, ...form }, session.cookie);

  it('offer the whole RFQ and each requested lift, and every reason', async () => {
    const page = await rfqPage();
    expect(page).toContain('<summary>Quote…</summary>');
    expect(page).toContain('<summary>Decline…</summary>');
    for (const id of [rfq.id, rfq.sellerLift[0].id, rfq.sellerLift[1].id]) expect(page).toContain(`<option value="${id}">`);
    expect(page).toContain('<option value="CREW_NOT_AVAILABLE">');
  });

  it('a refused decline comes back to the RFQ page naming the field; nothing stored or sent', async () => {
    const calls = s.sim.report().calls.declines;
    const res = await submit('rfq-declines', { requestId: rfq.sellerLift[0].id, declineReason: 'BORED' });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('<summary>Decline…</summary>');
    expect(page).toMatch(/declineReason.*must be one of/);
    expect(await stored(rfq.sellerLift[0].id)).toBe(0);
    expect(s.sim.report().calls.declines).toBe(calls);
  });

  it("declines a lift through the service, to the lift's href, and lists it on the Leads & quotes page", async () => {
    const lift = rfq.sellerLift[0];
    const res = await submit('rfq-declines', { requestId: lift.id, declineReason: 'CREW_NOT_AVAILABLE', message: 'No crew.', actAsAccount: 'jane.dispatcher' });
    expect(res.status, await res.clone().text()).toBe(303);
    expect(res.headers.get('location')).toBe(`/console/outbound?companyId=${acme.companyId}&done=declined`);
    expect(s.sim.report().declines.find((d) => d.requestId === lift.id)).toMatchObject({ via: 'action_href', declineReason: 'CREW_NOT_AVAILABLE', actAsAccount: 'jane.dispatcher' });
    const page = await (await web.get(`/outbound?companyId=${acme.companyId}&done=declined`, session.cookie)).text();
    expect(page).toContain('The decline was sent.');
    const declines = page.slice(page.indexOf('<h2 id="declines">'), page.indexOf('<h2 id="leads">'));
    expect(declines).toContain(lift.id);
    expect(declines).toContain('CREW_NOT_AVAILABLE');
    expect(declines).toContain(lift.actions.decline.href);
  });

  it('refuses text PostgreSQL could not store with a 400 naming the field, before anything is claimed or sent', async () => {
    const calls = s.sim.report().calls;
    const nul = await submit('rfq-declines', { requestId: rfq.id, declineReason: 'OTHER', message: 'a\u0000b' });
    expect(nul.status).toBe(400);
    expect(await nul.text()).toMatch(/message.*must not contain a NUL character/);
    const escaped = await submit('rfq-quotes', { requestId: rfq.id, submission: JSON.stringify(tailQuote('nul\u0000')) });
    expect(escaped.status).toBe(400);
    expect(await escaped.text()).toMatch(/submission must be JSON.*NUL/);
    expect(await stored(rfq.id)).toBe(0);
    expect(s.sim.report().calls).toMatchObject({ quotes: calls.quotes, declines: calls.declines });
  });

  it('a quote whose submission is not JSON comes back naming submission; a valid one is submitted to the href', async () => {
    const lift = rfq.sellerLift[1];
    const bad = await submit('rfq-quotes', { requestId: lift.id, submission: '{"quote": ' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('submission must be JSON');
    const good = await submit('rfq-quotes', { requestId: lift.id, submission: JSON.stringify(tailQuote(uid('console'))) });
    expect(good.status, await good.clone().text()).toBe(303);
    expect(good.headers.get('location')).toContain('done=quoted');
    const listed = await s.skyhook.admin('GET', `/companies/${acme.companyId}/quotes?limit=1`);
    expect(listed.body.items[0]).toMatchObject({ requestId: lift.id, target: 'snapshot_href', targetUrl: lift.actions.submitQuote.href });
  });
});

/**
 * The simulator takes the decline, then holds its answer past Skyhook's MARKETPLACE_TIMEOUT_MS: the
 * marketplace acted, Skyhook read no success. The decline is held `unknown`, and not sent again until asked.
 */
describe('a decline whose answer is lost', () => {
  let lost: Scenario;
  let companyId: string;
  beforeAll(async () => {
    lost = await startScenario({ env: { MARKETPLACE_TIMEOUT_MS: '500' } });
    ({ companyId } = await lost.company('late', { eventTypes: ['TripRequest'] }));
  });
  afterAll(async () => lost?.close());
  afterEach(() => lost.sim.setFaults({ submitLatencyMs: 0 }));
  const post = (body: unknown) => lost.skyhook.admin('POST', `/companies/${companyId}/declines`, body);

  it('is held unknown: a repeat is refused and sends nothing, until resendUnknown', async () => {
    const body = { requestId: 'lift-late', decline };
    lost.sim.setFaults({ submitLatencyMs: 1500 });
    const first = await post(body);
    expect(first.status).toBe(502);
    expect(first.body).toMatchObject({ code: 'outcome_unknown', detail: expect.stringContaining('resendUnknown') });
    await eventually(async () => lost.sim.report().calls.declines === 1, 'the late call counted');
    expect(lost.sim.report().declines).toHaveLength(1); // the marketplace did take it

    lost.sim.setFaults({ submitLatencyMs: 0 });
    const repeat = await post(body);
    expect(repeat.status).toBe(409);
    expect(repeat.body.code).toBe('outcome_unknown');
    expect(lost.sim.report().calls.declines).toBe(1);
    const held = await lost.skyhook.admin('GET', `/companies/${companyId}/declines?status=unknown`);
    expect(held.body.items).toEqual([expect.objectContaining({ requestId: 'lift-late', status: 'unknown', error: expect.stringContaining('500 ms') })]);

    const resent = await post({ ...body, resendUnknown: true });
    expect(resent.status).toBe(201);
    expect(resent.body).toMatchObject({ status: 'created', error: null, tripMessageId: lost.sim.report().declines[0]!.tripMessageId });
    expect(lost.sim.report().calls.declines).toBe(2);
    expect((await post({ ...body, resendUnknown: true })).status).toBe(200);
    expect(lost.sim.report().calls.declines).toBe(2);
  });

  it('is listed on the console with its Resend, which sends it again', async () => {
    lost.sim.setFaults({ submitLatencyMs: 1500 });
    expect((await post({ requestId: 'lift-console', decline })).status).toBe(502);
    lost.sim.setFaults({ submitLatencyMs: 0 });
    const web = consoleClient(() => lost.skyhook.url);
    const { cookie, csrf } = await web.signIn();
    const page = await (await web.get(`/outbound?companyId=${companyId}`, cookie)).text();
    const unknown = page.slice(page.indexOf('<h2 id="unknown">'), page.indexOf('<h2 id="quotes">'));
    expect(unknown).toContain('aria-label="Resend the decline of lift-console"');
    const held = await lost.skyhook.admin('GET', `/companies/${companyId}/declines?requestId=lift-console`);
    const calls = lost.sim.report().calls.declines;
    const res = await web.post(`/companies/${companyId}/declines/${held.body.items[0].id}/resend`, { _csrf: csrf }, cookie);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toContain('done=resent-decline');
    expect(lost.sim.report().calls.declines).toBe(calls + 1);
    const after = await lost.skyhook.admin('GET', `/companies/${companyId}/declines?requestId=lift-console`);
    expect(after.body.items[0].status).toBe('created');
  });

  it('is resent where the RFQ points now when Skyhook stored the RFQ meanwhile, and the row says so', async () => {
    const rfqId = uid('rfq-late');
    lost.sim.setFaults({ submitLatencyMs: 1500 });
    const first = await post({ requestId: rfqId, decline });
    expect(first.status).toBe(502);
    lost.sim.setFaults({ submitLatencyMs: 0 });
    const held = await lost.skyhook.admin('GET', `/companies/${companyId}/declines?requestId=${rfqId}`);
    expect(held.body.items[0]).toMatchObject({ status: 'unknown', target: 'assumed_path' });

    const [fired] = await lost.sim.fire({ companyId: 'late', eventType: 'TripRequest', resourceId: rfqId });
    await eventually(async () => (await lost.skyhook.admin('GET', `/resources?companyId=${companyId}&type=rfqs`)).body.items.some((r: Json) => r.href === fired!.notification.href), 'the RFQ stored');
    const resent = await post({ requestId: rfqId, decline, resendUnknown: true });
    expect(resent.status, JSON.stringify(resent.body)).toBe(201);
    expect(resent.body).toMatchObject({ status: 'created', target: 'snapshot_href', targetUrl: `${lost.sim.apiBaseUrl}/rfqs/${rfqId}/decline` });
    // (The first call's record is not there: the simulator records a call once answered, and Skyhook hung up first.)
    expect(lost.sim.report().apiCalls.filter((c) => c.path.includes(rfqId)).at(-1)?.path).toBe(`/api/rfqs/${rfqId}/decline`);
  });

  it('holds a decline left sending by a crashed process once it is stale, instead of sending it again', async () => {
    await lost.sql.query(
      `INSERT INTO declines (company_id, request_id, decline_reason, body, target, target_url, updated_at) VALUES ($1, 'lift-crash', 'OTHER', $2, 'assumed_path', $3, now() - interval '1 hour')`,
      [companyId, JSON.stringify({ declineReason: 'OTHER' }), `${lost.sim.apiBaseUrl}/tripmsgs/lift-crash/decline`],
    );
    const before = lost.sim.report().calls.declines;
    const repeat = await post({ requestId: 'lift-crash', decline: { declineReason: 'OTHER' } });
    expect(repeat.status).toBe(409);
    expect(repeat.body.detail).toContain('stopped before');
    expect(lost.sim.report().calls.declines).toBe(before);
  });
});
