/**
 * The edges of HTTP (SPEC §4): a sender that trickles its request is cut off after REQUEST_TIMEOUT_MS
 * with a problem, a client that disconnects mid-body is logged as such (not as a database outage), a
 * request that arrives on a kept-alive connection during shutdown is served the Skyhook way, and the
 * /metrics gauges that need a query are read at most every few seconds.
 */
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, notificationBody, seedCompany, seedWebhook, type SeededCompany, type SeededWebhook } from '../helpers/fixtures.js';
import { eventually, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const REQUEST_TIMEOUT_MS = 1500;
let db: TestDatabase;
let skyhook: TestSkyhook;
let company: SeededCompany;
let webhook: SeededWebhook;
const logLines: { level: number; msg: string; kind?: string; code?: string }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'api', env: { REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) }, log: pino({ level: 'debug' }, capture) });
  const fx = connectFixtures(db.url);
  company = await seedCompany(fx.db, skyhook.config.secretKey, { apiBaseUrl: 'http://127.0.0.1:4010/api' });
  webhook = await seedWebhook(fx.db, skyhook.config.secretKey, { companyId: company.id, authType: 'BASIC', publicBaseUrl: skyhook.url });
  await fx.pool.end();
});

afterAll(async () => {
  await skyhook?.stop();
  await db?.drop();
});

const rows = async () => {
  const fx = connectFixtures(db.url);
  try {
    return (await fx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM notifications')).rows[0]!.n;
  } finally {
    await fx.pool.end();
  }
};

/** A raw connection to Skyhook, keeping everything it was sent, and when it closed. */
function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const { port } = new URL(skyhook.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const openedAt = Date.now();
    const closed = new Promise<number>((done) => socket.on('close', () => done(Date.now() - openedAt)));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => socket.destroy());
    socket.on('connect', () => resolve({ socket, received: () => Buffer.concat(chunks).toString('utf8'), closed }));
    socket.on('error', reject);
  });
}

const head = (length: number, extra = '') =>
  `POST ${webhook.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuthorization(webhook.clientIdentifier, webhook.secret)}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('REQUEST_TIMEOUT_MS', () => {
  it('ends an authenticated request whose body trickles in with a 408 problem, and stores nothing', async () => {
    const before = await rows();
    const body = JSON.stringify(notificationBody(company.apiBaseUrl));
    const conn = await open();
    conn.socket.write(head(body.length) + body.slice(0, 5));
    let sent = 5;
    const trickle = setInterval(() => sent < body.length - 1 && conn.socket.write(body[sent++]!), 200);
    const closedAfter = await conn.closed;
    clearInterval(trickle);
    expect(closedAfter, 'closed once REQUEST_TIMEOUT_MS had passed (checked every second)').toBeLessThan(REQUEST_TIMEOUT_MS + 2500);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(conn.received()).toMatch(/Content-Type: application\/problem\+json/);
    expect(await rows()).toBe(before);
  });

  it('closes a connection that never sends a request', async () => {
    const conn = await open();
    expect(await conn.closed).toBeLessThan(REQUEST_TIMEOUT_MS + 2500);
  });

  it('ends an unauthenticated sender trickling a body too, after its 401', async () => {
    const conn = await open();
    conn.socket.write(`POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
    const trickle = setInterval(() => conn.socket.write(' '), 200);
    const closedAfter = await conn.closed;
    clearInterval(trickle);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(closedAfter).toBeLessThan(REQUEST_TIMEOUT_MS + 2500);
  });
});

describe('a client that disconnects mid-body', () => {
  it('is logged as a disconnected client, never as the database being unavailable', async () => {
    const before = await rows();
    const conn = await open();
    conn.socket.write(head(500) + '{"id":"half');
    await new Promise((r) => setTimeout(r, 100));
    conn.socket.destroy();
    await eventually(async () => logLines.some((l) => l.kind === 'client_disconnected'), 'the disconnect logged');
    expect(logLines.find((l) => l.kind === 'client_disconnected')!.msg).toMatch(/client disconnected before its request had arrived/);
    expect(logLines.filter((l) => /database is unavailable/i.test(l.msg))).toEqual([]);
    expect(await rows()).toBe(before);
  });
});

describe('/metrics', () => {
  it('reads the backlog gauge at most every 5 s, however often it is scraped', async () => {
    const gauge = (text: string) => new RegExp(`skyhook_oldest_pending_age_seconds\\{company="${company.id}"\\} (\\d+)`).exec(text)?.[1];
    // Nothing pending: the company has no backlog series.
    expect(gauge(await (await fetch(`${skyhook.url}/metrics`)).text())).toBeUndefined();
    // A pending notification 100 s old: a scrape right after still shows the gauges as read before.
    const fx = connectFixtures(db.url);
    await fx.pool.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, received_at)
       VALUES ($1, $2, 'm', 'rfqs', 'http://127.0.0.1:4010/api/rfqs/m', '{}', 'basic', 'received', now() - interval '100 seconds')`,
      [company.id, webhook.id],
    );
    await fx.pool.end();
    expect(gauge(await (await fetch(`${skyhook.url}/metrics`)).text())).toBeUndefined();
    await eventually(async () => Number(gauge(await (await fetch(`${skyhook.url}/metrics`)).text())) >= 100, 'the gauge read again', 8000);
  });
});

describe('shutdown', () => {
  it('serves a request that arrives on a kept-alive connection while the server closes, then closes the connection', async () => {
    const before = await rows();
    const first = JSON.stringify(notificationBody(company.apiBaseUrl));
    const second = JSON.stringify(notificationBody(company.apiBaseUrl));
    const conn = await open();
    // The first request is in flight (its body still arriving) when the server starts closing...
    conn.socket.write(head(first.length) + first.slice(0, 10));
    await new Promise((r) => setTimeout(r, 100));
    const closing = skyhook.runtime.app!.close();
    await new Promise((r) => setTimeout(r, 100));
    // ...and the second arrives behind it on the same connection.
    conn.socket.write(first.slice(10) + head(second.length) + second);
    await conn.closed;
    await closing;
    const answers = conn.received().split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.split('\r\n')[0])).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
    expect(await rows()).toBe(before + 2);
  });
});
