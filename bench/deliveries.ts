/**
 * `npm run bench -- --deliveries` (SPEC §5.2, the four delivery rows of §11), about 3 minutes: Skyhook started
 * as run.ts starts it (compiled, `all` role, a fresh `skyhook_bench` database) with DESTINATION_TIMEOUT_MS=15000
 * (the default, set so that it stays so) and DELIVERY_RETRY_SCHEDULE=0,5s,5s,5s,5s,5s,5s,5s (a failing
 * destination's first probe comes 5 s after its circuit opens, as with the default schedule, and so does every
 * later one, where the default's would be minutes or an hour apart), the local resource server, and the
 * companies' applications in a process of their own (bench/destination-server.ts, answering 200 at once unless
 * told otherwise; its CPU is not counted). Companies are seeded as `--tenants` seeds them (a token and a BASIC
 * webhook on its own targetURI each), destinations are created through the admin API, and every notification is
 * of a resource of its own unless said. `-- --quick` runs smaller loads (a smoke test of this mode; CI's
 * `--quick` run does not run it). In order:
 *
 * 1. end to end: 10 companies without destinations, then 10 with one each, then (not quick) the first 10 again:
 *    notifications as fast as they come (autocannon, 64 connections), per second until the last is processed,
 *    or, with destinations, until the last delivery is answered (the destination server's clock). The share is
 *    the second over the mean of the others.
 * 2. a steady 200/s over the 10 companies with destinations: their events' committed → delivery answered p50
 *    (the event's created_at, its store transaction's start: the commit ends that one statement) against the
 *    same notifications' received → processed p50; and where a delivery's time goes, from its attempt.
 * 3. company A's destination hangs (never answers: Skyhook's timeout ends each request) with A's 2,000 deliveries
 *    waiting; meanwhile company B's notifications at a steady 50/s, all sent within A's first timeout, while A's
 *    requests hold every place A has: B's deliveries, stored → answered p95. A's destination is deleted after.
 * 4. a destination answering 500 while 1,000 resources × 10 versions are stored (ten rounds through Skyhook, each
 *    processed before the next): once quiet, the CPU of Skyhook, PostgreSQL and Redis over 30 s (beside an idle
 *    reading taken before the rounds); then the destination answers 200: from its first 2xx (the probe's) to the
 *    last of the 10,000, whether each resource's versions arrived in increasing order, and none twice.
 */
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { callsBetween, formatCalls, processWrites, type Calls, type CallsReader } from './calls.js';
import { seedTenant, type Tenant } from './tenants.js';

type CpuReading = { skyhook: number; postgres: number; redis: number };
/** A notification to POST: its webhook's targetURI path, its headers, its body. */
type Notification = { path: string; headers: Record<string, string>; body: string };
type Sent = { ok: number; non2xx: number };

export interface DeliveriesBenchOptions {
  log: (line: string) => void;
  json: boolean;
  quick: boolean;
  build: () => void;
  /** Drops the bench database and the bench's Redis keys. */
  resetState: () => Promise<void>;
  startResourceServer: () => Promise<unknown>;
  startDestinationServer: () => Promise<unknown>;
  /** Skyhook with these settings added to its environment. */
  startSkyhook: (env: Record<string, string>) => Promise<ChildProcess>;
  databaseUrl: string;
  /** Its name, for PostgreSQL's counts (bench/calls.ts). */
  databaseName: string;
  skyhookUrl: string;
  /** The companies' API base URL, on the resource server. */
  apiBase: string;
  destinationServerUrl: string;
  /** Skyhook's SECRET_KEY (base64): the seeded tokens are encrypted with it. */
  secretKey: string;
  adminToken: string;
  /** CPU seconds so far of Skyhook's processes, of all of PostgreSQL's and of Redis (run.ts, from /proc). */
  cpuReading: (skyhookPids: number[]) => CpuReading;
  /** A named query answering `pending`: whether any notification is still to process (run.ts's, SKYHOOK_PROBE). */
  pendingProbe: { name: string; text: string };
  /** Redis's and PostgreSQL's counts of calls (bench/calls.ts). */
  openCalls: () => Promise<CallsReader>;
  /** Each notification once, as fast as Skyhook answers (autocannon, 64 connections). */
  fire: (notifications: Notification[]) => Promise<Sent>;
  /** `count` notifications at a steady `rate` a second. */
  paced: (rate: number, count: number, next: () => Notification) => Promise<Sent>;
}

/** §11's targets. */
const TARGETS = { e2eShare: 0.8, latencyRatio: 2, bP95Ms: 2000, failingCpuPercent: 5, drainSeconds: 60 };

const TIMEOUT_MS = 15_000;
const RETRY_SCHEDULE = '0,5s,5s,5s,5s,5s,5s,5s';
const COMPANIES = 10;
const STEADY_RATE = 200;
const HANG_COUNT = 2000;
const B_RATE = 50;
/** Quiet before the failing destination's CPU window: the last round's deliveries parked, its jobs ended. */
const QUIET_MS = 5000;
/** PostgreSQL publishes a backend's counts up to 10 s after its last transaction (bench/calls.ts). */
const COUNTS_PUBLISHED_MS = 11_000;
/** Every wait for Skyhook is bounded: a figure not reached is reported as such. */
const CAP_MS = 180_000;

const sizesOf = (quick: boolean) => ({
  e2eCount: quick ? 3000 : 20_000,
  steadySeconds: quick ? 3 : 10,
  bSeconds: quick ? 3 : 10,
  failResources: quick ? 200 : 1000,
  failVersions: quick ? 5 : 10,
  idleSeconds: quick ? 5 : 10,
  cpuWindowSeconds: quick ? 10 : 30,
});
type Sizes = ReturnType<typeof sizesOf>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;
const cpuTotal = (c: CpuReading) => c.skyhook + c.postgres + c.redis;
const cpuBetween = (a: CpuReading, b: CpuReading): CpuReading => ({ skyhook: b.skyhook - a.skyhook, postgres: b.postgres - a.postgres, redis: b.redis - a.redis });
/** CPU between two readings, µs per item. */
const perItemUs = (c: CpuReading, items: number): CpuReading => ({ skyhook: Math.round((c.skyhook * 1e6) / items), postgres: Math.round((c.postgres * 1e6) / items), redis: Math.round((c.redis * 1e6) / items) });
/** CPU between two readings, per cent of one core. */
const percentOfCore = (c: CpuReading, seconds: number): CpuReading => ({ skyhook: round((c.skyhook / seconds) * 100, 2), postgres: round((c.postgres / seconds) * 100, 2), redis: round((c.redis / seconds) * 100, 2) });
const formatCpu = (c: CpuReading, unit: string) => `${round(cpuTotal(c), 2)} ${unit} (Skyhook ${c.skyhook}, PostgreSQL ${c.postgres}, Redis ${c.redis})`;

interface Stats {
  attempts: number;
  firstAttemptAt: number | null;
  ok: number;
  failed: number;
  hung: number;
  firstOkAt: number | null;
  lastOkAt: number | null;
  duplicates: number;
  outOfOrder: number;
}

/** The destination server (bench/destination-server.ts): its modes, what it answered, and when. */
function destinationServer(o: DeliveriesBenchOptions) {
  const call = async (path: string, body?: unknown) => {
    const res = await fetch(`${o.destinationServerUrl}${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`destination server ${path}: ${res.status}`);
    return res.json();
  };
  return {
    modes: (modes: Record<string, 'ok' | 'fail' | 'hang'>) => call('/_config', modes),
    reset: () => call('/_reset', {}),
    release: (name: string) => call(`/_release?name=${name}`, {}),
    stats: async (name: string): Promise<Stats> => ((await call('/_stats')) as Record<string, Stats>)[name] ?? { attempts: 0, firstAttemptAt: null, ok: 0, failed: 0, hung: 0, firstOkAt: null, lastOkAt: null, duplicates: 0, outOfOrder: 0 },
    all: async (): Promise<Record<string, Stats>> => (await call('/_stats')) as Record<string, Stats>,
    arrivals: async (names: string[]) => {
      const each = (await Promise.all(names.map((n) => call(`/_arrivals?name=${n}`)))) as { deliveryIds: number[]; at: number[] }[];
      return { deliveryIds: each.flatMap((a) => a.deliveryIds), at: each.flatMap((a) => a.at) };
    },
  };
}
type DestinationServer = ReturnType<typeof destinationServer>;

async function admin(o: DeliveriesBenchOptions, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${o.skyhookUrl}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${o.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A destination of the company on the destination server, named `name` there; answers its id. */
async function createDestination(o: DeliveriesBenchOptions, tenant: Tenant, name: string): Promise<string> {
  const created = await admin(o, 'POST', `/companies/${tenant.companyId}/destinations`, { url: `${o.destinationServerUrl}/d/${name}`, description: `bench ${name}` });
  if (created.status !== 201) throw new Error(`creating destination ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.id as string;
}

const notificationOf = (o: DeliveriesBenchOptions, tenant: Tenant, id: string): Notification => ({
  path: tenant.path,
  headers: { 'content-type': 'application/json', authorization: tenant.authorization },
  body: JSON.stringify({ id, type: 'rfqs', href: `${o.apiBase}/rfqs/${id}` }),
});

const maxNotificationId = async (sql: pg.Client) => Number((await sql.query('SELECT coalesce(max(id), 0) AS m FROM notifications')).rows[0].m);

/** Polls until `done` or the cap; answers whether it was done. */
async function waitUntil(done: () => Promise<boolean>, capMs = CAP_MS, everyMs = 50): Promise<boolean> {
  for (const since = Date.now(); ; await sleep(everyMs)) {
    if (await done()) return true;
    if (Date.now() - since >= capMs) return false;
  }
}

/** Until no notification is pending (run.ts's probe of the pending rows' partial index, every 50 ms). */
const processedAll = (o: DeliveriesBenchOptions, sql: pg.Client) => waitUntil(async () => !(await sql.query(o.pendingProbe)).rows[0].pending);

/** Until `names` answered `count` deliveries between them (the destination server is asked: PostgreSQL's CPU is measured). */
async function answeredAll(server: DestinationServer, names: string[], count: number): Promise<{ done: boolean; ok: number; lastOkAt: number }> {
  let ok = 0;
  let lastOkAt = 0;
  const done = await waitUntil(async () => {
    const all = await server.all();
    const mine = names.map((n) => all[n]).filter((s): s is Stats => s !== undefined);
    ok = mine.reduce((sum, s) => sum + s.ok, 0);
    lastOkAt = Math.max(0, ...mine.map((s) => s.lastOkAt ?? 0));
    return ok >= count;
  });
  return { done, ok, lastOkAt };
}

/** p50, p95 and p99 of a query's `ms` column. */
async function percentiles(sql: pg.Client, from: string, values: unknown[]): Promise<{ p50: number | null; p95: number | null; p99: number | null; n: number }> {
  const { rows } = await sql.query(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) AS p95,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99, count(*)::int AS n FROM (${from}) t`,
    values,
  );
  const r = rows[0];
  const at = (v: unknown) => (v === null ? null : round(Number(v), 1));
  return { p50: at(r.p50), p95: at(r.p95), p99: at(r.p99), n: r.n };
}

/** Delivery id → answered at (the destination server's clock) joined to the delivery and its event: `ms` from `start` (SQL, ms since the epoch) to the answer. */
const ANSWERED_AFTER = (start: string) =>
  `SELECT a.at - extract(epoch FROM ${start}) * 1000 AS ms
   FROM unnest($1::bigint[], $2::float8[]) AS a(id, at) JOIN deliveries d ON d.id = a.id JOIN events e ON e.id = d.event_id`;

// 1. End to end, with and without destinations.

async function endToEnd(o: DeliveriesBenchOptions, sql: pg.Client, pids: number[], server: DestinationServer, plain: Tenant[], withDestinations: Tenant[], names: string[], sizes: Sizes) {
  const n = sizes.e2eCount;
  let batch = 0;
  const notifications = (tenants: Tenant[]) => {
    const b = batch++;
    return Array.from({ length: n }, (_, i) => notificationOf(o, tenants[i % tenants.length]!, `e2e${b}-${i}`));
  };
  /** The notifications after `start` processed, and per second from `t0` to the last one's store. */
  const processedSince = async (start: number, t0: number) => {
    const { rows } = await sql.query(`SELECT count(*) FILTER (WHERE status = 'processed')::int AS n, extract(epoch FROM max(processed_at)) * 1000 AS last FROM notifications WHERE id > $1`, [start]);
    return { processed: rows[0].n as number, perS: rows[0].n / ((Number(rows[0].last) - t0) / 1000) };
  };
  const without = async (label: string) => {
    o.log(`    ${label}: ${n.toLocaleString('en')} notifications over ${COMPANIES} companies without destinations`);
    const prepared = notifications(plain);
    const start = await maxNotificationId(sql);
    const cpu0 = o.cpuReading(pids);
    const t0 = Date.now();
    const sent = await o.fire(prepared);
    const done = await processedAll(o, sql);
    const cpu = perItemUs(cpuBetween(cpu0, o.cpuReading(pids)), n);
    const { processed, perS } = await processedSince(start, t0);
    o.log(`      ${done ? '' : 'NOT ALL PROCESSED: '}${processed} processed, ${Math.round(perS)}/s; CPU per notification ${formatCpu(cpu, 'µs')}`);
    return { perS, cpu, lost: sent.non2xx + (n - processed) };
  };
  const before = await without('without destinations');

  o.log(`    with destinations: ${n.toLocaleString('en')} notifications over ${COMPANIES} companies with one destination each`);
  await server.reset();
  const prepared = notifications(withDestinations);
  const start = await maxNotificationId(sql);
  const cpu0 = o.cpuReading(pids);
  const t0 = Date.now();
  const sent = await o.fire(prepared);
  const answered = await answeredAll(server, names, sent.ok);
  const cpu = perItemUs(cpuBetween(cpu0, o.cpuReading(pids)), n);
  const withPerS = answered.ok / ((answered.lastOkAt - t0) / 1000);
  // The fetches' own pace meanwhile: whether deliveries slowed them, or lagged behind them.
  const fetched = await processedSince(start, t0);
  o.log(`      ${answered.done ? '' : 'NOT ALL ANSWERED: '}${answered.ok} deliveries answered, ${Math.round(withPerS)}/s (processed meanwhile ${Math.round(fetched.perS)}/s); CPU per notification ${formatCpu(cpu, 'µs')}`);

  const after = o.quick ? undefined : await without('without destinations again');
  const withoutPerS = after ? (before.perS + after.perS) / 2 : before.perS;
  return {
    e2eWithDestinationsPerS: Math.round(withPerS),
    e2eWithoutDestinationsPerS: Math.round(withoutPerS),
    /** With destinations, processed (fetched and stored) per second, to the last notification's store. */
    e2eWithDestinationsProcessedPerS: Math.round(fetched.perS),
    e2eWithoutBeforeAfterPerS: [before.perS, ...(after ? [after.perS] : [])].map((v) => Math.round(v)),
    e2eShare: round(withPerS / withoutPerS, 3),
    e2eCpuUsPerNotification: { without: before.cpu, with: cpu },
    e2eUnanswered: sent.ok - answered.ok,
    e2eLost: before.lost + (after?.lost ?? 0) + sent.non2xx,
  };
}

// 2. Latency at a steady 200/s.

async function steady(o: DeliveriesBenchOptions, sql: pg.Client, server: DestinationServer, withDestinations: Tenant[], names: string[], sizes: Sizes) {
  const count = STEADY_RATE * sizes.steadySeconds;
  o.log(`    a steady ${STEADY_RATE}/s for ${sizes.steadySeconds} s over the ${COMPANIES} companies with destinations`);
  await server.reset();
  const start = await maxNotificationId(sql);
  let i = 0;
  const sent = await o.paced(STEADY_RATE, count, () => notificationOf(o, withDestinations[i % withDestinations.length]!, `steady-${i++}`));
  const answered = await answeredAll(server, names, sent.ok);
  const processed = await percentiles(sql, `SELECT extract(epoch FROM processed_at - received_at) * 1000 AS ms FROM notifications WHERE id > $1 AND status = 'processed'`, [start]);
  const { deliveryIds, at } = await server.arrivals(names);
  const delivered = await percentiles(sql, ANSWERED_AFTER('e.created_at'), [deliveryIds, at]);
  // Where a delivery's time goes (p50s, ms): stored -> its attempt started (queue, gate, the job's read), the request, answered -> recorded.
  // Its last attempt by the attempts' delivery_id index (`id + 0`): ordered by `id`, PostgreSQL walked every partition's primary key backwards for each delivery (38 s once).
  const p50 = (x: string) => `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${x})`;
  const { rows } = await sql.query(
    `SELECT ${p50('extract(epoch FROM a.started_at - d.created_at) * 1000')} AS to_send, ${p50('a.duration_ms')} AS request,
            ${p50('extract(epoch FROM d.delivered_at - a.started_at) * 1000 - a.duration_ms')} AS to_record
     FROM unnest($1::bigint[]) AS x(id) JOIN deliveries d ON d.id = x.id
     JOIN LATERAL (SELECT started_at, duration_ms FROM delivery_attempts WHERE delivery_id = d.id ORDER BY id + 0 DESC LIMIT 1) a ON true`,
    [deliveryIds],
  );
  const segments = { toSendMs: round(Number(rows[0].to_send), 1), requestMs: round(Number(rows[0].request), 1), toRecordMs: round(Number(rows[0].to_record), 1) };
  const ratio = delivered.p50 !== null && processed.p50 ? round(delivered.p50 / processed.p50, 2) : null;
  o.log(`      received -> processed p50 ${processed.p50} ms (p99 ${processed.p99}); event committed -> delivery answered p50 ${delivered.p50} ms (p99 ${delivered.p99}, ${delivered.n} deliveries)`);
  o.log(`      where a delivery's time goes (p50): stored -> attempt started ${segments.toSendMs} ms (queue, gate, read), the request ${segments.requestMs} ms, answered -> recorded ${segments.toRecordMs} ms`);
  return {
    steadyReceivedToProcessedP50Ms: processed.p50,
    steadyReceivedToProcessedP99Ms: processed.p99,
    steadyCommittedToAnsweredP50Ms: delivered.p50,
    steadyCommittedToAnsweredP99Ms: delivered.p99,
    steadyLatencyRatio: ratio,
    steadyDeliverySegmentsP50: segments,
    steadyUnanswered: sent.ok - answered.ok,
    steadyLost: sent.non2xx,
  };
}

// 3. A hanging destination beside another company's.

async function hangingNeighbour(o: DeliveriesBenchOptions, sql: pg.Client, server: DestinationServer, sizes: Sizes) {
  const a = await seedTenant(sql, o, 'deliveries-a');
  const b = await seedTenant(sql, o, 'deliveries-b');
  const aDestination = await createDestination(o, a, 'hang-a');
  await createDestination(o, b, 'b');
  await server.modes({ 'hang-a': 'hang' });
  o.log(`    company A: ${HANG_COUNT.toLocaleString('en')} notifications, its destination never answering (timeout ${TIMEOUT_MS / 1000} s)`);
  const sentA = await o.fire(Array.from({ length: HANG_COUNT }, (_, i) => notificationOf(o, a, `hang-a-${i}`)));
  let aWaiting = 0;
  const aReady = await waitUntil(async () => {
    aWaiting = (await sql.query(`SELECT count(*)::int AS n FROM deliveries WHERE destination_id = $1 AND status = 'pending'`, [aDestination])).rows[0].n;
    return aWaiting >= sentA.ok && (await server.stats('hang-a')).hung > 0;
  });
  const a0 = await server.stats('hang-a');
  o.log(`      ${aWaiting} of A's deliveries waiting${aReady ? '' : ' (not all stored within the cap)'}, ${a0.hung} of its requests hanging`);

  const count = B_RATE * sizes.bSeconds;
  o.log(`    company B: a steady ${B_RATE}/s for ${sizes.bSeconds} s meanwhile`);
  let i = 0;
  const sentB = await o.paced(B_RATE, count, () => notificationOf(o, b, `hang-b-${i++}`));
  const bSentAt = performance.timeOrigin + performance.now();
  const answered = await answeredAll(server, ['b'], sentB.ok);
  const a1 = await server.stats('hang-a');
  // B's load counts only while every request A started still hangs: sent before the first of them timed out.
  const aHungThroughout = a0.firstAttemptAt !== null && bSentAt < a0.firstAttemptAt + TIMEOUT_MS;
  const { deliveryIds, at } = await server.arrivals(['b']);
  const bLatency = await percentiles(sql, ANSWERED_AFTER('d.created_at'), [deliveryIds, at]);
  o.log(
    `      B: ${answered.ok} of ${sentB.ok} answered, stored -> answered p50 ${bLatency.p50} ms, p95 ${bLatency.p95} ms, p99 ${bLatency.p99} ms; ` +
      `A meanwhile: ${a1.hung} requests hanging, ${a1.attempts} started in all${aHungThroughout ? ', none timed out before B was sent' : ', SOME TIMED OUT BEFORE B WAS ALL SENT'}`,
  );
  const deleted = await admin(o, 'DELETE', `/companies/${a.companyId}/destinations/${aDestination}`);
  if (deleted.status !== 204) throw new Error(`deleting A's destination: ${deleted.status} ${JSON.stringify(deleted.body)}`);
  await server.release('hang-a');
  return {
    hangAWaiting: aWaiting,
    hangARequestsHanging: a1.hung,
    hangAHungThroughout: aHungThroughout,
    hangBP50Ms: bLatency.p50,
    hangBP95Ms: answered.done ? bLatency.p95 : null,
    hangBUnanswered: sentB.ok - answered.ok,
    hangLost: sentA.non2xx + sentB.non2xx,
  };
}

// 4. A failing destination with 10,000 deliveries waiting, then answering again.

async function failingDestination(o: DeliveriesBenchOptions, sql: pg.Client, pids: number[], server: DestinationServer, sizes: Sizes) {
  o.log(`    idle for ${sizes.idleSeconds} s first`);
  const idle0 = o.cpuReading(pids);
  let t = performance.now();
  await sleep(sizes.idleSeconds * 1000);
  const idle = percentOfCore(cpuBetween(idle0, o.cpuReading(pids)), (performance.now() - t) / 1000);
  o.log(`      of a core: ${formatCpu(idle, '%')}`);

  const total = sizes.failResources * sizes.failVersions;
  o.log(`    a destination answering 500: ${sizes.failResources.toLocaleString('en')} resources × ${sizes.failVersions} versions, a round at a time`);
  const f = await seedTenant(sql, o, 'deliveries-f');
  await server.modes({ fail: 'fail' });
  const destinationId = await createDestination(o, f, 'fail');
  const stored0 = Date.now();
  let lost = 0;
  for (let v = 1; v <= sizes.failVersions; v++) {
    const sent = await o.fire(Array.from({ length: sizes.failResources }, (_, r) => notificationOf(o, f, `fail-${r}`)));
    lost += sent.non2xx;
    if (!(await processedAll(o, sql))) throw new Error(`round ${v}: notifications still pending after ${CAP_MS / 1000} s`);
  }
  const { rows: counted } = await sql.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'pending')::int AS pending FROM deliveries WHERE destination_id = $1`, [destinationId]);
  const { rows: states } = await sql.query(`SELECT failing_since IS NOT NULL AS failing, consecutive_failures FROM destinations WHERE id = $1`, [destinationId]);
  const waiting = counted[0].pending as number;
  o.log(`      stored in ${round((Date.now() - stored0) / 1000, 1)} s: ${counted[0].n} deliveries, ${waiting} pending; the destination ${states[0].failing ? 'failing' : 'NOT FAILING'} (${states[0].consecutive_failures} failures in a row)`);
  await sleep(QUIET_MS);

  const s0 = await server.stats('fail');
  const cpu0 = o.cpuReading(pids);
  t = performance.now();
  await sleep(sizes.cpuWindowSeconds * 1000);
  const failingCpu = percentOfCore(cpuBetween(cpu0, o.cpuReading(pids)), (performance.now() - t) / 1000);
  const s1 = await server.stats('fail');
  o.log(`      over ${sizes.cpuWindowSeconds} s, of a core: ${formatCpu(failingCpu, '%')}; ${s1.attempts - s0.attempts} requests to the destination (probes)`);

  o.log('    the destination answers 200 again');
  const calls = await o.openCalls();
  const calls0 = await calls.read(o.databaseName, pids);
  const switched = performance.timeOrigin + performance.now();
  await server.modes({ fail: 'ok' });
  const cpu2 = o.cpuReading(pids);
  const answered = await answeredAll(server, ['fail'], waiting);
  const drainCpu = perItemUs(cpuBetween(cpu2, o.cpuReading(pids)), Math.max(1, answered.ok));
  // What a delivery asks of Redis and PostgreSQL: nothing else runs meanwhile; PostgreSQL's counts read once published.
  const redis1 = await calls.redis();
  const writes1 = processWrites(pids);
  await sleep(COUNTS_PUBLISHED_MS);
  const calls1: Calls = { redis: redis1, postgres: await calls.postgres(o.databaseName), writes: writes1 };
  await calls.close();
  const callsPerDelivery = callsBetween(calls0, calls1, Math.max(1, answered.ok));
  const s2 = await server.stats('fail');
  const { rows: end } = await sql.query(`SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered, count(*) FILTER (WHERE status = 'pending')::int AS pending FROM deliveries WHERE destination_id = $1`, [destinationId]);
  const drainSeconds = s2.firstOkAt !== null && s2.lastOkAt !== null ? round((s2.lastOkAt - s2.firstOkAt) / 1000, 1) : null;
  const firstProbeSeconds = s2.firstOkAt === null ? null : round((s2.firstOkAt - switched) / 1000, 1);
  o.log(
    `      the first 2xx ${firstProbeSeconds} s after the switch; ${answered.ok} answered ${answered.done ? `within ${drainSeconds} s of it` : `(not all within ${CAP_MS / 1000} s)`}, ` +
      `${s2.outOfOrder} out of order, ${s2.duplicates} twice; ${end[0].delivered} delivered, ${end[0].pending} pending; CPU per delivery ${formatCpu(drainCpu, 'µs')}`,
  );
  o.log(`      per delivery: ${formatCalls(callsPerDelivery)}`);
  return {
    failingWaiting: waiting,
    failingCircuitFailures: states[0].consecutive_failures as number,
    idleCpuPercent: idle,
    failingCpuPercent: failingCpu,
    failingCpuPercentTotal: round(cpuTotal(failingCpu), 2),
    failingRequestsInWindow: s1.attempts - s0.attempts,
    resumeFirstProbeSeconds: firstProbeSeconds,
    resumeDrainSeconds: answered.done ? drainSeconds : null,
    resumeDelivered: end[0].delivered as number,
    resumeOutOfOrder: s2.outOfOrder,
    resumeDuplicates: s2.duplicates,
    resumeCpuUsPerDelivery: drainCpu,
    resumeCallsPerDelivery: callsPerDelivery,
    failingLost: lost,
    failingExpected: total,
  };
}

export async function runDeliveriesBench(o: DeliveriesBenchOptions): Promise<void> {
  const sizes = sizesOf(o.quick);
  o.log(`Skyhook deliveries benchmark (SPEC §5.2${o.quick ? ', quick' : ''}): DESTINATION_TIMEOUT_MS=${TIMEOUT_MS}, DELIVERY_RETRY_SCHEDULE=${RETRY_SCHEDULE}; every wait bounded`);
  o.build();
  await o.resetState();
  await o.startResourceServer();
  await o.startDestinationServer();
  const skyhook = await o.startSkyhook({ DESTINATION_TIMEOUT_MS: String(TIMEOUT_MS), DELIVERY_RETRY_SCHEDULE: RETRY_SCHEDULE });
  const pids = [skyhook.pid!];
  const server = destinationServer(o);
  const sql = new pg.Client({ connectionString: o.databaseUrl });
  await sql.connect();
  try {
    const started = Date.now();
    const plain: Tenant[] = [];
    const withDestinations: Tenant[] = [];
    for (let c = 0; c < COMPANIES; c++) plain.push(await seedTenant(sql, o, `plain-${c}`));
    for (let c = 0; c < COMPANIES; c++) withDestinations.push(await seedTenant(sql, o, `delivered-${c}`));
    const names = withDestinations.map((_, c) => `e2e-${c}`);
    for (const [c, tenant] of withDestinations.entries()) await createDestination(o, tenant, names[c]!);

    // Both paths warmed up, fetch and delivery (a fresh process spends its first seconds compiling).
    const warm = Array.from({ length: 2000 }, (_, i) => notificationOf(o, (i % 2 ? plain : withDestinations)[i % COMPANIES]!, `warm-${i}`));
    const warmed = await o.fire(warm);
    await processedAll(o, sql);
    await answeredAll(server, names, warmed.ok / 2);
    await sleep(1500);

    o.log('1/4 end to end, with and without destinations');
    const r1 = await endToEnd(o, sql, pids, server, plain, withDestinations, names, sizes);
    o.log(`2/4 event committed -> delivery answered at ${STEADY_RATE}/s`);
    const r2 = await steady(o, sql, server, withDestinations, names, sizes);
    o.log("3/4 company A's destination hangs; company B's deliveries");
    const r3 = await hangingNeighbour(o, sql, server, sizes);
    o.log('4/4 a failing destination with its deliveries waiting, then answering');
    const r4 = await failingDestination(o, sql, pids, server, sizes);
    o.log(`(${Math.round((Date.now() - started) / 1000)} s in all)`);
    const figures = { ...r1, ...r2, ...r3, ...r4 };
    printTable(figures, sizes, o.quick);
    if (o.json) console.log(JSON.stringify({ mode: 'deliveries', quick: o.quick, destinationTimeoutMs: TIMEOUT_MS, deliveryRetrySchedule: RETRY_SCHEDULE, ...figures }));
  } finally {
    await sql.end();
  }
}

type Figures = Awaited<ReturnType<typeof endToEnd>> & Awaited<ReturnType<typeof steady>> & Awaited<ReturnType<typeof hangingNeighbour>> & Awaited<ReturnType<typeof failingDestination>>;

function printTable(f: Figures, sizes: Sizes, quick: boolean): void {
  const inOrder = f.resumeOutOfOrder === 0 && f.resumeDuplicates === 0;
  const allDelivered = f.resumeDelivered === f.failingWaiting && f.resumeDrainSeconds !== null;
  const total = f.failingExpected.toLocaleString('en');
  const rows: [string, string, string, boolean][] = [
    [
      `end to end with a destination each / without, ${COMPANIES} companies`,
      `${f.e2eShare} (${f.e2eWithDestinationsPerS}/s against ${f.e2eWithoutDestinationsPerS}/s${f.e2eWithoutBeforeAfterPerS.length > 1 ? `, the mean of ${f.e2eWithoutBeforeAfterPerS.join(' and ')}` : ''})`,
      `>= ${TARGETS.e2eShare}`,
      f.e2eShare >= TARGETS.e2eShare && f.e2eUnanswered === 0,
    ],
    [
      `${STEADY_RATE}/s: committed -> answered p50 / received -> processed p50`,
      `${f.steadyLatencyRatio} (${f.steadyCommittedToAnsweredP50Ms} / ${f.steadyReceivedToProcessedP50Ms} ms)`,
      `<= ${TARGETS.latencyRatio}`,
      f.steadyLatencyRatio !== null && f.steadyLatencyRatio <= TARGETS.latencyRatio && f.steadyUnanswered === 0,
    ],
    [
      "A's destination hangs: B's stored -> answered p95, ms",
      f.hangBP95Ms === null ? `${f.hangBUnanswered} of B's not answered in ${CAP_MS / 1000} s` : `${f.hangBP95Ms} (p50 ${f.hangBP50Ms}; A: ${f.hangAWaiting} waiting${f.hangAHungThroughout ? ', hanging throughout' : ', NOT hanging throughout'})`,
      `<= ${TARGETS.bP95Ms}`,
      f.hangBP95Ms !== null && f.hangBP95Ms <= TARGETS.bP95Ms && f.hangAHungThroughout,
    ],
    [
      `failing destination, ${f.failingWaiting.toLocaleString('en')} waiting: CPU, % of a core`,
      `${f.failingCpuPercentTotal} (Skyhook ${f.failingCpuPercent.skyhook}, PostgreSQL ${f.failingCpuPercent.postgres}, Redis ${f.failingCpuPercent.redis}; idle ${round(cpuTotal(f.idleCpuPercent), 2)})`,
      `<= ${TARGETS.failingCpuPercent}`,
      f.failingCpuPercentTotal <= TARGETS.failingCpuPercent,
    ],
    [
      `then from the first successful probe, all ${total} delivered in order, s`,
      f.resumeDrainSeconds === null ? `${f.resumeDelivered} delivered in ${CAP_MS / 1000} s` : `${f.resumeDrainSeconds} (${f.resumeOutOfOrder} out of order, ${f.resumeDuplicates} twice)`,
      `<= ${TARGETS.drainSeconds}, in order`,
      allDelivered && f.resumeDrainSeconds! <= TARGETS.drainSeconds && inOrder,
    ],
  ];
  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length)), Math.max(...rows.map((r) => r[2].length))];
  console.log(`\n${'figure'.padEnd(w[0]!)}  ${'measured'.padEnd(w[1]!)}  ${'target'.padEnd(w[2]!)}  met`);
  for (const [name, value, target, ok] of rows) console.log(`${name.padEnd(w[0]!)}  ${value.padEnd(w[1]!)}  ${target.padEnd(w[2]!)}  ${ok ? 'yes' : 'NO'}`);
  const c = f.e2eCpuUsPerNotification;
  console.log(`\nCPU per notification end to end, µs (Skyhook / PostgreSQL / Redis): without destinations ${c.without.skyhook} / ${c.without.postgres} / ${c.without.redis}, with ${c.with.skyhook} / ${c.with.postgres} / ${c.with.redis}`);
  const s = f.steadyDeliverySegmentsP50;
  console.log(`A delivery at ${STEADY_RATE}/s (p50s): stored -> attempt started ${s.toSendMs} ms, the request ${s.requestMs} ms, answered -> recorded ${s.toRecordMs} ms`);
  const d = f.resumeCpuUsPerDelivery;
  console.log(`Draining the failing destination's deliveries, CPU per delivery, µs: ${d.skyhook} / ${d.postgres} / ${d.redis}; its first 2xx ${f.resumeFirstProbeSeconds} s after it answered again`);
  console.log(`                                              per delivery: ${formatCalls(f.resumeCallsPerDelivery)}`);
  const busy = Math.max(f.idleCpuPercent.postgres, f.idleCpuPercent.redis);
  if (busy >= 5) console.log(`(PostgreSQL or Redis used ${busy} % of a core while Skyhook was idle: other work on this machine, counted in every CPU figure above)`);
  if (quick) console.log(`(quick: ${f.failingExpected.toLocaleString('en')} deliveries for the failing destination, a ${sizes.cpuWindowSeconds} s CPU window)`);
  const lost = f.e2eLost + f.steadyLost + f.hangLost + f.failingLost;
  if (lost > 0) console.log(`\n${lost} notifications were not answered 2xx or not processed`);
}
