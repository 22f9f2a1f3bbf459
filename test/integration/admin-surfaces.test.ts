/** The rest of SPEC §7: bulk replay, the OpenAPI document and UI, the queue dashboard, the SQL views. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN, eventually, startSkyhook } from '../helpers/skyhook.js';

let s: Scenario;
let companyId: string;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', FETCH_ATTEMPTS: '1' } });
  ({ companyId } = await s.company('acme'));
});
afterAll(async () => s?.close());

describe('bulk replay', () => {
  it('replays every failed notification matching the filter, and only those', async () => {
    const failing = Array.from({ length: 3 }, (_, i) => `rfq-fail-${i}`);
    for (const id of failing) s.sim.programResource({ href: `${s.sim.apiBaseUrl}/rfqs/${id}`, responses: [{ status: 500 }] });
    for (const id of failing) await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: id });
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-fine' });
    await s.settled(4);
    expect(await s.statusCounts()).toEqual({ failed: 3, processed: 1 });

    const bad = await s.skyhook.admin('POST', '/notifications/replay', { status: 'bogus' });
    expect(bad.status).toBe(400);
    // A dry run only counts.
    const dry = await s.skyhook.admin('POST', '/notifications/replay', { companyId, status: 'failed', dryRun: true });
    expect(dry).toEqual({ status: 200, body: { matched: 3, replayed: 0 } });
    expect(await s.statusCounts()).toEqual({ failed: 3, processed: 1 });
    const res = await s.skyhook.admin('POST', '/notifications/replay', { companyId, status: 'failed' });
    expect(res).toEqual({ status: 200, body: { matched: 3, replayed: 3 } });
    await eventually(async () => (await s.statusCounts()).processed === 4, 'replayed notifications processed');
    expect(s.fetchesOf(`${s.sim.apiBaseUrl}/rfqs/rfq-fine`)).toHaveLength(1);
  });
});

describe('OpenAPI and the dashboard', () => {
  it('serves the OpenAPI document generated from the route schemas, and the docs UI', async () => {
    const doc = (await (await fetch(`${s.skyhook.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    for (const path of ['/admin/companies', '/admin/companies/{companyId}/webhooks', '/admin/companies/{companyId}/leads', '/admin/companies/{companyId}/quotes', '/admin/notifications/replay', '/admin/resources']) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(JSON.stringify(doc.paths['/admin/companies/{companyId}/leads']!.post!.requestBody)).toContain('emptyLegId');
    // Documentation, not only a shape: every operation has a summary and a description; the receiver has its tag.
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods as Record<string, { summary?: string; description?: string; tags?: string[] }>).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, ...op })),
    );
    expect(operations.filter((op) => !op.summary || !op.description).map((op) => op.name)).toEqual([]);
    expect(operations.filter((op) => op.name.includes('/hooks')).map((op) => [op.name, op.tags])).toEqual([
      ['POST /hooks/{endpointKey}', ['receiver']],
      ['POST /hooks', ['receiver']],
    ]);
    const ui = await fetch(`${s.skyhook.url}/docs/`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('swagger');
  });

  it('keeps the BullMQ dashboard behind the admin token (Bearer, or Basic with the token as password)', async () => {
    const anonymous = await fetch(`${s.skyhook.url}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="skyhook"');
    const wrong = await fetch(`${s.skyhook.url}/admin/queues/api/queues`, { headers: { authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` } });
    expect(wrong.status).toBe(401);
    const page = await fetch(`${s.skyhook.url}/admin/queues`, { headers: { authorization: `Basic ${Buffer.from(`ops:${ADMIN_TOKEN}`).toString('base64')}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>');
    const api = await fetch(`${s.skyhook.url}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(api.status).toBe(200);
    expect(JSON.stringify(await api.json())).toContain('"fetch"');
  });
});

describe('the dashboard refuses like the rest of the admin API', () => {
  it('answers a refused /admin/queues request with a problem (no stack) and the Basic challenge', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const res = await fetch(`${s.skyhook.url}${path}`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      expect(res.status, path).toBe(401);
      expect(res.headers.get('content-type'), path).toContain('application/problem+json');
      expect(res.headers.get('www-authenticate'), path).toBe('Basic realm="skyhook"');
      const body = (await res.json()) as Record<string, unknown>;
      expect(body, path).toMatchObject({ type: 'about:blank', title: 'Unauthorized', status: 401, code: 'unauthorized' });
      expect(body, path).not.toHaveProperty('stack');
    }
  });

  it('counts refused dashboard requests as failed authentications', async () => {
    const limited = await startSkyhook({ databaseUrl: s.db.url, queuePrefix: s.prefix, role: 'api', env: { AUTH_FAILURE_LIMIT: '3' } });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${limited.url}/admin/queues`)).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.stop();
    }
  });
});

describe('SQL views', () => {
  it('answer backlog, failures by reason and throughput per hour', async () => {
    const backlog = await s.sql.query('SELECT company, pending, oldest_pending_age_s FROM backlog WHERE company_id = $1', [companyId]);
    expect(backlog.rows).toEqual([{ company: 'acme', pending: '0', oldest_pending_age_s: 0 }]);
    await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, last_error, received_at)
       SELECT company_id, id, 'x', 'rfqs', 'http://x/api/rfqs/x', '{}'::jsonb, 'basic', st::notification_status, err, now() - interval '90 seconds'
       FROM webhooks, (VALUES ('failed', 'gave up after 12 attempts: marketplace answered 503'), ('failed', 'gave up after 3 attempts: marketplace answered 503'), ('queued', NULL)) v(st, err)`,
    );
    const pending = await s.sql.query('SELECT pending, oldest_pending_age_s FROM backlog WHERE company_id = $1', [companyId]);
    expect(pending.rows[0].pending).toBe('1');
    expect(pending.rows[0].oldest_pending_age_s).toBeGreaterThanOrEqual(89);
    const failures = await s.sql.query(`SELECT reason, failures FROM failures_by_reason WHERE company_id = $1 ORDER BY failures DESC`, [companyId]);
    expect(failures.rows[0]).toEqual({ reason: 'marketplace answered 503', failures: '2' });
    const hourly = await s.sql.query('SELECT sum(received)::int AS received, sum(processed)::int AS processed FROM throughput_hourly WHERE company_id = $1', [companyId]);
    expect(hourly.rows[0]).toEqual({ received: 7, processed: 4 });
    await s.sql.query(`DELETE FROM notifications WHERE resource_id = 'x'`);
  });
});
