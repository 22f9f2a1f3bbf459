/**
 * `npm run bench -- --retention` (SPEC §5.3, §11's two §5.3 rows), on its own database
 * (`skyhook_bench_retention`, made anew each run). Fills a day's partitions with 1,000,000 notifications
 * (`--quick`: 50,000), each with a fetch attempt, an event holding a 2 KB resource body, its resource, a
 * delivery and its attempt, and a second day with 20 KB bodies (a tenth as many); measures the disk a
 * notification costs end to end on each (every table and index, after VACUUM). Then, while an ingest runs
 * (single-row INSERTs of notifications into today's partition, at a steady rate over 8 connections: the
 * statement the receiver commits, without HTTP in front, since the drop can only touch the database side),
 * drops the 1,000,000-notification day with the retention's own code while a 30 s read of the notifications
 * table runs, then the second day without one, and reports each drop's time and the ingest p99 over the
 * 10 s around it against 10 s without. `--json` ends with one JSON line.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateDatabase } from '../src/db/migrate.js';
import { maintainPartitions } from '../src/db/partitions.js';
import { idAt } from '../src/db/schema/partitioned.js';
import { UNFINISHED } from '../src/processing/retention.js';

const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const DB_NAME = 'skyhook_bench_retention';
const DATABASE_URL = `${SERVER}/${DB_NAME}`;
const DAY_MS = 86_400_000;
const CHUNK = 100_000;
const INGEST_CONNECTIONS = 8;
const INGEST_RATE = 400; // notifications a second, all connections together
const TABLES = ['notifications', 'fetch_attempts', 'notification_replays', 'deliveries', 'delivery_attempts', 'events'];

export interface RetentionBenchOptions {
  log: (line: string) => void;
  json: boolean;
  quick: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const p99 = (xs: number[]) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!);
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** `rows` notifications of `day` (ids in its partition) with everything one costs, resource bodies of `bodyBytes`. */
async function fillDay(sql: pg.Client, ids: { company: string; webhook: string; destination: string }, day: Date, rows: number, bodyBytes: number, tag: string, log: (l: string) => void): Promise<void> {
  const base = idAt(day);
  const started = Date.now();
  // Hex of random bytes: a body TOAST cannot shrink much, as real resources' text would not be either.
  const md5s = Math.ceil(bodyBytes / 32);
  for (let from = 1; from <= rows; from += CHUNK) {
    const to = Math.min(rows, from + CHUNK - 1);
    const params = [base, from, to, ids.company, ids.webhook, day.toISOString(), tag];
    await sql.query(
      `INSERT INTO notifications (id, company_id, webhook_id, received_at, resource_id, type, href, body, authenticated_by, status, attempts, outcome,
                                  snapshot_version, queued_at, processed_at, finished_at, fetch_attempt_ids)
       SELECT $1::bigint + i, $4, $5, $6::timestamptz + i * interval '80 ms', $7 || i, 'rfqs', 'https://api.test/rfqs/' || $7 || i,
              jsonb_build_object('id', $7 || i, 'type', 'rfqs', 'href', 'https://api.test/rfqs/' || $7 || i, 'sent', $6::text), 'basic', 'processed', 1, 'stored', 1,
              $6::timestamptz, $6::timestamptz, $6::timestamptz, ARRAY[$1::bigint + i]
       FROM generate_series($2::int, $3::int) i`,
      params,
    );
    const at = day.toISOString();
    await sql.query(
      `INSERT INTO fetch_attempts (id, company_id, href, started_at, finished_at, http_status, outcome, snapshot_version, notification_ids)
       SELECT $1::bigint + i, $4, 'https://api.test/rfqs/' || $6 || i, $5::timestamptz, $5::timestamptz, 200, 'stored', 1, ARRAY[$1::bigint + i]
       FROM generate_series($2::int, $3::int) i`,
      [base, from, to, ids.company, at, tag],
    );
    const body = `jsonb_build_object('id', $5 || i, 'text', (SELECT string_agg(md5(i::text || k::text || $5), '') FROM generate_series(1, ${md5s}) k))`;
    await sql.query(
      `INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, body)
       SELECT $3, 'https://api.test/rfqs/' || $5 || i, 'rfqs', $5 || i, 1, $4::timestamptz, ${body}
       FROM generate_series($1::int, $2::int) i`,
      [from, to, ids.company, at, tag],
    );
    await sql.query(
      `INSERT INTO events (id, company_id, seq, type, resource_id, href, snapshot_version, event_types, snapshot, created_at)
       SELECT $1::bigint + i, r.company_id, $1::bigint + i, 'rfqs', r.resource_id, r.href, 1, '{TripRequest}', r.body, $5::timestamptz
       FROM generate_series($2::int, $3::int) i JOIN resources r ON r.company_id = $4 AND r.href = 'https://api.test/rfqs/' || $6 || i`,
      [base, from, to, ids.company, at, tag],
    );
    await sql.query(
      `INSERT INTO deliveries (id, company_id, destination_id, event_id, href, resource_type, resource_id, version, status, attempts, created_at, delivered_at, finished_at, last_status)
       SELECT $1::bigint + i, $4, $5, $1::bigint + i, 'https://api.test/rfqs/' || $7 || i, 'rfqs', $7 || i, 1, 'delivered', 1, $6::timestamptz, $6::timestamptz, $6::timestamptz, 200
       FROM generate_series($2::int, $3::int) i`,
      [base, from, to, ids.company, ids.destination, day.toISOString(), tag],
    );
    await sql.query(
      `INSERT INTO delivery_attempts (id, delivery_id, started_at, duration_ms, url, http_status, response)
       SELECT $1::bigint + i, $1::bigint + i, $4::timestamptz, 3, 'https://receiver.test/hook', 200, 'ok'
       FROM generate_series($2::int, $3::int) i`,
      [base, from, to, day.toISOString()],
    );
    log(`  ${tag}: ${to.toLocaleString('en')} of ${rows.toLocaleString('en')} notifications with their rows (${Math.round((Date.now() - started) / 1000)} s)`);
  }
}

/** Bytes of `day`'s partitions of every table (tables, indexes, TOAST), and of the resources rows of `tag`. */
async function diskOf(sql: pg.Client, day: Date, tag: string, rows: number): Promise<{ partitions: number; resources: number; perNotification: number; events: number }> {
  const suffix = day.toISOString().slice(0, 10).replaceAll('-', '');
  const { rows: sizes } = await sql.query<{ bytes: string; events: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes, coalesce(sum(pg_total_relation_size(c.oid)) FILTER (WHERE c.relname = $2), 0) AS events
     FROM pg_class c WHERE c.relname = ANY($1::text[])`,
    [TABLES.map((t) => `${t}_p${suffix}`), `events_p${suffix}`],
  );
  // resources is one table for every day: this day's rows as stored (TOAST included), and their share of its indexes.
  const { rows: share } = await sql.query<{ bytes: string }>(
    `SELECT (sum(pg_column_size(r.*)) + pg_indexes_size('resources') * count(*)::float8 / greatest((SELECT count(*) FROM resources), 1))::bigint AS bytes
     FROM resources r WHERE r.resource_id LIKE $1 || '%'`,
    [tag],
  );
  const partitions = Number(sizes[0]!.bytes);
  const resources = Number(share[0]!.bytes);
  return { partitions, resources, perNotification: Math.round((partitions + resources) / rows), events: Math.round(Number(sizes[0]!.events) / rows) };
}

/** Single-row notification INSERTs at INGEST_RATE over INGEST_CONNECTIONS until stopped; each (end time, latency). */
function ingest(pool: pg.Pool, ids: { company: string; webhook: string }) {
  const samples: { at: number; ms: number }[] = [];
  let running = true;
  const gap = (1000 * INGEST_CONNECTIONS) / INGEST_RATE;
  const loops = Array.from({ length: INGEST_CONNECTIONS }, async (_, k) => {
    await sleep((gap * k) / INGEST_CONNECTIONS);
    let next = performance.now();
    while (running) {
      const started = performance.now();
      await pool.query(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by) VALUES ($1, $2, 'live', 'rfqs', 'https://api.test/rfqs/live', '{"id": "live"}', 'basic')`,
        [ids.company, ids.webhook],
      );
      const ended = performance.now();
      samples.push({ at: ended, ms: ended - started });
      next += gap;
      await sleep(Math.max(0, next - performance.now()));
    }
  });
  return {
    samples,
    between: (from: number, to: number) => samples.filter((s) => s.at >= from && s.at <= to).map((s) => s.ms),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

export async function runRetentionBench(opts: RetentionBenchOptions): Promise<void> {
  const { log } = opts;
  const rows = opts.quick ? 50_000 : 1_000_000;
  const bigRows = Math.max(1000, Math.round(rows / 10));
  const admin = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DB_NAME}`);
  await admin.end();
  await migrateDatabase(DATABASE_URL);

  const today = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS);
  const dropped = new Date(today.getTime() - 3 * DAY_MS);
  const dropped20k = new Date(today.getTime() - 2 * DAY_MS);
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: INGEST_CONNECTIONS + 2 });
  const sql = new pg.Client({ connectionString: DATABASE_URL });
  await sql.connect();
  try {
    // The partitions of the days filled, as a process running then would have made them.
    await maintainPartitions(pool, { now: dropped });
    await maintainPartitions(pool, {});
    const company = (await sql.query<{ id: string }>(`INSERT INTO companies (name, api_base_url, api_token_encrypted) VALUES ('bench', 'https://api.test', 'x') RETURNING id`)).rows[0]!.id;
    const webhook = (
      await sql.query<{ id: string }>(
        `INSERT INTO webhooks (company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, event_types, display_name)
         VALUES ($1, 'w', 'k', 'https://skyhook.test/hooks/k', 'c', 'BASIC', '{TripRequest}', 'bench') RETURNING id`,
        [company],
      )
    ).rows[0]!.id;
    const destination = (await sql.query<{ id: string }>(`INSERT INTO destinations (company_id, url, secret_encrypted) VALUES ($1, 'https://receiver.test/hook', 'x') RETURNING id`, [company])).rows[0]!.id;
    const ids = { company, webhook, destination };
    await sql.query('SET synchronous_commit = off'); // a seed, not Skyhook's data
    log(`filling ${rows.toLocaleString('en')} notifications (2 KB bodies) and ${bigRows.toLocaleString('en')} (20 KB bodies), each with its attempt, event, resource, delivery and attempt`);
    const tag2k = `a${randomBytes(2).toString('hex')}-`;
    await fillDay(sql, ids, dropped, rows, 2048, tag2k, log);
    const tag20k = `b${randomBytes(2).toString('hex')}-`;
    await fillDay(sql, ids, dropped20k, bigRows, 20_480, tag20k, log);
    log('VACUUM ANALYZE');
    await sql.query('VACUUM ANALYZE');
    const disk2k = await diskOf(sql, dropped, tag2k, rows);
    const disk20k = await diskOf(sql, dropped20k, tag20k, bigRows);

    // The resources stay (the latest snapshot of each): only the day's partitions go.
    const dropDay = async (day: Date) => {
      const started = performance.now();
      const result = await maintainPartitions(pool, {
        now: new Date(day.getTime() + 2 * DAY_MS),
        retentions: { notifications: 1, events: 1, audit: 365 },
        unfinished: UNFINISHED,
      });
      return { ms: performance.now() - started, dropped: result.dropped.length, done: result.kept.length === 0 };
    };

    const load = ingest(pool, { company, webhook });
    await sleep(2000);
    const quietFrom = performance.now();
    await sleep(10_000);
    const without = p99(load.between(quietFrom, performance.now()));

    // The drop while a 30 s read of the same table runs: it waits for the read (a lock no shorter than the
    // read's): it waits the read out without trying, then tries with 50 ms waits, so the ingest is not queued behind it.
    const reader = new pg.Client({ connectionString: DATABASE_URL });
    await reader.connect();
    let readEnded = NaN;
    const reading = reader.query(`SELECT count(*), pg_sleep(30) FROM notifications WHERE id >= ${idAt(dropped)}`).then(() => void (readEnded = performance.now()));
    await sleep(1000);
    // As the hourly job would, but at once: the run that finds the table held tries again.
    const readStarted = performance.now();
    let runs = 0;
    const withRead = { ms: NaN, dropped: 0 };
    for (let done = false; !done && runs < 20; ) {
      runs++;
      const run = await dropDay(dropped);
      withRead.dropped += run.dropped;
      done = run.done;
    }
    withRead.ms = performance.now() - readStarted;
    const afterRead = performance.now();
    await reading;
    await reader.end();
    await sleep(5000);
    const duringRead = p99(load.between(afterRead - withRead.ms - 5000, afterRead + 5000));

    // The 20 KB day, without a read: the drop alone.
    await sleep(2000);
    const alone = await dropDay(dropped20k);
    const aloneAt = performance.now();
    await sleep(5000);
    const duringAlone = p99(load.between(aloneAt - alone.ms - 5000, aloneAt + 5000));
    await load.stop();

    const figures = {
      rows,
      dropWithReadMs: round(withRead.ms, 0),
      dropAfterReadEndedMs: round(afterRead - readEnded, 0),
      droppedPartitions: withRead.dropped,
      dropAloneMs: round(alone.ms, 0),
      ingestP99WithoutMs: round(without),
      ingestP99AroundDropWithReadMs: round(duringRead),
      ingestP99AroundDropAloneMs: round(duringAlone),
      diskPerNotification2kBytes: disk2k.perNotification,
      diskPerNotification20kBytes: disk20k.perNotification,
      /** Of which the event (its version's body, kept EVENTS_RETENTION_DAYS) and the resource (its latest snapshot, kept while notified). */
      diskPerEvent2kBytes: disk2k.events,
      diskPerEvent20kBytes: disk20k.events,
      diskPerResource2kBytes: Math.round(disk2k.resources / rows),
      diskPerResource20kBytes: Math.round(disk20k.resources / bigRows),
    };
    console.log(`\n§5.3 retention (${rows.toLocaleString('en')} notifications in the dropped day; load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)} on ${(await import('node:os')).cpus().length} cores: indicative)`);
    console.log(`drop of the day while a 30 s read of notifications runs: ${figures.dropWithReadMs} ms from the start (${figures.droppedPartitions} partitions, in ${runs} runs: it waits the read out), ${figures.dropAfterReadEndedMs} ms after the read ended`);
    console.log(`drop of a day (${bigRows.toLocaleString('en')} notifications, 20 KB bodies) with no read: ${figures.dropAloneMs} ms`);
    console.log(`ingest p99 (single-row INSERTs at ${INGEST_RATE}/s): ${figures.ingestP99WithoutMs} ms without; ${figures.ingestP99AroundDropWithReadMs} ms around the drop with the read; ${figures.ingestP99AroundDropAloneMs} ms around the drop alone`);
    console.log(`disk per notification end to end (its rows and indexes in every table, its resource, one delivery; after VACUUM): ${figures.diskPerNotification2kBytes} B with 2 KB bodies, ${figures.diskPerNotification20kBytes} B with 20 KB bodies; of which the event ${figures.diskPerEvent2kBytes} / ${figures.diskPerEvent20kBytes} B and the resource ${figures.diskPerResource2kBytes} / ${figures.diskPerResource20kBytes} B`);
    if (opts.json) console.log(JSON.stringify({ retention: figures }));
  } finally {
    await sql.end();
    await pool.end();
  }
}
