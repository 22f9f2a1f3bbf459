/**
 * Leads and quotes through the admin API against the simulator: every validation rule (one bad field
 * at a time, and several at once), idempotency under concurrent repeats, the ActAsAccount header,
 * the stored ids, and the notifications that link fetched resources back to them.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clientSearchLead, emptyLegLead, floatingFleetQuote, tailQuote } from '../fixtures/requests.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN, eventually } from '../helpers/skyhook.js';

let s: Scenario;
let companyId: string;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  ({ companyId } = await s.company('acme', { eventTypes: ['ClientLeads', 'TripRequestSellerResponse'] }));
});
afterAll(async () => s?.close());

const postLead = (body: unknown) => s.skyhook.admin('POST', `/companies/${companyId}/leads`, body);
const postQuote = (body: unknown) => s.skyhook.admin('POST', `/companies/${companyId}/quotes`, body);
const fields = (res: { body: { errors?: { field: string }[] } }) => (res.body.errors ?? []).map((e) => e.field);
const count = async (table: string) => Number((await s.sql.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
const uid = (p: string) => `${p}-${Math.random().toString(36).slice(2, 10)}`;

/** Deep-clones `body` and sets the value at a dotted path. */
function withField<T>(body: T, path: string, value: unknown): T {
  const copy = structuredClone(body) as Record<string, unknown>;
  const keys = path.split('.');
  let at: Record<string, unknown> = copy;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  if (value === undefined) delete at[keys.at(-1)!];
  else at[keys.at(-1)!] = value;
  return copy as T;
}

describe('client leads', () => {
  it.each([
    ['clientIdentifier', undefined],
    ['inquiryLift', []],
    ['leadContactInfo.emailAddresses.0.emailAddress', 'not-an-email'],
    ['leadContactInfo.emailAddresses.0.type', 'Office'],
    ['leadContactInfo.phoneNumbers.0.phoneNumber', '0791234567'],
    ['leadContactInfo.phoneNumbers.0.phoneNumber', '+41 79 123'],
    ['leadContactInfo.phoneNumbers.0.type', 'Mobile'],
    ['leadContactInfo.url', 'ftp://x'],
    ['leadCurrency', 'eur'],
    ['leadCurrency', 'EURO'],
    ['leadLocale', 'eng'],
    ['inquiryLift.0.priceExpectation', -1],
    ['inquiryLift.0.availabilityId', 42],
    ['sellerQuoteIds', 'sq-1'],
  ])('refuses %s = %j with a 400 naming it; nothing stored, nothing sent', async (path, value) => {
    const before = { leads: await count('leads'), calls: s.sim.report().calls.leads };
    const res = await postLead(withField(clientSearchLead(uid('bad')), path, value));
    expect(res.status).toBe(400);
    expect(fields(res).join(' ')).toContain(`body.${path}`);
    expect(await count('leads')).toBe(before.leads);
    expect(s.sim.report().calls.leads).toBe(before.calls);
  });

  it('refuses an empty leg lead without searchId or with an item lacking emptyLegId', async () => {
    const bad = emptyLegLead(uid('el'));
    delete bad.searchId;
    bad.inquiryLift.push({ priceExpectation: 1 });
    const res = await postLead(bad);
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual(expect.arrayContaining(['body.searchId', 'body.inquiryLift.1.emptyLegId']));
  });

  it('names every bad field at once', async () => {
    const bad = withField(withField(withField(clientSearchLead(uid('multi')), 'leadCurrency', 'x'), 'leadLocale', '1'), 'inquiryLift.1.priceExpectation', -5);
    const res = await postLead(bad);
    expect(res.status).toBe(400);
    expect(fields(res)).toEqual(expect.arrayContaining(['body.leadCurrency', 'body.leadLocale', 'body.inquiryLift.1.priceExpectation']));
  });

  it('accepts zero priceExpectation and a null availabilityId; creates once; a repeat returns it unchanged', async () => {
    const id = uid('lead');
    const first = await postLead(clientSearchLead(id));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ clientIdentifier: id, kind: 'client_search', status: 'created', remoteId: expect.stringMatching(/^lead_/) });
    const calls = s.sim.report().calls.leads;
    const repeat = await postLead({ ...clientSearchLead(id), leadMessage: 'changed details' });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(s.sim.report().calls.leads).toBe(calls);
  });

  it('ten parallel identical requests make one marketplace call', async () => {
    const id = uid('burst');
    const calls = s.sim.report().calls.leads;
    const answers = await Promise.all(Array.from({ length: 10 }, () => postLead(clientSearchLead(id))));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(s.sim.report().calls.leads).toBe(calls + 1);
  });

  it('takes over a lead left sending by a crashed process once it is stale, and sends it once', async () => {
    const id = uid('crashed');
    await s.sql.query(`INSERT INTO leads (company_id, client_identifier, kind, request, updated_at) VALUES ($1, $2, 'client_search', $3, now() - interval '1 hour')`, [
      companyId,
      id,
      JSON.stringify(clientSearchLead(id)),
    ]);
    const calls = s.sim.report().calls.leads;
    const answers = await Promise.all(Array.from({ length: 3 }, () => postLead(clientSearchLead(id))));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
    expect(answers[0]!.body).toMatchObject({ clientIdentifier: id, status: 'created', remoteId: expect.stringMatching(/^lead_/) });
    expect(s.sim.report().calls.leads).toBe(calls + 1);
  });

  it('creates an empty leg lead, and links the ClientLeads resource Skyhook then fetches', async () => {
    const id = uid('empty');
    const res = await postLead(emptyLegLead(id));
    expect(res.status).toBe(201);
    expect(res.body.kind).toBe('empty_leg');
    const linked = await eventually(async () => {
      const list = await s.skyhook.admin('GET', `/companies/${companyId}/leads?limit=100`);
      const lead = list.body.items.find((l: { id: string }) => l.id === res.body.id);
      return lead?.resourceHref ? lead : undefined;
    }, 'lead linked to its snapshot');
    expect(linked.resourceHref).toBe(`${s.sim.apiBaseUrl}/leads/${res.body.remoteId}`);
    expect(linked.snapshotVersion).toBe(1);
  });
});

describe('quotes', () => {
  const request = (submission: ReturnType<typeof tailQuote>, extra: Record<string, unknown> = {}) => ({ requestId: 'lift-req-1', submission, ...extra });

  it.each([
    ['quote.segments.0.startAirport.icao', 'LSG'],
    ['quote.segments.0.endAirport.icao', 'egll'],
    ['quote.segments.0.dateTime.date', '2027-02-30'],
    ['quote.segments.0.dateTime.date', '14/03/2027'],
    ['quote.segments.0.dateTime.time', '9:30'],
    ['quote.segments.0.dateTime.time', '24:00'],
    ['quote.segments.0.paxCount', 'four'],
    ['quote.segments.0.distanceNM', -1],
    ['quote.segments.0.blockTimeMinutes', 1.5],
    ['quote.segments.0.flightMinutes', -10],
    ['quote.lineItems.0.formattedUnitPrice', '20,000'],
    ['quote.lineItems.0.formattedQuantity', 'one'],
    ['quote.currencyCode', 'eur'],
    ['quote.sellerUniqueQuoteIdentifier', ''],
    ['quote.lift', { aircraftTail: '', aircraftType: '', aircraftCategory: '' }],
    ['quote.segments', []],
  ])('refuses %s = %j with a 400 naming it; nothing stored, nothing sent', async (path, value) => {
    const before = { quotes: await count('quotes'), calls: s.sim.report().calls.quotes };
    const res = await postQuote(request(withField(tailQuote(uid('q')), path, value)));
    expect(res.status).toBe(400);
    expect(fields(res).join(' ')).toContain(`body.submission.${path}`);
    expect(await count('quotes')).toBe(before.quotes);
    expect(s.sim.report().calls.quotes).toBe(before.calls);
  });

  it.each(['.', '..', 'a/b', '../webhooks', 'lift 1'])('refuses requestId %j with a 400 naming body.requestId; nothing stored, nothing sent', async (requestId) => {
    const before = { quotes: await count('quotes'), calls: s.sim.report().calls.quotes, accepted: s.sim.report().quotes.length };
    const res = await postQuote({ requestId, submission: tailQuote(uid('path')) });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(fields(res)).toEqual(['body.requestId']);
    expect(await count('quotes')).toBe(before.quotes);
    expect(s.sim.report().calls.quotes).toBe(before.calls);
    expect(s.sim.report().quotes).toHaveLength(before.accepted);
  });

  it('refuses a total that is not the sum of the line items, unless allowPriceMismatch', async () => {
    const q = withField(tailQuote(uid('sum')), 'quote.totalPrice', 21250.49);
    const refused = await postQuote(request(q));
    expect(refused.status).toBe(400);
    expect(fields(refused)).toEqual(['submission.quote.totalPrice']);
    const allowed = await postQuote(request(q, { allowPriceMismatch: true }));
    expect(allowed.status).toBe(201);
  });

  it('submits a quote on a tail: the three ids are stored and returned; no ActAsAccount header unless given', async () => {
    const res = await postQuote(request(tailQuote(uid('tail'))));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ requestId: 'lift-req-1', tripMessageId: expect.stringMatching(/^tm_/), sellerQuoteId: expect.stringMatching(/^sq_/), liftId: expect.stringMatching(/^lift_/), actAsAccount: null });
    const sent = s.sim.report().quotes.find((q) => q.tripMessageId === res.body.tripMessageId);
    expect(sent?.actAsAccount).toBeNull();
    const byLift = await s.skyhook.admin('GET', `/companies/${companyId}/quotes?liftId=${res.body.liftId}`);
    expect(byLift.body.items.map((q: { id: string }) => q.id)).toEqual([res.body.id]);
  });

  it('submits a floating-fleet quote with X-Service-ActAsAccount, and links the seller-response resource', async () => {
    const res = await postQuote({ requestId: 'rfq-77', actAsAccount: 'jane.dispatcher', submission: floatingFleetQuote(uid('ff')) });
    expect(res.status).toBe(201);
    expect(s.sim.report().quotes.find((q) => q.tripMessageId === res.body.tripMessageId)?.actAsAccount).toBe('jane.dispatcher');
    const linked = await eventually(async () => {
      const list = await s.skyhook.admin('GET', `/companies/${companyId}/quotes?liftId=${res.body.liftId}`);
      return list.body.items[0]?.resourceHref ? list.body.items[0] : undefined;
    }, 'quote linked to its snapshot');
    expect(linked.resourceHref).toBe(`${s.sim.apiBaseUrl}/tripmsgs/${res.body.tripMessageId}`);
  });

  it('takes a quote with attachments beyond the 1 MiB other admin routes read; refuses attachments over 20 MiB in all (400) and a larger body (413)', async () => {
    const withAttachments = (sizes: number[]) => {
      const q = tailQuote(uid('att'));
      q.quote.attachments = sizes.map((mib, i) => ({ mimeType: 'application/pdf', name: `quote-${i}.pdf`, data: 'A'.repeat(mib * 1024 * 1024) }));
      return q;
    };
    const taken = await postQuote(request(withAttachments([3, 2])));
    expect(taken.status).toBe(201);

    const before = s.sim.report().calls.quotes;
    const tooMuch = await postQuote(request(withAttachments([7, 7, 7])));
    expect(tooMuch.status).toBe(400);
    expect(fields(tooMuch)).toEqual(['body.submission.quote.attachments']);
    const tooLarge = await postQuote(request(withAttachments([10, 10, 5])));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toMatchObject({ status: 413, title: 'Content Too Large' });
    expect(s.sim.report().calls.quotes).toBe(before);
  });

  it('ten parallel identical submissions make one marketplace call and one quote', async () => {
    const body = request(tailQuote(uid('burst')));
    const calls = s.sim.report().calls.quotes;
    const answers = await Promise.all(Array.from({ length: 10 }, () => postQuote(body)));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(9);
    expect(new Set(answers.map((a) => a.body.sellerQuoteId)).size).toBe(1);
    expect(s.sim.report().calls.quotes).toBe(calls + 1);
  });
});

/**
 * The simulator handles the call, then holds its answer past Skyhook's MARKETPLACE_TIMEOUT_MS: the
 * marketplace acted, Skyhook read no success. A lead is sent again on the next request (the marketplace
 * keeps one per clientIdentifier); a quote is held `unknown` and not submitted again until asked to.
 */
describe('a call whose answer is lost', () => {
  let lost: Scenario;
  let lostCompany: string;
  beforeAll(async () => {
    lost = await startScenario({ env: { MARKETPLACE_TIMEOUT_MS: '500' } });
    ({ companyId: lostCompany } = await lost.company('late', { eventTypes: ['ClientLeads'] }));
  });
  afterAll(async () => lost?.close());
  afterEach(() => lost.sim.setFaults({ submitLatencyMs: 0 }));
  const post = (what: 'leads' | 'quotes', body: unknown) => lost.skyhook.admin('POST', `/companies/${lostCompany}/${what}`, body);
  const calls = () => lost.sim.report().calls;
  /** Until the simulator has counted `n` quote calls (a late answer is counted when the caller hangs up). */
  const quoteCalls = (n: number) => eventually(async () => calls().quotes === n, `${n} quote calls`);

  it('holds a quote as unknown: a repeat is refused and sends nothing, until resendUnknown', async () => {
    const body = { requestId: 'lift-late', submission: tailQuote(uid('late')) };
    lost.sim.setFaults({ submitLatencyMs: 1500 });
    const first = await post('quotes', body);
    expect(first.status).toBe(502);
    expect(first.body).toMatchObject({ code: 'outcome_unknown', detail: expect.stringContaining('resendUnknown') });
    await quoteCalls(1);
    expect(lost.sim.report().quotes).toHaveLength(1); // the marketplace did take it

    lost.sim.setFaults({ submitLatencyMs: 0 });
    const repeat = await post('quotes', body);
    expect(repeat.status).toBe(409);
    expect(repeat.body.code).toBe('outcome_unknown');
    expect(calls().quotes).toBe(1);
    const held = await lost.skyhook.admin('GET', `/companies/${lostCompany}/quotes?status=unknown`);
    expect(held.body.items).toEqual([expect.objectContaining({ status: 'unknown', error: expect.stringContaining('500 ms'), sellerQuoteId: null })]);

    const resent = await post('quotes', { ...body, resendUnknown: true });
    expect(resent.status).toBe(201);
    expect(resent.body).toMatchObject({ status: 'created', error: null, sellerQuoteId: lost.sim.report().quotes[0]!.sellerQuoteId });
    expect(calls().quotes).toBe(2);
    const again = await post('quotes', { ...body, resendUnknown: true });
    expect(again.status).toBe(200);
    expect(calls().quotes).toBe(2);
  });

  it('holds a quote left sending by a crashed process once it is stale, instead of submitting it again', async () => {
    const body = { requestId: 'lift-crash', submission: tailQuote(uid('crash')) };
    await lost.sql.query(
      `INSERT INTO quotes (company_id, seller_unique_quote_identifier, request_id, submission, updated_at) VALUES ($1, $2, 'lift-crash', $3, now() - interval '1 hour')`,
      [lostCompany, body.submission.quote.sellerUniqueQuoteIdentifier, JSON.stringify(body.submission)],
    );
    const before = calls().quotes;
    const repeat = await post('quotes', body);
    expect(repeat.status).toBe(409);
    expect(repeat.body.detail).toContain('stopped before');
    expect(calls().quotes).toBe(before);
  });

  it('removes a quote the marketplace refused, so a repeat submits it', async () => {
    const body = { requestId: 'lift-refused', submission: tailQuote(uid('refused')) };
    const { rows } = await lost.sql.query('SELECT api_base_url FROM companies WHERE id = $1', [lostCompany]);
    await lost.sql.query(`UPDATE companies SET api_base_url = 'http://127.0.0.1:9/api' WHERE id = $1`, [lostCompany]); // nothing listens on port 9
    try {
      const unreachable = await post('quotes', body);
      expect(unreachable.status).toBe(502);
      expect(unreachable.body.code).toBe('marketplace_network');
      expect(Number((await lost.sql.query('SELECT count(*) AS n FROM quotes WHERE seller_unique_quote_identifier = $1', [body.submission.quote.sellerUniqueQuoteIdentifier])).rows[0].n)).toBe(0);
    } finally {
      await lost.sql.query(`UPDATE companies SET api_base_url = $2 WHERE id = $1`, [lostCompany, rows[0].api_base_url]);
    }
    const repeat = await post('quotes', body);
    expect(repeat.status, JSON.stringify(repeat.body)).toBe(201);
  });

  it('keeps a refused quote whose row cannot be removed sending, and counts the failure', async () => {
    const body = { requestId: 'lift-stuck', submission: tailQuote(uid('stuck')) };
    const { rows } = await lost.sql.query('SELECT api_base_url FROM companies WHERE id = $1', [lostCompany]);
    await lost.sql.query(`UPDATE companies SET api_base_url = 'http://127.0.0.1:9/api' WHERE id = $1`, [lostCompany]); // nothing listens on port 9
    // The database refuses the removal, as one that went away between the call and the clean-up would.
    await lost.sql.query(`CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes now'; END $$`);
    await lost.sql.query('CREATE TRIGGER refuse_delete BEFORE DELETE ON quotes FOR EACH ROW EXECUTE FUNCTION refuse_delete()');
    try {
      const refused = await post('quotes', body);
      expect(refused.status).toBe(502);
      expect(refused.body.code).toBe('marketplace_network');
      const { rows: kept } = await lost.sql.query('SELECT status FROM quotes WHERE seller_unique_quote_identifier = $1', [body.submission.quote.sellerUniqueQuoteIdentifier]);
      expect(kept).toEqual([{ status: 'sending' }]);
      const metrics = await (await fetch(`${lost.skyhook.url}/metrics`)).text();
      expect(Number(/skyhook_errors_total\{kind="outbound_cleanup"\} (\d+)/.exec(metrics)?.[1])).toBe(1);
    } finally {
      await lost.sql.query('DROP TRIGGER refuse_delete ON quotes');
      await lost.sql.query('DROP FUNCTION refuse_delete()');
      await lost.sql.query(`UPDATE companies SET api_base_url = $2 WHERE id = $1`, [lostCompany, rows[0].api_base_url]);
    }
  });

  it('sends a lead again after a lost answer: the marketplace keeps one lead per clientIdentifier', async () => {
    const id = uid('late-lead');
    lost.sim.setFaults({ submitLatencyMs: 1500 });
    const first = await post('leads', clientSearchLead(id));
    expect(first.status).toBe(502);
    expect(first.body.code).toBe('marketplace_timeout');
    lost.sim.setFaults({ submitLatencyMs: 0 });
    const repeat = await post('leads', clientSearchLead(id));
    expect(repeat.status).toBe(201);
    expect(lost.sim.report().leads.filter((l) => l.clientIdentifier === id)).toHaveLength(1);
  });
});

describe('lead and quote pages', () => {
  it('answer a cursor they did not return with a 400 naming cursor', async () => {
    for (const path of [`/companies/${companyId}/leads?cursor=garbage`, `/companies/${companyId}/quotes?cursor=garbage`, `/companies/${companyId}/leads?cursor=2024-13-45`]) {
      const res = await s.skyhook.admin('GET', path);
      expect(res.status, path).toBe(400);
      expect(fields(res), path).toContain('cursor');
    }
  });

  it('page newest first without skipping rows created in the same millisecond', async () => {
    const { companyId: pager } = await s.company('pager', { eventTypes: ['ClientLeads'] });
    // Five rows one microsecond apart (a JS Date keeps milliseconds only), two of them at the same instant.
    const at = ['2031-01-01 00:00:00.000100+00', '2031-01-01 00:00:00.000200+00', '2031-01-01 00:00:00.000300+00', '2031-01-01 00:00:00.000300+00', '2031-01-01 00:00:00.000400+00'];
    for (const [i, createdAt] of at.entries()) {
      await s.sql.query(`INSERT INTO leads (company_id, client_identifier, kind, status, request, created_at) VALUES ($1, $2, 'client_search', 'created', '{}', $3)`, [pager, `same-ms-${i}`, createdAt]);
      await s.sql.query(`INSERT INTO quotes (company_id, seller_unique_quote_identifier, request_id, status, submission, created_at) VALUES ($1, $2, 'r', 'created', '{}', $3)`, [pager, `same-ms-${i}`, createdAt]);
    }
    for (const kind of ['leads', 'quotes']) {
      const seen: { id: string; createdAt: string }[] = [];
      let cursor: string | null = null;
      do {
        const res: { status: number; body: { items: { id: string; createdAt: string }[]; nextCursor: string | null } } = await s.skyhook.admin(
          'GET',
          `/companies/${pager}/${kind}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(res.status).toBe(200);
        seen.push(...res.body.items);
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(seen, kind).toHaveLength(5);
      expect(new Set(seen.map((r) => r.id)).size, kind).toBe(5);
      const order = await s.sql.query(`SELECT id FROM ${kind} WHERE company_id = $1 ORDER BY created_at DESC, id DESC`, [pager]);
      expect(seen.map((r) => r.id), kind).toEqual(order.rows.map((r: { id: string }) => r.id));
    }
  });
});

/**
 * The real marketplace's error entries are `{title, code, path}` (SPEC §14), not the seed's assumed
 * `{code, message, field}`: a refusal in that shape reaches the admin as a 502 problem with its codes and
 * titles. The simulator here speaks that shape; its refusal is a token it does not know.
 */
describe('a refusal in the real marketplace error shape', () => {
  let titled: Scenario;
  let refused: string;
  beforeAll(async () => {
    titled = await startScenario({ sim: { errorShape: 'titled' } });
    const created = await titled.skyhook.admin('POST', '/companies', { name: 'Refused', apiBaseUrl: titled.sim.apiBaseUrl, apiToken: 'unknown-to-the-marketplace' });
    refused = created.body.id;
  });
  afterAll(async () => titled?.close());

  /** The raw answer: its status, its content type and its body. */
  async function post(path: string, body: unknown, method = 'POST') {
    const res = await fetch(`${titled.skyhook.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as { code?: string; detail?: string; errors?: unknown[] } };
  }

  const expectRefusal = (res: Awaited<ReturnType<typeof post>>) => {
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.type).toContain('application/problem+json');
    expect(res.body).toMatchObject({ status: 502, code: 'marketplace_http' });
    expect(res.body.errors).toEqual([{ field: 'marketplace', message: 'missing or unknown API token', code: 'unauthorized' }]);
    expect(res.body.detail).toContain('401: missing or unknown API token (unauthorized)');
  };

  it('creating a webhook answers 502 with the codes and titles, and stores nothing', async () => {
    expectRefusal(await post(`/companies/${refused}/webhooks`, { eventTypes: ['TripRequest'], authType: 'BASIC' }));
    expect(Number((await titled.sql.query('SELECT count(*) AS n FROM webhooks WHERE company_id = $1', [refused])).rows[0].n)).toBe(0);
  });

  it('changing a webhook whose company token the marketplace no longer knows answers 502 the same way', async () => {
    const { companyId, webhookId } = await titled.company('titled-patch', { eventTypes: ['TripRequest'] });
    await titled.skyhook.admin('PATCH', `/companies/${companyId}`, { apiToken: 'revoked-token' });
    expectRefusal(await post(`/companies/${companyId}/webhooks/${webhookId}`, { displayName: 'renamed' }, 'PATCH'));
  });

  it('creating a lead answers 502 with the codes and titles, and keeps no lead', async () => {
    expectRefusal(await post(`/companies/${refused}/leads`, clientSearchLead(uid('titled'))));
    expect(Number((await titled.sql.query('SELECT count(*) AS n FROM leads WHERE company_id = $1', [refused])).rows[0].n)).toBe(0);
  });

  it('submitting a quote answers 502 with the codes and titles, and keeps no quote', async () => {
    expectRefusal(await post(`/companies/${refused}/quotes`, { requestId: 'lift-titled', submission: tailQuote(uid('titled')) }));
    expect(Number((await titled.sql.query('SELECT count(*) AS n FROM quotes WHERE company_id = $1', [refused])).rows[0].n)).toBe(0);
  });
});
