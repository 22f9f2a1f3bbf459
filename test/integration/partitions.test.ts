/**
 * The growing tables' partitions (SPEC §5.3; src/db/partitions.ts, src/processing/retention.ts): made ahead
 * (the template database is made as a process's start-up makes it), made further and dropped by the
 * retention pass as time moves (its clock injected; rows put in a day's partition by their time-carrying id),
 * unfinished work kept, nothing in the default partitions, and the rules that replaced unique keys and keys.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { DAYS_AHEAD, defaultPartitionRows, listPartitions, maintainPartitions, PARTITIONED_TABLES } from '../../src/db/partitions.js';
import { idAt } from '../../src/db/schema/partitioned.js';
import { destinationGateOptions } from '../../src/delivery/delivery.queue.js';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';
import { createDestinationStates } from '../../src/destinations/postgres.js';
import { Gate } from '../../src/gate/gate.js';
import { EXPIRED_ACTION, retentionPass } from '../../src/processing/retention.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { runSkyhook } from '../helpers/cli.js';
import { connectFixtures, seedCompany, seedWebhook } from '../helpers/fixtures.js';

const SECRET_KEY = randomBytes(32);
const DAY_MS = 86_400_000;
const today = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS);
const dayOf = (offset: number) => new Date(today.getTime() + offset * DAY_MS);
const suffix = (d: Date) => d.toISOString().slice(0, 10).replaceAll('-', '');
const RETENTIONS = { notifications: 30, events: 90, audit: 365 };
const log = pino({ level: 'silent' });

let db: TestDatabase;
let fx: DbHandle;
let companyId: string;
let webhookId: string;
let destinationId: string;
let redis: Redis;

beforeAll(async () => {
  db = await createTestDatabase();
  fx = connectFixtures(db.url);
  redis = new Redis(REDIS_URL);
  companyId = (await seedCompany(fx.db, SECRET_KEY)).id;
  webhookId = (await seedWebhook(fx.db, SECRET_KEY, { companyId, authType: 'BASIC', publicBaseUrl: 'http://127.0.0.1:3000' })).id;
  const { rows } = await fx.pool.query<{ id: string }>(
    `INSERT INTO destinations (company_id, url, secret_encrypted) VALUES ($1, 'https://example.com/hook', 'x') RETURNING id`,
    [companyId],
  );
  destinationId = rows[0]!.id;
});

afterAll(async () => {
  redis?.disconnect();
  await fx?.pool.end();
  await db?.drop();
});

/** A notification (with `status`) in `day`'s partition, with a fetch attempt, a replay, an event, a delivery and its attempt there too. */
async function dayOfWork(day: Date, status: 'processed' | 'queued', opts: { delivery?: 'delivered' | 'pending'; seq: number }): Promise<number> {
  const id = idAt(day) + 1 + Math.floor(Math.random() * 1000);
  const q = (text: string, values: unknown[]) => fx.pool.query(text, values);
  await q(
    `INSERT INTO notifications (id, company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
     VALUES ($1, $2, $3, 'r1', 'rfqs', 'http://x/rfqs/r1', '{}', 'basic', $4)`,
    [id, companyId, webhookId, status],
  );
  await q(`INSERT INTO fetch_attempts (id, company_id, href, started_at, finished_at, outcome, notification_ids) VALUES ($1, $2, 'http://x/rfqs/r1', now(), now(), 'stored', $3)`, [
    id,
    companyId,
    [id],
  ]);
  await q(`INSERT INTO notification_replays (id, notification_id, previous_status) VALUES ($1, $1, 'failed')`, [id]);
  await q(`INSERT INTO events (id, company_id, seq, type, resource_id, href, snapshot_version) VALUES ($1, $2, $3, 'rfqs', 'r1', 'http://x/rfqs/r1', 1)`, [id, companyId, opts.seq]);
  if (opts.delivery) {
    // Created past retention, as a delivery of that day would be by then: the pass ends a pending one expired first.
    await q(
      `INSERT INTO deliveries (id, company_id, destination_id, event_id, href, resource_type, resource_id, version, status, created_at)
       VALUES ($1, $2, $3, $1, 'http://x/rfqs/r1', 'rfqs', 'r1', 1, $4, now() - interval '40 days')`,
      [id, companyId, destinationId, opts.delivery],
    );
    await q(`INSERT INTO delivery_attempts (id, delivery_id, started_at, duration_ms, url) VALUES ($1, $1, now(), 5, 'https://example.com/hook')`, [id]);
  }
  await q(`INSERT INTO audit_log (id, actor_kind, actor_name, action, outcome) VALUES ($1, 'local', 'test', 'test.day', 'ok')`, [id]);
  return id;
}

const names = async () => new Set((await listPartitions(fx.pool)).map((p) => p.name));
/** The pass the retention job runs, on the deliveries' repository as the runtime builds it, at `now`. */
const pass = (now: Date, retentions = RETENTIONS) => {
  const deliveries = createDestinationStates({
    db: fx.db,
    gate: new Gate(redis, testQueuePrefix(), 'destination', destinationGateOptions()),
    wake: () => Promise.reject(new Error('expire queues nothing')),
    schedule: [0],
    log,
    onGateError: (err) => {
      throw err;
    },
  });
  return retentionPass({ pool: fx.pool, resources: createNotificationsRepository(fx.pool), deliveries, countExpired: () => undefined, retentions, log, now });
};

describe('partitions', () => {
  it('exist ahead after start-up: today and the next DAYS_AHEAD days of every growing table, a history and a default partition', async () => {
    const have = await names();
    for (const { table } of PARTITIONED_TABLES) {
      for (let d = 0; d <= DAYS_AHEAD; d++) expect(have, `${table} day ${d}`).toContain(`${table}_p${suffix(dayOf(d))}`);
      expect(have).toContain(`${table}_history`);
      expect(have).toContain(`${table}_default`);
    }
    // Each is a partition of its table, bounded by the ids of its day.
    const { rows } = await fx.pool.query<{ bound: string }>(`SELECT pg_get_expr(relpartbound, oid) AS bound FROM pg_class WHERE relname = $1`, [`notifications_p${suffix(today)}`]);
    expect(rows[0]!.bound).toBe(`FOR VALUES FROM ('${idAt(today)}') TO ('${idAt(dayOf(1))}')`);
  });

  it('skyhook partitions list and maintain: what exists, and a maintenance that finds nothing to do on a database made ahead', async () => {
    const env = { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
    const list = await runSkyhook(env, ['partitions', 'list', '--json']);
    expect(list, list.stderr).toMatchObject({ code: 0 });
    const listed = JSON.parse(list.stdout) as { table: string; name: string; kind: string; rows: number }[];
    expect(listed).toContainEqual(expect.objectContaining({ table: 'notifications', name: `notifications_p${suffix(today)}`, kind: 'day' }));
    expect(listed.filter((p) => p.kind === 'default').map((p) => p.rows)).toEqual(PARTITIONED_TABLES.map(() => 0));
    const human = await runSkyhook(env, ['partitions', 'list']);
    expect(human.stdout).toMatch(new RegExp(`^notifications +notifications_p${suffix(today)} +${today.toISOString().slice(0, 10)} `, 'm'));
    const maintain = await runSkyhook(env, ['partitions', 'maintain']);
    expect(maintain, maintain.stderr).toMatchObject({ code: 0, stdout: 'made 0 partitions\ndropped 0\n' });
    const refused = await runSkyhook({ ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none' }, ['partitions', 'list']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('DATABASE_URL');
  });

  it('a row stored the usual way lands in its day’s partition, found there by its id alone', async () => {
    const { rows } = await fx.pool.query<{ id: string; part: string }>(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by)
       VALUES ($1, $2, 'r0', 'rfqs', 'http://x/rfqs/r0', '{}', 'basic') RETURNING id, tableoid::regclass::text AS part`,
      [companyId, webhookId],
    );
    expect(rows[0]!.part).toBe(`notifications_p${suffix(today)}`);
    const plan = await fx.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT * FROM notifications WHERE id = ${rows[0]!.id}`);
    const scanned = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(scanned).toContain(`notifications_p${suffix(today)}`);
    expect(scanned).not.toContain('notifications_history');
    expect(scanned).not.toContain('notifications_default');
    await fx.pool.query('DELETE FROM notifications WHERE id = $1', [rows[0]!.id]);
  });

  it('a company’s events are unique by seq within a partition, and event_sequences keeps them unique across', async () => {
    await dayOfWork(dayOf(3), 'processed', { seq: 9001 });
    const again = fx.pool.query(`INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version) VALUES ($1, 9001, 'rfqs', 'r1', 'http://x/rfqs/r1', 2)`, [companyId]).then(
      () => 'stored',
      (err: { code?: string }) => err.code,
    );
    // The row above sits in day 3's partition; a second (company, seq) in the same day is refused there.
    await fx.pool.query(`INSERT INTO events (id, company_id, seq, type, resource_id, href, snapshot_version) VALUES ($1, $2, 9002, 'rfqs', 'r1', 'http://x/rfqs/r1', 1)`, [idAt(dayOf(3)) + 5000, companyId]);
    const sameDay = await fx.pool
      .query(`INSERT INTO events (id, company_id, seq, type, resource_id, href, snapshot_version) VALUES ($1, $2, 9002, 'rfqs', 'r1', 'http://x/rfqs/r1', 1)`, [idAt(dayOf(3)) + 5001, companyId])
      .then(
        () => 'stored',
        (err: { code?: string }) => err.code,
      );
    expect(sameDay).toBe('23505');
    expect(await again).toBe('stored'); // today's partition: the code's rule (event_sequences) is what keeps seq unique there
    await fx.pool.query('DELETE FROM events WHERE seq IN (9001, 9002)');
    await fx.pool.query('DELETE FROM notifications; DELETE FROM fetch_attempts; DELETE FROM notification_replays');
  });

  it('a resource not fetched for EVENTS_RETENTION_DAYS is forgotten, unless a notification for it waits', async () => {
    const resource = (href: string, daysAgo: number) =>
      fx.pool.query(`INSERT INTO resources (company_id, href, type, resource_id, fetched_at, body) VALUES ($1, $2, 'rfqs', 'x', now() - make_interval(days => $3), '{}')`, [companyId, href, daysAgo]);
    await resource('http://x/rfqs/quiet', 91);
    await resource('http://x/rfqs/recent', 89);
    await resource('http://x/rfqs/waiting', 91);
    await fx.pool.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status) VALUES ($1, $2, 'x', 'rfqs', 'http://x/rfqs/waiting', '{}', 'basic', 'queued')`,
      [companyId, webhookId],
    );
    await pass(new Date());
    const { rows } = await fx.pool.query<{ href: string }>(`SELECT href FROM resources WHERE href LIKE 'http://x/rfqs/%' ORDER BY href`);
    expect(rows.map((r) => r.href)).toEqual(['http://x/rfqs/recent', 'http://x/rfqs/waiting']);
    await fx.pool.query(`DELETE FROM notifications WHERE href = 'http://x/rfqs/waiting'`);
  });

  it('nothing lands in a default partition in normal running; a row beyond every partition is caught there and counted', async () => {
    expect([...(await defaultPartitionRows(fx.pool)).values()].every((n) => n === 0)).toBe(true);
    const far = idAt(dayOf(4000));
    await fx.pool.query(`INSERT INTO audit_log (id, actor_kind, actor_name, action, outcome) VALUES ($1, 'local', 'test', 'test.far', 'ok')`, [far]);
    expect((await defaultPartitionRows(fx.pool)).get('audit_log')).toBe(1);
    // A partition for a day whose rows sit in the default cannot be attached: the maintenance says so rather than hide them.
    await expect(maintainPartitions(fx.pool, { now: dayOf(4000) })).rejects.toThrow(/default partition/);
  });
  it('a day a drop detached but did not drop (the process ended between the two) goes at the next pass, and is made again if ahead', async () => {
    const name = `notification_replays_p${suffix(dayOf(DAYS_AHEAD))}`;
    await fx.pool.query(`ALTER TABLE notification_replays DETACH PARTITION ${name}`);
    await fx.pool.query(`INSERT INTO ${name} (id, notification_id, previous_status) VALUES ($1, 1, 'processed')`, [idAt(dayOf(DAYS_AHEAD)) + 1]);
    const result = await pass(new Date());
    expect(result.dropped).toContain(name);
    expect(result.made).toContain(name);
    const { rows } = await fx.pool.query<{ attached: boolean }>(`SELECT relispartition AS attached FROM pg_class WHERE relname = $1`, [name]);
    expect(rows).toEqual([{ attached: true }]);
    expect((await fx.pool.query(`SELECT count(*)::int AS n FROM ${name}`)).rows[0].n).toBe(0);
  });
  // Last: it moves the clock a year on, past every partition made today.
  it('the pass makes partitions ahead as time moves, drops whole days past retention, and keeps a day with unfinished work until it ends', async () => {
    const parkedDay = dayOf(1);
    const doneDay = dayOf(2);
    const parked = await dayOfWork(parkedDay, 'queued', { seq: 1, delivery: 'delivered' });
    const done = await dayOfWork(doneDay, 'processed', { seq: 2, delivery: 'pending' });

    // 45 days on: notifications, their history and deliveries of days 1 and 2 are past RETENTION_DAYS.
    const later = dayOf(45);
    const first = await pass(later);
    const have = await names();
    for (let d = 45; d <= 45 + DAYS_AHEAD; d++) expect(have).toContain(`notifications_p${suffix(dayOf(d))}`);
    for (const table of ['notifications', 'fetch_attempts', 'notification_replays', 'deliveries', 'delivery_attempts']) {
      expect(have, `${table} of the finished day`).not.toContain(`${table}_p${suffix(doneDay)}`);
      expect(have, `${table} of the day a parked notification holds`).toContain(`${table}_p${suffix(parkedDay)}`);
    }
    expect(first.kept).toContainEqual({ day: parkedDay.toISOString().slice(0, 10), reason: expect.stringContaining('not final') });
    // The pending delivery of the finished day ended expired before its partition went (its row gone with it).
    expect((await fx.pool.query('SELECT count(*)::int AS n FROM deliveries WHERE id = $1', [done])).rows[0].n).toBe(0);
    // Events and the audit log keep their longer retentions.
    expect(have).toContain(`events_p${suffix(doneDay)}`);
    expect(have).toContain(`audit_log_p${suffix(doneDay)}`);
    expect((await fx.pool.query('SELECT count(*)::int AS n FROM notifications WHERE id = $1', [parked])).rows[0].n).toBe(1);

    // The parked notification ends: its day goes at the next pass.
    await fx.pool.query(`UPDATE notifications SET status = 'processed', finished_at = now() WHERE id = $1`, [parked]);
    const second = await pass(later);
    expect(second.dropped).toContain(`notifications_p${suffix(parkedDay)}`);
    expect(second.kept).toEqual([]);

    // 100 days on: the events of those days go; the audit log stays a year.
    await pass(dayOf(100));
    const after = await names();
    expect(after).not.toContain(`events_p${suffix(doneDay)}`);
    expect(after).toContain(`audit_log_p${suffix(doneDay)}`);
    await pass(dayOf(400));
    expect(await names()).not.toContain(`audit_log_p${suffix(doneDay)}`);
  });

  it('with EVENTS_RETENTION_DAYS shorter than RETENTION_DAYS, a pending delivery ends expired before its event can go', async () => {
    // A day the test before made ahead; dayOfWork's delivery was created 40 days ago (by the database's clock,
    // which expiring reads): within a 60-day RETENTION_DAYS, past a 30-day EVENTS_RETENTION_DAYS.
    const id = await dayOfWork(dayOf(401), 'processed', { seq: 3, delivery: 'pending' });
    const status = async () => (await fx.pool.query('SELECT status FROM deliveries WHERE id = $1', [id])).rows[0]?.status;
    await pass(dayOf(401), { notifications: 60, events: 90, audit: 365 });
    expect(await status()).toBe('pending');
    const auditedSince = new Date();
    await pass(dayOf(401), { notifications: 60, events: 30, audit: 365 });
    expect(await status()).toBe('expired');
    // Counted and audited (SPEC §5.2): one entry by Skyhook for the destination, with how many and why.
    const { rows: entries } = await fx.pool.query("SELECT actor_kind, actor_name, address, company_id, targets, details, outcome FROM audit_log WHERE action = $1 AND at >= $2", [EXPIRED_ACTION, auditedSince]);
    expect(entries).toEqual([{ actor_kind: 'system', actor_name: 'skyhook', address: null, company_id: companyId, targets: { destinationId }, details: { retentionDays: 30, expired: 1 }, outcome: 'ok' }]);
  });
});
