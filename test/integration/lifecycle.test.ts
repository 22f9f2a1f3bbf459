/**
 * The notification lifecycle as an operator sees it (SPEC §5 `changes`, §7, §7.1): a notification's
 * timeline with every fetch attempt and replay, what changed between a resource's versions, the list's
 * filters, bulk replay, deleting companies and webhooks, and the live stream of status changes. Against
 * the simulator, the real PostgreSQL and Redis.
 */
import jsonpatch from 'fast-json-patch';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusEvent } from '../../src/services/notification-stream.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN, eventually } from '../helpers/skyhook.js';

let s: Scenario;
let companyId: string;
let webhookId: string;

beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', FETCH_ATTEMPTS: '2', FETCH_BACKOFF_BASE_MS: '50', FETCH_BACKOFF_MAX_MS: '100' } });
  ({ companyId, webhookId } = await s.company('acme'));
});
afterAll(async () => s?.close());

/** Fires one notification for the resource and waits until it is final; answers its id and href. */
async function notify(resourceId: string, responses: { status: number; body?: unknown; headers?: Record<string, string> }[] = []) {
  const href = `${s.sim.apiBaseUrl}/rfqs/${resourceId}`;
  const { rows: before } = await s.sql.query(`SELECT coalesce(max(id), 0) AS last FROM notifications WHERE href = $1`, [href]);
  if (responses.length > 0) s.sim.programResource({ href, responses });
  await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId });
  return eventually(async () => {
    const { rows } = await s.sql.query(`SELECT id, status FROM notifications WHERE href = $1 AND id > $2 ORDER BY id DESC LIMIT 1`, [href, before[0].last]);
    return rows[0] && ['processed', 'failed'].includes(rows[0].status) ? { id: String(rows[0].id), href } : undefined;
  }, `notification for ${resourceId} final`);
}

const kinds = (timeline: { kind: string }[]) => timeline.map((e) => e.kind);

describe('a notification’s timeline (SPEC §7.1)', () => {
  it('shows every fetch attempt with its status, outcome and error, then the final status', async () => {
    const { id } = await notify('rfq-timeline', [{ status: 503, headers: { 'retry-after': '0' } }]);
    const { status, body } = await s.skyhook.admin('GET', `/notifications/${id}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'processed', attempts: 2, processedAt: expect.any(String), finishedAt: body.processedAt });
    expect(kinds(body.timeline)).toEqual(['received', 'queued', 'fetch', 'fetch', 'processed']);
    const [retry, stored] = body.timeline.filter((e: { kind: string }) => e.kind === 'fetch');
    expect(retry).toMatchObject({ httpStatus: 503, outcome: 'retry', error: 'marketplace answered 503', snapshotVersion: null });
    expect(stored).toMatchObject({ httpStatus: 200, outcome: 'stored', error: null, snapshotVersion: 1 });
    expect(stored.durationMs).toBe(Date.parse(stored.finishedAt) - Date.parse(stored.startedAt));
    expect(Date.parse(body.timeline[0].at)).toBeLessThanOrEqual(Date.parse(retry.startedAt));
  });

  it('keeps a failure and its attempts through a replay: the replay adds entries, it erases nothing', async () => {
    const { id } = await notify('rfq-replayed', [{ status: 502 }, { status: 502 }]);
    const failed = (await s.skyhook.admin('GET', `/notifications/${id}`)).body;
    expect(failed).toMatchObject({ status: 'failed', processedAt: null, finishedAt: expect.any(String), lastError: 'gave up after 2 attempts: marketplace answered 502' });
    expect(kinds(failed.timeline)).toEqual(['received', 'queued', 'fetch', 'fetch', 'failed']);

    const replayed = await s.skyhook.admin('POST', `/notifications/${id}/replay`);
    expect(replayed.status).toBe(200);
    expect(replayed.body.note).toBeNull();
    await eventually(async () => (await s.skyhook.admin('GET', `/notifications/${id}`)).body.status === 'processed', 'the replay processed');
    const after = (await s.skyhook.admin('GET', `/notifications/${id}`)).body;
    expect(kinds(after.timeline)).toEqual(['received', 'queued', 'fetch', 'fetch', 'failed', 'replayed', 'queued', 'fetch', 'processed']);
    const failedEntry = after.timeline.find((e: { kind: string }) => e.kind === 'failed');
    expect(failedEntry.error).toBe('gave up after 2 attempts: marketplace answered 502');
    expect(after.timeline.filter((e: { kind: string }) => e.kind === 'fetch').map((e: { httpStatus: number }) => e.httpStatus)).toEqual([502, 502, 200]);
  });

  it('a burst for one resource shares its fetches: a row per fetch, not per notification, each in the timelines it covered', async () => {
    const href = `${s.sim.apiBaseUrl}/rfqs/rfq-burst`;
    await s.skyhook.runtime.worker!.pause(); // the burst gathers while the worker does not run
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-burst', count: 20 });
    await s.sim.idle();
    await eventually(async () => (await s.sql.query('SELECT count(*)::int AS n FROM notifications WHERE href = $1', [href])).rows[0].n === 20, '20 stored');
    s.skyhook.runtime.worker!.resume();
    await eventually(async () => (await s.sql.query(`SELECT count(*)::int AS n FROM notifications WHERE href = $1 AND status = 'processed'`, [href])).rows[0].n === 20, '20 processed');
    const attempts = (await s.sql.query('SELECT id, notification_ids FROM fetch_attempts WHERE href = $1', [href])).rows;
    expect(attempts).toHaveLength(1);
    expect(attempts[0].notification_ids).toHaveLength(20);
    const { rows } = await s.sql.query('SELECT fetch_attempt_ids FROM notifications WHERE href = $1', [href]);
    for (const r of rows) expect(r.fetch_attempt_ids).toEqual([attempts[0].id]);
  });

  it('a notification of a deactivated webhook is discarded at once: finishedAt, no processedAt', async () => {
    const { rows } = await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, finished_at)
       VALUES ($1, $2, 'd', 'rfqs', 'http://x/api/rfqs/d', '{}', 'basic', 'discarded', now()) RETURNING id`,
      [companyId, webhookId],
    );
    const { body } = await s.skyhook.admin('GET', `/notifications/${rows[0].id}`);
    expect(body).toMatchObject({ status: 'discarded', processedAt: null, finishedAt: expect.any(String) });
    expect(kinds(body.timeline)).toEqual(['received', 'discarded']);
  });
});

describe('what changed (SPEC §5 changes)', () => {
  it('each stored version’s event has the RFC 6902 patch from the version before; the history lists them', async () => {
    const { href } = await notify('rfq-changes');
    s.sim.programResource({ href, responses: [{ status: 200, body: { meta: { errors: [], warnings: [], infos: [] }, data: { id: 'rfq-changes', state: 'Quoted', legs: [{ from: 'EGLL' }, { from: 'LFPB' }] } } }] });
    await notify('rfq-changes');
    const { rows } = await s.sql.query('SELECT snapshot_version, changes FROM events WHERE href = $1 ORDER BY id', [href]);
    expect(rows.map((r) => r.snapshot_version)).toEqual([1, 2]);
    expect(rows[0].changes).toBeNull();
    const v1 = (await s.sql.query('SELECT body FROM resources WHERE href = $1', [href])).rows[0].body;
    expect(v1).toMatchObject({ state: 'Quoted' });

    const history = await s.skyhook.admin('GET', `/resources/history?companyId=${companyId}&href=${encodeURIComponent(href)}`);
    expect(history.status).toBe(200);
    expect(history.body.items.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    const [second, first] = history.body.items;
    expect(first.changes).toBeNull();
    expect(second.changes).toEqual(rows[1].changes);
    expect(second.changes).toContainEqual({ op: 'add', path: '/state', value: 'Quoted' });
    expect(new Date(second.fetchedAt).getTime()).toBeGreaterThan(new Date(first.fetchedAt).getTime());

    const missing = await s.skyhook.admin('GET', `/resources/history?companyId=${companyId}&href=${encodeURIComponent(`${href}-none`)}`);
    expect(missing.status).toBe(404);
    const bad = await s.skyhook.admin('GET', '/resources/history?companyId=nope');
    expect(bad.status).toBe(400);
  });

  it('the patch applied to the previous version gives the new one', async () => {
    const { href } = await notify('rfq-patch');
    const before = (await s.sql.query('SELECT body FROM resources WHERE href = $1', [href])).rows[0].body;
    s.sim.programResource({ href, responses: [{ status: 200, body: { meta: { errors: [], warnings: [], infos: [] }, data: { ...before, version: 7, extra: { a: [1, 2] } } } }] });
    await notify('rfq-patch');
    const after = (await s.sql.query('SELECT body FROM resources WHERE href = $1', [href])).rows[0].body;
    const { changes } = (await s.sql.query('SELECT changes FROM events WHERE href = $1 ORDER BY id DESC LIMIT 1', [href])).rows[0];
    expect(jsonpatch.applyPatch(structuredClone(before), changes).newDocument).toEqual(after);
  });

  it('NOTIFY skyhook_events carries the changes while they fit, and a summary when they do not', async () => {
    const listener = new pg.Client({ connectionString: s.db.url });
    await listener.connect();
    const payloads: Record<string, unknown>[] = [];
    listener.on('notification', (n) => payloads.push(JSON.parse(n.payload!)));
    await listener.query('LISTEN skyhook_events');
    try {
      const { href } = await notify('rfq-big');
      const big = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`field${i}`, `value-${'x'.repeat(20)}-${i}`]));
      s.sim.programResource({ href, responses: [{ status: 200, body: { meta: { errors: [], warnings: [], infos: [] }, data: { id: 'rfq-big', ...big } } }] });
      await notify('rfq-big');
      await eventually(async () => payloads.filter((p) => p.href === href).length === 2, 'both events announced');
      const [first, second] = payloads.filter((p) => p.href === href);
      expect(first).toMatchObject({ snapshotVersion: 1, changes: null });
      expect(second).toMatchObject({ snapshotVersion: 2, changesTruncated: true, changesSummary: { operations: expect.any(Number) } });
      expect(second).not.toHaveProperty('changes');
      const row = (await s.sql.query('SELECT id, changes FROM events WHERE href = $1 ORDER BY id DESC LIMIT 1', [href])).rows[0];
      expect(String(second!.id)).toBe(String(row.id));
      expect((second!.changesSummary as { operations: number }).operations).toBe(row.changes.length);
    } finally {
      await listener.end();
    }
  });
});

describe('the list’s filters (SPEC §7)', () => {
  it('filter by webhook, resource id, href and received time; a bad value is a 400 naming the field', async () => {
    const { id, href } = await notify('rfq-filters');
    const received = (await s.sql.query('SELECT received_at FROM notifications WHERE id = $1', [id])).rows[0].received_at as Date;
    const list = async (query: string) => (await s.skyhook.admin('GET', `/notifications?${query}`)).body.items.map((n: { id: string }) => n.id);
    expect(await list(`resourceId=rfq-filters`)).toEqual([id]);
    expect(await list(`href=${encodeURIComponent(href)}`)).toEqual([id]);
    expect(await list(`webhookId=${webhookId}&resourceId=rfq-filters`)).toEqual([id]);
    expect(await list(`webhookId=00000000-0000-4000-8000-000000000000&resourceId=rfq-filters`)).toEqual([]);
    expect(await list(`resourceId=rfq-filters&receivedAfter=${encodeURIComponent(received.toISOString())}`)).toEqual([id]);
    expect(await list(`resourceId=rfq-filters&receivedBefore=${encodeURIComponent(received.toISOString())}`)).toEqual([]);
    expect(await list(`resourceId=rfq-filters&receivedBefore=${encodeURIComponent(new Date(received.getTime() + 1000).toISOString().replace('Z', '+00:00'))}`)).toEqual([id]);
    for (const [query, field] of [
      ['receivedAfter=yesterday', 'querystring.receivedAfter'],
      ['receivedBefore=2026-13-01T00:00:00Z', 'querystring.receivedBefore'],
      ['webhookId=42', 'querystring.webhookId'],
      [`href=${'h'.repeat(2049)}`, 'querystring.href'],
    ]) {
      const res = await s.skyhook.admin('GET', `/notifications?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field), query).toContain(field);
    }
  });

  it('bulk replay takes the same filters', async () => {
    const { id } = await notify('rfq-bulk', [{ status: 500 }, { status: 500 }]);
    const dry = await s.skyhook.admin('POST', '/notifications/replay', { resourceId: 'rfq-bulk', dryRun: true });
    expect(dry.body).toEqual({ matched: 1, replayed: 0 });
    const done = await s.skyhook.admin('POST', '/notifications/replay', { resourceId: 'rfq-bulk', webhookId });
    expect(done.body).toEqual({ matched: 1, replayed: 1 });
    await eventually(async () => (await s.skyhook.admin('GET', `/notifications/${id}`)).body.status === 'processed', 'replayed');
    const bad = await s.skyhook.admin('POST', '/notifications/replay', { receivedAfter: 'soon' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('body.receivedAfter');
  });
});

describe('replaying a notification of a paused company', () => {
  it('says the company is paused instead of only answering queued', async () => {
    const paused = await s.company('paused-co');
    const { rows } = await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, finished_at)
       VALUES ($1, $2, 'p', 'rfqs', $3, '{}', 'basic', 'failed', now()) RETURNING id`,
      [paused.companyId, paused.webhookId, `${s.sim.apiBaseUrl}/rfqs/p`],
    );
    await s.sql.query(`UPDATE companies SET connection_status = 'unauthorized', connection_error = 'GET x answered 401' WHERE id = $1`, [paused.companyId]);
    const res = await s.skyhook.admin('POST', `/notifications/${rows[0].id}/replay`);
    expect(res.status).toBe(200);
    expect(res.body.note).toMatch(/^Company paused-co is paused: the marketplace refused its API token \(GET x answered 401\)/);
  });
});

describe('deleting webhooks and companies', () => {
  it('deactivates the webhook on the marketplace first, then deletes it with its notifications and their history', async () => {
    const doomed = await s.company('doomed');
    await s.sim.fire({ companyId: 'doomed', eventType: 'TripRequest', resourceId: 'rfq-d' });
    await s.sim.idle();
    await eventually(async () => (await s.sql.query(`SELECT 1 FROM notifications WHERE company_id = $1 AND status = 'processed'`, [doomed.companyId])).rowCount === 1, 'processed');
    const res = await s.skyhook.admin('DELETE', `/companies/${doomed.companyId}/webhooks/${doomed.webhookId}`);
    expect(res.status).toBe(204);
    expect((await s.sim.fire({ companyId: 'doomed', eventType: 'TripRequest' }))[0]!.webhookIds).toEqual([]);
    expect((await s.sql.query('SELECT count(*)::int AS n FROM notifications WHERE company_id = $1', [doomed.companyId])).rows[0].n).toBe(0);
    expect((await s.sql.query(`SELECT count(*)::int AS n FROM fetch_attempts WHERE company_id = $1`, [doomed.companyId])).rows[0].n).toBe(0);
    expect((await s.skyhook.admin('GET', `/companies/${doomed.companyId}/webhooks/${doomed.webhookId}`)).status).toBe(404);
  });

  it('deletes nothing when the marketplace refuses (502), and deletes anyway with force=true, naming what stays active there', async () => {
    const stuck = await s.company('stuck');
    // Skyhook now holds a token the marketplace refuses.
    await s.skyhook.admin('PATCH', `/companies/${stuck.companyId}`, { apiToken: 'a-token-the-marketplace-refuses' });
    const refused = await s.skyhook.admin('DELETE', `/companies/${stuck.companyId}`);
    expect(refused.status).toBe(502);
    expect(refused.body.detail).toMatch(/was not deleted: the marketplace refused to deactivate its webhook setting/);
    expect((await s.skyhook.admin('GET', `/companies/${stuck.companyId}`)).status).toBe(200);
    expect((await s.skyhook.admin('GET', `/companies/${stuck.companyId}/webhooks/${stuck.webhookId}`)).body.active).toBe(true);

    const forced = await s.skyhook.admin('DELETE', `/companies/${stuck.companyId}?force=true`);
    expect(forced.status).toBe(200);
    expect(forced.body.remainingRemoteSettings).toEqual([{ webhookId: stuck.webhookId, remoteId: stuck.remoteWebhookId, error: expect.stringContaining('401') }]);
    expect((await s.skyhook.admin('GET', `/companies/${stuck.companyId}`)).status).toBe(404);
    expect((await s.sql.query('SELECT count(*)::int AS n FROM webhooks WHERE company_id = $1', [stuck.companyId])).rows[0].n).toBe(0);
  });

  it('a company held after a 429: its deletion waits (503, Retry-After), and force=true deletes it anyway, naming what stays active there', async () => {
    const held = await s.company('held-then-deleted');
    const href = `${s.sim.apiBaseUrl}/rfqs/rfq-held`;
    s.sim.programResource({ href, responses: [{ status: 429, headers: { 'retry-after': '60' } }] });
    await s.sim.fire({ companyId: 'held-then-deleted', eventType: 'TripRequest', resourceId: 'rfq-held' });
    await eventually(async () => (await s.skyhook.admin('GET', `/companies/${held.companyId}`)).body.state.status === 'throttled', 'the company held');
    const waits = await s.skyhook.admin('DELETE', `/companies/${held.companyId}`);
    expect(waits.status).toBe(503);
    expect(waits.body).toMatchObject({ code: 'company_throttled' });
    expect((await s.skyhook.admin('GET', `/companies/${held.companyId}`)).status).toBe(200);

    const forced = await s.skyhook.admin('DELETE', `/companies/${held.companyId}?force=true`);
    expect(forced.status).toBe(200);
    expect(forced.body.remainingRemoteSettings).toEqual([{ webhookId: held.webhookId, remoteId: held.remoteWebhookId, error: expect.stringContaining('wait') }]);
    expect((await s.skyhook.admin('GET', `/companies/${held.companyId}`)).status).toBe(404);
  });

  it('answers 404 for an unknown company or webhook, 400 for a bad force', async () => {
    expect((await s.skyhook.admin('DELETE', '/companies/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await s.skyhook.admin('DELETE', `/companies/${companyId}/webhooks/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    const bad = await s.skyhook.admin('DELETE', `/companies/${companyId}?force=maybe`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('querystring.force');
  });
});

/** A Server-Sent Events client of GET /admin/stream, keeping what it received. */
async function openStream(query = ''): Promise<{ events: StatusEvent[]; other: { event: string; data: unknown }[]; close: () => void }> {
  const controller = new AbortController();
  const res = await fetch(`${s.skyhook.url}/admin/stream${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: controller.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: StatusEvent[] = [];
  const other: { event: string; data: unknown }[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  void (async () => {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event === 'notification') events.push(JSON.parse(data!));
        else if (event) other.push({ event, data: JSON.parse(data!) });
      }
    }
  })().catch(() => undefined);
  return { events, other, close: () => controller.abort() };
}

describe('the live stream (GET /admin/stream)', () => {
  it('delivers each status change of each notification, in order, filtered by company', async () => {
    const other = await s.company('other-co');
    const all = await openStream();
    const mine = await openStream(`?companyId=${companyId}`);
    try {
      const { id } = await notify('rfq-stream');
      await s.sim.fire({ companyId: 'other-co', eventType: 'TripRequest', resourceId: 'rfq-other' });
      await eventually(async () => all.events.some((e) => e.companyId === other.companyId && e.status === 'processed'), 'the other company’s events');
      await eventually(async () => mine.events.filter((e) => e.id === id).some((e) => e.status === 'processed'), 'processed streamed');
      expect(mine.events.filter((e) => e.id === id).map((e) => e.status)).toEqual(['queued', 'processed']);
      expect(mine.events.find((e) => e.id === id)).toMatchObject({ companyId, webhookId, type: 'rfqs', resourceId: 'rfq-stream', at: expect.any(String) });
      expect(mine.events.every((e) => e.companyId === companyId)).toBe(true);
      expect(all.events.filter((e) => e.id === id).map((e) => e.status)).toEqual(['queued', 'processed']);
    } finally {
      all.close();
      mine.close();
    }
  });

  it('survives a lost connection to PostgreSQL: subscribers are told to resync, and events flow again', async () => {
    const stream = await openStream(`?companyId=${companyId}`);
    try {
      // The backend's last query is its liveness check after a few seconds: found by the name listen.ts gives it.
      const listening = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'skyhook-listen skyhook_notifications' AND datname = current_database()`;
      await eventually(async () => (await s.sql.query(listening.replace('pg_terminate_backend(pid)', '1'))).rowCount! > 0, 'listening');
      await s.sql.query(listening);
      await eventually(async () => stream.other.some((o) => o.event === 'resync'), 'a resync event', 10_000);
      const { id } = await notify('rfq-after-reconnect');
      await eventually(async () => stream.events.some((e) => e.id === id && e.status === 'processed'), 'events after the reconnect');
    } finally {
      stream.close();
    }
  });

  it('refuses subscribers beyond its bound with a 503 problem', async () => {
    const open: { close: () => void }[] = [];
    try {
      const controllers: AbortController[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 101 && !refused; i++) {
        const controller = new AbortController();
        controllers.push(controller);
        const res = await fetch(`${s.skyhook.url}/admin/stream`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: controller.signal });
        if (res.status === 503) refused = res;
        else open.push({ close: () => controller.abort() });
      }
      expect(refused?.status).toBe(503);
      expect(refused?.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(open.length).toBe(100);
    } finally {
      for (const o of open) o.close();
    }
    // Closed clients leave room again.
    await eventually(async () => {
      const res = await fetch(`${s.skyhook.url}/admin/stream`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(1000) }).catch(() => undefined);
      const ok = res?.status === 200;
      await res?.body?.cancel();
      return ok;
    }, 'room for a new subscriber');
  });
});

describe('SQL views', () => {
  it('fetches_by_resource answers the resources fetched most often and failing most', async () => {
    const href = `${s.sim.apiBaseUrl}/rfqs/rfq-timeline`;
    const { rows } = await s.sql.query('SELECT fetches, failures, last_error FROM fetches_by_resource WHERE company_id = $1 AND href = $2', [companyId, href]);
    expect(rows[0]).toMatchObject({ fetches: '2', failures: '1', last_error: 'marketplace answered 503' });
  });

  it('failures_by_reason dates failures by when they failed', async () => {
    await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, last_error, received_at, finished_at)
       VALUES ($1, $2, 'v', 'rfqs', 'http://x/api/rfqs/v', '{}', 'basic', 'failed', 'gave up after 2 attempts: view test', now() - interval '2 hours', now() - interval '1 hour'),
              ($1, $2, 'v', 'rfqs', 'http://x/api/rfqs/v', '{}', 'basic', 'failed', 'gave up after 2 attempts: view test', now() - interval '3 hours', now() - interval '2 hours')`,
      [companyId, webhookId],
    );
    const { rows } = await s.sql.query(
      `SELECT failures, now() - first_failed_at AS first, now() - last_failed_at AS last FROM failures_by_reason WHERE company_id = $1 AND reason = 'view test'`,
      [companyId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ failures: '2', first: { hours: 2 }, last: { hours: 1 } });
  });
});
