/**
 * Processing must cost the same per notification on a large database as on the new one it started on.
 * PostgreSQL reuses a generic plan for a named statement after five executions on a connection; made
 * while the tables were small, the snapshot store's plan scanned all of `resources` and `notifications`
 * for every batch, and went on doing so as they grew. The worker's statements stay unnamed until their
 * generic plans would use the indexes (db/cached-plans.ts). The witness is PostgreSQL's own count of
 * rows read by sequential scans. And once named, a statement is not planned again for every batch.
 */
import pg from 'pg';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { CachedPlans } from '../../src/db/cached-plans.js';
import { connectDatabase } from '../../src/db/client.js';
import { ATTEMPT_STATEMENT, CLAIM_STATEMENT as DELIVERY_CLAIM, NEXT_DUE_STATEMENT } from '../../src/destinations/postgres.js';
import { CLAIM_STATEMENT, STORE_STATEMENT } from '../../src/notifications/postgres.js';
import { createTestDatabase } from '../helpers/database.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const GROWN_BY = 50_000;

it('the snapshot store keeps using the indexes after the tables grow from empty', async () => {
  scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  const s = scenario;
  // An ANALYZE would make PostgreSQL plan again; this test is about a connection that is never told to.
  await s.sql.query('ALTER TABLE resources SET (autovacuum_enabled = false)');
  // (On each of its partitions: a partitioned table has no storage of its own to vacuum.)
  await s.sql.query(`DO $$ DECLARE p regclass; BEGIN
    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'notifications'::regclass LOOP
      EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p);
    END LOOP; END $$`);
  const { companyId } = await s.company('acme');

  // One notification at a time: one store per notification, on the worker's pool connections, while
  // the tables hold a handful of rows.
  let fired = 0;
  const fireOne = async (resourceId: string) => {
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId });
    await s.settled(++fired);
  };
  for (let k = 0; k < 8; k++) await fireOne(`rfq-small-${k}`);

  // The tables grow as they would over weeks of traffic.
  await s.sql.query(
    `INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
     SELECT $1, 'https://elsewhere.test/api/rfqs/old-' || g, 'TripRequest', 'old-' || g, 1, now(), false, '{"old": true}'
     FROM generate_series(1, $2::int) g`,
    [companyId, GROWN_BY],
  );
  for (let k = 0; k < 5; k++) await fireOne(`rfq-large-${k}`);

  // Each backend reports its table statistics by the time it exits.
  await s.skyhook.stop();
  s.skyhooks.length = 0;
  const stats = await eventually(async () => {
    const { rows } = await s.sql.query<{ events: string; seq_read: string }>(
      `SELECT (SELECT sum(n_tup_ins) FROM pg_stat_user_tables WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)) AS events,
              (SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'resources') AS seq_read`,
    );
    return Number(rows[0]!.events) >= 13 && rows[0];
  }, 'the worker connections report their statistics');
  // Each store of the five after the growth would have read all 50,000 rows with the small tables' plan.
  expect(Number(stats.seq_read)).toBeLessThan(GROWN_BY);
}, 60_000);

it('the worker statements keep their plans only once PostgreSQL would plan them with the indexes', async () => {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const statements = [CLAIM_STATEMENT, STORE_STATEMENT];
    const small = new CachedPlans(pool, statements, pino({ level: 'silent' }));
    expect(await small.genericPlansUseIndexes()).toBe(false);
    expect(small.nameFor(STORE_STATEMENT)).toBeUndefined();

    const { rows } = await pool.query<{ company_id: string; webhook_id: string }>(
      `WITH c AS (INSERT INTO companies (name, api_base_url, api_token_encrypted) VALUES ('acme', 'https://api.test', 'x') RETURNING id)
       INSERT INTO webhooks (company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, event_types, display_name)
       SELECT id, 'w1', 'k1', 'https://skyhook.test/hooks', 'client-1', 'BASIC', '{TripRequest}', 'acme' FROM c
       RETURNING company_id, id AS webhook_id`,
    );
    const { company_id: companyId, webhook_id: webhookId } = rows[0]!;
    await pool.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, processed_at)
       SELECT $1, $2, 'rfq-' || g, 'TripRequest', 'https://api.test/rfqs/rfq-' || g, '{"n": 1}', 'basic', 'processed', now()
       FROM generate_series(1, $3::int) g`,
      [companyId, webhookId, GROWN_BY],
    );
    await pool.query(
      `INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
       SELECT $1, 'https://api.test/rfqs/rfq-' || g, 'TripRequest', 'rfq-' || g, 1, now(), false, '{"n": 1}'
       FROM generate_series(1, $2::int) g`,
      [companyId, GROWN_BY],
    );

    const large = new CachedPlans(pool, statements, pino({ level: 'silent' }));
    expect(large.nameFor(STORE_STATEMENT)).toBeUndefined(); // the first check is under way
    await eventually(async () => large.nameFor(STORE_STATEMENT) === STORE_STATEMENT.name, 'the store named');
    expect(large.nameFor(CLAIM_STATEMENT)).toBe(CLAIM_STATEMENT.name);
  } finally {
    await pool.end();
    await db.drop();
  }
}, 60_000);

it("the worker's connections plan the claim once, not for every batch", async () => {
  const db = await createTestDatabase();
  // The worker's pool as runtime.ts makes it; one connection, so the statement's plan cache is this one's.
  const { pool } = connectDatabase(db.url, { max: 1, applicationName: 'plans-test', genericPlans: true });
  try {
    const keys = [['00000000-0000-4000-8000-000000000001'], ['https://api.test/rfqs/one']];
    // One key per batch, as at a steady low rate: a custom plan of it looks cheaper than a generic one
    // sized for ten keys, so without the setting PostgreSQL would plan every execution anew.
    for (let i = 0; i < 8; i++) await pool.query({ name: CLAIM_STATEMENT.name, text: CLAIM_STATEMENT.text, values: keys });
    const { rows } = await pool.query<{ generic_plans: string; custom_plans: string }>('SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1', [CLAIM_STATEMENT.name]);
    expect(rows[0]).toEqual({ generic_plans: '8', custom_plans: '0' });
  } finally {
    await pool.end();
    await db.drop();
  }
});

/** The pages a statement read, planning left out (EXPLAIN ANALYZE's count of the plan's top node). */
async function pagesRead(pool: pg.Pool, text: string, values: unknown[]): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query(`PREPARE measured AS ${text}`);
    const { rows } = await client.query<{ 'QUERY PLAN': { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }[] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured(${values.map((v) => (typeof v === 'number' ? String(v) : `'${String(v)}'`)).join(', ')})`,
    );
    const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
    return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
  } finally {
    client.release(true);
  }
}

it("a delivery claim reads each resource's oldest version by its index, not every delivery waiting, with no statistics yet", async () => {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const WAITING = 6_000;
  try {
    const { rows } = await pool.query<{ company_id: string; destination_id: string }>(
      `WITH c AS (INSERT INTO companies (name, api_base_url, api_token_encrypted) VALUES ('acme', 'https://api.test', 'x') RETURNING id)
       INSERT INTO destinations (company_id, url, secret_encrypted) SELECT id, 'https://app.test/hooks', 'x' FROM c RETURNING company_id, id AS destination_id`,
    );
    const { company_id: companyId, destination_id: destinationId } = rows[0]!;
    // A day's partition as a new install's first day has it: filled, never analysed (autovacuum may not have
    // come by yet). Each resource has one version waiting, but the last, which has two.
    await pool.query(
      `WITH ev AS (
         INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, changes, snapshot)
         SELECT $1, g, 'rfqs', 'r' || least(g, $3 - 1), 'https://api.test/rfqs/r' || least(g, $3 - 1), CASE WHEN g = $3 THEN 2 ELSE 1 END, '[]', '{}'
         FROM generate_series(1, $3::int) g RETURNING id, href, resource_id, snapshot_version)
       INSERT INTO deliveries (company_id, destination_id, event_id, href, resource_type, resource_id, version)
       SELECT $1, $2, id, href, 'rfqs', resource_id, snapshot_version FROM ev ORDER BY id`,
      [companyId, destinationId, WAITING],
    );
    const claimed = await pool.query<{ href: string; version: number }>({ text: DELIVERY_CLAIM.text, values: [destinationId, [], 16] });
    expect(claimed.rows).toHaveLength(16);
    // The newest delivery is the second version of the resource before it: behind the first, so not due.
    const last = await pool.query<{ href: string; version: number }>({ text: DELIVERY_CLAIM.text, values: [destinationId, [], WAITING] });
    expect(last.rows).toHaveLength(WAITING - 1);
    expect(last.rows.every((r) => r.version === 1)).toBe(true);
    // Read through the destination's pending index, each of the 16 looked at cost a pass over all 6,000.
    expect(await pagesRead(pool, DELIVERY_CLAIM.text, [destinationId, '{}', 16])).toBeLessThan(1_000);
  } finally {
    await pool.end();
    await db.drop();
  }
}, 60_000);

it("the delivery job's statements keep their plans once PostgreSQL would plan them with the indexes", async () => {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const plans = new CachedPlans(pool, [DELIVERY_CLAIM, NEXT_DUE_STATEMENT, ATTEMPT_STATEMENT], pino({ level: 'silent' }));
    expect(plans.nameFor(DELIVERY_CLAIM)).toBeUndefined(); // the first check is under way
    await eventually(async () => plans.nameFor(DELIVERY_CLAIM) === DELIVERY_CLAIM.name, 'the claim named');
    expect(plans.nameFor(ATTEMPT_STATEMENT)).toBe(ATTEMPT_STATEMENT.name);
  } finally {
    await pool.end();
    await db.drop();
  }
}, 60_000);
