/**
 * The conversion in place (SPEC §5.3; migrations partitions_prepare, _validate, _attach): a database made and
 * filled by the version before (migrations up to 0013), migrated while a writer stores notifications and a
 * long read holds the table. Every row stays, as it was, in the very table it was in (attached, not copied:
 * the same file on disk); the writer never fails and never waits long; every guarantee holds after.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeDeletedCompanies } from '../../src/companies/purge.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { defaultPartitionRows, listPartitions, maintainPartitions, PARTITIONED_TABLES } from '../../src/db/partitions.js';
import { UNFINISHED } from '../../src/processing/retention.js';
import { runId, SERVER_URL, withAdmin } from '../helpers/database.js';

const PREVIOUS_VERSION = '0013_access_keys_audit';
const HISTORY_BOUND = 662_086_772_326_400; // the ids of 2025-01-01: every id the previous version made is below
const name = `skyhook_t_${runId()}_conv_${randomBytes(3).toString('hex')}`;
const url = `${SERVER_URL}/${name}`;
let pool: pg.Pool;

const TABLES = PARTITIONED_TABLES.map((t) => t.table);
/** A table's rows the previous version stored (ids up to `upTo`), every column, as one digest. */
const digest = async (table: string, upTo: number) =>
  (await pool.query<{ d: string; n: number }>(`SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY id), '')) AS d, count(*)::int AS n FROM ${table} t WHERE id <= ${upTo}`)).rows[0]!;
const maxId = async (table: string) => Number((await pool.query<{ m: string }>(`SELECT coalesce(max(id), 0) AS m FROM ${table}`)).rows[0]!.m);
const fileOf = async (table: string) => (await pool.query<{ f: string }>('SELECT pg_relation_filenode($1::regclass)::text AS f', [table])).rows[0]!.f;

let companyId: string;
let webhookId: string;

/** What the previous version stores, of every growing table. */
async function fill(): Promise<void> {
  const c = await pool.query<{ id: string }>(`INSERT INTO companies (name, api_base_url, api_token_encrypted) VALUES ('acme', 'https://api.test', 'x') RETURNING id`);
  companyId = c.rows[0]!.id;
  const w = await pool.query<{ id: string }>(
    `INSERT INTO webhooks (company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, event_types, display_name)
     VALUES ($1, 'w1', 'k1', 'https://skyhook.test/hooks', 'client-1', 'BASIC', '{TripRequest}', 'acme') RETURNING id`,
    [companyId],
  );
  webhookId = w.rows[0]!.id;
  const d = await pool.query<{ id: string }>(`INSERT INTO destinations (company_id, url, secret_encrypted) VALUES ($1, 'https://example.com/hook', 'x') RETURNING id`, [companyId]);
  await pool.query(
    `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, received_at)
     SELECT $1, $2, 'rfq-' || g, 'TripRequest', 'https://api.test/rfqs/rfq-' || g, jsonb_build_object('n', g), 'basic',
            (ARRAY['processed', 'failed', 'queued', 'received'])[1 + g % 4]::notification_status, now() - make_interval(hours => g % 48)
     FROM generate_series(1, 20000) g`,
    [companyId, webhookId],
  );
  await pool.query(
    `INSERT INTO fetch_attempts (company_id, href, started_at, finished_at, outcome, notification_ids)
     SELECT company_id, href, received_at, received_at, 'stored', ARRAY[id] FROM notifications`,
  );
  await pool.query(`INSERT INTO notification_replays (notification_id, previous_status) SELECT id, 'failed' FROM notifications WHERE status = 'failed'`);
  await pool.query(`INSERT INTO event_sequences (company_id, last) VALUES ($1, 20000)`, [companyId]);
  await pool.query(
    `INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, snapshot)
     SELECT company_id, row_number() OVER (ORDER BY id), type, resource_id, href, 1, body FROM notifications`,
  );
  await pool.query(
    `INSERT INTO deliveries (company_id, destination_id, event_id, href, resource_type, resource_id, version, status)
     SELECT company_id, $1, id, href, type, resource_id, 1, (CASE WHEN seq % 3 = 0 THEN 'pending' ELSE 'delivered' END)::delivery_status FROM events`,
    [d.rows[0]!.id],
  );
  await pool.query(`INSERT INTO delivery_attempts (delivery_id, started_at, duration_ms, url, http_status) SELECT id, now(), 3, 'https://example.com/hook', 200 FROM deliveries`);
  await pool.query(`INSERT INTO audit_log (actor_kind, actor_name, action, outcome, company_id) SELECT 'local', 'ops', 'test.fill', 'ok', $1 FROM generate_series(1, 500)`, [companyId]);
}

beforeAll(async () => {
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  await migrateDatabase(url, { upTo: PREVIOUS_VERSION });
  pool = new pg.Pool({ connectionString: url, max: 6 });
  await fill();
  await pool.query('ANALYZE');
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

describe('the conversion of a database the previous version made', () => {
  it('keeps every row where it was, while a writer stores and a long read runs; then every guarantee holds', async () => {
    const before = new Map<string, { d: string; n: number; upTo: number }>();
    const files = new Map<string, string>();
    for (const t of TABLES) {
      const upTo = await maxId(t);
      before.set(t, { ...(await digest(t, upTo)), upTo });
      files.set(t, await fileOf(t));
    }
    expect(before.get('notifications')!.n).toBe(20000);

    // A writer, as the receiver stores: one notification at a time, each timed.
    let writing = true;
    const written: number[] = [];
    const waits: number[] = [];
    const writer = (async () => {
      while (writing) {
        const started = performance.now();
        const { rows } = await pool.query<{ id: string }>(
          `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by)
           VALUES ($1, $2, 'rfq-live', 'TripRequest', 'https://api.test/rfqs/rfq-live', '{}', 'basic') RETURNING id`,
          [companyId, webhookId],
        );
        waits.push(performance.now() - started);
        written.push(Number(rows[0]!.id));
      }
    })();
    // A long read: its transaction holds the table for 3 s, which no migration step may queue the writer behind.
    const reader = await pool.connect();
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM notifications');
    const reading = (async () => {
      await reader.query('SELECT pg_sleep(3)');
      await reader.query('COMMIT');
      reader.release();
    })();

    const started = performance.now();
    await migrateDatabase(url);
    const took = performance.now() - started;
    await reading;
    writing = false;
    await writer;

    // The migration waited for the read without holding the writer behind it: no insert waited long.
    expect(took).toBeGreaterThan(2500);
    expect(Math.max(...waits)).toBeLessThan(2000);
    expect(written.length).toBeGreaterThan(10);

    // Every row as it was, in the same file: the old table is the history partition, attached, not copied.
    for (const t of TABLES) {
      const { upTo, ...was } = before.get(t)!;
      expect(await digest(t, upTo), t).toEqual(was);
      expect(await fileOf(`${t}_history`), t).toBe(files.get(t));
    }
    // Every write stored once; those after the conversion in today's partition, by their time-carrying ids.
    const stored = await pool.query<{ id: string; part: string }>(`SELECT id, tableoid::regclass::text AS part FROM notifications WHERE resource_id = 'rfq-live'`);
    expect(stored.rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual([...written].sort((a, b) => a - b));
    const parts = new Set(stored.rows.map((r) => r.part));
    expect([...parts].every((p) => p === 'notifications_history' || /^notifications_p\d{8}$/.test(p))).toBe(true);
    expect(parts.size).toBe(2); // some before the swap, some after
    expect([...(await defaultPartitionRows(pool)).values()].every((n) => n === 0)).toBe(true);

    // Guarantees: the audit log refuses changes to old entries; a company's (company, seq) stays unique among
    // its old events; the views read the new tables.
    await expect(pool.query(`UPDATE audit_log SET outcome = 'changed' WHERE id = (SELECT min(id) FROM audit_log)`)).rejects.toThrow(/append-only|refuse|not allowed|audit/i);
    await expect(pool.query(`INSERT INTO events (id, company_id, seq, type, resource_id, href, snapshot_version) VALUES (5, $1, 1, 'x', 'x', 'x', 1)`, [companyId])).rejects.toMatchObject({ code: '23505' });
    const backlog = await pool.query<{ pending: string }>('SELECT pending FROM backlog WHERE company_id = $1', [companyId]);
    expect(Number(backlog.rows[0]!.pending)).toBe(10000 + written.length);
    const failures = await pool.query<{ failures: string }>('SELECT sum(failures) AS failures FROM failures_by_reason WHERE company_id = $1', [companyId]);
    expect(Number(failures.rows[0]!.failures)).toBe(5000);
    // A new row gets an id that carries its time, from the table's sequence.
    const fresh = await pool.query<{ id: string }>(`INSERT INTO audit_log (actor_kind, actor_name, action, outcome) VALUES ('local', 'ops', 'test.after', 'ok') RETURNING id`);
    expect(Number(fresh.rows[0]!.id)).toBeGreaterThan(HISTORY_BOUND);

    // Retention drops the history whole once the conversion itself is past it (the work it holds ended first).
    await pool.query(`UPDATE notifications SET status = 'processed' WHERE status IN ('received', 'queued')`);
    await pool.query(`UPDATE deliveries SET status = 'expired' WHERE status = 'pending'`);
    const result = await maintainPartitions(pool, {
      now: new Date(Date.now() + 31 * 86_400_000),
      retentions: { notifications: 30, events: 90, audit: 365 },
      unfinished: UNFINISHED,
    });
    expect(result.dropped).toEqual(expect.arrayContaining(['notifications_history', 'fetch_attempts_history', 'notification_replays_history', 'deliveries_history', 'delivery_attempts_history']));
    expect((await listPartitions(pool)).map((p) => p.name)).toEqual(expect.arrayContaining(['events_history', 'audit_log_history']));

    // A deleted company's purge reaches every row of it, the converted ones included.
    await pool.query('WITH p AS (INSERT INTO company_purges (company_id) VALUES ($1)) DELETE FROM companies WHERE id = $1', [companyId]);
    await purgeDeletedCompanies(pool, { only: companyId });
    expect((await pool.query('SELECT (SELECT count(*) FROM notifications) + (SELECT count(*) FROM events) + (SELECT count(*) FROM deliveries) AS n')).rows[0].n).toBe('0');
  }, 120_000);
});
