/**
 * Scale-out, as deployed: two `api` and two `worker` processes (`node bin/skyhook.js start`, each its own
 * OS process with its own PORT and PUBLIC_BASE_URL) on one PostgreSQL database and one Redis queue prefix,
 * the marketplace simulator in this process. One company has a BASIC webhook on api #1's own targetURI,
 * another an OAUTH webhook on api #2's shared targetURI. After a burst of events every notification is
 * stored once and processed, each resource has one snapshot with its final version, and the fetches
 * follow the coalescing rules across both workers: never two at once for one resource (C3), the last one
 * after the last notification (C4), and no more than C1, C2 and C5 allow. Then SIGTERM stops every
 * process cleanly (exit 0).
 *
 * The exact C5 spacing is not measured here: the simulator stamps a GET when its handler runs in this
 * process, which the burst keeps busy, so a stamp can be late by more than a second on two cores (seen).
 * test/integration/coalescing.test.ts measures it on a quiet machine; here C5 shows in the fetch counts.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../src/lib/redis/keys.js';
import { startSimulator, type EmittedNotification, type Simulator } from '../../src/simulator/index.js';
import { settled, statusCounts } from '../faults/support.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { killAllChildren, spawnSkyhook, type SkyhookProcess } from '../helpers/processes.js';

const SECRET_KEY = randomBytes(32).toString('base64');
const MIN_INTERVAL_MS = 1000;
/** Waves of events, this far apart, spread each resource's notifications over time (see the fetch counts). */
const WAVES = 8;
const WAVE_GAP_MS = 200;
const STARTUP_TIMEOUT_MS = 45_000;

let db: TestDatabase;
let sim: Simulator;
let sql: pg.Pool;
const prefix = testQueuePrefix();
const procs: { name: string; p: SkyhookProcess }[] = [];

function start(name: string, role: 'api' | 'worker'): Promise<SkyhookProcess> {
  return spawnSkyhook({
    databaseUrl: db.url,
    queuePrefix: prefix,
    role,
    readyTimeoutMs: STARTUP_TIMEOUT_MS,
    env: {
      SECRET_KEY,
      // debug: a worker logs each failed fetch attempt (counted below).
      LOG_LEVEL: role === 'worker' ? 'debug' : 'info',
      FETCH_MIN_INTERVAL_MS: String(MIN_INTERVAL_MS),
      FETCH_BACKOFF_BASE_MS: '50',
      FETCH_BACKOFF_MAX_MS: '2000',
      RELAY_INTERVAL_MS: '500',
      RELAY_GRACE_MS: '1000',
      // PostgreSQL connections per process: DB_POOL_SIZE (+1 listener in an api); a worker adds
      // min(WORKER_CONCURRENCY, 8): about 22 for the four, since the test file running beside this one shares max_connections.
      DB_POOL_SIZE: '3',
      WORKER_CONCURRENCY: '4',
      SHUTDOWN_TIMEOUT_MS: '5000',
    },
  }).then((p) => {
    procs.push({ name, p });
    return p;
  });
}

/** Fetch attempts that failed (a worker retries them, with a GET each time). */
const failedAttempts = (p: SkyhookProcess) => p.lines().filter((line) => line.includes('"msg":"fetch attempt failed"')).length;
const describeProc = ({ name, p }: { name: string; p: SkyhookProcess }) =>
  `${name} (exit ${String(p.exitInfo()?.code)}):\n${p.lines().slice(-20).join('\n')}`;

let api1: SkyhookProcess;
let api2: SkyhookProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = new pg.Pool({ connectionString: db.url, max: 3 });
  sql.on('error', () => {}); // the database is dropped with FORCE at the end
  sim = await startSimulator({ timeScale: 0.001, faults: { resourceLatencyMs: 5 } });
  [api1, api2] = await Promise.all([start('api #1', 'api'), start('api #2', 'api'), start('worker #1', 'worker'), start('worker #2', 'worker')]);
}, 60_000);

afterAll(async () => {
  await killAllChildren();
  await sim?.stop();
  await sql?.end();
  await db?.drop();
  await deleteKeysWithPrefix(REDIS_URL, prefix);
});

describe('two api and two worker processes on one database and one queue', () => {
  const company = { acme: '', zeta: '' };

  it('registers each webhook through its own api, with that api targetURI', async () => {
    const token = { acme: `token-acme-${randomBytes(6).toString('hex')}`, zeta: `token-zeta-${randomBytes(6).toString('hex')}` };
    sim.addCompany({ id: 'acme', token: token.acme });
    sim.addCompany({ id: 'zeta', token: token.zeta });

    const acme = await api1.admin('POST', '/companies', { name: 'acme', apiBaseUrl: sim.apiBaseUrl, apiToken: token.acme });
    const zeta = await api2.admin('POST', '/companies', { name: 'zeta', apiBaseUrl: sim.apiBaseUrl, apiToken: token.zeta });
    expect([acme.status, zeta.status]).toEqual([201, 201]);
    company.acme = acme.body.id;
    company.zeta = zeta.body.id;

    const basic = await api1.admin('POST', `/companies/${company.acme}/webhooks`, { eventTypes: ['TripRequest', 'ClientLeads', 'TripChatFromBuyer'], authType: 'BASIC' });
    const oauth = await api2.admin('POST', `/companies/${company.zeta}/webhooks`, {
      eventTypes: ['TripRequest', 'ClientLeads', 'TripChatFromBuyer'],
      authType: 'OAUTH',
      sharedTarget: true,
    });
    expect([basic.status, oauth.status], JSON.stringify([basic.body, oauth.body])).toEqual([201, 201]);
    expect(basic.body.targetURI).toMatch(new RegExp(`^${api1.url}/hooks/[\\w-]{20,}$`));
    expect(oauth.body.targetURI).toBe(`${api2.url}/hooks`);

    // One database behind both: each api sees what the other created.
    const listed = await api2.admin('GET', '/companies');
    expect(listed.body.items.map((c: { id: string }) => c.id).sort()).toEqual([company.acme, company.zeta].sort());
  });

  it('stores every notification once, processes it, and keeps one final snapshot per resource, with few fetches', async () => {
    const started = Date.now();
    const fired: EmittedNotification[] = [];
    // Per company and wave: 3 trip requests changed twice and 2 leads changed once (the same resources in
    // every wave), and 2 new chats. Waves arrive while fetches run, so only coalescing keeps GETs few.
    for (let wave = 0; wave < WAVES; wave++) {
      for (const companyId of ['acme', 'zeta']) {
        for (let r = 0; r < 3; r++) fired.push(...(await sim.fire({ companyId, eventType: 'TripRequest', resourceId: `rfq-${companyId}-${r}`, count: 2 })));
        for (let r = 0; r < 2; r++) fired.push(...(await sim.fire({ companyId, eventType: 'ClientLeads', resourceId: `lead-${companyId}-${r}` })));
        fired.push(...(await sim.fire({ companyId, eventType: 'TripChatFromBuyer', count: 2 })));
      }
      await new Promise((resolve) => setTimeout(resolve, WAVE_GAP_MS));
    }
    expect(fired).toHaveLength(WAVES * 20);
    await sim.idle();
    await settled(sql, fired.length, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${procs.map(describeProc).join('\n')}`);
    });
    const elapsedMs = Date.now() - started;

    // Delivered once each (no duplicate faults), stored once each, all processed.
    const report = sim.report();
    expect(report.gaveUp).toBe(0);
    expect(report.duplicatesSent).toBe(0);
    expect(report.delivered).toBe(fired.length);
    const { rows: failures } = await sql.query('SELECT company, type, reason, failures FROM failures_by_reason');
    expect(await statusCounts(sql), JSON.stringify(failures)).toEqual({ processed: fired.length });

    const { rows: perCompany } = await sql.query<{ company_id: string; authenticated_by: string; n: string }>(
      'SELECT company_id, authenticated_by, count(*) AS n FROM notifications GROUP BY 1, 2',
    );
    expect(Object.fromEntries(perCompany.map((r) => [r.company_id, [r.authenticated_by, Number(r.n)]]))).toEqual({
      [company.acme]: ['basic', fired.length / 2],
      [company.zeta]: ['oauth', fired.length / 2],
    });

    // One row per delivered notification: per href, as many rows as notifications fired for it.
    const firedPerHref = new Map<string, number>();
    for (const f of fired) firedPerHref.set(f.notification.href, (firedPerHref.get(f.notification.href) ?? 0) + 1);
    const { rows: perHref } = await sql.query<{ href: string; n: string; first_ms: string; last_ms: string }>(
      `SELECT href, count(*) AS n,
              floor(extract(epoch FROM min(received_at)) * 1000) AS first_ms,
              floor(extract(epoch FROM max(received_at)) * 1000) AS last_ms
       FROM notifications GROUP BY href`,
    );
    expect(Object.fromEntries(perHref.map((r) => [r.href, Number(r.n)]))).toEqual(Object.fromEntries(firedPerHref));

    // Snapshots: one per resource, the simulator's final version, under the owning company.
    const companyOf: Record<string, string> = { acme: company.acme, zeta: company.zeta };
    const { rows: snapshots } = await sql.query<{ company_id: string; href: string; body: { version: number } }>('SELECT company_id, href, body FROM resources');
    expect(snapshots).toHaveLength(report.resources.length);
    expect(report.resources).toHaveLength(firedPerHref.size);
    for (const r of report.resources) {
      const snap = snapshots.find((s) => s.href === r.href);
      expect(snap, r.href).toBeDefined();
      expect(snap!.company_id).toBe(companyOf[r.companyId]);
      expect(snap!.body.version, r.href).toBe(r.version);
    }

    // Fetches, per resource, across both workers. An attempt that failed after its GET (say PostgreSQL
    // refused a connection: max_connections is shared with the test file running beside this one) is
    // retried with a new GET, legitimately: the counts allow for as many extra GETs as failed attempts.
    const retries = procs.reduce((sum, { p }) => sum + failedAttempts(p), 0);
    for (const f of report.fetches) expect(f.tokenCompanyId).toBe(f.ownerCompanyId);
    let fetchTotal = 0;
    for (const { href, n, first_ms, last_ms } of perHref) {
      const fetches = report.fetches.filter((f) => f.href === href).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
      const starts = fetches.map((f) => Date.parse(f.startedAt));
      fetchTotal += fetches.length;
      expect(fetches.length, href).toBeGreaterThan(0);
      expect(fetches.every((f) => f.status === 200), href).toBe(true);
      // C3: the next fetch starts after the previous one was answered (stamped in order: robust to delays).
      for (let i = 1; i < fetches.length; i++) {
        expect(starts[i]!, `${href}: fetch ${i} overlaps fetch ${i - 1}`).toBeGreaterThanOrEqual(Date.parse(fetches[i - 1]!.at));
      }
      // C4: the last fetch started after the last notification was stored.
      expect(starts.at(-1)!, `${href}: no fetch after the last notification`).toBeGreaterThanOrEqual(Number(last_ms));
      // C1/C2 with C5: none before the first notification; while they arrive, at most one per interval; after
      // the last one, at most the fetch it raced with and one follow-up. Never more than notifications.
      const span = Number(last_ms) - Number(first_ms);
      expect(fetches.length, `${href}: ${fetches.length} fetches for ${n} notifications over ${span} ms (${retries} retries)`).toBeLessThanOrEqual(
        Math.min(Number(n), Math.floor(span / MIN_INTERVAL_MS) + 3) + retries,
      );
    }
    // The burst coalesced: far fewer GETs than notifications.
    expect(fetchTotal - retries).toBeLessThan(fired.length / 2);

    // Events: one row per stored snapshot version, at most one per GET (a GET that read the stored body again
    // stores none: SPEC §5.2), and at least one per resource.
    const { rows: events } = await sql.query<{ events: string; versions: string }>(
      'SELECT (SELECT count(*) FROM events) AS events, (SELECT sum(version) FROM resources) AS versions',
    );
    expect(Number(events[0]!.events)).toBe(Number(events[0]!.versions));
    expect(Number(events[0]!.events)).toBeLessThanOrEqual(fetchTotal - retries);
    expect(Number(events[0]!.events)).toBeGreaterThanOrEqual(perHref.length);
    console.log(`scale-out: ${fired.length} notifications, ${fetchTotal} fetches (${retries} retried) for ${perHref.length} resources, settled in ${elapsedMs} ms`);
  });

  it('stops every process cleanly on SIGTERM (exit 0)', async () => {
    for (const { p } of procs) p.kill('SIGTERM');
    const exitCode = (p: SkyhookProcess) => p.exited.then(({ code, signal }) => code ?? (signal ? -1 : null));
    const codes = await Promise.all(procs.map(({ p }) => Promise.race([exitCode(p), new Promise((r) => setTimeout(() => r('timeout'), 15_000))])));
    expect(codes, procs.map(describeProc).join('\n')).toEqual([0, 0, 0, 0]);
  }, 20_000);
});
