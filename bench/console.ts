/**
 * `npm run bench -- --console` (SPEC §13): the operator console on a big database. Seeds 5 million
 * notifications (and their fetch attempts, resources and events) with set-based SQL into its own database
 * (`skyhook_bench_console`, kept between runs: seeding takes minutes; `--reseed` starts over,
 * `--rows N` changes the count), starts Skyhook (`api` role, compiled) on it, signs in to the console, and
 * measures through HTTP the p50 and p95 of the notification list under each filter and of a
 * notification's page. `--json` ends with one JSON line. The target: every p95 within 200 ms.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DAYS_AHEAD, maintainPartitions } from '../src/db/partitions.js';
import { encryptSecret, randomToken } from '../src/lib/crypto.js';
import { deleteKeysWithPrefix } from '../src/lib/redis/keys.js';

const SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const DB_NAME = 'skyhook_bench_console';
const DATABASE_URL = `${SERVER}/${DB_NAME}`;
const PORT = 3912;
const URL_BASE = `http://127.0.0.1:${PORT}`;
const API_BASE = 'http://127.0.0.1:3913/api';
const PREFIX = '{skyhook-bench-console}';
const COMPANIES = 20;
const BUSY_WEBHOOKS = 40;
/** Distinct resources (company, href): each gets about rows / RESOURCES notifications. */
const RESOURCES = 200_000;
/** Notifications per seeding statement (one transaction each, so progress shows). */
const CHUNK = 500_000;
const TARGET_P95_MS = 200;

const companyUuid = (n: string) => `('00000000-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;
const webhookUuid = (n: string) => `('00000000-0000-4000-9000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;

export interface ConsoleBenchOptions {
  build: () => void;
  log: (line: string) => void;
  json: boolean;
  quick: boolean;
  args: string[];
}

async function ensureDatabase(log: (line: string) => void, rows: number, reseed: boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await admin.connect();
  if (reseed) await admin.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME])).rowCount === 1;
  if (!exists) await admin.query(`CREATE DATABASE ${DB_NAME}`);
  await admin.end();
  if (!exists) log(`  created database ${DB_NAME}; Skyhook migrates it at start`);
}

/** The seed, once the schema exists (Skyhook migrated it). Skipped when the database already holds `rows` notifications. */
async function seed(log: (line: string) => void, rows: number, secretKey: Buffer): Promise<void> {
  const sql = new pg.Client({ connectionString: DATABASE_URL });
  await sql.connect();
  try {
    const have = Number((await sql.query('SELECT count(*) AS n FROM notifications')).rows[0].n);
    if (have >= rows) {
      log(`  ${have.toLocaleString('en')} notifications already seeded (--reseed starts over)`);
      return;
    }
    if (have > 0) throw new Error(`${DB_NAME} holds ${have} notifications, fewer than ${rows}: run with --reseed`);
    // A seed, not Skyhook's data: no need to wait for each commit's flush.
    await sql.query('SET synchronous_commit = off');
    await sql.query(
      `INSERT INTO companies (id, name, api_base_url, api_token_encrypted)
       SELECT ${companyUuid('c')}, 'Bench company ' || c, $1, $2 FROM generate_series(1, ${COMPANIES}) c`,
      [API_BASE, encryptSecret(secretKey, 'bench-token')],
    );
    // 40 busy webhooks (two per company) and one rare: a webhook with a handful of notifications.
    await sql.query(
      `INSERT INTO webhooks (id, company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, secret_sha256, event_types, display_name)
       SELECT ${webhookUuid('w')}, ${companyUuid('((w - 1) % ' + COMPANIES + ') + 1')}, 'wh-' || w, 'bench-key-' || w, $1 || '/hooks/bench-key-' || w,
              'bench-client-' || w, 'BASIC', sha256(('secret-' || w)::bytea), ARRAY['TripRequest'], 'bench webhook ' || w
       FROM generate_series(1, ${BUSY_WEBHOOKS + 1}) w`,
      [URL_BASE],
    );
    const started = Date.now();
    // Row i is received at `start` + i/rows of 30 days, in its day's partition (made here, as a process
    // running then would have made them ahead), with the id it would have had then (src/db/schema/partitioned.ts).
    const start = new Date(Date.now() - 30 * 86_400_000);
    const partitions = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    for (let back = 31; back >= 0; back -= DAYS_AHEAD) await maintainPartitions(partitions, { now: new Date(Date.now() - back * 86_400_000) });
    await partitions.end();
    const at = (i: string) => `($5::timestamptz + (${i}::double precision / $1) * interval '30 days')`;
    const idOf = (i: string) => `(skyhook_id_at(${at(i)}) | (${i}::bigint & 4194303))`;
    for (let from = 1; from <= rows; from += CHUNK) {
      const to = Math.min(rows, from + CHUNK - 1);
      // Row i: received over the last 30 days in id order (as they arrive), webhook i % 40 (a rare one for
      // every 500,000th), a resource among RESOURCES per company, types 40/40/15/5 % with a rare one every
      // 10,000th, statuses 90 % processed, 7 % failed (three reasons), 2 % discarded, 1 % processed late,
      // the newest 500 still queued. Each fetch attempt covers ten notifications.
      await sql.query(
        `INSERT INTO notifications (id, company_id, webhook_id, received_at, resource_id, type, href, body, authenticated_by, status, attempts, last_error, outcome,
                                    snapshot_version, queued_at, processed_at, finished_at, fetch_attempt_ids)
         SELECT ${idOf('i')}, ${companyUuid('((w - 1) % ' + COMPANIES + ') + 1')}, ${webhookUuid('w')}, t, rid, typ, $2 || '/' || typ || '/' || rid,
                jsonb_build_object('id', rid, 'type', typ, 'href', $2 || '/' || typ || '/' || rid, 'seq', i),
                CASE WHEN w % 2 = 0 THEN 'oauth' ELSE 'basic' END::authenticated_by,
                st, CASE WHEN st = 'queued' THEN 0 ELSE 1 END,
                CASE WHEN st = 'failed' THEN (ARRAY['gave up after 14 attempts: HTTP 503', 'the marketplace refused the token (HTTP 401)', 'soft error: resource not available'])[1 + i % 3] END,
                CASE WHEN st = 'processed' THEN 'stored'::fetch_outcome END,
                CASE WHEN st = 'processed' THEN 1 END,
                t + interval '2 ms',
                CASE WHEN st = 'processed' THEN t + interval '40 ms' END,
                CASE WHEN st IN ('processed', 'failed', 'discarded') THEN t + interval '40 ms' END,
                CASE WHEN st IN ('processed', 'failed') THEN ARRAY[(i + 9) / 10]::bigint[] END
         FROM (
           SELECT i, ${at('i')} AS t,
                  CASE WHEN i % 500000 = 0 THEN ${BUSY_WEBHOOKS + 1} ELSE (i % ${BUSY_WEBHOOKS}) + 1 END AS w,
                  'r-' || ((i::bigint * 7919) % ${RESOURCES}) AS rid,
                  CASE WHEN i % 10000 = 0 THEN 'emptylegs' WHEN i % 100 < 40 THEN 'rfqs' WHEN i % 100 < 80 THEN 'tripmsgs' ELSE 'leads' END AS typ,
                  (CASE WHEN i > $1 - 500 THEN 'queued' WHEN (i * 31) % 1000 < 900 THEN 'processed' WHEN (i * 31) % 1000 < 970 THEN 'failed'
                        WHEN (i * 31) % 1000 < 990 THEN 'discarded' ELSE 'processed' END)::notification_status AS st
           FROM generate_series($3::int, $4::int) i) s`,
        [rows, API_BASE, from, to, start.toISOString()],
      );
      log(`  seeded ${to.toLocaleString('en')} of ${rows.toLocaleString('en')} notifications (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    await sql.query(
      `INSERT INTO fetch_attempts (id, company_id, href, started_at, finished_at, http_status, outcome, snapshot_version, notification_ids)
       SELECT a, n.company_id, n.href, n.received_at + interval '5 ms', n.received_at + interval '35 ms', 200, 'stored', 1, ARRAY(SELECT ${idOf('k').replaceAll('$5', '$2')} FROM generate_series(a * 10 - 9, a * 10) k)
       FROM generate_series(1, ($1 + 9) / 10) a JOIN notifications n ON n.id = ${idOf('(a * 10 - 9)').replaceAll('$5', '$2')}`,
      [rows, start.toISOString()],
    );
    await sql.query(
      `INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, body)
       SELECT DISTINCT ON (company_id, href) company_id, href, type, resource_id, 1, received_at, body FROM notifications ORDER BY company_id, href, id DESC`,
    );
    await sql.query(
      `INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, changes, created_at)
       SELECT company_id, row_number() OVER (PARTITION BY company_id ORDER BY href), type, resource_id, href, 1, NULL, fetched_at FROM resources`,
    );
    log(`  fetch attempts, resources and events seeded (${Math.round((Date.now() - started) / 1000)} s); VACUUM ANALYZE`);
    await sql.query('VACUUM ANALYZE');
  } finally {
    await sql.end();
  }
}

async function startSkyhook(secretKey: string, adminToken: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['dist/cli.js', 'start'], {
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL,
      PORT: String(PORT),
      PUBLIC_BASE_URL: URL_BASE,
      SECRET_KEY: secretKey,
      ADMIN_TOKEN: adminToken,
      // The api role: the console's; no worker to process the seeded rows.
      ROLE: 'api',
      QUEUE_PREFIX: PREFIX,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 600; i++) {
    if (await fetch(`${URL_BASE}/readyz`).then((r) => r.ok, () => false)) return child;
    if (child.exitCode !== null) throw new Error(`Skyhook exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('Skyhook did not start');
}

interface Timing {
  name: string;
  p50: number;
  p95: number;
  max: number;
  rows: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
const round1 = (n: number) => Math.round(n * 10) / 10;

export async function runConsoleBench(opts: ConsoleBenchOptions): Promise<void> {
  const { log } = opts;
  const rowsArg = opts.args.indexOf('--rows');
  const rows = rowsArg >= 0 ? Number(opts.args[rowsArg + 1]) : 5_000_000;
  if (!Number.isInteger(rows) || rows < 1000) throw new Error('--rows must be a whole number of at least 1000');
  const samples = opts.quick ? 10 : 40;
  log(`Skyhook console benchmark: ${rows.toLocaleString('en')} notifications, ${samples} requests per measure, through HTTP`);
  opts.build();
  await ensureDatabase(log, rows, opts.args.includes('--reseed'));
  await deleteKeysWithPrefix(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', PREFIX);
  // The seeded companies' tokens are encrypted with this key; it is kept in the database so a kept seed stays readable.
  const keyDb = new pg.Client({ connectionString: DATABASE_URL });
  await keyDb.connect();
  await keyDb.query('CREATE TABLE IF NOT EXISTS bench_key (key text NOT NULL)');
  let key = (await keyDb.query('SELECT key FROM bench_key')).rows[0]?.key as string | undefined;
  if (!key) {
    key = randomBytes(32).toString('base64');
    await keyDb.query('INSERT INTO bench_key (key) VALUES ($1)', [key]);
  }
  await keyDb.end();
  const adminToken = randomToken(24);
  const skyhook = await startSkyhook(key, adminToken);
  try {
    await seed(log, rows, Buffer.from(key, 'base64'));
    const sql = new pg.Client({ connectionString: DATABASE_URL });
    await sql.connect();
    const signedIn = await fetch(`${URL_BASE}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: adminToken }).toString(),
    });
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (signedIn.status !== 303 || !cookie) throw new Error(`console sign-in failed: ${signedIn.status}`);

    // Ids carry their time (src/db/schema/partitioned.ts): a sample of the stored ones, not numbers up to the largest.
    const stored = (await sql.query<{ id: string }>('SELECT id FROM notifications TABLESAMPLE SYSTEM (1) LIMIT 1000')).rows.map((r) => Number(r.id));
    const randomIds = (n: number) => Array.from({ length: n }, () => stored[Math.floor(Math.random() * stored.length)]!);
    const company = `00000000-0000-4000-8000-${(7).toString(16).padStart(12, '0')}`;
    const busyWebhook = `00000000-0000-4000-9000-${(3).toString(16).padStart(12, '0')}`;
    const rareWebhook = `00000000-0000-4000-9000-${(BUSY_WEBHOOKS + 1).toString(16).padStart(12, '0')}`;
    const sampleRows = await sql.query<{ resource_id: string; href: string }>('SELECT resource_id, href FROM notifications WHERE id = ANY($1::bigint[])', [randomIds(samples)]);
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString();

    /** Each measure: a query string per request (varied where the filter names one resource). */
    const measures: [string, (i: number) => string][] = [
      ['no filter', () => ''],
      ['companyId', () => `companyId=${company}`],
      ['status=failed', () => 'status=failed'],
      ['status=processed', () => 'status=processed'],
      ['status=queued (rare)', () => 'status=queued'],
      ['status=discarded', () => 'status=discarded'],
      ['type=leads', () => 'type=leads'],
      ['type=emptylegs (rare)', () => 'type=emptylegs'],
      ['type matching nothing', () => 'type=no-such-type'],
      ['resourceId', (i) => `resourceId=${encodeURIComponent(sampleRows.rows[i % sampleRows.rows.length]!.resource_id)}`],
      ['href', (i) => `href=${encodeURIComponent(sampleRows.rows[i % sampleRows.rows.length]!.href)}`],
      ['webhookId', () => `webhookId=${busyWebhook}`],
      ['webhookId (rare)', () => `webhookId=${rareWebhook}`],
      ['received in one day, 10 days ago', () => `receivedAfter=${encodeURIComponent(day(11))}&receivedBefore=${encodeURIComponent(day(10))}`],
      ['received in the last hour', () => `receivedAfter=${encodeURIComponent(day(1 / 24))}`],
      ['companyId + status=failed', () => `companyId=${company}&status=failed`],
      ['companyId + type=leads', () => `companyId=${company}&type=leads`],
      ['status=failed + type=leads', () => 'status=failed&type=leads'],
      ['companyId + type=emptylegs (rare)', () => `companyId=${company}&type=emptylegs`],
    ];

    const time = async (path: string): Promise<{ ms: number; rows: number }> => {
      const t0 = performance.now();
      const res = await fetch(`${URL_BASE}${path}`, { headers: { cookie } });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
      return { ms, rows: (text.match(/<td data-label="Id"><a id="n-/g) ?? []).length };
    };
    const measure = async (name: string, path: (i: number) => string): Promise<Timing> => {
      for (let i = 0; i < 3; i++) await time(path(i)); // warm: the plan cached, the pages in memory
      const times: number[] = [];
      let rowsShown = 0;
      for (let i = 0; i < samples; i++) {
        const r = await time(path(i));
        times.push(r.ms);
        rowsShown = r.rows;
      }
      times.sort((a, b) => a - b);
      const t = { name, p50: round1(quantile(times, 0.5)), p95: round1(quantile(times, 0.95)), max: round1(times.at(-1)!), rows: rowsShown };
      log(`  ${name.padEnd(36)} p50 ${String(t.p50).padStart(7)} ms  p95 ${String(t.p95).padStart(7)} ms  max ${String(t.max).padStart(7)} ms  (${t.rows} rows shown)${t.p95 > TARGET_P95_MS ? '  OVER' : ''}`);
      return t;
    };

    log('the list, /console/notifications?<filter> (the whole page, 50 rows)');
    const list: Timing[] = [];
    for (const [name, q] of measures) list.push(await measure(name, (i) => `/console/notifications?${q(i)}`));
    // The second page of a broad filter, through the cursor the first gave.
    const firstPage = await (await fetch(`${URL_BASE}/console/notifications?type=leads`, { headers: { cookie } })).text();
    const older = /href="(\/console\/notifications\?[^"]*cursor=[^"]+)"/.exec(firstPage)?.[1]?.replaceAll('&amp;', '&');
    if (older) list.push(await measure('type=leads, next page (cursor)', () => older));

    log("a notification's page, /console/notifications/<id> (random ids)");
    const ids = randomIds(samples + 3);
    const page = await measure("a notification's page", (i) => `/console/notifications/${ids[i % ids.length]}`);
    log('for information: the overview, the live list fragment');
    const overview = await measure('overview', () => '/console');
    await sql.end();

    const worst = [...list, page].reduce((a, b) => (b.p95 > a.p95 ? b : a));
    log(`\nworst p95: ${worst.name}, ${worst.p95} ms (target ${TARGET_P95_MS} ms): ${worst.p95 <= TARGET_P95_MS ? 'met' : 'NOT met'}`);
    if (opts.json) console.log(JSON.stringify({ mode: 'console', notifications: rows, samples, list, notificationPage: page, overview, worstP95Ms: worst.p95 }));
  } finally {
    skyhook.kill('SIGTERM');
  }
}
