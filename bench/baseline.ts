/**
 * The second yardstick (SPEC §11, its last three rows; issue #33): the smallest durable webhook pipeline
 * on Skyhook's own stack (Fastify, PostgreSQL through pg, BullMQ on Redis, undici), which `npm run bench`
 * runs in its own process (own port, own database, own Redis key prefix) and loads exactly as it loads
 * Skyhook. The ceiling (a bare route) bounds what ingest can cost; this bounds what processing can cost:
 * whatever Skyhook spends per notification beyond it is Skyhook's own machinery, not the stack's.
 *
 * It is the floor because it keeps every guarantee that costs something and nothing else:
 *  - a notification is answered 200 only after its row is committed (group commit: the rows of
 *    concurrent requests go in one multi-row INSERT, one flush in flight at a time; synchronous_commit
 *    stays on, the server's default);
 *  - one BullMQ job per (company, href), coalesced by BullMQ's own deduplication in keepLastIfActive
 *    mode: an add while the key's job waits is a no-op, an add while it runs leaves one follow-up job;
 *  - the job GETs the href and then, in one statement (one transaction), upserts the versioned snapshot,
 *    writes an event row and a fetch-attempt row, and marks processed the (company, href)'s pending
 *    notifications committed before the GET started: those up to the last id this process had committed
 *    then (it is the only writer, one INSERT at a time, so ids are committed in order; a clock would not
 *    do: JavaScript's has milliseconds, and a row could be received within the millisecond a fetch starts);
 *  - nothing acknowledged is lost: the rows are in PostgreSQL before the job is added, and at start the
 *    jobs of every pending (company, href) are added again (a crash between commit and add).
 * Nothing Skyhook-specific: one company, one fixed Basic credential, no tenants, no admin surface, no
 * metrics, BullMQ's default locks and stalled checks, no retries beyond BullMQ's own. It imports no
 * Skyhook code. Environment: PORT, DATABASE_URL, REDIS_URL, QUEUE_PREFIX, BASIC_CREDENTIAL (user:secret), and
 * BENCH_BASELINE_ROUND_TRIPS and BENCH_BASELINE_SCHEMA (below): with both at `skyhook` it is SPEC §11's
 * yardstick (issue #51), the plain pipeline given what Skyhook's required features ask; the bench sets them
 * (bench/run.ts, BENCH_BASELINE) and runs the plain one beside it for reference.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import { request } from 'undici';

const PORT = Number(process.env.PORT);
const PREFIX = process.env.QUEUE_PREFIX ?? '{skyhook-bench-baseline}';
const CREDENTIAL = process.env.BASIC_CREDENTIAL ?? 'bench:baseline-secret';
/** The credential's user is the company: one company, as the bench loads one webhook. */
const COMPANY = CREDENTIAL.split(':')[0]!;
const RESOURCE_TOKEN = 'baseline';

const PLAIN_SCHEMA = `
  CREATE TABLE IF NOT EXISTS notifications (
    id bigserial PRIMARY KEY,
    company text NOT NULL,
    href text NOT NULL,
    body jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz
  );
  CREATE INDEX IF NOT EXISTS notifications_pending_idx ON notifications (company, href) WHERE processed_at IS NULL;
  CREATE TABLE IF NOT EXISTS snapshots (
    company text NOT NULL,
    href text NOT NULL,
    version integer NOT NULL,
    body jsonb NOT NULL,
    fetched_at timestamptz NOT NULL,
    PRIMARY KEY (company, href)
  );
  CREATE TABLE IF NOT EXISTS events (
    id bigserial PRIMARY KEY,
    company text NOT NULL,
    href text NOT NULL,
    version integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS fetch_attempts (
    id bigserial PRIMARY KEY,
    company text NOT NULL,
    href text NOT NULL,
    http_status integer NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now()
  )`;

/**
 * A diagnosis knob (docs/performance.md, "What partitioning costs the yardstick"): BENCH_BASELINE_PARTITIONS=skyhook
 * partitions the growing tables by id as Skyhook's are (SPEC §5.3): a history partition, today's, the seven
 * days made ahead and a default, ten each, every row in today's. Written plainly: no plan is forced, so
 * PostgreSQL prunes each statement's partitions when it plans it.
 */
const PARTITIONED = process.env.BENCH_BASELINE_PARTITIONS === 'skyhook';
const GROWING = ['notifications', 'events', 'fetch_attempts'];
const DAY = 1e12;
const partitionsOf = (table: string) => [
  `CREATE TABLE ${table}_history PARTITION OF ${table} FOR VALUES FROM (MINVALUE) TO (0)`,
  ...Array.from({ length: 8 }, (_, d) => `CREATE TABLE ${table}_d${d} PARTITION OF ${table} FOR VALUES FROM (${d * DAY}) TO (${(d + 1) * DAY})`),
  `CREATE TABLE ${table}_default PARTITION OF ${table} DEFAULT`,
];
const SCHEMA = PARTITIONED
  ? [
      ...PLAIN_SCHEMA.split(';').map((st) => (GROWING.some((t) => st.includes(`CREATE TABLE IF NOT EXISTS ${t} (`)) ? `${st} PARTITION BY RANGE (id)` : st)),
      ...GROWING.flatMap(partitionsOf),
    ].join(';\n')
  : PLAIN_SCHEMA;

/** One statement shape for any batch size (planned once per connection); ids come back in input order. */
const INSERT = `
  WITH ins AS (INSERT INTO notifications (company, href, body) SELECT $1, h, b FROM unnest($2::text[], $3::jsonb[]) AS u(h, b) RETURNING id)
  SELECT id FROM ins ORDER BY id`;

/** The versioned snapshot upsert, $1-$3 (company, href, body): the first CTE of a store. */
const UPSERT_SNAPSHOT = `
  WITH snapshot AS (
    INSERT INTO snapshots AS s (company, href, version, body, fetched_at) VALUES ($1, $2, 1, $3, now())
    ON CONFLICT (company, href) DO UPDATE SET version = s.version + 1, body = EXCLUDED.body, fetched_at = EXCLUDED.fetched_at
    RETURNING version
  )`;

/** What a successful fetch writes, in one statement and so one transaction. */
const STORE = `${UPSERT_SNAPSHOT}, event AS (
    INSERT INTO events (company, href, version) SELECT $1, $2, version FROM snapshot
  ), attempt AS (
    INSERT INTO fetch_attempts (company, href, http_status, started_at) VALUES ($1, $2, $5, $4)
  )
  UPDATE notifications SET processed_at = now() WHERE company = $1 AND href = $2 AND processed_at IS NULL AND id <= $6`;

/**
 * A diagnosis knob, not the yardstick (docs/performance.md, "What Skyhook's schema costs"):
 * BENCH_BASELINE_SCHEMA=skyhook gives the pipeline's database what Skyhook's has beyond it, written as
 * plainly as this pipeline's own: the notifications' further columns and indexes (the console's filters,
 * the relay's, the failures', the webhook's key), an event's changes and its two indexes, each fetch in
 * the notifications' attempt history, and a NOTIFY of the ids at each insert and store and of each event
 * with its changes, which a LISTEN connection receives and parses.
 */
const LIKE_SKYHOOK = process.env.BENCH_BASELINE_SCHEMA === 'skyhook';
const SKYHOOK_SCHEMA = `
  CREATE TABLE IF NOT EXISTS webhooks (id text PRIMARY KEY);
  INSERT INTO webhooks VALUES ('w1') ON CONFLICT DO NOTHING;
  ALTER TABLE notifications ADD COLUMN IF NOT EXISTS webhook text NOT NULL DEFAULT 'w1' REFERENCES webhooks (id) ON DELETE CASCADE,
    ADD COLUMN IF NOT EXISTS type text NOT NULL DEFAULT 'Rfq', ADD COLUMN IF NOT EXISTS resource_id text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'queued', ADD COLUMN IF NOT EXISTS attempt_ids bigint[];
  CREATE INDEX IF NOT EXISTS notifications_unqueued_idx ON notifications (received_at) WHERE status = 'received';
  CREATE INDEX IF NOT EXISTS notifications_company_idx ON notifications (company, id);
  CREATE INDEX IF NOT EXISTS notifications_final_failed_idx ON notifications (id) WHERE status IN ('failed', 'discarded');
  CREATE INDEX IF NOT EXISTS notifications_received_at_idx ON notifications (received_at);
  CREATE INDEX IF NOT EXISTS notifications_type_idx ON notifications (type, id);
  CREATE INDEX IF NOT EXISTS notifications_resource_id_idx ON notifications (resource_id, id);
  CREATE INDEX IF NOT EXISTS notifications_href_idx ON notifications (href, id);
  CREATE INDEX IF NOT EXISTS notifications_webhook_idx ON notifications (webhook, id);
  ALTER TABLE events ADD COLUMN IF NOT EXISTS changes jsonb;
  CREATE INDEX IF NOT EXISTS events_company_idx ON events (company, id);
  CREATE INDEX IF NOT EXISTS events_resource_idx ON events (company, href, id)`;
const notifyIds = (status: string, source: string) =>
  `(SELECT count(pg_notify('bench_notifications', json_build_object('status', '${status}', 'ids', ids)::text)) FROM (SELECT array_agg(id) AS ids FROM ${source}) a WHERE ids IS NOT NULL)`;
const INSERT_LIKE_SKYHOOK = `
  WITH ins AS (INSERT INTO notifications (company, href, body, resource_id) SELECT $1, h, b, b->>'id' FROM unnest($2::text[], $3::jsonb[]) AS u(h, b) RETURNING id)
  SELECT id FROM ins, ${notifyIds('queued', 'ins')} AS n ORDER BY id`;
const STORE_LIKE_SKYHOOK = `${UPSERT_SNAPSHOT}, event AS (
    INSERT INTO events (company, href, version, changes) SELECT $1, $2, version, $7 FROM snapshot RETURNING id, company, href, version, changes
  ), attempt AS (
    INSERT INTO fetch_attempts (company, href, http_status, started_at) VALUES ($1, $2, $5, $4) RETURNING id
  ), done AS (
    UPDATE notifications SET processed_at = now(), status = 'processed', attempt_ids = attempt_ids || (SELECT id FROM attempt)
    WHERE company = $1 AND href = $2 AND processed_at IS NULL AND id <= $6 RETURNING id
  )
  SELECT (SELECT count(pg_notify('bench_events', json_build_object('id', id, 'company', company, 'href', href, 'version', version, 'changes', changes)::text)) FROM event),
         ${notifyIds('processed', 'done')}`;

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
await pool.query(SCHEMA);
if (LIKE_SKYHOOK) {
  await pool.query(SKYHOOK_SCHEMA);
  const listener = new pg.Client({ connectionString: process.env.DATABASE_URL });
  listener.on('error', (err) => console.error('listener:', err));
  await listener.connect();
  listener.on('notification', (message) => JSON.parse(message.payload ?? 'null'));
  await listener.query('LISTEN bench_notifications; LISTEN bench_events');
}
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });

/**
 * A diagnosis knob, not the yardstick (docs/performance.md, "What the rules' round trips cost"):
 * BENCH_BASELINE_ROUND_TRIPS=skyhook adds the four round trips Skyhook's rules take beyond this pipeline's,
 * each doing the least such a step can: a script that admits the resource at its company (the job's
 * priority) before the add; before the GET, a SELECT that claims the pending rows and a script that starts
 * the fetch at the company's gate (its C5 slot); after the store, a script that finishes it, not awaited.
 */
const ROUND_TRIPS = process.env.BENCH_BASELINE_ROUND_TRIPS === 'skyhook';
const gate = redis as Redis & Record<'gateAdmit' | 'gateStart' | 'gateFinish', (...args: string[]) => Promise<number>>;
redis.defineCommand('gateAdmit', { numberOfKeys: 1, lua: "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1) % 1000 + 1" });
redis.defineCommand('gateStart', { numberOfKeys: 2, lua: "redis.call('SET', KEYS[2], '1', 'PX', 1000) return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)" });
redis.defineCommand('gateFinish', { numberOfKeys: 1, lua: "return redis.call('HINCRBY', KEYS[1], ARGV[1], -1)" });
const CLAIM = 'SELECT array_agg(id) AS ids FROM notifications WHERE company = $1 AND href = $2 AND processed_at IS NULL';
type FetchJob = { company: string; href: string };
const queue = new Queue<FetchJob>('fetch', { connection: redis, prefix: PREFIX });

/** One job per (company, href): BullMQ coalesces the adds (no-op while waiting, one follow-up while active). */
const add = (company: string, href: string, admitted?: { priority: number }) =>
  queue.add('fetch', { company, href }, { deduplication: { id: `${company}:${href}`, keepLastIfActive: true }, attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: 1000, ...admitted });
const enqueue = (company: string, href: string) =>
  (ROUND_TRIPS ? gate.gateAdmit(`${PREFIX}:admitted`, company).then((priority) => add(company, href, { priority })) : add(company, href))
    .catch((err: unknown) => console.error('add failed (the rows stay pending until a restart adds them):', err));

// Group commit: while an INSERT is in flight, arriving rows gather and go together in the next one.
type Pending = { href: string; body: string; resolve: (id: number) => void; reject: (err: unknown) => void };
let gathering: Pending[] = [];
let flushing = false;
/** The highest id committed so far: what a fetch starting now covers. */
let committedUpTo = Number((await pool.query('SELECT coalesce(max(id), 0) AS id FROM notifications')).rows[0].id);

function store(href: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    gathering.push({ href, body, resolve, reject });
    if (!flushing) void flush();
  });
}

async function flush(): Promise<void> {
  flushing = true;
  while (gathering.length > 0) {
    const batch = gathering;
    gathering = [];
    try {
      const { rows } = await pool.query<{ id: string }>({ name: 'insert_notifications', text: LIKE_SKYHOOK ? INSERT_LIKE_SKYHOOK : INSERT, values: [COMPANY, batch.map((p) => p.href), batch.map((p) => p.body)] });
      committedUpTo = Number(rows[rows.length - 1]!.id);
      batch.forEach((p, i) => p.resolve(Number(rows[i]!.id)));
      for (const href of new Set(batch.map((p) => p.href))) void enqueue(COMPANY, href);
    } catch (err) {
      batch.forEach((p) => p.reject(err));
    }
  }
  flushing = false;
}

// The Basic check: the whole header against the fixed credential's, in constant time (digests of equal length).
const sha256 = (text: string) => createHash('sha256').update(text).digest();
const EXPECTED = sha256(`Basic ${Buffer.from(CREDENTIAL).toString('base64')}`);
const authorized = (header: string | undefined) => header !== undefined && timingSafeEqual(sha256(header), EXPECTED);

const app = Fastify({ logger: false });
// The body is stored as received: kept as text, parsed once to read its href.
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
app.post('/hooks', async (req, reply) => {
  if (!authorized(req.headers.authorization)) return reply.code(401).send({ error: 'unauthorized' });
  let href: unknown;
  try {
    href = (JSON.parse(req.body as string) as { href?: unknown }).href;
  } catch {
    return reply.code(400).send({ error: 'not JSON' });
  }
  if (typeof href !== 'string' || !/^https?:\/\//.test(href)) return reply.code(400).send({ error: 'no href' });
  try {
    return { status: 'received', id: await store(href, req.body as string) };
  } catch {
    return reply.code(503).send({ error: 'not stored' });
  }
});

const worker = new Worker<FetchJob>(
  'fetch',
  async (job) => {
    const { company, href } = job.data;
    const startedAt = new Date();
    const covers = committedUpTo;
    if (ROUND_TRIPS) {
      await pool.query({ name: 'claim', text: CLAIM, values: [company, href] });
      await gate.gateStart(`${PREFIX}:running`, `${PREFIX}:slot:${company}:${href}`, company);
    }
    const res = await request(href, { headers: { authorization: `Bearer ${RESOURCE_TOKEN}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
    const envelope = (await res.body.json()) as { meta?: { errors?: unknown[] }; data?: unknown };
    if (res.statusCode !== 200 || (envelope.meta?.errors?.length ?? 0) > 0) {
      await pool.query({ name: 'insert_attempt', text: 'INSERT INTO fetch_attempts (company, href, http_status, started_at) VALUES ($1, $2, $3, $4)', values: [company, href, res.statusCode, startedAt] });
      throw new Error(`GET ${href}: ${res.statusCode}`);
    }
    const values = [company, href, JSON.stringify(envelope.data), startedAt, res.statusCode, covers];
    // The event's changes as Skyhook's diff would give them for a resource whose one field changed.
    if (LIKE_SKYHOOK) values.push(JSON.stringify([{ op: 'replace', path: '/updatedAt', value: startedAt.toISOString() }]));
    await pool.query({ name: 'store_snapshot', text: LIKE_SKYHOOK ? STORE_LIKE_SKYHOOK : STORE, values });
    if (ROUND_TRIPS) void gate.gateFinish(`${PREFIX}:running`, company).catch((err: unknown) => console.error('gate finish failed:', err));
  },
  { connection: redis, prefix: PREFIX, concurrency: 64 },
);
worker.on('error', (err) => console.error('worker:', err));

// A crash between a commit and its add left rows pending with no job: add theirs again.
const { rows: pending } = await pool.query<FetchJob>('SELECT DISTINCT company, href FROM notifications WHERE processed_at IS NULL');
await Promise.all(pending.map((r) => enqueue(r.company, r.href)));
await app.listen({ port: PORT, host: '127.0.0.1' });
process.send?.('ready');

process.once('SIGTERM', () => {
  void (async () => {
    await app.close();
    await worker.close();
    await queue.close();
    await pool.end();
    redis.disconnect();
    process.exit(0);
  })();
});
