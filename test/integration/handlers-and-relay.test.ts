/**
 * The handler registry (a handler runs inside the snapshot's transaction; a failing one retries the
 * fetch and leaves nothing half-written), NOTIFY skyhook_events, and the relay that queues
 * notifications committed while they could not be queued.
 */
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HandlerRegistry, type NotificationHandler } from '../../src/processing/handlers/index.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let s: Scenario;
let failNext = 0;
const rfqsHandler: NotificationHandler = {
  type: 'rfqs',
  async handle({ tx, companyId, resourceId, snapshot, notificationIds }) {
    await tx.execute(sql`INSERT INTO handled (company_id, resource_id, version, notifications) VALUES (${companyId}, ${resourceId}, ${snapshot.version}, ${notificationIds.length})`);
    if (failNext > 0) {
      failNext--;
      throw new Error('business logic failed');
    }
  },
};

beforeAll(async () => {
  s = await startScenario({ role: 'api', env: { FETCH_MIN_INTERVAL_MS: '0' } });
  await s.sql.query('CREATE TABLE handled (company_id uuid, resource_id text, version int, notifications int)');
  await s.addSkyhook({ role: 'worker' }).then(() => {});
});
afterAll(async () => s?.close());

describe('handlers', () => {
  it('runs the type handler in the snapshot transaction; a failure retries and leaves nothing half-written', async () => {
    // Replace the worker with one that has the custom registry.
    await s.skyhooks.pop()!.stop();
    const { startSkyhook } = await import('../helpers/skyhook.js');
    const worker = await startSkyhook({ databaseUrl: s.db.url, queuePrefix: s.prefix, role: 'worker', handlers: new HandlerRegistry([rfqsHandler]), env: { FETCH_MIN_INTERVAL_MS: '0' } });
    s.skyhooks.push(worker);
    const { companyId } = await s.company('acme');

    failNext = 1;
    const [n] = await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-h' });
    await s.settled(1);
    const handled = await s.sql.query('SELECT * FROM handled');
    // The failed attempt's row was rolled back with its snapshot; the retry's row committed with it.
    expect(handled.rows).toEqual([{ company_id: companyId, resource_id: 'rfq-h', version: 1, notifications: 1 }]);
    const resource = await s.sql.query('SELECT version FROM resources WHERE href = $1', [n!.notification.href]);
    expect(resource.rows[0].version).toBe(1);
    const notification = await s.sql.query('SELECT status, attempts FROM notifications');
    expect(notification.rows[0]).toEqual({ status: 'processed', attempts: 2 });

    // A type without a handler: snapshot and event only.
    await s.sim.fire({ companyId: 'acme', eventType: 'ClientLeads', resourceId: 'lead-h' });
    await s.settled(2);
    expect((await s.sql.query('SELECT count(*)::int AS n FROM handled')).rows[0].n).toBe(1);
    expect((await s.sql.query(`SELECT count(*)::int AS n FROM events WHERE type = 'leads'`)).rows[0].n).toBe(1);
  });

  it('a handler that always fails ends its notifications failed, with the reason', async () => {
    failNext = 100;
    const [n] = await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-broken' });
    const row = await eventually(async () => {
      const r = await s.sql.query('SELECT status, attempts, last_error FROM notifications WHERE href = $1', [n!.notification.href]);
      return r.rows[0]?.status === 'failed' ? r.rows[0] : undefined;
    }, 'failed notification', 20_000);
    failNext = 0;
    expect(row.attempts).toBe(14);
    expect(row.last_error).toMatch(/gave up after 14 attempts: storing the snapshot failed: business logic failed/);
    expect((await s.sql.query('SELECT count(*)::int AS n FROM resources WHERE href = $1', [n!.notification.href])).rows[0].n).toBe(0);
  });

  it('announces every stored snapshot with NOTIFY skyhook_events', async () => {
    const listener = new pg.Client({ connectionString: s.db.url });
    await listener.connect();
    const payloads: { resourceId: string; snapshotVersion: number; type: string }[] = [];
    listener.on('notification', (m) => payloads.push(JSON.parse(m.payload!)));
    await listener.query('LISTEN skyhook_events');
    try {
      await s.sim.fire({ companyId: 'acme', eventType: 'EmptyLegs', resourceId: 'leg-1' });
      await eventually(async () => payloads.find((p) => p.resourceId === 'leg-1'), 'NOTIFY for leg-1');
      expect(payloads.find((p) => p.resourceId === 'leg-1')).toMatchObject({ type: 'emptylegs', snapshotVersion: 1 });
    } finally {
      await listener.end();
    }
  });
});

describe('relay', () => {
  it('queues notifications that were committed but never queued, and they get processed', async () => {
    const [n] = await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId: 'rfq-relay' });
    await s.settled(5);
    // As if Redis had been down when these were committed: rows left `received`, no job.
    const { rows } = await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, received_at)
       SELECT company_id, webhook_id, resource_id, type, href, body, authenticated_by, 'received', now() - interval '10 seconds'
       FROM notifications WHERE href = $1 RETURNING id`,
      [n!.notification.href],
    );
    await eventually(async () => {
      const r = await s.sql.query('SELECT status FROM notifications WHERE id = $1', [rows[0].id]);
      return r.rows[0].status === 'processed';
    }, 'relayed notification processed', 10_000);
    expect(s.fetchesOf(n!.notification.href)).toHaveLength(2);
  });
});
