/**
 * Traces (SPEC §15): Skyhook runs as its own process (`node bin/skyhook.js start`) with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver this test runs; the marketplace simulator
 * delivers a notification, and the spans of its way arrive as ONE trace: the POST (server span), its wait
 * for the group commit and the commit itself, the job's send and its wait in the queue, the job's run, the
 * `href` GET (client span), the snapshot and the handler. http/json is decoded; the default protocol
 * (http/protobuf) is accepted too. Unset, no OpenTelemetry SDK module and no tracing code is loaded at
 * all: a resolve hook preloaded into the process lists what it imports.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createCompany, settled, type FaultCompany } from '../faults/support.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { killAllChildren, spawnSkyhook, type SkyhookProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/skyhook.js';

/** One POST to the receiver's /v1/traces. */
interface Export {
  contentType: string;
  body: Buffer;
}

/** A span as OTLP/JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

const HOOK = fileURLToPath(new URL('../helpers/module-log.mjs', import.meta.url));

let sim: Simulator;
let collector: Server;
let collectorUrl: string;
let exports: Export[] = [];
const databases: TestDatabase[] = [];
const pools: pg.Pool[] = [];

beforeAll(async () => {
  sim = await startSimulator({ timeScale: 0.001 });
  // The collector: accepts what it is sent and answers an empty success, as OTLP/HTTP says.
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const contentType = req.headers['content-type'] ?? '';
      exports.push({ contentType, body: Buffer.concat(chunks) });
      if (contentType.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as { port: number }).port}`;
});

afterAll(async () => {
  await killAllChildren();
  await sim?.stop();
  await new Promise((resolve) => collector?.close(resolve));
  for (const pool of pools) await pool.end();
  for (const db of databases) await db.drop();
});

/** A Skyhook process on a database and queue of its own, its imports of OpenTelemetry and of the tracing code listed. */
async function run(env: Record<string, string>): Promise<{ proc: SkyhookProcess; sql: pg.Pool; modules: () => string[] }> {
  const db = await createTestDatabase();
  databases.push(db);
  const sql = new pg.Pool({ connectionString: db.url, max: 2 });
  sql.on('error', () => {});
  pools.push(sql);
  const file = join(mkdtempSync(join(tmpdir(), 'skyhook-modules-')), 'modules.txt');
  writeFileSync(file, '');
  const proc = await spawnSkyhook({
    databaseUrl: db.url,
    queuePrefix: testQueuePrefix(),
    role: 'all',
    env: { FETCH_MIN_INTERVAL_MS: '0', NODE_OPTIONS: `--import ${HOOK}`, MODULE_LOG_FILE: file, MODULE_LOG_MATCH: '@opentelemetry|tracing-otel', ...env },
  });
  return { proc, sql, modules: () => readFileSync(file, 'utf8').split('\n').filter(Boolean) };
}

/** One notification of a type that has a handler (tripmsgs), delivered by the simulator and processed. */
async function notify(proc: SkyhookProcess, sql: pg.Pool, simId: string): Promise<{ company: FaultCompany; href: string; id: string }> {
  const company = await createCompany(proc.admin, sim, simId, { eventTypes: ['TripChatFromBuyer'] });
  const [fired] = await sim.fire({ companyId: simId, eventType: 'TripChatFromBuyer', count: 1 });
  await sim.idle();
  expect(await settled(sql, 1, 20_000)).toEqual({ processed: 1 });
  const { rows } = await sql.query<{ id: string }>('SELECT id FROM notifications');
  return { company, href: fired!.notification.href, id: rows[0]!.id };
}

const spansOf = (body: Buffer): { spans: OtlpSpan[]; resource: Record<string, unknown> }[] => {
  const decoded = JSON.parse(body.toString('utf8')) as { resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
  return decoded.resourceSpans.map((rs) => ({ resource: attributesOf(rs.resource.attributes), spans: rs.scopeSpans.flatMap((s) => s.spans) }));
};

/** Attribute values as plain JS values (OTLP/JSON wraps each in {stringValue}, {intValue}, ...). */
function attributesOf(list: OtlpSpan['attributes'] = []): Record<string, unknown> {
  const plain = (v: Record<string, unknown>): unknown => {
    if ('arrayValue' in v) return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(plain);
    if ('intValue' in v) return Number(v.intValue);
    return Object.values(v)[0];
  };
  return Object.fromEntries(list.map((a) => [a.key, plain(a.value)]));
}

describe('traces over OTLP/HTTP (SPEC §15)', () => {
  it('follow a notification in one trace: its POST, the commit, the queue, the GET of its href, the snapshot and the handler', async () => {
    exports = [];
    const { proc, sql, modules } = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'skyhook-under-test', OTEL_BSP_SCHEDULE_DELAY: '100' });
    const { company, href, id } = await notify(proc, sql, 'traced');

    const all = () => exports.filter((e) => e.contentType.startsWith('application/json')).flatMap((e) => spansOf(e.body));
    const server = await eventually(
      async () => all().flatMap((r) => r.spans).find((s) => s.kind === SERVER && attributesOf(s.attributes)['skyhook.notification.id'] === Number(id)),
      'the POST span',
    );
    const expected = ['POST /hooks/:endpointKey', 'commit notification', 'INSERT notifications', 'send fetch', 'fetch queued', 'process fetch', 'GET', 'store snapshot', 'handle tripmsgs'];
    const trace = await eventually(async () => {
      const spans = all().flatMap((r) => r.spans).filter((s) => s.traceId === server.traceId);
      return expected.every((name) => spans.some((s) => s.name === name)) ? spans : undefined;
    }, `every span in the trace of the POST (got ${all().flatMap((r) => r.spans).filter((s) => s.traceId === server.traceId).map((s) => s.name).join(', ')})`);
    const span = (name: string) => trace.find((s) => s.name === name)!;

    // The POST: a server span under the semantic conventions' names, its key never written out.
    expect(attributesOf(server.attributes)).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/hooks/:endpointKey',
      'url.path': '/hooks/REDACTED',
      'http.response.status_code': 200,
      'skyhook.company.id': company.companyId,
      'skyhook.notification.type': 'tripmsgs',
    });
    // The GET of the href: a client span, as the conventions name it.
    const get = span('GET');
    expect(get.kind).toBe(CLIENT);
    const url = new URL(href);
    expect(attributesOf(get.attributes)).toMatchObject({
      'http.request.method': 'GET',
      'url.full': href,
      'http.response.status_code': 200,
      'server.address': url.hostname,
      'server.port': Number(url.port),
    });
    // The way from one to the other: POST > commit wait > send (producer) > queue wait and run (consumer) > GET, snapshot > handler.
    const parentOf = (name: string) => trace.find((s) => s.spanId === span(name).parentSpanId)?.name;
    expect(parentOf('commit notification')).toBe('POST /hooks/:endpointKey');
    expect(parentOf('INSERT notifications')).toBe('commit notification');
    expect(span('send fetch').kind).toBe(PRODUCER);
    expect(parentOf('send fetch')).toBe('commit notification');
    expect(parentOf('fetch queued')).toBe('send fetch');
    expect(span('process fetch').kind).toBe(CONSUMER);
    expect(parentOf('process fetch')).toBe('send fetch');
    expect(parentOf('GET')).toBe('process fetch');
    expect(parentOf('store snapshot')).toBe('process fetch');
    expect(parentOf('handle tripmsgs')).toBe('store snapshot');
    expect(attributesOf(span('process fetch').attributes)).toMatchObject({ 'messaging.destination.name': 'fetch', 'skyhook.notification.ids': [Number(id)], 'skyhook.fetch.next': 'done' });
    expect(attributesOf(span('INSERT notifications').attributes)).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': 'INSERT', 'db.collection.name': 'notifications' });

    // The standard variables are read (OTEL_SERVICE_NAME), and the spans carry no secret.
    expect(all()[0]!.resource).toMatchObject({ 'service.name': 'skyhook-under-test', 'skyhook.role': 'all' });
    const webhook = await proc.admin('GET', `/companies/${company.companyId}/webhooks/${company.webhookId}`);
    const endpointKey = new URL(webhook.body.targetURI as string).pathname.split('/').pop()!;
    const sent = exports.map((e) => e.body.toString('utf8')).join('\n');
    for (const secret of [company.token, endpointKey]) expect(sent).not.toContain(secret);
    expect(sent.toLowerCase()).not.toMatch(/authorization|basic [a-z0-9+/=]{8}|bearer /);

    // The tracing code was loaded (which makes the check of the process without it below meaningful).
    expect(modules().some((m) => m.includes('@opentelemetry/sdk-trace-base'))).toBe(true);
    expect(modules().some((m) => m.includes('tracing-otel'))).toBe(true);
    // Spans a full queue would drop are counted where the platform looks.
    expect(await (await fetch(`${proc.url}/metrics`)).text()).toMatch(/^skyhook_trace_spans_dropped_total 0$/m);
    // A clean stop exports what is left and exits 0.
    await proc.stop();
    expect(proc.exitInfo()).toEqual({ code: 0, signal: null });
  });

  it('go as protobuf by default (OTEL_EXPORTER_OTLP_PROTOCOL unset)', async () => {
    exports = [];
    const { proc, sql } = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_BSP_SCHEDULE_DELAY: '100' });
    await notify(proc, sql, 'traced-protobuf');
    // Protobuf keeps strings as they are: the span names are in the bytes.
    const body = await eventually(async () => {
      const sent = Buffer.concat(exports.map((e) => e.body));
      return sent.includes('process fetch') && sent.includes('POST /hooks/:endpointKey') ? sent : undefined;
    }, 'protobuf spans');
    expect(body.length).toBeGreaterThan(0);
    expect(new Set(exports.map((e) => e.contentType))).toEqual(new Set(['application/x-protobuf']));
    await proc.stop();
  });

  it('that cannot be exported cost nothing else: notifications are processed, the failure is counted and said once', async () => {
    // Nothing listens there: every export is refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const { proc, sql } = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' });
    await notify(proc, sql, 'traced-nowhere');
    const counted = await eventually(async () => {
      const text = await (await fetch(`${proc.url}/metrics`)).text();
      return /^skyhook_errors_total\{kind="tracing"\} [1-9]/m.test(text);
    }, 'the export failure counted', 20_000);
    expect(counted).toBe(true);
    const said = proc.lines().filter((l) => l.includes('"kind":"tracing"'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/"level":40/);
    await proc.stop();
    expect(proc.exitInfo()).toEqual({ code: 0, signal: null });
  });

  it('unset, load no tracing code at all, and export nothing', async () => {
    exports = [];
    const { proc, sql, modules } = await run({});
    await notify(proc, sql, 'untraced');
    expect(await (await fetch(`${proc.url}/metrics`)).text()).not.toContain('skyhook_trace_');
    await proc.stop();
    // prom-client requires @opentelemetry/api (a no-op without an SDK) for its exemplars; nothing else of OpenTelemetry may load.
    expect(modules().filter((m) => !/@opentelemetry\/api\//.test(m))).toEqual([]);
    expect(exports).toEqual([]);
    expect(proc.exitInfo()).toEqual({ code: 0, signal: null });
  });
});
