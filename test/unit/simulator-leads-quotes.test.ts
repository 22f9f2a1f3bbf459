import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authorizationHeader, HEADERS } from '../../src/marketplace/connection.js';
import { rfqActionPath, type NotificationBody } from '../../src/marketplace/contract.js';
import { LEADS_PATH } from '../../src/marketplace/leads.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import * as requests from '../fixtures/requests.js';

const ACME = { id: 'acme', name: 'Acme Charter', token: 'acme-token-0123456789' };
const GLOBEX = { id: 'globex', token: 'globex-token-0123456789' };

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A subscriber endpoint that records every notification body and answers 200. */
async function startReceiver() {
  const app = Fastify({ forceCloseConnections: true });
  const received: NotificationBody[] = [];
  app.post('/hooks', async (request) => {
    received.push(request.body as NotificationBody);
    return { ok: true };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { received, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/hooks`, close: () => app.close() };
}

let sim: Simulator;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeEach(async () => {
  receiver = await startReceiver();
  sim = await startSimulator({ companies: [ACME, GLOBEX], timeScale: 1e-5, replyTimeoutMs: 500 });
});

afterEach(async () => {
  await sim.stop();
  await receiver.close();
});

async function post(token: string | undefined, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${sim.apiBaseUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: authorizationHeader(token) }),
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

async function get(href: string, token: string) {
  const response = await fetch(href, { headers: { authorization: authorizationHeader(token) } });
  return { status: response.status, body: (await response.json()) as Json };
}

async function subscribe(token: string, eventTypes: string[]): Promise<void> {
  const answer = await post(token, '/webhooks/settings', {
    targetURI: receiver.url,
    displayName: 'Skyhook',
    active: true,
    clientIdentifier: `skyhook-${randomUUID()}`,
    clientSecret: 'a-client-secret-of-32-characters',
    clientAuthenticationType: 'BASIC',
    eventTypes,
  });
  expect(answer.body.meta.errors).toEqual([]);
}

/** A bad request: HTTP 200, no data, and one error per issue, all naming `field`. */
function expectSoftError(answer: { status: number; body: Json }, field: string): void {
  expect(answer.status).toBe(200);
  expect(answer.body.data).toBeNull();
  expect(answer.body.meta.errors.length).toBeGreaterThan(0);
  for (const error of answer.body.meta.errors) {
    expect(error).toEqual({ field, code: expect.any(String), message: expect.any(String) });
  }
}

/** The shared request fixtures with a fresh identifier; `overrides` replace top-level fields. */
const clientSearchLead = (overrides: Json = {}): Json => ({ ...requests.clientSearchLead(`lead-${randomUUID()}`), ...overrides });
const emptyLegLead = (overrides: Json = {}): Json => ({ ...requests.emptyLegLead(`lead-${randomUUID()}`), ...overrides });

/** The shared tail quote; `parts` replace pieces of its first segment, date, line item, or of the quote. */
const quoteSubmission = (parts: { segment?: Json; dateTime?: Json; lineItem?: Json; quote?: Json } = {}): Json => {
  const base = requests.tailQuote(`q-${randomUUID()}`);
  const [segment, ...segments] = base.quote.segments;
  const [lineItem, ...lineItems] = base.quote.lineItems;
  return {
    ...base,
    quote: {
      ...base.quote,
      segments: [{ ...segment, dateTime: { ...segment!.dateTime, ...parts.dateTime }, ...parts.segment }, ...segments],
      lineItems: [{ ...lineItem, ...parts.lineItem }, ...lineItems],
      ...parts.quote,
    },
  };
};

describe('POST /leads', () => {
  it('creates a client search lead: the answer, a resource for its owner only, a ClientLeads notification', async () => {
    await subscribe(ACME.token, ['ClientLeads']);
    const lead = clientSearchLead();
    const answer = await post(ACME.token, LEADS_PATH, lead);
    expect(answer).toEqual({
      status: 200,
      body: {
        meta: { errors: [], warnings: [], infos: [] },
        data: { id: expect.stringMatching(/^lead_/), clientIdentifier: lead.clientIdentifier, status: 'ClientLead' },
      },
    });
    const { id } = answer.body.data;
    const href = `${sim.apiBaseUrl}/leads/${id}`;

    await sim.idle();
    expect(receiver.received).toEqual([{ id, href, type: 'leads' }]);
    const own = await get(href, ACME.token);
    expect(own.status).toBe(200);
    expect(own.body.data).toMatchObject({ id, type: 'leads', clientIdentifier: lead.clientIdentifier, kind: 'client_search', status: 'ClientLead', lead });
    expect((await get(href, GLOBEX.token)).status).toBe(404);
    expect(sim.report().leads).toEqual([{ companyId: ACME.id, id, clientIdentifier: lead.clientIdentifier, kind: 'client_search' }]);
  });

  it('creates an empty leg lead', async () => {
    const lead = emptyLegLead();
    const answer = await post(ACME.token, LEADS_PATH, lead);
    expect(answer.body.meta.errors).toEqual([]);
    const { id } = answer.body.data;
    expect((await get(`${sim.apiBaseUrl}/leads/${id}`, ACME.token)).body.data).toMatchObject({ kind: 'empty_leg', lead });
    expect(sim.report().leads).toEqual([{ companyId: ACME.id, id, clientIdentifier: lead.clientIdentifier, kind: 'empty_leg' }]);
  });

  it.each([
    ['a priceExpectation of zero', { inquiryLift: [{ aircraftType: 'Citation XLS', priceExpectation: 0, availabilityId: 'a' }] }],
    ['a null availabilityId', { inquiryLift: [{ aircraftType: 'Citation XLS', priceExpectation: 100, availabilityId: null }] }],
    [
      'Work and Home contact types',
      {
        leadContactInfo: {
          emailAddresses: [{ type: 'Work', emailAddress: 'a@example.com' }, { type: 'Home', emailAddress: 'b@example.com' }],
          phoneNumbers: [{ type: 'Work', phoneNumber: '+12125550100' }, { type: 'Home', phoneNumber: '+33612345678' }],
        },
      },
    ],
  ])('accepts %s', async (_case, overrides) => {
    const answer = await post(ACME.token, LEADS_PATH, clientSearchLead(overrides));
    expect(answer.body.meta.errors).toEqual([]);
    expect(answer.body.data.id).toMatch(/^lead_/);
  });

  const contact = (entry: Json) => ({ leadContactInfo: { name: 'Ada', ...entry } });
  it.each([
    ['e-mail syntax', 'leadContactInfo.emailAddresses.0.emailAddress', clientSearchLead(contact({ emailAddresses: [{ type: 'Work', emailAddress: 'ada@' }] }))],
    ['phone without a leading +', 'leadContactInfo.phoneNumbers.0.phoneNumber', clientSearchLead(contact({ phoneNumbers: [{ type: 'Work', phoneNumber: '00447700900123' }] }))],
    ['phone with spaces', 'leadContactInfo.phoneNumbers.0.phoneNumber', clientSearchLead(contact({ phoneNumbers: [{ type: 'Work', phoneNumber: '+44 7700 900123' }] }))],
    ['lower-case currency', 'leadCurrency', clientSearchLead({ leadCurrency: 'eur' })],
    ['four-letter currency', 'leadCurrency', clientSearchLead({ leadCurrency: 'EURO' })],
    ['three-letter locale', 'leadLocale', clientSearchLead({ leadLocale: 'eng' })],
    ['negative priceExpectation', 'inquiryLift.0.priceExpectation', clientSearchLead({ inquiryLift: [{ aircraftType: 'XLS', priceExpectation: -1 }] })],
    ['e-mail type other than Work/Home', 'leadContactInfo.emailAddresses.0.type', clientSearchLead(contact({ emailAddresses: [{ type: 'Mobile', emailAddress: 'a@example.com' }] }))],
    ['phone type other than Work/Home', 'leadContactInfo.phoneNumbers.0.type', clientSearchLead(contact({ phoneNumbers: [{ type: 'work', phoneNumber: '+12125550100' }] }))],
    ['empty leg lead without searchId', 'searchId', emptyLegLead({ searchId: undefined })],
    ['empty leg lead with an item lacking emptyLegId', 'inquiryLift.1.emptyLegId', emptyLegLead({ inquiryLift: [{ emptyLegId: 'el-1' }, { priceExpectation: 5 }] })],
    ['missing clientIdentifier', 'clientIdentifier', clientSearchLead({ clientIdentifier: undefined })],
  ])('refuses %s with a soft error naming %s, creating nothing', async (_case, field, lead) => {
    await subscribe(ACME.token, ['ClientLeads']);
    expectSoftError(await post(ACME.token, LEADS_PATH, lead), field);
    await sim.idle();
    expect(receiver.received).toEqual([]);
    expect(sim.report()).toMatchObject({ leads: [], resources: [], calls: { leads: 1, quotes: 0 } });
  });

  it('a repeated clientIdentifier returns the first lead unchanged and fires nothing; another company may reuse it', async () => {
    await subscribe(ACME.token, ['ClientLeads']);
    const first = clientSearchLead();
    const created = await post(ACME.token, LEADS_PATH, first);
    const changed = { ...first, leadMessage: 'Now six of us.', leadContactInfo: { name: 'Someone Else' } };
    const repeat = await post(ACME.token, LEADS_PATH, changed);
    expect(repeat.body).toEqual(created.body);

    const stored = await get(`${sim.apiBaseUrl}/leads/${created.body.data.id}`, ACME.token);
    expect(stored.body.data).toMatchObject({ version: 1, lead: first });
    await sim.idle();
    expect(receiver.received).toHaveLength(1);

    const globex = await post(GLOBEX.token, LEADS_PATH, changed);
    expect(globex.body.data).toEqual({ id: expect.stringMatching(/^lead_/), clientIdentifier: first.clientIdentifier, status: 'ClientLead' });
    expect(globex.body.data.id).not.toBe(created.body.data.id);
    expect(sim.report().leads.map(({ companyId }) => companyId)).toEqual([ACME.id, GLOBEX.id]);
  });

  it('ten parallel identical requests make one lead, and all ten are counted', async () => {
    const lead = clientSearchLead();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(ACME.token, LEADS_PATH, lead)));
    expect(new Set(answers.map((answer) => answer.body.data.id)).size).toBe(1);
    expect(sim.report()).toMatchObject({ leads: [expect.anything()], calls: { leads: 10, quotes: 0 } });
  });
});

describe('POST /tripmsgs/{requestId}/submitQuote', () => {
  it('accepts a quote on a tail: new ids, a resource for its owner only, a TripRequestSellerResponse notification', async () => {
    await subscribe(ACME.token, ['TripRequestSellerResponse']);
    const submission = quoteSubmission();
    const answer = await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), submission);
    expect(answer).toEqual({
      status: 200,
      body: {
        meta: { errors: [], warnings: [], infos: [] },
        data: {
          tripmsgs: { id: expect.stringMatching(/^tm_/) },
          sellerQuote: { id: expect.stringMatching(/^sq_/) },
          lift: { id: expect.stringMatching(/^lift_/) },
        },
      },
    });
    const { tripmsgs, sellerQuote, lift } = answer.body.data;
    const href = `${sim.apiBaseUrl}/tripmsgs/${tripmsgs.id}`;

    await sim.idle();
    expect(receiver.received).toEqual([{ id: tripmsgs.id, href, type: 'tripmsgs' }]);
    const own = await get(href, ACME.token);
    expect(own.body.data).toMatchObject({
      id: tripmsgs.id,
      type: 'tripmsgs',
      requestId: 'lift-42',
      sellerQuote,
      lift,
      actAsAccount: null,
      shownAs: ACME.name,
      ...submission,
    });
    expect((await get(href, GLOBEX.token)).status).toBe(404);
    expect(sim.report().quotes).toEqual([
      {
        companyId: ACME.id,
        requestId: 'lift-42',
        tripMessageId: tripmsgs.id,
        sellerQuoteId: sellerQuote.id,
        liftId: lift.id,
        actAsAccount: null,
        sellerUniqueQuoteIdentifier: submission.quote.sellerUniqueQuoteIdentifier,
        via: 'assumed_path',
      },
    ]);
  });

  it.each([
    ['type', { aircraftTail: '', aircraftType: 'Challenger 350', aircraftCategory: '' }],
    ['category', { aircraftTail: '', aircraftType: '', aircraftCategory: 'Super midsize jet' }],
  ])('accepts a floating-fleet quote on a %s, with TBD flags and fuel stops', async (_case, lift) => {
    const floating = requests.floatingFleetQuote(`q-${randomUUID()}`);
    const submission = { ...floating, quote: { ...floating.quote, lift } };
    const answer = await post(ACME.token, rfqActionPath('submitQuote', 'rfq-7'), submission);
    expect(answer.body.meta.errors).toEqual([]);
    const stored = await get(`${sim.apiBaseUrl}/tripmsgs/${answer.body.data.tripmsgs.id}`, ACME.token);
    expect(stored.body.data.quote).toEqual(submission.quote);
  });

  it.each(['a%2Fb', 'lift%201'])('refuses a requestId that is not one marketplace id (%s, decoded) with a soft error naming requestId', async (encoded) => {
    const answer = await post(ACME.token, `/tripmsgs/${encoded}/submitQuote`, quoteSubmission());
    expectSoftError(answer, 'requestId');
    expect(sim.report().quotes).toEqual([]);
  });

  it('accepts a totalPrice that differs from the line items (enforcing it is left to Skyhook)', async () => {
    const answer = await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), quoteSubmission({ quote: { totalPrice: 99 } }));
    expect(answer.body.meta.errors).toEqual([]);
  });

  it('records X-Service-ActAsAccount and shows that login instead of the company name', async () => {
    const answer = await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), quoteSubmission(), { [HEADERS.serviceActAsAccount]: 'jane.pilot' });
    const stored = await get(`${sim.apiBaseUrl}/tripmsgs/${answer.body.data.tripmsgs.id}`, ACME.token);
    expect(stored.body.data).toMatchObject({ actAsAccount: 'jane.pilot', shownAs: 'jane.pilot' });
    expect(sim.report().quotes[0]?.actAsAccount).toBe('jane.pilot');
  });

  it.each([
    ['a three-letter ICAO code', 'quote.segments.0.startAirport.icao', { segment: { startAirport: { icao: 'LFP' } } }],
    ['a lower-case ICAO code', 'quote.segments.0.endAirport.icao', { segment: { endAirport: { icao: 'eglf' } } }],
    ['a date not YYYY-MM-DD', 'quote.segments.0.dateTime.date', { dateTime: { date: '14/07/2025' } }],
    ['a date not in the calendar', 'quote.segments.0.dateTime.date', { dateTime: { date: '2025-02-30' } }],
    ['a time not HH:MM', 'quote.segments.0.dateTime.time', { dateTime: { time: '9:30' } }],
    ['a paxCount not numeric text', 'quote.segments.0.paxCount', { segment: { paxCount: 'four' } }],
    ['a formattedUnitPrice not numeric text', 'quote.lineItems.0.formattedUnitPrice', { lineItem: { formattedUnitPrice: '12,500' } }],
    ['a formattedQuantity not numeric text', 'quote.lineItems.0.formattedQuantity', { lineItem: { formattedQuantity: 'one' } }],
    ['a lower-case currency', 'quote.currencyCode', { quote: { currencyCode: 'eur' } }],
    ['negative minutes', 'quote.segments.0.blockTimeMinutes', { segment: { blockTimeMinutes: -5 } }],
    ['fractional minutes', 'quote.segments.0.flightMinutes', { segment: { flightMinutes: 55.5 } }],
    ['negative NM', 'quote.segments.0.distanceNM', { segment: { distanceNM: -1 } }],
    ['a negative count', 'quote.segments.0.fuelStopCount', { segment: { fuelStopCount: -1 } }],
    ['no tail, type or category', 'quote.lift', { quote: { lift: { aircraftTail: '', aircraftType: ' ', aircraftCategory: '' } } }],
  ])('refuses %s with a soft error naming %s, creating nothing', async (_case, field, parts) => {
    await subscribe(ACME.token, ['TripRequestSellerResponse']);
    expectSoftError(await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), quoteSubmission(parts)), field);
    await sim.idle();
    expect(receiver.received).toEqual([]);
    expect(sim.report()).toMatchObject({ quotes: [], resources: [], calls: { leads: 0, quotes: 1 } });
  });

  it('a repeated sellerUniqueQuoteIdentifier returns the same ids and fires nothing; another company gets new ids', async () => {
    await subscribe(ACME.token, ['TripRequestSellerResponse']);
    const submission = quoteSubmission();
    const first = await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), submission);
    const repeat = await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), { ...submission, message: 'Again.' });
    expect(repeat.body).toEqual(first.body);
    await sim.idle();
    expect(receiver.received).toHaveLength(1);

    const globex = await post(GLOBEX.token, rfqActionPath('submitQuote', 'lift-42'), submission);
    expect(globex.body.data.tripmsgs.id).not.toBe(first.body.data.tripmsgs.id);
    expect(sim.report().quotes.map(({ companyId }) => companyId)).toEqual([ACME.id, GLOBEX.id]);
  });
});

it('counts every POST on the lead and quote routes: repeats, soft errors and unknown tokens included', async () => {
  const lead = clientSearchLead();
  await post(ACME.token, LEADS_PATH, lead);
  await post(ACME.token, LEADS_PATH, lead);
  await post(ACME.token, LEADS_PATH, { clientIdentifier: 'x' });
  await post('no-such-token', LEADS_PATH, lead);
  const submission = quoteSubmission();
  await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), submission);
  await post(ACME.token, rfqActionPath('submitQuote', 'lift-42'), submission);
  await post(undefined, rfqActionPath('submitQuote', 'lift-42'), submission);
  const report = sim.report();
  expect(report.calls).toEqual({ leads: 4, quotes: 3, declines: 0, tokens: 0, settingsLists: 0 });
  expect([report.leads.length, report.quotes.length]).toEqual([1, 1]);
});

describe('declines and the RFQ action hrefs', () => {
  const decline = { message: 'No aircraft that day.', declineReason: 'AIRCRAFT_NOT_AVAILABLE', suppressNotification: false };
  /** Fires a new RFQ for ACME and answers its resource as a GET of its href shows it. */
  async function newRfq(): Promise<Json> {
    const [fired] = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', resourceId: `rfq-${randomUUID()}` });
    return (await get(fired!.notification.href, ACME.token)).body.data;
  }
  /** POSTs to an absolute href, as Skyhook does with an action href. */
  const postHref = (token: string, href: string, body: unknown) => post(token, href.slice(sim.apiBaseUrl.length), body);

  it("an RFQ carries submitQuote and decline hrefs for itself and each requested lift, on the simulator's API, none of them the assumed path", async () => {
    const rfq = await newRfq();
    const hrefs = [rfq.actions.submitQuote.href, rfq.actions.decline.href, ...rfq.sellerLift.flatMap((l: Json) => [l.actions.submitQuote.href, l.actions.decline.href])];
    expect(rfq.sellerLift).toHaveLength(2);
    expect(new Set(hrefs).size).toBe(6);
    for (const href of hrefs) {
      expect(href.startsWith(`${sim.apiBaseUrl}/rfqs/`)).toBe(true);
      expect(href).not.toContain('/tripmsgs/');
    }
  });

  it('takes a decline of one lift at its href and a quote on the RFQ at its href, recording how each came', async () => {
    const rfq = await newRfq();
    const lift = rfq.sellerLift[1];
    const declined = await postHref(ACME.token, lift.actions.decline.href, decline);
    expect(declined.body.meta.errors).toEqual([]);
    const quoted = await postHref(ACME.token, rfq.actions.submitQuote.href, quoteSubmission());
    expect(quoted.body.meta.errors).toEqual([]);
    const report = sim.report();
    expect(report.declines).toEqual([
      { companyId: ACME.id, requestId: lift.id, declineReason: 'AIRCRAFT_NOT_AVAILABLE', tripMessageId: declined.body.data.tripmsgs.id, actAsAccount: null, via: 'action_href' },
    ]);
    expect(report.quotes).toEqual([expect.objectContaining({ requestId: rfq.id, via: 'action_href' })]);
  });

  it("answers 404 at the action href of another company's RFQ, or of a lift the RFQ does not have, and records nothing", async () => {
    const rfq = await newRfq();
    expect((await postHref(GLOBEX.token, rfq.actions.decline.href, decline)).status).toBe(404);
    expect((await postHref(ACME.token, rfq.actions.decline.href.replace('/decline', '/lifts/lift_nope/decline'), decline)).status).toBe(404);
    expect(sim.report().declines).toEqual([]);
  });

  it.each([
    ['an unknown reason', 'declineReason', { ...decline, declineReason: 'TOO_FAR' }],
    ['no reason', 'declineReason', { message: 'no' }],
    ['a field the operation does not have', 'body', { ...decline, reason: 'OTHER' }],
    ['a suppressNotification that is not a boolean', 'suppressNotification', { ...decline, suppressNotification: 'no' }],
  ])('refuses %s with a soft error naming %s, declining nothing', async (_case, field, body) => {
    expectSoftError(await post(ACME.token, rfqActionPath('decline', 'lift-42'), body), field);
    expect(sim.report().declines).toEqual([]);
  });

  it('a repeat for the same lift answers the same trip message and notifies nothing; every call is counted, late answers held as for quotes', async () => {
    await subscribe(ACME.token, ['TripRequestSellerResponse']);
    const first = await post(ACME.token, rfqActionPath('decline', 'lift-42'), decline, { [HEADERS.serviceActAsAccount]: 'jane.pilot' });
    const repeat = await post(ACME.token, rfqActionPath('decline', 'lift-42'), { ...decline, declineReason: 'OTHER' });
    expect(repeat.body).toEqual(first.body);
    await sim.idle();
    expect(receiver.received).toHaveLength(1);
    const stored = await get(receiver.received[0]!.href, ACME.token);
    expect(stored.body.data).toMatchObject({ requestId: 'lift-42', declined: true, declineReason: 'AIRCRAFT_NOT_AVAILABLE', shownAs: 'jane.pilot' });

    sim.setFaults({ submitLatencyMs: 300 });
    const started = Date.now();
    await post(ACME.token, rfqActionPath('decline', 'lift-43'), decline);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(sim.report().calls.declines).toBe(3);
    expect(sim.report().declines.map((d) => d.requestId)).toEqual(['lift-42', 'lift-43']);
  });
});
