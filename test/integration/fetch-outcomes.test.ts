/**
 * What the worker does with each answer of the marketplace to a resource GET (SPEC §5), driven by
 * the simulator's scripted responses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/client.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';
import { builtInHandlers } from '../../src/processing/handlers/index.js';
import { SnapshotStore } from '../../src/processing/snapshots.js';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';

let s: Scenario;
let companyId: string;
let currentToken: string;
const apiBase = () => s.sim.apiBaseUrl;

beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', FETCH_ATTEMPTS: '3', FETCH_BACKOFF_BASE_MS: '50', FETCH_BACKOFF_MAX_MS: '3000' } });
  ({ companyId, token: currentToken } = await s.company('acme'));
});
afterAll(async () => s?.close());

/** Scripts the answers for a new resource, fires one notification for it and waits until it is final. */
async function notifyWith(resourceId: string, responses: { status: number; body?: unknown; headers?: Record<string, string> }[]) {
  const href = `${apiBase()}/rfqs/${resourceId}`;
  if (responses.length > 0) s.sim.programResource({ href, responses });
  await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId });
  return eventually(async () => {
    const { rows } = await s.sql.query('SELECT * FROM notifications WHERE href = $1', [href]);
    return rows[0] && ['processed', 'failed'].includes(rows[0].status) ? { row: rows[0], href } : undefined;
  }, `notification for ${resourceId} final`);
}

describe('fetch outcomes', () => {
  it('2xx: stores the snapshot with its version and appends an event', async () => {
    const { row, href } = await notifyWith('rfq-ok', []);
    expect(row).toMatchObject({ status: 'processed', outcome: 'stored', attempts: 1, snapshot_version: 1, last_error: null });
    const { rows: resources } = await s.sql.query('SELECT * FROM resources WHERE href = $1', [href]);
    expect(resources[0]).toMatchObject({ company_id: companyId, type: 'rfqs', resource_id: 'rfq-ok', version: 1, gone: false });
    expect(resources[0].body).toMatchObject({ id: 'rfq-ok', version: 1 });
    const { rows: events } = await s.sql.query('SELECT * FROM events WHERE href = $1', [href]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ company_id: companyId, type: 'rfqs', resource_id: 'rfq-ok', snapshot_version: 1 });
  });

  it('5xx then 2xx: retried with backoff, then processed', async () => {
    const { row, href } = await notifyWith('rfq-5xx', [{ status: 500 }, { status: 503 }]);
    expect(row).toMatchObject({ status: 'processed', attempts: 3, outcome: 'stored' });
    expect(s.fetchesOf(href).map((f) => f.status)).toEqual([500, 503, 200]);
  });

  it('429 with Retry-After: the next attempt waits that long', async () => {
    const { row, href } = await notifyWith('rfq-429', [{ status: 429, headers: { 'retry-after': '1' } }]);
    expect(row.status).toBe('processed');
    const [throttled, ok] = s.fetchesOf(href).map((f) => Date.parse(f.at));
    expect(ok! - throttled!).toBeGreaterThanOrEqual(950);
  });

  it('failures that never end: failed after the configured attempts, then replayable', async () => {
    const { row, href } = await notifyWith('rfq-down', [{ status: 502 }, { status: 502 }, { status: 502 }]);
    expect(row.status).toBe('failed');
    expect(row.attempts).toBe(3);
    expect(row.last_error).toMatch(/gave up after 3 attempts: marketplace answered 502/);

    const replay = await s.skyhook.admin('POST', `/notifications/${row.id}/replay`);
    expect(replay.status).toBe(200);
    await eventually(async () => (await s.sql.query('SELECT status FROM notifications WHERE id = $1', [row.id])).rows[0].status === 'processed', 'replayed notification processed');
    expect(s.fetchesOf(href)).toHaveLength(4);
  });

  it('404 and 410: processed with outcome gone', async () => {
    const gone404 = await notifyWith('rfq-404', [{ status: 404 }]);
    const gone410 = await notifyWith('rfq-410', [{ status: 410 }]);
    expect(gone404.row).toMatchObject({ status: 'processed', outcome: 'gone' });
    expect(gone410.row).toMatchObject({ status: 'processed', outcome: 'gone' });
  });

  it('2xx with meta.errors (soft error): failed with that error, not retried', async () => {
    const { row, href } = await notifyWith('rfq-soft', [
      { status: 200, body: { meta: { errors: [{ code: 'E42', message: 'resource is being rebuilt' }], warnings: [], infos: [] }, data: null } },
    ]);
    expect(row.status).toBe('failed');
    expect(row.last_error).toContain('resource is being rebuilt');
    expect(s.fetchesOf(href)).toHaveLength(1);
  });

  it('401/403 (F4): the company paused with the reason shown, its notifications waiting, resumed by a new token', async () => {
    s.sim.programResource({ href: `${apiBase()}/rfqs/rfq-401`, responses: [{ status: 401 }] });
    const [first] = await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-401' });
    const company = await eventually(async () => {
      const c = await s.skyhook.admin('GET', `/companies/${companyId}`);
      return c.body.state.status === 'paused' ? c : undefined;
    }, 'company paused');
    expect(company.body).toMatchObject({ connectionStatus: 'unauthorized', state: { reason: expect.stringContaining('401'), since: expect.any(String) } });
    const refused = (await s.sql.query('SELECT status, attempts FROM notifications WHERE href = $1', [first!.notification.href])).rows[0];
    expect(refused).toEqual({ status: 'queued', attempts: 1 }); // waiting, not failed

    // While paused, a new notification is stored but not fetched.
    const [n] = await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-after-401' });
    const href = n!.notification.href;
    await eventually(async () => (await s.sql.query('SELECT 1 FROM notifications WHERE href = $1', [href])).rowCount === 1, 'stored while paused');
    await new Promise((r) => setTimeout(r, 500));
    expect(s.fetchesOf(href)).toHaveLength(0);

    // Replacing the token (here: the same, now valid again) lifts the pause by itself.
    const patched = await s.skyhook.admin('PATCH', `/companies/${companyId}`, { apiToken: currentToken });
    expect(patched.status).toBe(200);
    expect(patched.body.state.status).toBe('ok');
    // Both: the one whose fetch met the refusal, and the one that waited.
    for (const h of [href, first!.notification.href]) {
      await eventually(async () => (await s.sql.query('SELECT status FROM notifications WHERE href = $1', [h])).rows[0]?.status === 'processed', 'resumed', 15_000);
    }
  });

  it('a snapshot is never replaced by an older fetch', async () => {
    const handle = connectDatabase(s.db.url, { max: 2, applicationName: 'test' });
    try {
      const href = `${apiBase()}/rfqs/rfq-order`;
      const { rows } = await s.sql.query(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
         SELECT company_id, id, 'rfq-order', 'rfqs', $1, '{}'::jsonb, 'basic', 'queued' FROM webhooks LIMIT 2 RETURNING id`,
        [href],
      );
      const claim = (id: number) => ({ ids: [id], receivedAt: [0], type: 'rfqs', resourceId: 'rfq-order', previous: null });
      const store = snapshotStore(handle);
      const newer = await store.store(fetched({ companyId, href, claimed: claim(rows[0].id), fetchStartedAt: new Date('2030-01-01T00:00:02Z'), resource: { v: 'newer' } }));
      const older = await store.store(fetched({ companyId, href, claimed: claim(rows[0].id), fetchStartedAt: new Date('2030-01-01T00:00:01Z'), resource: { v: 'older' } }));
      expect(newer.version).toBe(1);
      expect(older.version).toBe(1); // covered by the newer copy
      expect(older.stored).toBeNull();
      const stored = await s.sql.query('SELECT version, body FROM resources WHERE href = $1', [href]);
      expect(stored.rows[0]).toMatchObject({ version: 1, body: { v: 'newer' } });
    } finally {
      await handle.pool.end();
    }
  });

  it('concurrent fetches are written together, and each gets its own result', async () => {
    const handle = connectDatabase(s.db.url, { max: 2, applicationName: 'test' });
    try {
      const hrefs = ['rfq-batch-a', 'rfq-batch-b', 'rfq-batch-c'].map((id) => `${apiBase()}/rfqs/${id}`);
      const { rows } = await s.sql.query<{ id: string; href: string }>(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
         SELECT w.company_id, w.id, split_part(h, '/', -1), 'rfqs', h, '{}'::jsonb, 'basic', 'queued'
         FROM (SELECT * FROM webhooks LIMIT 1) w, unnest($1::text[]) AS h, generate_series(1, 2) RETURNING id, href`,
        [hrefs],
      );
      const idsOf = (href: string) => rows.filter((r) => r.href === href).map((r) => Number(r.id));
      const store = snapshotStore(handle);
      // b already has a copy fetched later than this batch's fetch: it keeps it, and its rows are covered by it.
      await store.store(fetched({ companyId, href: hrefs[1]!, claimed: claimOf([], 'rfq-batch-b'), fetchStartedAt: new Date('2030-01-01T00:00:09Z'), resource: { v: 'b-later' } }));
      const events = Number((await s.sql.query('SELECT count(*) FROM events')).rows[0].count);

      const versions = await Promise.all(
        hrefs.map((href, i) =>
          store.store(fetched({ companyId, href, claimed: claimOf(idsOf(href), href.split('/').at(-1)!), fetchStartedAt: new Date('2030-01-01T00:00:05Z'), resource: { v: i } })).then((r) => r.version),
        ),
      );
      expect(versions).toEqual([1, 1, 1]);
      const { rows: resources } = await s.sql.query('SELECT href, version, body FROM resources WHERE href = ANY($1) ORDER BY href', [hrefs]);
      expect(resources.map((r) => r.body)).toEqual([{ v: 0 }, { v: 'b-later' }, { v: 2 }]);
      // One event per stored snapshot (a and c), none for b.
      expect(Number((await s.sql.query('SELECT count(*) FROM events')).rows[0].count)).toBe(events + 2);
      const { rows: marked } = await s.sql.query('SELECT href, status, snapshot_version FROM notifications WHERE href = ANY($1)', [hrefs]);
      expect(marked).toHaveLength(6);
      for (const row of marked) expect(row).toMatchObject({ status: 'processed', snapshot_version: 1 });
    } finally {
      await handle.pool.end();
    }
  });
});

describe('a marketplace slower than FETCH_TIMEOUT_MS', () => {
  it('gives up on the GET at the timeout and retries it, keeping the reason', async () => {
    const slow = await startScenario({ env: { FETCH_TIMEOUT_MS: '300', FETCH_ATTEMPTS: '2', FETCH_BACKOFF_BASE_MS: '50' }, sim: { faults: { resourceLatencyMs: 1500 } } });
    try {
      await slow.company('acme');
      await slow.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-slow' });
      const row = await eventually(async () => {
        const { rows } = await slow.sql.query('SELECT status, attempts, last_error FROM notifications');
        return rows[0]?.status === 'failed' ? rows[0] : undefined;
      }, 'failed after its attempts', 15_000);
      expect(row).toMatchObject({ status: 'failed', attempts: 2 });
      expect(row.last_error).toContain('timed out after 300 ms');
    } finally {
      await slow.close();
    }
  });
});

/** A snapshot store of its own, on `handle`'s pool (without the worker around it). */
function snapshotStore(handle: ReturnType<typeof connectDatabase>): SnapshotStore {
  return new SnapshotStore(createNotificationsRepository(handle.pool), builtInHandlers(), () => handle.db, () => {});
}

const claimOf = (ids: number[], resourceId: string) => ({ ids, receivedAt: ids.map(() => 0), type: 'rfqs', resourceId, previous: null });

/** A fetch that got its resource, as the worker hands it to the store. */
const fetched = (f: { companyId: string; href: string; claimed: ReturnType<typeof claimOf>; fetchStartedAt: Date; resource: unknown }) => ({
  ...f,
  fetchFinishedAt: new Date(f.fetchStartedAt.getTime() + 10),
  httpStatus: 200,
  changes: null,
});
