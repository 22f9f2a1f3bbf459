import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import Fastify from 'fastify';
import OAuth from 'oauth-1.0a';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authorizationHeader } from '../../src/marketplace/connection.js';
import { rfqActionPath, type EventType, type NotificationBody } from '../../src/marketplace/contract.js';
import { readOAuthHeader, verifyOAuthHeader } from '../../src/receiver/oauth1.js';
import { DeliveryQueue } from '../../src/simulator/delivery.js';
import { NO_FAULTS } from '../../src/simulator/faults.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { Ledger } from '../../src/simulator/ledger.js';
import { MarketplaceState } from '../../src/simulator/state.js';

const ACME = { id: 'acme', name: 'Acme Charter', token: 'acme-token-0123456789' };
const GLOBEX = { id: 'globex', token: 'globex-token-0123456789' };
const SECRET = 'a-client-secret-of-32-characters';
/** 48 h × 1e-5 = 1.7 s: retries take microseconds, a give-up under two seconds. */
const FAST = 1e-5;

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Received {
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: NotificationBody;
}

/** A subscriber endpoint that records every POST and answers what `answer` decides (200 by default). */
async function startReceiver() {
  // Forced, so closing does not wait for a request the simulator gave up on (reply timeout).
  const app = Fastify({ forceCloseConnections: true });
  const received: Received[] = [];
  let inFlight = 0;
  const receiver = {
    received,
    maxInFlight: 0,
    answer: (_request: Received, _index: number): number | Promise<number> => 200,
    url: '',
    close: () => app.close(),
  };
  // Keep the body as the exact bytes sent: the OAuth body hash is over them.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/hooks/:key', async (request, reply) => {
    const rawBody = request.body as string;
    const entry = { headers: request.headers, rawBody, body: JSON.parse(rawBody) as NotificationBody };
    received.push(entry);
    receiver.maxInFlight = Math.max(receiver.maxInFlight, ++inFlight);
    try {
      return await reply.code(await receiver.answer(entry, received.length - 1)).send({ ok: true });
    } finally {
      inFlight--;
    }
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  receiver.url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/hooks`;
  return receiver;
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

async function call(sim: Simulator, token: string | undefined, method: string, path: string, body?: unknown) {
  const response = await fetch(`${sim.apiBaseUrl}${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: authorizationHeader(token) }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

const settingBody = (targetURI: string, overrides: Record<string, unknown> = {}) => ({
  targetURI,
  displayName: 'Skyhook',
  active: true,
  clientIdentifier: `skyhook-${randomUUID()}`,
  clientSecret: SECRET,
  clientAuthenticationType: 'BASIC',
  eventTypes: ['TripRequest'],
  ...overrides,
});

async function createWebhook(sim: Simulator, token: string, body: Record<string, unknown>) {
  const answer = await call(sim, token, 'POST', '/webhooks/settings', body);
  expect(answer.body.meta.errors).toEqual([]);
  return answer.body.data as { id: string; version: number; clientIdentifier: string };
}

async function waitFor(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let sim: Simulator;
let receiver: Receiver;

async function setUp(options: SimulatorOptions = {}): Promise<void> {
  await sim?.stop();
  sim = await startSimulator({ companies: [ACME, GLOBEX], timeScale: FAST, replyTimeoutMs: 500, ...options });
}

beforeEach(async () => {
  receiver = await startReceiver();
  await setUp();
});

afterEach(async () => {
  await sim.stop();
  await receiver.close();
});

const fireOne = (eventType: EventType = 'TripRequest', companyId = ACME.id) => sim.fire({ companyId, eventType });

describe('webhook settings', () => {
  it('creates an active setting owned by the caller and never echoes the secret', async () => {
    const body = settingBody(`${receiver.url}/a`, { eventTypes: ['TripRequest', 'ClientLeads'] });
    const answer = await call(sim, ACME.token, 'POST', '/webhooks/settings', body);
    expect(answer.status).toBe(200);
    expect(answer.body.meta.errors).toEqual([]);
    const { clientSecret: _secret, ...withoutSecret } = body;
    expect(answer.body.data).toEqual({ ...withoutSecret, id: expect.stringMatching(/^wh_/), version: 1 });
    expect(JSON.stringify(answer.body)).not.toContain(SECRET);

    const acmeList = await call(sim, ACME.token, 'GET', '/webhooks/settings');
    const globexList = await call(sim, GLOBEX.token, 'GET', '/webhooks/settings');
    expect(acmeList.body.data.map((setting: { id: string }) => setting.id)).toEqual([answer.body.data.id]);
    expect(globexList.body.data).toEqual([]);
  });

  it('PUT deactivates (deliveries stop) and the singular path activates again (deliveries resume)', async () => {
    const body = settingBody(`${receiver.url}/a`);
    const { id } = await createWebhook(sim, ACME.token, body);

    const deactivated = await call(sim, ACME.token, 'PUT', `/webhooks/settings/${id}`, { ...body, active: false });
    expect(deactivated.body.data).toMatchObject({ id, active: false, version: 2 });
    await fireOne();
    await sim.idle();
    expect(receiver.received).toHaveLength(0);

    const activated = await call(sim, ACME.token, 'PUT', `/webhook/settings/${id}`, { ...body, active: true });
    expect(activated.body.data).toMatchObject({ id, active: true, version: 3 });
    const [emitted] = await fireOne();
    await sim.idle();
    expect(receiver.received.map((request) => request.body)).toEqual([emitted?.notification]);
  });

  it('PUT without clientSecret keeps the secret; with one it rotates it', async () => {
    const body = settingBody(`${receiver.url}/a`);
    const { id, clientIdentifier } = await createWebhook(sim, ACME.token, body);
    const { clientSecret: _secret, ...withoutSecret } = body;
    const basic = (secret: string) => `Basic ${Buffer.from(`${clientIdentifier}:${secret}`).toString('base64')}`;

    await call(sim, ACME.token, 'PUT', `/webhooks/settings/${id}`, { ...withoutSecret, displayName: 'renamed' });
    await fireOne();
    await sim.idle();
    const rotated = 'a-rotated-secret-of-32-characters';
    await call(sim, ACME.token, 'PUT', `/webhooks/settings/${id}`, { ...body, clientSecret: rotated });
    await fireOne();
    await sim.idle();

    expect(receiver.received.map((request) => request.headers.authorization)).toEqual([basic(SECRET), basic(rotated)]);
  });

  it('with the pluralPutMissing fault only the singular PUT path works', async () => {
    const body = settingBody(`${receiver.url}/a`);
    const { id } = await createWebhook(sim, ACME.token, body);
    sim.setFaults({ pluralPutMissing: true });

    const plural = await call(sim, ACME.token, 'PUT', `/webhooks/settings/${id}`, { ...body, active: false });
    expect(plural.status).toBe(404);
    expect(plural.body.meta.errors).toHaveLength(1);
    const singular = await call(sim, ACME.token, 'PUT', `/webhook/settings/${id}`, { ...body, active: false });
    expect(singular.status).toBe(200);
    expect(singular.body.data).toMatchObject({ active: false, version: 2 });
  });

  it.each([
    ['targetURI', { targetURI: 'not a url' }],
    ['targetURI', { targetURI: 'ftp://example.com/hook' }],
    ['clientSecret', { clientSecret: undefined }],
    ['clientSecret', { clientSecret: 'short' }],
    ['clientAuthenticationType', { clientAuthenticationType: 'DIGEST' }],
    ['eventTypes', { eventTypes: [] }],
    ['eventTypes.0', { eventTypes: ['NoSuchEvent'] }],
    ['active', { active: false }],
  ])('bad input is a soft error (HTTP 200, data null) naming %s', async (field, overrides) => {
    const answer = await call(sim, ACME.token, 'POST', '/webhooks/settings', settingBody(`${receiver.url}/a`, overrides));
    expect(answer.status).toBe(200);
    expect(answer.body.data).toBeNull();
    expect(answer.body.meta.errors).toEqual([expect.objectContaining({ field, code: expect.any(String), message: expect.any(String) })]);
    expect((await call(sim, ACME.token, 'GET', '/webhooks/settings')).body.data).toEqual([]);
  });

  it('a clientIdentifier is unique across companies, on create and on update', async () => {
    const first = settingBody(`${receiver.url}/a`);
    await createWebhook(sim, ACME.token, first);
    const clash = await call(sim, GLOBEX.token, 'POST', '/webhooks/settings', settingBody(`${receiver.url}/b`, {
      clientIdentifier: first.clientIdentifier,
    }));
    expect(clash.body.data).toBeNull();
    expect(clash.body.meta.errors).toEqual([expect.objectContaining({ field: 'clientIdentifier' })]);

    const second = settingBody(`${receiver.url}/b`);
    const { id } = await createWebhook(sim, GLOBEX.token, second);
    const update = await call(sim, GLOBEX.token, 'PUT', `/webhooks/settings/${id}`, {
      ...second,
      clientIdentifier: first.clientIdentifier,
    });
    expect(update.body.meta.errors).toEqual([expect.objectContaining({ field: 'clientIdentifier' })]);
  });

  it("another company's setting and an unknown id answer 404", async () => {
    const body = settingBody(`${receiver.url}/a`);
    const { id } = await createWebhook(sim, ACME.token, body);
    const foreign = await call(sim, GLOBEX.token, 'PUT', `/webhooks/settings/${id}`, { ...body, active: false });
    const unknown = await call(sim, ACME.token, 'PUT', '/webhook/settings/wh_nope', body);
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(foreign.body).toEqual(unknown.body);
    expect((await call(sim, ACME.token, 'GET', '/webhooks/settings')).body.data[0]).toMatchObject({ active: true, version: 1 });
  });
});

describe('tokens and resources', () => {
  it('answers 401 in the envelope for a missing or unknown token', async () => {
    for (const token of [undefined, 'no-such-token']) {
      const answer = await call(sim, token, 'GET', '/webhooks/settings');
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ data: null, meta: { errors: [expect.objectContaining({ code: 'unauthorized' })] } });
    }
  });

  it("serves a resource to its owner only: another company's token gets the same 404 as a missing one", async () => {
    const [emitted] = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', resourceId: 'rfq-1' });
    const href = emitted?.notification.href ?? '';
    expect(href).toBe(`${sim.apiBaseUrl}/rfqs/rfq-1`);
    const get = async (token: string, url = href) => {
      const response = await fetch(url, { headers: { authorization: authorizationHeader(token) } });
      return { status: response.status, body: await response.json() };
    };

    const own = await get(ACME.token);
    expect(own).toEqual({
      status: 200,
      body: {
        meta: { errors: [], warnings: [], infos: [] },
        data: expect.objectContaining({ id: 'rfq-1', type: 'rfqs', version: 1, updatedAt: expect.any(String) }),
      },
    });
    const foreign = await get(GLOBEX.token);
    const missing = await get(GLOBEX.token, `${sim.apiBaseUrl}/rfqs/rfq-unknown`);
    expect(foreign).toEqual({ status: 404, body: missing.body });
    expect(missing.status).toBe(404);
    await get('stolen-token');

    expect(sim.report().fetches.map(({ at: _at, startedAt: _startedAt, ...fetch }) => fetch)).toEqual([
      { href, ownerCompanyId: 'acme', tokenCompanyId: 'acme', status: 200 },
      { href, ownerCompanyId: 'acme', tokenCompanyId: 'globex', status: 404 },
      { href: `${sim.apiBaseUrl}/rfqs/rfq-unknown`, ownerCompanyId: null, tokenCompanyId: 'globex', status: 404 },
      { href, ownerCompanyId: 'acme', tokenCompanyId: null, status: 401 },
    ]);
  });
});

describe('fire', () => {
  it('spreads a burst round-robin over new resources, bumping their versions', async () => {
    const emitted = await sim.fire({ companyId: ACME.id, eventType: 'TripChatFromBuyer', count: 7, resources: 3, extra: { chat: 'hi' } });
    const hrefs = emitted.map(({ notification }) => notification.href);
    expect(new Set(hrefs).size).toBe(3);
    expect(hrefs.slice(3, 6)).toEqual(hrefs.slice(0, 3));
    expect(emitted[0]?.notification).toEqual({
      id: expect.any(String),
      href: `${sim.apiBaseUrl}/tripmsgs/${emitted[0]?.notification.id}`,
      type: 'tripmsgs',
      chat: 'hi',
    });
    const versions = sim.report().resources.map((resource) => [resource.href, resource.version]);
    expect(versions).toEqual([
      [hrefs[0], 3],
      [hrefs[1], 2],
      [hrefs[2], 2],
    ]);
    expect(sim.report().perCompany).toEqual({ acme: { fired: 7, delivered: 0 }, globex: { fired: 0, delivered: 0 } });
  });

  it('delivers only to active webhooks of that company subscribed to that event type', async () => {
    const trips = await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/trips`));
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/leads`, { eventTypes: ['ClientLeads'] }));
    await createWebhook(sim, GLOBEX.token, settingBody(`${receiver.url}/globex`));

    const [emitted] = await fireOne('TripRequest', ACME.id);
    await sim.idle();
    expect(emitted?.webhookIds).toEqual([trips.id]);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]?.headers['content-type']).toBe('application/json');
    expect(receiver.received[0]?.rawBody).toBe(JSON.stringify(emitted?.notification));
    expect(sim.report().perCompany.acme).toEqual({ fired: 1, delivered: 1 });
  });

  it('refuses an unknown company or event type with 400 and a clear message', async () => {
    const post = async (body: unknown) => {
      const response = await fetch(`${sim.url}/_sim/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { error: string } };
    };
    const unknownCompany = await post({ companyId: 'initech', eventType: 'TripRequest' });
    expect(unknownCompany).toEqual({ status: 400, body: { error: 'companyId: unknown company "initech"' } });
    const unknownEvent = await post({ companyId: ACME.id, eventType: 'TripExploded' });
    expect(unknownEvent.status).toBe(400);
    expect(unknownEvent.body.error).toMatch(/^eventType: /);
    await expect(sim.fire({ companyId: 'initech', eventType: 'TripRequest' })).rejects.toThrow('unknown company');
  });
});

describe('delivery', () => {
  it('signs BASIC deliveries with base64(clientIdentifier:clientSecret)', async () => {
    const { clientIdentifier } = await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    await fireOne();
    await sim.idle();
    const expected = `Basic ${Buffer.from(`${clientIdentifier}:${SECRET}`).toString('base64')}`;
    expect(receiver.received[0]?.headers.authorization).toBe(expected);
  });

  it('signs OAUTH deliveries with a verifiable HMAC-SHA1 signature and body hash, afresh on each attempt', async () => {
    const targetURI = `${receiver.url}/oauth`;
    const { clientIdentifier } = await createWebhook(sim, ACME.token, settingBody(targetURI, { clientAuthenticationType: 'OAUTH' }));
    receiver.answer = (_request, index) => (index === 0 ? 503 : 200);
    await fireOne();
    await sim.idle();
    expect(receiver.received).toHaveLength(2);

    const verifier = new OAuth({
      consumer: { key: clientIdentifier, secret: SECRET },
      signature_method: 'HMAC-SHA1',
      hash_function: (base, key) => createHmac('sha1', key).update(base).digest('base64'),
    });
    const nonces = receiver.received.map(({ headers, rawBody }) => {
      const params = parseOAuthHeader(headers.authorization ?? '');
      expect(params).toMatchObject({ oauth_consumer_key: clientIdentifier, oauth_signature_method: 'HMAC-SHA1', oauth_version: '1.0' });
      expect(params.oauth_token).toBeUndefined();
      expect(params.oauth_body_hash).toBe(createHash('sha1').update(rawBody).digest('base64'));
      const { oauth_signature: signature, ...signed } = params;
      const data = { ...signed, oauth_timestamp: Number(signed.oauth_timestamp) } as OAuth.Data;
      expect(signature).toBe(verifier.getSignature({ url: targetURI, method: 'POST' }, undefined, data));
      // The same by hand (RFC 5849 §3.4): the body is covered only through oauth_body_hash.
      const parameters = Object.entries(signed).map(([key, value]) => `${rfc3986(key)}=${rfc3986(value)}`).sort().join('&');
      const baseString = ['POST', rfc3986(targetURI), rfc3986(parameters)].join('&');
      expect(signature).toBe(createHmac('sha1', `${rfc3986(SECRET)}&`).update(baseString).digest('base64'));
      return params.oauth_nonce;
    });
    expect(new Set(nonces).size).toBe(2);
  });

  it('retries anything but 200 with backoff until a 200', async () => {
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    const answers = [500, 429, 201, 200];
    receiver.answer = (_request, index) => answers[index] ?? 200;
    await fireOne();
    await sim.idle();
    expect(receiver.received).toHaveLength(4);
    const report = sim.report();
    expect(report).toMatchObject({ delivered: 1, retried: 3, gaveUp: 0, pending: 0 });
    expect(report.notifications).toEqual([expect.objectContaining({ attempts: 4, status: 'delivered', lastError: 'answered HTTP 201' })]);
  });

  it('counts a reply slower than replyTimeoutMs as undelivered', async () => {
    await setUp({ replyTimeoutMs: 100 });
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    receiver.answer = async (_request, index) => {
      if (index === 0) await new Promise((resolve) => setTimeout(resolve, 400));
      return 200;
    };
    await fireOne();
    await sim.idle();
    expect(sim.report().notifications).toEqual([
      expect.objectContaining({ attempts: 2, status: 'delivered', lastError: 'no reply within 100 ms' }),
    ]);
  });

  it('gives up 48 h (scaled) after the first attempt', async () => {
    await setUp({ timeScale: 2e-6 }); // 48 h → 346 ms
    const closed = await startReceiver();
    await closed.close(); // a refused connection is a network error, retried like any failure
    await createWebhook(sim, ACME.token, settingBody(`${closed.url}/gone`));
    const started = Date.now();
    await fireOne();
    await sim.idle();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThan(250);
    expect(elapsed).toBeLessThan(2_000);
    const report = sim.report();
    expect(report).toMatchObject({ delivered: 0, gaveUp: 1, pending: 0 });
    expect(report.notifications[0]).toMatchObject({ status: 'gave_up', lastError: expect.stringContaining('ECONNREFUSED') });
    expect(report.notifications[0]?.attempts).toBeGreaterThan(5);
  });

  it('drops a pending notification at once when its webhook is deactivated', async () => {
    await setUp({ timeScale: 1 }); // real time: the retry would come 0.5 to 1 s after the first failure
    const body = settingBody(`${receiver.url}/a`);
    const { id } = await createWebhook(sim, ACME.token, body);
    receiver.answer = () => 500;
    await fireOne();
    await waitFor(() => sim.report().notifications[0]?.lastError !== undefined);
    const deactivatedAt = Date.now();
    await call(sim, ACME.token, 'PUT', `/webhooks/settings/${id}`, { ...body, active: false });
    await sim.idle();
    expect(Date.now() - deactivatedAt).toBeLessThan(400);
    expect(sim.report()).toMatchObject({ dropped: 1, gaveUp: 0, delivered: 0, pending: 0 });
    expect(sim.report().notifications[0]).toMatchObject({ status: 'dropped', attempts: 1 });
    expect(receiver.received).toHaveLength(1);
  });

  it('the duplicate fault sends a consumed notification once more, freshly signed, and counts it', async () => {
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`, { clientAuthenticationType: 'OAUTH' }));
    sim.setFaults({ duplicateRate: 1 });
    await fireOne();
    await sim.idle();
    const [first, second] = receiver.received;
    expect(receiver.received).toHaveLength(2);
    expect(second?.rawBody).toBe(first?.rawBody);
    expect(second?.headers.authorization).not.toBe(first?.headers.authorization);
    expect(sim.report()).toMatchObject({ delivered: 1, duplicatesSent: 1, retried: 0 });
  });

  it('the lost-ack fault retries a notification the receiver answered with 200', async () => {
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    sim.setFaults({ lostAckRate: 1 });
    receiver.answer = (_request, index) => {
      if (index === 1) sim.setFaults({ lostAckRate: 0 }); // only the first acknowledgement is lost
      return 200;
    };
    await fireOne();
    await sim.idle();
    expect(receiver.received).toHaveLength(2);
    expect(sim.report()).toMatchObject({ delivered: 1, lostAcks: 1, retried: 1 });
  });

  it('delivers in parallel, but never more than deliveryConcurrency at once', async () => {
    await setUp({ deliveryConcurrency: 3 });
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    receiver.answer = async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return 200;
    };
    await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', count: 12 });
    await sim.idle();
    expect(receiver.received).toHaveLength(12);
    expect(receiver.maxInFlight).toBe(3);
  });

  it('adds deliveryLatencyMs before each delivery', async () => {
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    sim.setFaults({ deliveryLatencyMs: 150 });
    const started = Date.now();
    await fireOne();
    await sim.idle();
    expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    expect(receiver.received).toHaveLength(1);
  });
});

describe('resource faults and scripted answers', () => {
  const get = async (href: string, token = ACME.token) => {
    const response = await fetch(href, { headers: { authorization: authorizationHeader(token) } });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Json };
  };

  it('serves scripted answers in order, then the real resource', async () => {
    const [emitted] = await fireOne();
    const href = emitted?.notification.href ?? '';
    const softError = { meta: { errors: [{ code: 'oops', message: 'soft' }], warnings: [], infos: [] }, data: null };
    const program = await fetch(`${sim.url}/_sim/resources/program`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        href,
        responses: [{ status: 401 }, { status: 429, headers: { 'retry-after': '7' } }, { status: 200, body: softError }],
      }),
    });
    expect(program.status).toBe(204);
    sim.programResource({ href, responses: [{ status: 410 }] });

    const answers = [await get(href), await get(href), await get(href), await get(href), await get(href)];
    expect(answers.map(({ status }) => status)).toEqual([401, 429, 200, 410, 200]);
    expect(answers[0]?.body).toMatchObject({ data: null, meta: { errors: [{ code: 'http_401' }] } });
    expect(answers[1]?.retryAfter).toBe('7');
    expect(answers[2]?.body).toEqual(softError);
    expect(answers[4]?.body.data).toMatchObject({ id: emitted?.notification.id, version: 1 });
  });

  it('answers about resource5xxRate of GETs with 503 and resource429Rate with 429 and Retry-After: 1', async () => {
    const [emitted] = await fireOne();
    const href = emitted?.notification.href ?? '';
    sim.setFaults({ resource5xxRate: 0.5 });
    const statuses = await Promise.all(Array.from({ length: 200 }, async () => (await get(href)).status));
    const unavailable = statuses.filter((status) => status === 503).length;
    expect(unavailable).toBeGreaterThan(50);
    expect(unavailable).toBeLessThan(150);
    expect(statuses.filter((status) => status !== 503).every((status) => status === 200)).toBe(true);

    sim.setFaults({ resource5xxRate: 0, resource429Rate: 1 });
    expect(await get(href)).toMatchObject({ status: 429, retryAfter: '1' });
    sim.setFaults({ resource429Rate: 0 });
    expect((await get(href)).status).toBe(200);
  });

  it('adds resourceLatencyMs before each resource answer', async () => {
    const [emitted] = await fireOne();
    sim.setFaults({ resourceLatencyMs: 150 });
    const started = Date.now();
    expect((await get(emitted?.notification.href ?? '')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    const [fetch] = sim.report().fetches;
    expect(Date.parse(fetch?.at ?? '') - Date.parse(fetch?.startedAt ?? '')).toBeGreaterThanOrEqual(145);
  });
});

describe('error entry shape', () => {
  /** A refusal of each kind the simulator makes: a soft error naming fields, a 401, a 404 and Fastify's own 400. */
  const refusals = async () => {
    const soft = await call(sim, ACME.token, 'POST', '/webhooks/settings', settingBody('ftp://example.test/hooks', { active: false }));
    const unauthorized = await call(sim, 'no-such-token', 'GET', '/webhooks/settings');
    const missing = await call(sim, ACME.token, 'GET', '/no/such/route/here');
    const malformed = await fetch(`${sim.apiBaseUrl}/leads`, {
      method: 'POST',
      headers: { authorization: authorizationHeader(ACME.token), 'content-type': 'application/json' },
      body: '{"clientIdentifier":',
    });
    return { soft, unauthorized, missing, malformed: { status: malformed.status, body: (await malformed.json()) as Json } };
  };

  it('is the seed shape {code, message, field} unless asked', async () => {
    const { soft, unauthorized } = await refusals();
    expect(soft.body.meta.errors).toContainEqual({ code: 'invalid_url', message: 'targetURI must be an http or https URL', field: 'targetURI' });
    expect(unauthorized.body.meta.errors).toEqual([{ code: 'unauthorized', message: 'missing or unknown API token' }]);
  });

  it("is the real marketplace's {title, code, path} with errorShape titled, in every refusal; a scripted body is sent as given", async () => {
    await setUp({ errorShape: 'titled' });
    const { soft, unauthorized, missing, malformed } = await refusals();
    expect(soft.status).toBe(200);
    expect(soft.body.meta.errors).toEqual([
      { title: 'targetURI must be an http or https URL', code: 'invalid_url', path: 'targetURI' },
      { title: 'a new webhook setting is active; deactivate it with PUT', code: 'invalid_state', path: 'active' },
    ]);
    expect(unauthorized).toMatchObject({ status: 401, body: { data: null, meta: { errors: [{ title: 'missing or unknown API token', code: 'unauthorized' }] } } });
    expect(missing).toMatchObject({ status: 404, body: { meta: { errors: [{ title: 'route not found', code: 'not_found' }] } } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.meta.errors).toEqual([{ title: expect.any(String), code: 'FST_ERR_CTP_INVALID_JSON_BODY' }]);
    for (const answer of [soft, unauthorized, missing, malformed]) {
      for (const entry of answer.body.meta.errors) expect(entry).not.toHaveProperty('message');
    }

    const [emitted] = await fireOne();
    const href = emitted?.notification.href ?? '';
    const scripted = { meta: { errors: [{ code: 'E42', message: 'as scripted' }], warnings: [], infos: [] }, data: null };
    sim.programResource({ href, responses: [{ status: 200, body: scripted }] });
    const answer = await fetch(href, { headers: { authorization: authorizationHeader(ACME.token) } });
    expect(answer.headers.get('content-type')).toContain('application/json');
    expect(await answer.json()).toEqual(scripted);
  });

  it('refuses an unknown shape before listening', async () => {
    await expect(startSimulator({ errorShape: 'xml' as never })).rejects.toThrow(/errorShape/);
  });
});

describe('control routes and report', () => {
  const control = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${sim.url}/_sim${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };

  it('adds companies whose tokens then work, and refuses a token another company holds', async () => {
    expect(await control('POST', '/companies', { id: 'initech', token: 'initech-token' })).toEqual({
      status: 201,
      body: { id: 'initech', name: 'initech' },
    });
    expect((await call(sim, 'initech-token', 'GET', '/webhooks/settings')).status).toBe(200);
    const clash = await control('POST', '/companies', { id: 'hooli', token: ACME.token });
    expect(clash.status).toBe(400);
    expect(clash.body.error).toContain('acme');
  });

  it('sets faults partially and refuses unknown or out-of-range knobs', async () => {
    const set = await control('PUT', '/faults', { duplicateRate: 0.25 });
    expect(set.body).toMatchObject({ duplicateRate: 0.25, lostAckRate: 0, pluralPutMissing: false });
    expect((await control('PUT', '/faults', { duplicateRat: 1 })).status).toBe(400);
    const outOfRange = await control('PUT', '/faults', { lostAckRate: 2 });
    expect(outOfRange.status).toBe(400);
    expect(outOfRange.body.error).toMatch(/^lostAckRate: /);
  });

  it('keeps only the newest historyLimit entries in the report', async () => {
    await setUp({ historyLimit: 3 });
    await createWebhook(sim, ACME.token, settingBody(`${receiver.url}/a`));
    const emitted = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', count: 5 });
    await sim.idle();
    const report = (await (await fetch(`${sim.url}/_sim/report`)).json()) as ReturnType<Simulator['report']>;
    expect(report.delivered).toBe(5);
    const newest = emitted.slice(2).map(({ notification }) => notification.id);
    expect(report.notifications.map((record) => record.id)).toEqual(newest);
    expect(report.resources.map((resource) => resource.id)).toEqual(newest);
  });
});

function parseOAuthHeader(header: string): Record<string, string> {
  expect(header.startsWith('OAuth ')).toBe(true);
  const pairs = [...header.slice('OAuth '.length).matchAll(/([\w]+)="([^"]*)"/g)];
  return Object.fromEntries(pairs.map(([, key = '', value = '']) => [key, decodeURIComponent(value)]));
}

/** RFC 3986 percent-encoding, as OAuth 1.0a requires. */
function rfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

describe('review fixes', () => {
  it('signs an OAUTH delivery to a non-canonical targetURI over the normalised URL the receiver verifies', async () => {
    // Upper-case scheme (RFC 5849 §3.4.1.2 lower-cases it) and a query, whose pairs are signed parameters.
    const targetURI = `${receiver.url.replace(/^http:/, 'HTTP:')}/oauth?b=2&a=x%20y`;
    const { clientIdentifier } = await createWebhook(sim, ACME.token, settingBody(targetURI, { clientAuthenticationType: 'OAUTH' }));
    await fireOne();
    await sim.idle();
    expect(receiver.received).toHaveLength(1);
    const parsed = readOAuthHeader(receiver.received[0]?.headers.authorization ?? '');
    expect(parsed?.clientIdentifier).toBe(clientIdentifier);
    const check = verifyOAuthHeader(parsed!, { method: 'POST', url: new URL(targetURI) }, [SECRET], {
      nowSeconds: Math.floor(Date.now() / 1000),
      skewSeconds: 300,
    });
    expect(check).toMatchObject({ ok: true, clientIdentifier });
  });

  it('keeps every resource servable once historyLimit is reached: only the report is trimmed', async () => {
    await setUp({ historyLimit: 3 });
    const [first] = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', resourceId: 'rfq-old' });
    const later = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', count: 4 });
    await sim.fire({ companyId: ACME.id, eventType: 'TripRequest', resourceId: 'rfq-old' });
    const hrefs = [first, ...later].map((emitted) => emitted?.notification.href ?? '');
    for (const href of hrefs) {
      const response = await fetch(href, { headers: { authorization: authorizationHeader(ACME.token) } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const old = await call(sim, ACME.token, 'GET', '/rfqs/rfq-old');
    expect(old.body.data).toMatchObject({ id: 'rfq-old', version: 2 });
    expect(sim.report().resources).toHaveLength(3);
  });

  it('accepts a quote as large as the shared schema allows an attachment to be (over Fastify\'s 1 MiB default)', async () => {
    const quote = {
      segments: [
        {
          startAirport: { icao: 'LSGG' },
          endAirport: { icao: 'EGLF' },
          dateTime: { date: '2030-05-01', time: '09:30', departure: true, local: true },
          paxCount: '4',
        },
      ],
      lift: { aircraftTail: 'HB-VNA' },
      currencyCode: 'EUR',
      sellerUniqueQuoteIdentifier: `big-${randomUUID()}`,
      totalPrice: 100,
      lineItems: [{ price: 100, formattedUnitPrice: '100', formattedQuantity: '1' }],
      // The schema's maximum for one attachment's data: 10 MiB.
      attachments: [{ mimeType: 'application/pdf', name: 'big.pdf', data: 'A'.repeat(10 * 1024 * 1024) }],
    };
    const answer = await call(sim, ACME.token, 'POST', rfqActionPath('submitQuote', 'rfq-big'), { quote });
    expect(answer.status).toBe(200);
    expect(answer.body.meta.errors).toEqual([]);
    expect(answer.body.data.tripmsgs.id).toMatch(/^tm_/);
  });

  it('retries up to the end of the 48 h window, with a last attempt at 48 h, then gives up', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const attemptTimes: number[] = [];
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => {
        attemptTimes.push(Date.now());
        throw new TypeError('fetch failed');
      }),
    );
    try {
      const state = new MarketplaceState({ ...NO_FAULTS });
      state.addWebhook({
        ...settingBody('http://127.0.0.1:9/hooks/a'),
        clientAuthenticationType: 'BASIC',
        eventTypes: ['TripRequest'],
        id: 'wh_1',
        version: 1,
        companyId: ACME.id,
      });
      const ledger = new Ledger(10);
      const queue = new DeliveryQueue(state, ledger, { timeScale: 1, replyTimeoutMs: 1_000, deliveryConcurrency: 1 });
      queue.enqueue('wh_1', ACME.id, { id: 'rfq-1', href: 'http://127.0.0.1:9/api/rfqs/rfq-1', type: 'rfqs' });
      await vi.advanceTimersByTimeAsync(49 * 3_600_000);
      expect(ledger.report(queue.pendingCount, [], [])).toMatchObject({ gaveUp: 1, pending: 0 });
      const first = attemptTimes[0] ?? 0;
      expect(attemptTimes.at(-1)! - first).toBe(48 * 3_600_000);
      expect(attemptTimes.every((at) => at - first <= 48 * 3_600_000)).toBe(true);
    } finally {
      vi.unstubAllGlobals();
      vi.useRealTimers();
    }
  });

  it('refuses a bad publicUrl before listening, so no server is left on the port', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    await expect(startSimulator({ port, publicUrl: 'not a url' })).rejects.toThrow(/^publicUrl: /);
    await expect(startSimulator({ port, publicUrl: 'ftp://example.com' })).rejects.toThrow(/^publicUrl: /);
    const again = await startSimulator({ port, publicUrl: 'http://simulator:4010/ignored/path' });
    expect(again.url).toBe('http://simulator:4010');
    await again.stop();
  });
});
