/**
 * The marketplace client's bounds, against a peer misbehaving in ways the simulator does not: an answer
 * that trickles in (each pause shorter than the timeout, the whole longer), and a 503 with a body over the
 * 5 MB bound. A plain local HTTP server plays that peer; nothing in the client is replaced.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES, MarketplaceClient, type MarketplaceError } from '../../src/marketplace/client.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
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
  const err = (await client.call({ baseUrl, token: 't' }, 'POST', '/leads', { body: {} }).catch((e: unknown) => e)) as MarketplaceError;
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
  await expect(client.call({ baseUrl, token: 't' }, 'GET', '/thing')).resolves.toEqual({ ok: true });
  expect(requests).toBe(3);
});

it('tells a call the marketplace may have acted on from one it refused or never got', async () => {
  let answer: (res: ServerResponse) => void = () => {};
  const baseUrl = await peer((_req, res) => answer(res));
  const client = new MarketplaceClient({ timeoutMs: 300 });
  const post = async (url = baseUrl) => (await client.call({ baseUrl: url, token: 't' }, 'POST', '/quotes', { body: {} }).catch((e: unknown) => e)) as MarketplaceError;
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
