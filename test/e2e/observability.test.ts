/**
 * What deploy/ gives a platform team (SPEC §15) fits what Skyhook serves: Skyhook runs for real (simulator,
 * PostgreSQL, Redis), notifications go through and one company's token is refused, its events are delivered
 * to one destination that answers and one that fails, and then every metric name that an alerting rule
 * (deploy/prometheus/alerts.yml) or a dashboard query (deploy/grafana/skyhook-dashboard.json) uses must be
 * a family /metrics declares. Also: the scrape-time gauges the rules alert on (skyhook_ready,
 * skyhook_dependency_up, skyhook_company_state, skyhook_destination_state and the delivery lag) say what
 * /readyz, the companies and the deliveries say; the deliveries' log is one info line per batch, and every
 * line about a destination names its company; each rule carries its runbook and is listed in
 * deploy/README.md; the dashboard is one Grafana loads (panels with a data source and queries, on the grid).
 *
 * promtool's own checks of the same files (syntax, templates, the rules' unit tests) run in CI before the
 * tests: scripts/check-monitoring.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultCompany } from '../faults/support.js';
import { createTestDatabase, testQueuePrefix } from '../helpers/database.js';
import {
  PROMETHEUS_OWN,
  ROOT,
  dashboardQueries,
  exposedFamilies,
  isExposed,
  metricNames,
  panelsOf,
  readDashboard,
  readRules,
} from '../helpers/monitoring.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually, freePort, startSkyhook } from '../helpers/skyhook.js';

let s: Scenario;
let acme: FaultCompany;
let revoked: FaultCompany;
/** The token the marketplace accepts for `revoked` once it refused the one Skyhook holds. */
const newToken = `token-revoked-new-${Date.now()}`;
/** acme's destinations: one that answers 200, one that answers 500 until its circuit opens. */
let answering: TestReceiver;
let failing: TestReceiver;
let answeringId: string;
let failingId: string;
/** What the Skyhook logged, at debug. */
const logLines: { level: number; msg: string; companyId?: string; destinationId?: string; deliveries?: number; byCompany?: Record<string, Record<string, number>> }[] = [];
/** /metrics after the notifications went through, one company was paused and one destination is failing. */
let scrape: string;

const metricsOf = async (url: string) => (await fetch(`${url}/metrics`)).text();

beforeAll(async () => {
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  // Attempts 150 ms apart: the failing destination's fifth failure comes within a second.
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', DELIVERY_RETRY_SCHEDULE: '0,150,150,150,150,150,150,150' }, log: pino({ level: 'debug' }, capture) });
  acme = await s.company('acme');
  revoked = await s.company('revoked');
  [answering, failing] = [await startReceiver(), await startReceiver()];
  failing.answer = () => ({ status: 500 });
  for (const r of [answering, failing]) {
    const created = await s.skyhook.admin('POST', `/companies/${acme.companyId}/destinations`, { url: r.url });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    r.secrets = [created.body.secret];
    if (r === answering) answeringId = created.body.id;
    else failingId = created.body.id;
  }
  // The marketplace stops accepting the token Skyhook holds for `revoked`: its fetch gets 401 and pauses it.
  s.sim.addCompany({ id: 'revoked', token: newToken });
  await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 4, resources: 2 });
  await s.sim.fire({ companyId: 'revoked', eventType: 'TripRequest', count: 1 });
  await s.sim.idle();
  // The paused company's notification waits for new credentials (SPEC §5.1 F4).
  await eventually(async () => {
    const counts = await s.statusCounts();
    const { rowCount } = await s.sql.query("SELECT 1 FROM companies WHERE connection_status = 'unauthorized'");
    return counts.processed === 4 && counts.queued === 1 && rowCount === 1 ? true : undefined;
  }, '4 processed, 1 waiting for its paused company');
  // acme's events: delivered to one destination; the other fails five attempts in a row and is failing.
  await eventually(async () => {
    const { rows } = await s.sql.query<{ events: number; delivered: number }>(
      "SELECT (SELECT count(*)::int FROM events WHERE company_id = $1) AS events, (SELECT count(*)::int FROM deliveries WHERE destination_id = $2 AND status = 'delivered') AS delivered",
      [acme.companyId, answeringId],
    );
    const shown = await s.skyhook.admin('GET', `/companies/${acme.companyId}/destinations/${failingId}`);
    return rows[0]!.events > 0 && rows[0]!.delivered === rows[0]!.events && shown.body.state.status === 'failing';
  }, "acme's events delivered to one destination, the other failing");
  // A refusal at the receiver, so the received counter has a refused outcome too.
  await fetch(`${s.skyhook.url}/hooks/not-a-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  // The first scrape of this process reads the gauges that need a query.
  scrape = await metricsOf(s.skyhook.url);
});
afterAll(async () => {
  await s?.close();
  await answering?.close();
  await failing?.close();
});

describe('the metrics deploy/ uses', () => {
  it('are each one Skyhook serves (a histogram by its _bucket, _sum or _count series), or Prometheus its own', () => {
    const families = exposedFamilies(scrape);
    const uses = [
      ...readRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
      ...dashboardQueries(readDashboard()).map((q) => ({ where: `panel "${q.panel}"`, expr: q.expr })),
    ];
    const used = new Set<string>();
    const missing: string[] = [];
    for (const { where, expr } of uses) {
      const names = metricNames(expr);
      expect(names.length, `${where} selects no metric: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        used.add(name);
        if (!PROMETHEUS_OWN.has(name) && !isExposed(name, families)) missing.push(`${where}: ${name}`);
      }
    }
    expect(missing, 'metric names used by deploy/ that /metrics does not declare').toEqual([]);
    // The rules and the dashboard together cover every Skyhook family of SPEC §7 and the ones added for them.
    for (const name of [
      'skyhook_notifications_received_total',
      'skyhook_processing_latency_seconds_bucket',
      'skyhook_processing_latency_seconds_count',
      'skyhook_fetch_outcomes_total',
      'skyhook_marketplace_calls_total',
      'skyhook_queue_depth',
      'skyhook_oldest_pending_age_seconds',
      'skyhook_jobs_held',
      'skyhook_errors_total',
      'skyhook_company_state',
      'skyhook_companies',
      'skyhook_notifications_pending',
      'skyhook_ready',
      'skyhook_dependency_up',
      'skyhook_deliveries_total',
      'skyhook_delivery_latency_seconds_bucket',
      'skyhook_destination_state',
      'skyhook_deliveries_pending',
      'skyhook_oldest_pending_delivery_age_seconds',
      'up',
    ]) {
      expect(used, name).toContain(name);
    }
  });

  it('have series after real traffic: received, latency, fetch outcomes, queue depth; the backlog only of the company that has one', () => {
    expect(scrape).toMatch(/^skyhook_notifications_received_total\{outcome="stored"\} ([4-9]|\d\d+)$/m);
    expect(scrape).toMatch(/skyhook_notifications_received_total\{outcome="401"\} [1-9]/);
    expect(scrape).toContain('skyhook_processing_latency_seconds_count{status="processed"} 4');
    expect(scrape).toMatch(/skyhook_fetch_outcomes_total\{outcome="ok"\} [1-9]/);
    expect(scrape).toContain('skyhook_fetch_outcomes_total{outcome="unauthorized"} 1');
    expect(scrape).toMatch(/skyhook_queue_depth\{state="wait"\} \d/);
    // acme's all processed: no backlog series; the paused company's wait.
    expect(scrape).not.toContain(`skyhook_oldest_pending_age_seconds{company="${acme.companyId}"}`);
    expect(scrape).toMatch(new RegExp(`^skyhook_oldest_pending_age_seconds\\{company="${revoked.companyId}"\\} \\d+$`, 'm'));
    expect(scrape).toMatch(new RegExp(`^skyhook_notifications_pending\\{company="${revoked.companyId}"\\} [1-9]\\d*$`, 'm'));
  });
});

describe('the scrape-time gauges the alerts read', () => {
  it('say the process is ready and both dependencies answer, as /readyz does', async () => {
    expect(scrape).toMatch(/^skyhook_ready 1$/m);
    expect(scrape).toContain('skyhook_dependency_up{dependency="postgres"} 1');
    expect(scrape).toContain('skyhook_dependency_up{dependency="redis"} 1');
    expect(await (await fetch(`${s.skyhook.url}/readyz`)).json()).toEqual({ status: 'ready', database: true, redis: true });
  });

  it('give each company not ok its one state (the paused one paused, until its token is replaced), and count every company by state', async () => {
    const states = (text: string) => Object.fromEntries([...text.matchAll(/^skyhook_company_state\{company="([^"]+)",state="([^"]+)"\} 1$/gm)].map((m) => [m[1], m[2]]));
    const paused = (text: string) => Object.entries(states(text)).filter(([, state]) => state === 'paused');
    // An ok company has no series of its own: it is counted in skyhook_companies.
    expect(states(scrape)).toEqual({ [revoked.companyId]: 'paused' });
    expect(scrape).toContain('skyhook_companies{state="ok"} 1');
    expect(scrape).toContain('skyhook_companies{state="paused"} 1');
    const { rows } = await s.sql.query("SELECT id FROM companies WHERE connection_status = 'unauthorized'");
    expect(rows).toEqual([{ id: revoked.companyId }]);

    expect((await s.skyhook.admin('PATCH', `/companies/${revoked.companyId}`, { apiToken: newToken })).status).toBe(200);
    // The gauges are read at most every 5 s: within a few seconds the series is gone.
    await eventually(async () => paused(await metricsOf(s.skyhook.url)).length === 0, 'the paused series gone', 10_000);
    const after = await metricsOf(s.skyhook.url);
    expect(states(after)).toEqual({});
    expect(after).toContain('skyhook_companies{state="ok"} 2');
  });

  it("give a failing destination its state, its pending deliveries and its lag; an answering one with nothing pending has no series", async () => {
    const labels = `destination="${failingId}",company="${acme.companyId}"`;
    expect(scrape).toContain(`skyhook_destination_state{${labels},state="failing"} 1`);
    const { rows } = await s.sql.query<{ pending: number }>("SELECT count(*)::int AS pending FROM deliveries WHERE destination_id = $1 AND status = 'pending'", [failingId]);
    expect(rows[0]!.pending).toBeGreaterThan(0);
    expect(scrape).toContain(`skyhook_deliveries_pending{${labels}} ${rows[0]!.pending}`);
    const lag = Number(new RegExp(`^skyhook_oldest_pending_delivery_age_seconds\\{${labels}\\} (\\S+)$`, 'm').exec(scrape)?.[1]);
    // Its oldest delivery was created before the scrape, within this test's minute or so.
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThan(120);
    expect(scrape).not.toContain(answeringId);
    // The attempts, by outcome (counted as they are recorded): the answering destination's delivered, the failing one's retried.
    const now = await metricsOf(s.skyhook.url);
    expect(now).toContain(`skyhook_deliveries_total{outcome="delivered"} ${answering.received.length}`);
    expect(now).toContain(`skyhook_delivery_latency_seconds_count ${answering.received.length}`);
    expect(now).toMatch(/^skyhook_deliveries_total\{outcome="retry"\} ([5-9]|\d\d+)$/m);
  });

  it('say so when Redis does not answer: skyhook_ready 0, skyhook_dependency_up{redis} 0, /readyz 503', async () => {
    const db = await createTestDatabase();
    // Nothing listens on this port: every Redis command is refused at once.
    const skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'api', env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
    try {
      const ready = await fetch(`${skyhook.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'unavailable', database: true, redis: false });
      const text = await metricsOf(skyhook.url);
      expect(text).toMatch(/^skyhook_ready 0$/m);
      expect(text).toContain('skyhook_dependency_up{dependency="postgres"} 1');
      expect(text).toContain('skyhook_dependency_up{dependency="redis"} 0');
    } finally {
      await skyhook.stop();
      await db.drop();
    }
  });
});

describe('the log of the deliveries (SPEC §15)', () => {
  it('says what was sent in one info line per batch, by company and outcome; every line about a destination names its company', async () => {
    const sent = await eventually(async () => {
      const lines = logLines.filter((l) => l.level === 30 && /^sent \d+ deliver(y|ies)$/.test(l.msg));
      const counts: Record<string, number> = {};
      for (const l of lines) for (const [outcome, n] of Object.entries(l.byCompany?.[acme.companyId] ?? {})) counts[outcome] = (counts[outcome] ?? 0) + n;
      // Every request either destination got is counted once, as what came of it.
      const attempts = answering.attempts.length + failing.attempts.length;
      return counts.delivered === answering.received.length && (counts.retry ?? 0) === failing.attempts.length && lines.every((l) => Object.keys(l.byCompany ?? {}).length === 1) ? { lines, attempts } : undefined;
    }, 'the sent lines');
    // Batched: fewer lines than requests (one line a second at most); each with its total.
    expect(sent.lines.length).toBeLessThan(sent.attempts);
    for (const l of sent.lines) expect(l.deliveries).toBe(Object.values(l.byCompany![acme.companyId]!).reduce((a, b) => a + b, 0));
    // Per request: at debug only, naming the company and the destination.
    const perRequest = logLines.filter((l) => l.msg === 'delivery attempt');
    expect(perRequest.length).toBeGreaterThanOrEqual(sent.attempts);
    expect(new Set(perRequest.map((l) => l.level))).toEqual(new Set([20]));
    expect(logLines.find((l) => /attempts in a row/.test(l.msg))).toMatchObject({ companyId: acme.companyId, destinationId: failingId, level: 40 });
    expect(logLines.filter((l) => l.destinationId !== undefined && l.companyId !== acme.companyId)).toEqual([]);
  });
});

describe('the alerting rules', () => {
  it('each have a severity, a summary, a description and a runbook paragraph, and are listed in deploy/README.md', () => {
    const readme = readFileSync(join(ROOT, 'deploy/README.md'), 'utf8');
    const rules = readRules();
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(['SkyhookCompanyPaused', 'SkyhookNotificationsFailing', 'SkyhookBacklogOldestPending', 'SkyhookNotReady', 'SkyhookPostgresUnreachable', 'SkyhookRedisUnreachable', 'SkyhookRelayErrors', 'SkyhookDestinationDisabled', 'SkyhookDestinationFailing', 'SkyhookDeliveryLag']));
    for (const r of rules) {
      expect(['critical', 'warning'], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
      // A paragraph: what it means, what to check, what to do.
      expect(r.annotations?.runbook?.length ?? 0, `${r.alert} runbook`).toBeGreaterThan(200);
      expect(readme, `${r.alert} in deploy/README.md`).toContain(`\`${r.alert}\``);
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });
});

describe('the Grafana dashboard', () => {
  it('parses, and every panel has the data source variable, queries and a place on the grid', () => {
    const dashboard = readDashboard();
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const variable = dashboard.templating.list.find((v) => v.name === 'datasource');
    expect(variable).toMatchObject({ type: 'datasource', query: 'prometheus' });

    const panels = panelsOf(dashboard);
    expect(panels.length).toBeGreaterThan(10);
    const ids = dashboard.panels.map((p) => p.id).concat(panels.map((p) => p.id));
    expect(new Set(ids).size, 'panel ids are unique').toBe(new Set(dashboard.panels.concat(panels)).size);
    for (const p of panels) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
      for (const t of p.targets!) {
        expect(t.expr, `${p.title} ${t.refId}`).toBeTruthy();
        expect(t.datasource, `${p.title} ${t.refId}`).toEqual({ type: 'prometheus', uid: '${datasource}' });
      }
      expect(p.gridPos, p.title).toBeDefined();
      expect(p.gridPos!.x + p.gridPos!.w, p.title).toBeLessThanOrEqual(24);
    }
  });
});
