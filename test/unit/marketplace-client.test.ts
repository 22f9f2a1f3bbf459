/**
 * The marketplace client's bounds, against a peer misbehaving in ways the simulator does not: an answer
 * that trickles in (each pause shorter than the timeout, the whole longer), and a 503 with a body over the
 * 5 MB bound. A plain local HTTP server plays that peer; nothing in the client is replaced.
 */
import { createServer, type Server } from 'node:http';
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
