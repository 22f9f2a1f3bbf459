/**
 * The console's destinations and deliveries (SPEC §5.2, §13), over HTTP against the simulator and Skyhook
 * really started, delivering to a real receiver that verifies each request (test/helpers/receiver.ts): a
 * destination created on its company's page with its secret shown once and never again; bad input shown at
 * its field; the CSRF token required by every form; a destination's page (deliveries and their filters,
 * test, edit, rotate, disable and enable, delete); a delivery's attempts with the answer as text, its
 * replay; the bulk replay after a count; hostile text always shown as text; 404 for an unknown id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultCompany } from '../faults/support.js';
import { consoleClient } from '../helpers/console-client.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let s: Scenario;
let session: { cookie: string; csrf: string };
const receivers: TestReceiver[] = [];
const { get, signIn } = consoleClient(() => s.skyhook.url);

const SECRET = /whsec_[A-Za-z0-9+/]{43}=/g;
const HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>';

beforeAll(async () => {
  // Two attempts a delivery, 100 ms apart: a delivery whose receiver keeps failing ends failed at once.
  s = await startScenario({ env: { DELIVERY_RETRY_SCHEDULE: '0,100', FETCH_MIN_INTERVAL_MS: '0' } });
  session = await signIn();
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

/** A form posted as a browser posts it (a field may repeat: ticked boxes); the session's token unless `csrf` says otherwise. */
function postForm(path: string, fields: [string, string][], csrf: string | null = session.csrf) {
  const body = new URLSearchParams(csrf === null ? fields : [['_csrf', csrf], ...fields]);
  return fetch(`${s.skyhook.url}/console${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie },
    body: body.toString(),
  });
}
const page = async (path: string) => {
  const res = await get(path, session.cookie);
  return { status: res.status, text: await res.text() };
};

/** A destination created through the admin API (the console's own create form is tested on its own). */
async function destinationFor(company: FaultCompany, r: TestReceiver, body: Record<string, unknown> = {}) {
  const created = await s.skyhook.admin('POST', `/companies/${company.companyId}/destinations`, { url: r.url, ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  r.secrets = [created.body.secret];
  return created.body as { id: string; secret: string };
}

async function delivered(company: FaultCompany, resourceId: string, r: TestReceiver) {
  await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId });
  await eventually(async () => r.received.some((x) => x.event.resource?.id === resourceId), `the delivery of ${resourceId}`);
}

const deliveriesOf = async (company: FaultCompany, q = '') => (await s.skyhook.admin('GET', `/companies/${company.companyId}/deliveries${q}`)).body.items as { id: number; status: string; attempts: number; resource: { id: string } }[];

describe("a company's destinations on its page", () => {
  it('creates one from the form, shows its secret once, and no page shows it again', async () => {
    const company = await s.company('console-dest-create');
    const r = await receiver();
    const before = await page(`/companies/${company.companyId}`);
    expect(before.text).toContain('No destination yet.');

    const res = await postForm(`/companies/${company.companyId}/destinations`, [
      ['url', r.url],
      ['description', `Our CRM ${HOSTILE}`],
      ['resourceTypes', 'rfqs'],
      ['eventTypes', 'TripRequest'],
      ['eventTypes', 'TripRequestMine'],
      ['maxConcurrency', '4'],
      ['ratePerSecond', ''],
      ['timeoutMs', '5000'],
    ]);
    expect(res.status).toBe(200);
    const shown = await res.text();
    const secrets = shown.match(SECRET) ?? [];
    expect(secrets).toHaveLength(1);
    expect(shown).toContain('shown only this once');
    // The description is text: escaped, never markup.
    expect(shown).toContain('Our CRM &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(shown).not.toContain('<script>alert');

    const [made] = (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations`)).body.items;
    expect(made).toMatchObject({ url: r.url, filter: { resourceTypes: ['rfqs'], eventTypes: ['TripRequest', 'TripRequestMine'] }, limits: { maxConcurrency: 4, ratePerSecond: null, timeoutMs: 5000 } });
    // The secret shown is the one that signs: the receiver verifies a delivery with it.
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${made.id}/secret`)).body.secret).toBe(secrets[0]);
    r.secrets = [secrets[0]!];
    await delivered(company, 'create-1', r);
    expect(r.received[0]!.verifiedWith).toBe(0);

    // Never again: not in the company's list, nor on the destination's page.
    for (const path of [`/companies/${company.companyId}`, `/companies/${company.companyId}/destinations/${made.id}`]) {
      const again = await page(path);
      expect(again.status).toBe(200);
      expect(again.text).toContain('Our CRM &lt;script&gt;');
      expect(again.text.match(SECRET)).toBeNull();
    }
  });

  it('lists each destination with its state, its last 24 hours and what is pending, linked to its page', async () => {
    const company = await s.company('console-dest-list');
    const r = await receiver();
    const d = await destinationFor(company, r, { description: 'scheduling' });
    await delivered(company, 'list-1', r);
    await eventually(async () => (await deliveriesOf(company)).every((x) => x.status === 'delivered'), 'delivered');
    const { text } = await page(`/companies/${company.companyId}`);
    const row = text.slice(text.indexOf('table class="cards destinations"'));
    expect(row).toContain(`href="/console/companies/${company.companyId}/destinations/${d.id}">scheduling</a>`);
    expect(row).toContain(r.url);
    expect(row).toContain('<span class="badge s-ok">ok</span>');
    expect(row).toContain('100 %');
    expect(row).toContain('1 delivered, 0 failed');
  });

  it('shows bad input at its field, with what was typed, and creates nothing', async () => {
    const company = await s.company('console-dest-bad');
    const badUrl = await postForm(`/companies/${company.companyId}/destinations`, [
      ['url', 'ftp://files.example.com/in'],
      ['description', 'kept as typed'],
      ['eventTypes', 'TripRequest'],
    ]);
    expect(badUrl.status).toBe(400);
    const text = await badUrl.text();
    expect(text).toContain('Not saved');
    expect(text).toMatch(/id="new-url-error"><code>url<\/code> must be an absolute http\(s\) URL/);
    expect(text).toMatch(/id="new-url" name="url" value="ftp:\/\/files.example.com\/in"[^>]*aria-invalid="true"/);
    expect(text).toContain('value="kept as typed"');
    expect(text).toContain('value="TripRequest" checked');

    const badLimits = await (await postForm(`/companies/${company.companyId}/destinations`, [['url', 'http://127.0.0.1:9/in'], ['maxConcurrency', 'many'], ['timeoutMs', '5']])).text();
    expect(badLimits).toMatch(/id="new-maxConcurrency" name="maxConcurrency" value="many"[^>]*aria-invalid="true"/);
    expect(badLimits).toMatch(/id="new-timeoutMs-error"><code>timeoutMs<\/code> Too small/);
    expect(badLimits).not.toMatch(/id="new-url-error"/);
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations`)).body.items).toEqual([]);
  });
});

describe("a destination's page", () => {
  it('refuses every form without the session CSRF token, and changes nothing', async () => {
    const company = await s.company('console-dest-csrf');
    const r = await receiver();
    const d = await destinationFor(company, r);
    await delivered(company, 'csrf-1', r);
    const [delivery] = await deliveriesOf(company);
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    const forms: [string, [string, string][]][] = [
      [`/companies/${company.companyId}/destinations`, [['url', r.url]]],
      [at, [['url', 'http://127.0.0.1:9/elsewhere']]],
      [`${at}/rotate`, [['graceSeconds', '0']]],
      [`${at}/test`, []],
      [`${at}/disable`, []],
      [`${at}/delete`, []],
      [`${at}/replay`, [['status', 'delivered']]],
      [`/companies/${company.companyId}/deliveries/${delivery!.id}/replay`, []],
    ];
    for (const [path, fields] of forms) {
      for (const csrf of [null, 'forged']) {
        const res = await postForm(path, fields, csrf);
        expect(res.status, `${path} with ${csrf ?? 'no'} token`).toBe(403);
        expect(await res.text()).toContain('This form could not be accepted');
      }
    }
    const after = (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations`)).body.items;
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ url: r.url, active: true, previousSecretExpiresAt: null });
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${d.id}/secret`)).body.secret).toBe(d.secret);
    expect(r.attempts.filter((x) => x.event.type === 'test')).toEqual([]);
    expect((await deliveriesOf(company)).map((x) => [x.status, x.attempts])).toEqual([['delivered', 1]]);
  });

  it('lists its deliveries newest first, filtered by status and resource id; a bad filter is named', async () => {
    const company = await s.company('console-dest-deliveries');
    const r = await receiver();
    const d = await destinationFor(company, r);
    for (const id of ['list-a', 'list-b', 'list-c']) await delivered(company, id, r);
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    const ids = (text: string) => [...text.matchAll(/deliveries\/(\d+)">msg_\d+<\/a>/g)].map((m) => Number(m[1]));

    const all = await page(at);
    const expected = (await deliveriesOf(company)).map((x) => x.id);
    expect(ids(all.text)).toEqual(expected);
    expect(expected).toEqual([...expected].sort((a, b) => b - a));
    expect((await page(`${at}?status=failed`)).text).toContain('No delivery matches.');
    const one = await page(`${at}?resourceId=list-b`);
    expect(ids(one.text)).toHaveLength(1);
    expect(one.text).toContain('list-b');
    // Paged: one a page, the next page by its link.
    const first = await page(`${at}?limit=1`);
    const older = /href="([^"]+cursor=[^"]+)">Older/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
    expect(older).toBeDefined();
    expect(ids((await page(older!.replace('/console', ''))).text)).toEqual([expected[1]]);

    const bad = await page(`${at}?after=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/<code>after<\/code>/);
    expect(bad.text).toContain('Filter deliveries');
  });

  it('sends a test event and shows the attempt, the answer as text', async () => {
    const company = await s.company('console-dest-test');
    const r = await receiver();
    r.answer = (x) => (x.event.type === 'test' ? { status: 202, body: `accepted ${HOSTILE}` } : { status: 200 });
    const d = await destinationFor(company, r);
    const res = await postForm(`/companies/${company.companyId}/destinations/${d.id}/test`, []);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('Test event delivered');
    expect(text).toContain('HTTP 202');
    expect(text).toContain('accepted &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(text).not.toContain('<script>alert');
    const test = r.attempts.find((x) => x.event.type === 'test');
    expect(test?.verifiedWith).toBe(0);
    expect(text).toContain(test!.webhookId);
  });

  it('edits it; a bad value is shown at its field with what was typed', async () => {
    const company = await s.company('console-dest-edit');
    const r = await receiver();
    const d = await destinationFor(company, r, { description: 'before' });
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    const saved = await postForm(at, [['url', r.url], ['description', 'after'], ['resourceTypes', 'tripmsgs'], ['ratePerSecond', '20']]);
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/console${at}?done=updated`);
    const view = (await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${d.id}`)).body;
    expect(view).toMatchObject({ description: 'after', filter: { resourceTypes: ['tripmsgs'], eventTypes: null }, limits: { maxConcurrency: null, ratePerSecond: 20, timeoutMs: null } });
    expect((await page(`${at}?done=updated`)).text).toContain('The destination was changed.');

    const refused = await postForm(at, [['url', r.url], ['description', 'typed'], ['timeoutMs', '99999999']]);
    expect(refused.status).toBe(400);
    const text = await refused.text();
    expect(text).toMatch(/id="edit-timeoutMs" name="timeoutMs" value="99999999"[^>]*aria-invalid="true"/);
    expect(text).toContain('value="typed"');
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${d.id}`)).body.description).toBe('after');
  });

  it('rotates the secret, showing the new one once; the previous one signs beside it for the grace period', async () => {
    const company = await s.company('console-dest-rotate');
    const r = await receiver();
    const d = await destinationFor(company, r);
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    const res = await postForm(`${at}/rotate`, [['graceSeconds', '3600']]);
    expect(res.status).toBe(200);
    const text = await res.text();
    const shown = text.match(SECRET) ?? [];
    expect(shown).toHaveLength(1);
    expect(shown[0]).not.toBe(d.secret);
    expect(text).toContain('The previous secret signs beside it until');
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${d.id}/secret`)).body).toMatchObject({ secret: shown[0], previousSecret: d.secret });
    expect((await page(at)).text.match(SECRET)).toBeNull();

    const bad = await postForm(`${at}/rotate`, [['graceSeconds', '-1']]);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/<code>graceSeconds<\/code>/);
  });

  it('disables it (its deliveries wait), enables it skipping what is older, and deletes it', async () => {
    const company = await s.company('console-dest-state');
    const r = await receiver();
    const d = await destinationFor(company, r);
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    expect((await postForm(`${at}/disable`, [])).status).toBe(303);
    const disabled = await page(at);
    expect(disabled.text).toContain('<span class="badge s-disabled">disabled</span>');
    expect(disabled.text).toContain('by ADMIN_TOKEN: <span class="wrap">set inactive</span>');

    // While disabled, a new version's delivery waits; enabling with "skip before" now ends it skipped.
    await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId: 'state-1' });
    await eventually(async () => (await deliveriesOf(company)).length === 1, 'a waiting delivery');
    const [waiting] = await deliveriesOf(company);
    expect(waiting!.status).toBe('pending');
    // A pending delivery cannot be replayed: the refusal is shown on its page.
    const notYet = await postForm(`/companies/${company.companyId}/deliveries/${waiting!.id}/replay`, []);
    expect(notYet.status).toBe(409);
    expect(await notYet.text()).toContain('only a delivered, failed, skipped or expired delivery can be replayed');

    const skipBefore = new Date(Date.now() + 60_000).toISOString().slice(0, 16);
    const enabled = await postForm(`${at}/enable`, [['skipBefore', skipBefore]]);
    expect(enabled.status).toBe(303);
    expect(enabled.headers.get('location')).toBe(`/console${at}?done=enabled`);
    expect((await page(at)).text).toContain('<span class="badge s-ok">ok</span>');
    expect((await deliveriesOf(company)).map((x) => x.status)).toEqual(['skipped']);
    expect(r.attempts).toEqual([]);

    const badSkip = await postForm(`${at}/disable`, []).then(() => postForm(`${at}/enable`, [['skipBefore', 'soon']]));
    expect(badSkip.status).toBe(400);
    expect(await badSkip.text()).toMatch(/<code>skipBefore<\/code>/);

    const deleted = await postForm(`${at}/delete`, []);
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe(`/console/companies/${company.companyId}?done=destinationDeleted#destinations`);
    expect((await page(at)).status).toBe(404);
    // Its deliveries stay readable; the page names the deleted destination by its id.
    const gone = await page(`/companies/${company.companyId}/deliveries/${waiting!.id}`);
    expect(gone.status).toBe(200);
    expect(gone.text).toContain(`${d.id} (deleted)`);
  });

  it('answers 404 for an unknown or another company’s destination or delivery, and 400 for a malformed id', async () => {
    const company = await s.company('console-dest-404');
    const other = await s.company('console-dest-404-other');
    const r = await receiver();
    const d = await destinationFor(other, r);
    await delivered(other, 'other-1', r);
    const [theirs] = await deliveriesOf(other);
    for (const path of [
      `/companies/${company.companyId}/destinations/00000000-0000-4000-8000-000000000000`,
      `/companies/${company.companyId}/destinations/${d.id}`,
      `/companies/${company.companyId}/deliveries/${theirs!.id}`,
      `/companies/${company.companyId}/deliveries/999999999`,
    ]) {
      const res = await page(path);
      expect(res.status, path).toBe(404);
      expect(res.text).toContain('Not Found');
    }
    expect((await postForm(`/companies/${company.companyId}/destinations/${d.id}/test`, [])).status).toBe(404);
    expect((await page(`/companies/${company.companyId}/destinations/not-an-id`)).status).toBe(400);
    expect((await page(`/companies/${company.companyId}/deliveries/99999999999999999999999`)).status).toBe(400);
  });
});

describe("a delivery's page and replays", () => {
  it("shows every attempt with the answer's first bytes as text, and replays it", async () => {
    const company = await s.company('console-delivery');
    const r = await receiver();
    let refusals = 1;
    r.answer = () => (refusals-- > 0 ? { status: 500, body: `upstream broke ${HOSTILE}` } : { status: 200, body: 'thanks' });
    const d = await destinationFor(company, r);
    await delivered(company, 'attempts-1', r);
    await eventually(async () => (await deliveriesOf(company))[0]?.status === 'delivered', 'delivered');
    const [delivery] = await deliveriesOf(company);
    const path = `/companies/${company.companyId}/deliveries/${delivery!.id}`;
    const { text } = await page(path);
    expect(text).toContain(`Delivery msg_${delivery!.id}`);
    expect(text).toContain('<span class="badge s-delivered">delivered</span>');
    expect(text).toContain('rfqs attempts-1, version 1');
    expect(text).toContain(`/destinations/${d.id}`);
    const attempts = text.slice(text.indexOf('table class="cards attempts"'));
    expect(attempts.match(/<tr>\s*<td/g)).toHaveLength(2);
    expect(attempts).toContain('HTTP 500');
    expect(attempts).toContain('HTTP 200');
    expect(attempts).toContain(r.url);
    expect(attempts).toContain('upstream broke &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(text).not.toContain('<script>alert');
    expect(text).not.toContain('<img src=x');

    const replayed = await postForm(`${path}/replay`, []);
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toBe(`/console${path}?done=replayed`);
    await eventually(async () => r.received.length === 2, 'the replay');
    expect(r.received[1]!.webhookId).toBe(r.received[0]!.webhookId);
    await eventually(async () => ((await page(path)).text.match(/HTTP 200/g) ?? []).length >= 2, 'the replay on the page');
    const after = await page(`${path}?done=replayed`);
    expect(after.text).toContain('Replayed: it is sent again');
    expect(after.text).toMatch(/<dt>Attempts<\/dt><dd>3 <span class="muted">\(1 since it was last replayed\)/);
  });

  it('a replay of status all created after a time fills what the old filter left out', async () => {
    const company = await s.company('console-fill');
    const r = await receiver();
    const d = await destinationFor(company, r, { filter: { resourceTypes: ['tripmsgs'] } });
    await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId: 'fill-rfq' });
    await s.sim.fire({ companyId: company.simId, eventType: 'TripChatFromBuyer', resourceId: 'fill-chat' });
    await eventually(async () => r.received.some((x) => x.event.resource?.id === 'fill-chat'), 'the chat delivered');
    await eventually(async () => (await s.sql.query("SELECT 1 FROM events WHERE company_id = $1 AND resource_id = 'fill-rfq'", [company.companyId])).rows.length === 1, 'the rfq stored');
    await s.skyhook.admin('PATCH', `/companies/${company.companyId}/destinations/${d.id}`, { filter: { resourceTypes: null } });
    const at = `/companies/${company.companyId}/destinations/${d.id}`;
    const ago = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16));
    const counted = await eventually(async () => {
      const shown = await page(`${at}/replay?status=all&after=${ago}`);
      return /<strong>2<\/strong> deliveries match/.test(shown.text) && shown;
    }, 'the chat recorded delivered');
    expect(counted.text).toContain('<strong>1</strong> of them to be created');
    // A status: only what exists.
    expect((await page(`${at}/replay?status=delivered&after=${ago}`)).text).toMatch(/<strong>1<\/strong> delivery matches\./);
    const done = await postForm(`${at}/replay`, [['status', 'all'], ['after', decodeURIComponent(ago)]]);
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('2 of the 2 matching deliveries are sent again (1 of them created');
    await eventually(async () => r.received.some((x) => x.event.resource?.id === 'fill-rfq'), 'the rfq delivered');
  });

  it('replays the matching deliveries after showing their count and asking to confirm', async () => {
    const company = await s.company('console-bulk-replay');
    const r = await receiver();
    r.answer = (x) => (x.event.resource?.id.startsWith('broken') ? { status: 500 } : { status: 200 });
    const d = await destinationFor(company, r);
    await delivered(company, 'fine-1', r);
    for (const id of ['broken-1', 'broken-2']) await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId: id });
    await eventually(async () => (await deliveriesOf(company, '?status=failed')).length === 2, 'two failed deliveries');
    const at = `/companies/${company.companyId}/destinations/${d.id}`;

    // From the list, filtered to one resource: its count, a confirmation form.
    const list = await page(`${at}?resourceId=broken-1`);
    const link = /href="([^"]+\/replay[^"]*)">Replay the matching ones/.exec(list.text)?.[1]?.replaceAll('&amp;', '&');
    expect(link).toBe(`/console${at}/replay?resourceId=broken-1`);
    const one = await page(link!.replace('/console', ''));
    expect(one.text).toContain('status failed (the default');
    expect(one.text).toMatch(/<strong>1<\/strong> delivery matches/);
    const all = await page(`${at}/replay?status=failed`);
    expect(all.text).toMatch(/<strong>2<\/strong> deliveries match/);
    expect(all.text).toContain('Replay 2 deliveries');
    expect((await page(`${at}/replay?status=delivered`)).text).toMatch(/<strong>1<\/strong> delivery matches/);
    // Created before a time (the list's filter, as a datetime-local field sends it): none before 2000, both before an hour from now.
    expect((await page(`${at}/replay?before=2000-01-01T00%3A00`)).text).toMatch(/<strong>0<\/strong> deliveries match/);
    const soon = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
    expect((await page(`${at}/replay?before=${encodeURIComponent(soon)}`)).text).toMatch(/<strong>2<\/strong> deliveries match/);
    // Nothing is replayed before the confirmation.
    expect((await deliveriesOf(company, '?status=failed')).length).toBe(2);

    r.answer = () => ({ status: 200 });
    const done = await postForm(`${at}/replay`, [['status', 'failed']]);
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('2 of the 2 matching deliveries are sent again.');
    await eventually(async () => (await deliveriesOf(company, '?status=delivered')).length === 3, 'all delivered');
  });
});
