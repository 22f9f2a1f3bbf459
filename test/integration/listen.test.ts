/**
 * db/listen.ts against a real PostgreSQL, through a TCP proxy that can make a connection go silent:
 * every loss is told to the owner before the reconnect, a silently dead connection is found out within
 * its liveness bound, and the keys' cache (access/keys.ts) is not trusted from then on and starts empty
 * once the listener is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, KEY_CHANGES_CHANNEL, listenForKeyChanges, newKey } from '../../src/access/keys.js';
import type { DbHandle } from '../../src/db/client.js';
import { listen, PING_EVERY_MS, PING_TIMEOUT_MS, type Listener } from '../../src/db/listen.js';
import { sha256 } from '../../src/lib/crypto.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { connectFixtures } from '../helpers/fixtures.js';
import { eventually } from '../helpers/skyhook.js';
import { startTcpProxy, type SwitchableProxy } from '../helpers/tcp-proxy.js';

let db: TestDatabase;
let fixtures: DbHandle;
let proxy: SwitchableProxy;
/** DATABASE_URL through the proxy. */
let proxied: string;

beforeAll(async () => {
  db = await createTestDatabase();
  fixtures = connectFixtures(db.url);
  const url = new URL(db.url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.host = `127.0.0.1:${proxy.port}`;
  proxied = url.toString();
});

afterAll(async () => {
  await proxy?.close();
  await fixtures?.pool.end();
  await db?.drop();
});

/** What a listener was told, in order, with when. */
function recording() {
  const told: { what: 'connected' | 'lost' | 'notified'; at: number; detail?: string }[] = [];
  const listener: Listener = {
    onNotification: (channel, payload) => told.push({ what: 'notified', at: Date.now(), detail: `${channel}:${payload}` }),
    onConnected: () => told.push({ what: 'connected', at: Date.now() }),
    onError: (err) => told.push({ what: 'lost', at: Date.now(), detail: String(err) }),
  };
  const count = (what: 'connected' | 'lost' | 'notified') => told.filter((t) => t.what === what).length;
  return { told, listener, count };
}

const listenerBackends = (channel: string) =>
  fixtures.pool.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [`skyhook-listen ${channel}`]);

describe('db/listen.ts', () => {
  it('tells its owner of a connection killed by the server before reconnecting, then that it listens again', async () => {
    const { told, listener, count } = recording();
    const l = listen(db.url, ['skyhook_test_a'], listener);
    try {
      await eventually(async () => count('connected') === 1, 'connected');
      await fixtures.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'skyhook-listen skyhook_test_a' AND datname = current_database()`);
      await eventually(async () => count('connected') === 2, 'connected again');
      // Told once per loss (pg's error and the end that follows are one loss), and before it was back.
      expect(told.map((t) => t.what)).toEqual(['connected', 'lost', 'connected']);
      await fixtures.pool.query(`NOTIFY skyhook_test_a, 'after'`);
      await eventually(async () => told.some((t) => t.detail === 'skyhook_test_a:after'), 'a notification after the reconnect');
    } finally {
      await l.stop();
    }
  });

  it("finds out a connection that went silent within its liveness check's bound, and listens again on a new one", async () => {
    const { told, listener, count } = recording();
    const pingEveryMs = 300;
    const pingTimeoutMs = 400;
    const l = listen(proxied, ['skyhook_test_b'], listener, { pingEveryMs, pingTimeoutMs });
    try {
      await eventually(async () => count('connected') === 1, 'connected');
      // A few checks pass on a healthy connection: nothing is said.
      await new Promise((r) => setTimeout(r, 3 * pingEveryMs));
      expect(count('lost')).toBe(0);
      const stalledAt = Date.now();
      expect(proxy.stall((startup) => startup.includes('skyhook-listen skyhook_test_b'))).toBe(1);
      await eventually(async () => count('lost') === 1, 'the silent connection found out', 5000);
      const lost = told.find((t) => t.what === 'lost')!;
      expect(lost.at - stalledAt).toBeLessThanOrEqual(pingEveryMs + pingTimeoutMs + 200);
      expect(lost.detail).toMatch(/liveness check/);
      await eventually(async () => count('connected') === 2, 'connected again');
      await fixtures.pool.query(`NOTIFY skyhook_test_b, 'after'`);
      await eventually(async () => told.some((t) => t.detail === 'skyhook_test_b:after'), 'a notification on the new connection');
      // Its own checks never reach the owner.
      expect(told.filter((t) => t.what === 'notified').map((t) => t.detail)).toEqual(['skyhook_test_b:after']);
    } finally {
      await l.stop();
    }
  });

  it('says nothing more once stopped', async () => {
    const { told, listener, count } = recording();
    const l = listen(db.url, ['skyhook_test_c'], listener, { pingEveryMs: 100 });
    await eventually(async () => count('connected') === 1, 'connected');
    await l.stop();
    await new Promise((r) => setTimeout(r, 1500));
    expect(told.map((t) => t.what)).toEqual(['connected']);
    expect((await listenerBackends('skyhook_test_c')).rowCount).toBe(0);
  });
});

describe("the keys' cache over a listener that went silent", () => {
  it(`refuses a key revoked meanwhile within the documented bound (${(PING_EVERY_MS + PING_TIMEOUT_MS) / 1000} s), and starts empty once listening again`, async () => {
    const keys = createKeys(fixtures.db);
    const errors: unknown[] = [];
    const l = listenForKeyChanges(proxied, keys, (err) => errors.push(err));
    try {
      await eventually(async () => (await listenerBackends(KEY_CHANGES_CHANNEL)).rowCount === 1, 'the keys listener connected');
      const [first] = (await listenerBackends(KEY_CHANGES_CHANNEL)).rows;
      const secret = newKey();
      const { rows } = await fixtures.pool.query(`INSERT INTO api_keys (name, role, digest, hint) VALUES ('silent listener', 'viewer', $1, 'skh_') RETURNING id`, [sha256(secret)]);
      // The insert's own notification drops the cache: let it arrive, then the key is read and kept.
      await new Promise((r) => setTimeout(r, 300));
      expect(await keys.authenticate(secret)).toMatchObject({ kind: 'key', id: rows[0].id });

      expect(proxy.stall((startup) => startup.includes(`skyhook-listen ${KEY_CHANGES_CHANNEL}`))).toBe(1);
      const stalledAt = Date.now();
      // Revoked while the listener cannot hear it: its notification is lost on the silent connection.
      await fixtures.pool.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [rows[0].id]);
      // The window the liveness check bounds: the cached key is still taken, for now.
      expect(await keys.authenticate(secret)).toMatchObject({ kind: 'key', id: rows[0].id });
      await eventually(async () => (await keys.authenticate(secret)) === 'revoked', 'the revoked key refused', PING_EVERY_MS + PING_TIMEOUT_MS + 5000);
      expect(Date.now() - stalledAt).toBeLessThanOrEqual(PING_EVERY_MS + PING_TIMEOUT_MS + 1000);
      expect(errors.map(String).join()).toMatch(/liveness check/);
      // Back on a new connection: still refused (the cache started empty, nothing stale came back).
      await eventually(async () => {
        const now = (await listenerBackends(KEY_CHANGES_CHANNEL)).rows;
        return now.length === 1 && now[0].pid !== first.pid;
      }, 'the keys listener connected again');
      for (let i = 0; i < 3; i++) expect(await keys.authenticate(secret)).toBe('revoked');
    } finally {
      await l.stop();
    }
  }, 30_000);
});
