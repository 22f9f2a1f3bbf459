/**
 * The marketplace client's bounds, against a peer misbehaving in ways the simulator does not: an answer
 * that trickles in (each pause shorter than the timeout, the whole longer), a 503 with a body over the
 * 5 MB bound, error entries of odd shapes. A plain local HTTP server plays that peer; nothing in the client
 * is replaced. Refusals in the real marketplace's error shape come from the simulator itself.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { problemSchema } from '../../src/services/schemas.js';
import { Problem } from '../../src/lib/problem.js';
import { MAX_ANSWER_BYTES, MarketplaceClient, MarketplaceError, envelopeErrors, softErrors } from '../../src/marketplace/client.js';
import { pathSegment, readEnvelopeMessage, rfqActionPath, type WebhookSettingBody } from '../../src/marketplace/contract.js';
import { LEADS_PATH } from '../../src/marketplace/leads.js';
import { webhookSettingsApi } from '../../src/marketplace/webhook-settings.js';
import { marketplaceCall } from '../../src/services/marketplace-call.js';
import { startSimulator } from '../../src/simulator/index.js';
import { clientSearchLead } from '../fixtures/requests.js';

let server: Server | undefined;
afterEach(async () => {
  if (!server) return;
  server.closeAllConnections();
  await new Promise((r) => server!.close(r));
  server = undefined;
});

async function peer(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it('gives up on an answer that keeps trickling in past the timeout, as a timeout', async () => {
  const baseUrl = await peer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"data":"');
    const drip = setInterval(() => res.write('x'), 50);
    res.on('close', () => clearInterval(drip));
  });
  const client = new MarketplaceClient({ timeoutMs: 400 });
  const started = Date.now();
  const err = (await client.call({ baseUrl, profile: 'bearer', apiToken: 't' }, 'POST', '/leads', { body: {} }).catch((e: unknown) => e)) as MarketplaceError;
  expect(err.kind).toBe('timeout');
  expect(Date.now() - started).toBeLessThan(2000);
});

it('retries a 503 whose body is larger than the bound (the status decides, not the size)', async () => {
  let requests = 0;
  const big = Buffer.alloc(MAX_ANSWER_BYTES + 1024, 'x');
  const baseUrl = await peer((_req, res) => {
    requests++;
    if (requests < 3) {
      res.writeHead(503, { 'content-length': String(big.length) });
      res.end(big);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ meta: { errors: [] }, data: { ok: true } }));
  });
  const client = new MarketplaceClient({ timeoutMs: 2000, retryDelayMs: 10 });
  await expect(client.call({ baseUrl, profile: 'bearer', apiToken: 't' }, 'GET', '/thing')).resolves.toEqual({ ok: true });
  expect(requests).toBe(3);
});

it('tells a call the marketplace may have acted on from one it refused or never got', async () => {
  let answer: (res: ServerResponse) => void = () => {};
  const baseUrl = await peer((_req, res) => answer(res));
  const client = new MarketplaceClient({ timeoutMs: 300 });
  const post = async (url = baseUrl) => (await client.call({ baseUrl: url, profile: 'bearer', apiToken: 't' }, 'POST', '/quotes', { body: {} }).catch((e: unknown) => e)) as MarketplaceError;
  const json = (status: number, body: unknown) => (res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const cases: [string, (res: ServerResponse) => void, string, boolean][] = [
    ['a 500', json(500, {}), 'http', true],
    ['a 502', json(502, {}), 'http', true],
    ['a 503', json(503, {}), 'http', false],
    ['a 400', json(400, {}), 'http', false],
    ['a 429', json(429, {}), 'http', false],
    ['a soft error', json(200, { meta: { errors: [{ message: 'no' }] }, data: null }), 'soft', false],
    ['a 200 without JSON', (res) => res.end('<html>'), 'invalid_response', true],
    ['no answer in time', () => {}, 'timeout', true],
    ['a connection closed without an answer', (res) => res.socket?.destroy(), 'network', true],
  ];
  for (const [what, handler, kind, acted] of cases) {
    answer = handler;
    const err = await post();
    expect([what, err.kind, err.mayHaveActed]).toEqual([what, kind, acted]);
  }
  const refused = await post('http://127.0.0.1:9'); // nothing listens on port 9
  expect([refused.kind, refused.code, refused.mayHaveActed]).toEqual(['network', 'ECONNREFUSED', false]);
});

describe('error entries of any shape', () => {
  it.each([
    ['the seed shape', { code: 'E1', message: 'bad currency', field: 'leadCurrency' }, { message: 'bad currency', field: 'leadCurrency', code: 'E1' }],
    ["the real marketplace's shape", { title: 'Invalid currency', code: 'ERR_CURRENCY', path: 'leadCurrency' }, { message: 'Invalid currency', field: 'leadCurrency', code: 'ERR_CURRENCY' }],
    ['a title without a path', { title: 'Token expired', code: 'AUTH_1' }, { message: 'Token expired', code: 'AUTH_1' }],
    ['a numeric code', { code: 1001, message: 'm' }, { message: 'm', code: '1001' }],
    ['a string', 'plain words', { message: 'plain words' }],
    ['a number', 42, { message: '42' }],
    ['null', null, { message: 'null' }],
    ['a list', ['a', 1], { message: '["a",1]' }],
    ['an empty object', {}, { message: '{}' }],
    ['an object without message or title', { detail: 'why', status: 7 }, { message: '{"detail":"why","status":7}' }],
    ['blank and non-text properties', { message: ' ', title: 3, code: { a: 1 }, path: ['x'] }, { message: '{"message":" ","title":3,"code":{"a":1},"path":["x"]}' }],
  ])('reads %s', (_what, entry, read) => {
    expect(readEnvelopeMessage(entry)).toEqual(read);
  });

  it('cuts a long text and keeps only the first 50 entries, counting the rest', () => {
    expect(readEnvelopeMessage({ title: 'x'.repeat(10_000), code: 'C' }).message).toHaveLength(501);
    const many = envelopeErrors({ meta: { errors: Array.from({ length: 120 }, (_, i) => `e${i}`) } });
    expect(many).toHaveLength(51);
    expect(many.at(-1)).toEqual({ message: 'and 70 more errors' });
  });

  it('softErrors names field, text and code in either shape; a meta.errors that is not a list but holds something is an error', () => {
    const errors = [
      { title: 'Invalid currency', code: 'ERR_CURRENCY', path: 'leadCurrency' },
      { code: 'E2', message: 'too long', field: 'leadMessage' },
      'plain words',
    ];
    expect(softErrors({ meta: { errors }, data: null })).toBe('leadCurrency: Invalid currency (ERR_CURRENCY); leadMessage: too long (E2); plain words');
    expect(softErrors({ meta: { errors: 'token expired' } })).toBe('token expired');
    expect(softErrors({ meta: { errors: { title: 'Locked', code: 'L' } } })).toBe('Locked (L)');
    for (const none of [[], null, undefined, {}, '', 0, false]) expect(softErrors({ meta: { errors: none }, data: {} })).toBeNull();
  });

  it('turns any error entries, in a refusal or a soft error, into a 502 problem the admin API can send', async () => {
    let body: unknown;
    let status = 200;
    const baseUrl = await peer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    const client = new MarketplaceClient({ timeoutMs: 2000 });
    const odd: unknown[] = [['words', 7, null, true, {}, [1], { title: 'T', code: 'C', path: 'p' }, { message: { nested: true } }], 'one string', { title: 'T' }, 12];
    for (const errors of odd) {
      for (const s of [200, 400]) {
        body = { meta: { errors }, data: null };
        status = s;
        const problem = (await marketplaceCall(() => client.call({ baseUrl, profile: 'bearer', apiToken: 't' }, 'POST', LEADS_PATH, { body: {} })).catch((e: unknown) => e)) as Problem;
        expect(problem, JSON.stringify(errors)).toBeInstanceOf(Problem);
        expect(problem.status).toBe(502);
        const sent = problemSchema.safeParse(problem.body('/admin/x'));
        expect(sent.success, `${s} ${JSON.stringify(errors)}: ${JSON.stringify(sent.error?.issues)}`).toBe(true);
        expect(problem.extra.errors?.length).toBeGreaterThan(0);
      }
    }
  });

  it("names the codes, titles and paths of a refusal in the real marketplace's shape, from the simulator", async () => {
    const sim = await startSimulator({ companies: [{ id: 'acme', token: 'acme-token-0123456789' }], errorShape: 'titled' });
    try {
      const bad = { ...clientSearchLead('titled-lead'), leadCurrency: 'eur', leadLocale: 'eng' };
      const call = () => new MarketplaceClient({ timeoutMs: 2000 }).call({ baseUrl: sim.apiBaseUrl, profile: 'bearer', apiToken: 'acme-token-0123456789' }, 'POST', LEADS_PATH, { body: bad });
      const err = (await call().catch((e: unknown) => e)) as MarketplaceError;
      expect(err).toBeInstanceOf(MarketplaceError);
      expect(err.kind).toBe('soft');
      expect(err.errors).toEqual([
        { field: 'leadCurrency', message: 'must be a three-letter upper-case currency code', code: 'invalid_format' },
        { field: 'leadLocale', message: 'must be a two-letter language code', code: 'invalid_format' },
      ]);
      expect(err.message).toBe(
        'POST /leads was refused: leadCurrency: must be a three-letter upper-case currency code (invalid_format); leadLocale: must be a two-letter language code (invalid_format)',
      );
      const problem = (await marketplaceCall(call).catch((e: unknown) => e)) as Problem;
      expect(problemSchema.parse(problem.body('/admin/x'))).toMatchObject({
        status: 502,
        code: 'marketplace_soft',
        detail: expect.stringContaining('leadCurrency: must be a three-letter upper-case currency code (invalid_format)'),
        errors: [
          { field: 'leadCurrency', message: 'must be a three-letter upper-case currency code', code: 'invalid_format' },
          { field: 'leadLocale', message: 'must be a two-letter language code', code: 'invalid_format' },
        ],
      });
    } finally {
      await sim.stop();
    }
  });
});

describe('path segments built from input or from a marketplace answer', () => {
  it('are percent-encoded, so a value is one segment whatever it holds', () => {
    expect(pathSegment('lift-42', 'id')).toBe('lift-42');
    expect(pathSegment('a/b', 'id')).toBe('a%2Fb');
    expect(pathSegment('a b?c#d', 'id')).toBe('a%20b%3Fc%23d');
    expect(pathSegment('%2e%2e', 'id')).toBe('%252e%252e');
    expect(pathSegment('...', 'id')).toBe('...');
    expect(rfqActionPath('submitQuote', 'lift/1')).toBe('/tripmsgs/lift%2F1/submitQuote');
  });

  it.each(['', '.', '..'])('refuse %j, which URL parsing would drop or climb with: nothing is sent', (value) => {
    const err = (() => {
      try {
        return rfqActionPath('submitQuote', value);
      } catch (e) {
        return e;
      }
    })() as MarketplaceError;
    expect(err).toBeInstanceOf(MarketplaceError);
    expect([err.kind, err.mayHaveActed]).toEqual(['invalid_request', false]);
    expect(err.message).toBe(`requestId ${JSON.stringify(value)} cannot be a path segment; nothing was sent`);
  });

  it("refuse a webhook setting id from the marketplace that is a dot segment, instead of calling another path (simulator)", async () => {
    const token = 'acme-token-0123456789';
    const sim = await startSimulator({ companies: [{ id: 'acme', token }] });
    try {
      const conn = { baseUrl: sim.apiBaseUrl, profile: 'bearer' as const, apiToken: token };
      const api = webhookSettingsApi(new MarketplaceClient({ timeoutMs: 2000 }));
      const body: WebhookSettingBody = {
        targetURI: 'http://127.0.0.1:9/hooks/x',
        displayName: 'Skyhook',
        active: true,
        clientIdentifier: 'skh-path-test',
        clientSecret: 'a-client-secret-of-32-characters',
        clientAuthenticationType: 'BASIC',
        eventTypes: ['TripRequest'],
      };
      const created = await api.create(conn, body);
      const err = (await api.update(conn, '..', { ...body, active: false }, 'plural').catch((e: unknown) => e)) as MarketplaceError;
      expect([err.kind, err.message]).toEqual(['invalid_request', 'the webhook setting id ".." cannot be a path segment; nothing was sent']);
      const problem = (await marketplaceCall(() => api.update(conn, '.', body, 'plural')).catch((e: unknown) => e)) as Problem;
      expect(problemSchema.parse(problem.body('/admin/x'))).toMatchObject({ status: 502, code: 'marketplace_invalid_request' });
      const updated = await api.update(conn, created.id, { ...body, displayName: 'renamed' }, 'plural');
      expect(updated.setting).toMatchObject({ id: created.id, version: 2, displayName: 'renamed' });
    } finally {
      await sim.stop();
    }
  });
});
