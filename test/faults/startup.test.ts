/**
 * Start-up with a dependency down (SPEC §5: "a process starts and serves whatever it can while Redis or
 * PostgreSQL is down at start-up, and says clearly what it waits for"). Skyhook runs as a process
 * (`node bin/skyhook.js start`, ROLE=all) whose only way to Redis, or to PostgreSQL, is a TCP proxy the
 * test switches: refused at start, passed later.
 *
 * Proves: with Redis down it listens at once, stores Basic notifications (200), refuses OAuth ones (503
 * with Retry-After), answers /readyz 503, and says so in one clear line (no stack traces, no line per
 * retry), counting the errors in /metrics; once Redis is reachable the stored notifications are processed
 * and it says so. With PostgreSQL down it listens too (/healthz 200, /readyz 503 `starting`, notifications
 * 503 with Retry-After), names PostgreSQL and DATABASE_URL (never its password) while it waits, and starts
 * by itself once PostgreSQL answers. A database that refuses Skyhook (an unknown role) stops it with one
 * line naming PostgreSQL and DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createTestDatabase, REDIS_URL, SERVER_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, notificationBody, oauthAuthorization, postNotification, seedCompany, seedWebhook, type SeededWebhook } from '../helpers/fixtures.js';
import { killAllChildren, spawnSkyhook } from '../helpers/processes.js';
import { eventually } from '../helpers/skyhook.js';
import { startSwitchableProxy, type SwitchableProxy } from '../helpers/tcp-proxy.js';
import { sleep, statusCounts } from './support.js';

const SECRET_KEY = randomBytes(32);
const TOKEN = `token-${randomBytes(8).toString('hex')}`;
let db: TestDatabase;
let sim: Simulator;
let sql: pg.Pool;
let redisProxy: SwitchableProxy;
let postgresProxy: SwitchableProxy;
let apiBaseUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  sim = await startSimulator({ timeScale: 0.001, companies: [{ id: 'acme', token: TOKEN }] });
  apiBaseUrl = sim.apiBaseUrl;
  sql = new pg.Pool({ connectionString: db.url, max: 3 });
  sql.on('error', () => {});
  const redis = new URL(REDIS_URL);
  redisProxy = await startSwitchableProxy({ target: { host: redis.hostname, port: Number(redis.port || 6379) } });
  const server = new URL(SERVER_URL);
  postgresProxy = await startSwitchableProxy({ target: { host: server.hostname, port: Number(server.port || 5432) } });
});

afterAll(async () => {
  await redisProxy?.setMode('pass');
  await postgresProxy?.setMode('pass');
  await killAllChildren();
  await sim?.stop();
  await redisProxy?.close();
  await postgresProxy?.close();
  await sql?.end();
  await db?.drop();
});

/** A webhook of each kind, seeded straight into the database (the admin API is not what is tested here). */
async function seedWebhooks(publicBaseUrl: string): Promise<{ basic: SeededWebhook; oauth: SeededWebhook }> {
  const fx = connectFixtures(db.url);
  try {
    const company = await seedCompany(fx.db, SECRET_KEY, { apiBaseUrl, apiToken: TOKEN });
    return {
      basic: await seedWebhook(fx.db, SECRET_KEY, { companyId: company.id, authType: 'BASIC', publicBaseUrl }),
      oauth: await seedWebhook(fx.db, SECRET_KEY, { companyId: company.id, authType: 'OAUTH', publicBaseUrl }),
    };
  } finally {
    await fx.pool.end();
  }
}

const env = (extra: Record<string, string>) => ({ SECRET_KEY: SECRET_KEY.toString('base64'), FETCH_MIN_INTERVAL_MS: '0', ...extra });
/** Lines of a process's output that are not pino's JSON: raw stack traces and console output. */
const rawLines = (lines: string[]) => lines.filter((l) => l.trim() !== '' && !l.startsWith('{'));
const logged = (lines: string[]) => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; kind?: string });

describe('start-up with Redis unreachable', () => {
  it('listens at once, stores Basic notifications, refuses OAuth ones with 503, says so in one line, and processes everything once Redis is back', async () => {
    await redisProxy.setMode('refuse');
    const prefix = testQueuePrefix();
    const skyhook = await spawnSkyhook({
      databaseUrl: db.url,
      queuePrefix: prefix,
      role: 'all',
      env: env({ REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`, RELAY_INTERVAL_MS: '300' }),
    });
    const { basic, oauth } = await seedWebhooks(skyhook.url);

    const ready = await fetch(`${skyhook.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(Number(ready.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await ready.json()).toMatchObject({ status: 'unavailable', database: true, redis: false });

    const body = JSON.stringify(notificationBody(apiBaseUrl));
    const stored = await postNotification(skyhook.url, basic.path, { authorization: basicAuthorization(basic.clientIdentifier, basic.secret), body });
    expect(stored.status, stored.text).toBe(200);
    const signed = await postNotification(skyhook.url, oauth.path, {
      authorization: oauthAuthorization({ clientIdentifier: oauth.clientIdentifier, secret: oauth.secret, url: oauth.targetURI, rawBody: body }),
      body,
    });
    expect(signed.status, signed.text).toBe(503);
    expect(signed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(signed.headers.get('retry-after'))).toBeGreaterThan(0);

    // Some seconds of retries: the workers and the relay keep trying, quietly.
    await sleep(4000);
    expect(await statusCounts(sql)).toEqual({ received: 1 });
    const lines = skyhook.lines();
    expect(rawLines(lines), 'raw output (stack traces) while Redis is down').toEqual([]);
    // Where to look, before anything else works: the API docs, the console and the queue dashboard.
    const listening = logged(lines).find((l) => l.msg.startsWith('skyhook is listening'));
    expect(listening?.msg).toMatch(new RegExp(`API docs ${skyhook.url}/docs, console ${skyhook.url}/console .*queue dashboard ${skyhook.url}/admin/queues`));
    const outage = logged(lines).filter((l) => l.kind === 'redis_unreachable');
    expect(outage.length, 'lines about the outage: one, then a reminder each 30 s').toBe(1);
    expect(outage[0]!.msg).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:\d+ \(REDIS_URL\) is not reachable: Basic notifications are still stored/);
    expect(logged(lines).length, 'lines logged in all').toBeLessThan(12);
    const metrics = await (await fetch(`${skyhook.url}/metrics`)).text();
    expect(Number(/skyhook_errors_total\{kind="redis_unreachable"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(1);

    await redisProxy.setMode('pass');
    await eventually(async () => (await statusCounts(sql)).processed === 1, 'the stored notification processed once Redis is back', 15_000);
    expect((await fetch(`${skyhook.url}/readyz`)).status).toBe(200);
    await skyhook.waitForLine(/is reachable again/);
    await skyhook.stop();
    expect(skyhook.exitInfo()).toEqual({ code: 0, signal: null });
    await sql.query('DELETE FROM companies');
  }, 60_000);

  it('a worker started while Redis is down waits quietly and stops cleanly', async () => {
    await redisProxy.setMode('refuse');
    const worker = await spawnSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'worker', env: env({ REDIS_URL: `redis://127.0.0.1:${redisProxy.port}` }) });
    await sleep(3000);
    expect(rawLines(worker.lines())).toEqual([]);
    expect(logged(worker.lines()).filter((l) => l.kind === 'redis_unreachable').map((l) => l.msg)).toEqual([
      expect.stringMatching(/is not reachable: fetches wait for it; \/readyz answers 503$/),
    ]);
    const stoppedAt = Date.now();
    await worker.stop();
    expect(worker.exitInfo()).toEqual({ code: 0, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(15_000);
    await redisProxy.setMode('pass');
  }, 40_000);
});

describe('start-up with PostgreSQL unreachable', () => {
  it('listens, answers /readyz and notifications 503 while it waits, names PostgreSQL and DATABASE_URL without the password, and starts once PostgreSQL answers', async () => {
    await postgresProxy.setMode('refuse');
    const viaProxy = new URL(db.url);
    viaProxy.host = `127.0.0.1:${postgresProxy.port}`;
    viaProxy.password = 'hunter2-not-shown'; // trust authentication ignores it; the logs must not show it
    const skyhook = await spawnSkyhook({ databaseUrl: viaProxy.toString(), queuePrefix: testQueuePrefix(), role: 'all', waitFor: 'listening', env: env({}) });

    expect((await fetch(`${skyhook.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${skyhook.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'starting', database: false });
    const refused = await postNotification(skyhook.url, '/hooks/any-key', { authorization: basicAuthorization('x', 'y'), body: '{}' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.json).toMatchObject({ code: 'starting' });

    const waiting = await skyhook.waitForLine(/postgres_unreachable/);
    expect(JSON.parse(waiting).msg).toMatch(new RegExp(`^PostgreSQL at postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${postgresProxy.port}/${db.name} \\(DATABASE_URL\\) is not reachable`));
    expect(skyhook.lines().join('\n')).not.toContain('hunter2');
    expect(rawLines(skyhook.lines())).toEqual([]);

    await postgresProxy.setMode('pass');
    await eventually(async () => (await fetch(`${skyhook.url}/readyz`)).status === 200, 'ready once PostgreSQL answers', 20_000);
    const { basic } = await seedWebhooks(skyhook.url);
    const stored = await postNotification(skyhook.url, basic.path, {
      authorization: basicAuthorization(basic.clientIdentifier, basic.secret),
      body: JSON.stringify(notificationBody(apiBaseUrl)),
    });
    expect(stored.status, stored.text).toBe(200);
    await skyhook.stop();
    expect(skyhook.exitInfo()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('a database that refuses Skyhook stops it with one line naming PostgreSQL and DATABASE_URL', async () => {
    const refusing = new URL(db.url);
    refusing.username = 'no_such_role';
    const skyhook = spawnSkyhook({ databaseUrl: refusing.toString(), queuePrefix: testQueuePrefix(), role: 'worker', env: env({}) });
    await expect(skyhook).rejects.toThrow(/exited before it was ready \(\{"code":1,"signal":null\}\)/);
    const message = await skyhook.catch((err: Error) => err.message);
    expect(message).toMatch(/skyhook: failed to start: PostgreSQL at postgres:\/\/no_such_role@[^ ]+ \(DATABASE_URL\) refused: .*no_such_role/);
  }, 40_000);
});
