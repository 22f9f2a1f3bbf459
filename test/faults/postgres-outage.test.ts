/**
 * PostgreSQL becomes unreachable (SPEC §4 last row: "never 200 without a commit"). Skyhook reaches the
 * database only through a TCP proxy the test switches: refused connections, connections reset at once,
 * and a black hole that never answers (the pool's connect timeout). The test's own checks go to
 * PostgreSQL directly.
 *
 * Proves: while the database is away every notification is answered 503 with Retry-After (problem+json),
 * never 200, and no row appears; the simulator keeps retrying; after recovery its retries land, every
 * notification is stored at least once and at most once per delivery attempt, and every row ends
 * processed with the simulator's final version as snapshot.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createTestDatabase, SERVER_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, postNotification, seedCompany, seedWebhook, type ReceiverAnswer, type SeededWebhook } from '../helpers/fixtures.js';
import { killAllChildren, spawnSkyhook, type SkyhookProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/skyhook.js';
import { startSwitchableProxy, type ProxyMode, type SwitchableProxy } from '../helpers/tcp-proxy.js';
import { createCompany, expectNothingMissing, settled, sleep, statusCounts, total, type FaultCompany } from './support.js';

const SECRET_KEY = randomBytes(32);
let db: TestDatabase;
let proxy: SwitchableProxy;
let sim: Simulator;
let sql: pg.Pool;
let viaProxy: string;
const prefix = testQueuePrefix();
let current: SkyhookProcess | undefined;

/** Skyhook (role all) as a process whose only way to PostgreSQL is the proxy; a new one if the last died. */
async function skyhookProcess(): Promise<SkyhookProcess> {
  if (current && !current.exitInfo()) return current;
  current = await spawnSkyhook({
    databaseUrl: viaProxy,
    queuePrefix: prefix,
    role: 'all',
    env: { SECRET_KEY: SECRET_KEY.toString('base64'), FETCH_MIN_INTERVAL_MS: '0', RELAY_INTERVAL_MS: '1000', LOG_LEVEL: 'warn' },
  });
  return current;
}

const crashReport = (p: SkyhookProcess) => `skyhook exited ${JSON.stringify(p.exitInfo())}:\n${p.lines().slice(-25).join('\n')}`;

beforeAll(async () => {
  db = await createTestDatabase();
  const server = new URL(SERVER_URL);
  proxy = await startSwitchableProxy({ target: { host: server.hostname, port: Number(server.port || 5432) } });
  const url = new URL(db.url);
  url.host = `127.0.0.1:${proxy.port}`;
  viaProxy = url.toString();
  sim = await startSimulator({ timeScale: 0.001 });
  sql = new pg.Pool({ connectionString: db.url, max: 3 });
  sql.on('error', () => {});
});

afterAll(async () => {
  await proxy?.setMode('pass');
  await current?.stop();
  await killAllChildren();
  await sim?.stop();
  await proxy?.close();
  await sql?.end();
  await db?.drop();
});

const rowCount = async () => total(await statusCounts(sql));

function expectUnavailable(answer: ReceiverAnswer): void {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(answer.json).toMatchObject({ status: 503 });
}

describe('PostgreSQL outage', () => {
  it('answers 503 with Retry-After (never 200) while the database is away, and loses nothing after it returns', async () => {
    const skyhook = await skyhookProcess();
    const companies: Record<string, FaultCompany> = {
      basic: await createCompany(skyhook.admin, sim, 'basic', { authType: 'BASIC' }),
      oauth: await createCompany(skyhook.admin, sim, 'oauth', { authType: 'OAUTH', sharedTarget: true }),
    };
    // A webhook whose secret the test knows, for direct requests (its company is the simulator's "direct").
    const fx = connectFixtures(db.url);
    let direct: SeededWebhook;
    try {
      sim.addCompany({ id: 'direct', token: 'token-direct-0123456789' });
      const company = await seedCompany(fx.db, SECRET_KEY, { apiBaseUrl: sim.apiBaseUrl, apiToken: 'token-direct-0123456789' });
      direct = await seedWebhook(fx.db, SECRET_KEY, { companyId: company.id, authType: 'BASIC', publicBaseUrl: skyhook.url });
    } finally {
      await fx.pool.end();
    }
    const [resource] = await sim.fire({ companyId: 'direct', eventType: 'TripRequest', resourceId: 'direct-rfq' });
    let seq = 0;
    const sendDirect = () =>
      postNotification(skyhook.url, direct.path, {
        authorization: basicAuthorization(direct.clientIdentifier, direct.secret),
        body: JSON.stringify({ ...resource!.notification, seq: ++seq }),
      });

    // Before: the normal path (and the direct webhook's credentials in the receiver's cache).
    await sim.fire({ companyId: 'basic', eventType: 'TripRequest', count: 10, resources: 5 });
    await sim.fire({ companyId: 'oauth', eventType: 'TripRequest', count: 10, resources: 5 });
    expect((await sendDirect()).status).toBe(200);
    await sim.idle();
    await settled(sql, 21, 20_000);
    const deliveredBefore = sim.report().delivered;

    // Down: nothing listens any more (ECONNREFUSED), every open connection cut.
    await proxy.setMode('refuse');
    const fired = [
      ...(await sim.fire({ companyId: 'basic', eventType: 'TripRequest', count: 60, resources: 15 })),
      ...(await sim.fire({ companyId: 'oauth', eventType: 'ClientLeads', count: 20, resources: 5 })),
    ];
    const refused = await Promise.all([sendDirect(), sendDirect(), sendDirect()]);
    for (const answer of refused) expectUnavailable(answer);
    await sleep(1500);

    // Connections accepted and closed at once, then a black hole (pg's 3 s connect timeout).
    const outcomes: Record<string, ReceiverAnswer[]> = { refuse: refused };
    for (const mode of ['reset', 'blackhole'] as ProxyMode[]) {
      await proxy.setMode(mode);
      const started = Date.now();
      outcomes[mode] = await Promise.all([sendDirect(), sendDirect(), sendDirect()]);
      for (const answer of outcomes[mode]) expectUnavailable(answer);
      expect(Date.now() - started, `${mode}: 503 within the pool's connect timeout`).toBeLessThan(8000);
    }

    // Nothing was consumed by the simulator and no row appeared while the database was away.
    const during = sim.report();
    expect(during.delivered, 'deliveries answered 200 during the outage').toBe(deliveredBefore);
    const outageDeliveries = during.notifications.filter((n) => fired.some((f) => f.notification.href === n.href));
    expect(outageDeliveries.length).toBe(fired.length);
    for (const d of outageDeliveries) {
      expect(d.status).toBe('pending');
      if (d.attempts > 0) expect(d.lastError).toMatch(/^(answered HTTP 503|no reply within)/);
    }
    expect(outageDeliveries.filter((d) => d.attempts > 0).length, 'the simulator kept trying').toBeGreaterThan(fired.length / 2);
    expect(await rowCount()).toBe(21);
    expect(skyhook.exitInfo(), crashReport(skyhook)).toBeUndefined();
    expect((await fetch(`${skyhook.url}/healthz`)).status).toBe(200);

    // Back: the simulator's retries land, the worker and the relay resume.
    await proxy.setMode('pass');
    const back = Date.now();
    await sim.idle();
    const expected = 21 + fired.length;
    await settled(sql, expected, 30_000);
    console.log(`postgres-outage: all delivered and processed ${Date.now() - back} ms after the database returned`);

    const report = sim.report();
    expect(report.gaveUp).toBe(0);
    expect(report.delivered).toBe(deliveredBefore + fired.length);
    // A 503 may follow a commit whose answer was lost with the connection: then the retry stores it again.
    // Never more than once per attempt, and (without a lost commit) exactly once.
    await expectNothingMissing(sql, report, companies, { allowExtraPerResource: (_n, attempts) => attempts });
    expect((await sendDirect()).status).toBe(200);
    const counts = await eventually(async () => {
      const c = await statusCounts(sql);
      return c.processed === total(c) ? c : undefined;
    }, 'the last direct notification processed');
    expect(total(counts)).toBeGreaterThanOrEqual(expected + 1);
    expect(skyhook.exitInfo(), crashReport(skyhook)).toBeUndefined();
  }, 90_000);

  /**
   * A transaction's client (checked out of the pool) loses its connection. pg emits 'error' on that client,
   * and pg-pool listens on idle clients only: without a listener of Skyhook's own this is an uncaught
   * exception that ends the process. Made deterministic by holding the relay inside its transaction with a
   * table lock (it runs `BEGIN; SELECT ... FOR UPDATE SKIP LOCKED` every RELAY_INTERVAL_MS).
   */
  it('survives a database connection lost in the middle of a transaction (the relay\'s)', async () => {
    const skyhook = await skyhookProcess();
    const locker = await sql.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE');
      await sleep(1500); // the relay (every RELAY_INTERVAL_MS = 1 s) now waits for the lock, inside BEGIN, holding a pool client
      await proxy.setMode('reset');
      await sleep(1000);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
      await proxy.setMode('pass');
    }
    await sleep(1000);
    expect(skyhook.exitInfo(), crashReport(skyhook)).toBeUndefined();
    expect((await fetch(`${skyhook.url}/healthz`)).status).toBe(200);
    await eventually(async () => (await fetch(`${skyhook.url}/readyz`)).status === 200, 'ready again', 10_000);
  }, 60_000);
});
