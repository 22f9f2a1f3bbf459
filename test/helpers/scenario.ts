/**
 * A scenario: the marketplace simulator and Skyhook, both really started, with companies created
 * through Skyhook's admin API and webhooks registered on the simulator by Skyhook itself.
 */
import pg from 'pg';
import { startSimulator, type FetchRecord, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import type { EventType } from '../../src/marketplace/contract.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from './database.js';
import { eventually, startSkyhook, type TestSkyhook } from './skyhook.js';

export interface Scenario {
  sim: Simulator;
  db: TestDatabase;
  prefix: string;
  sql: pg.Pool;
  skyhooks: TestSkyhook[];
  /** The Skyhook that serves HTTP (the first started). */
  skyhook: TestSkyhook;
  addSkyhook(opts: { role: 'api' | 'worker' | 'all'; env?: Record<string, string> }): Promise<TestSkyhook>;
  /** Creates the company in Skyhook (and the simulator) and one webhook for it. */
  company(
    simId: string,
    opts?: { authType?: 'BASIC' | 'OAUTH'; sharedTarget?: boolean; eventTypes?: EventType[] },
  ): Promise<{ companyId: string; webhookId: string; token: string }>;
  /** Waits until `count` notifications are stored and none is pending. */
  settled(count: number, timeoutMs?: number): Promise<void>;
  statusCounts(): Promise<Record<string, number>>;
  /** GETs the simulator recorded for href. */
  fetchesOf(href: string): FetchRecord[];
  close(): Promise<void>;
}

export async function startScenario(opts: {
  role?: 'api' | 'worker' | 'all';
  env?: Record<string, string>;
  sim?: SimulatorOptions;
}): Promise<Scenario> {
  const db = await createTestDatabase();
  const prefix = testQueuePrefix();
  const sim = await startSimulator({ timeScale: 0.001, ...opts.sim });
  const sql = new pg.Pool({ connectionString: db.url, max: 3 });
  sql.on('error', () => {}); // the database is dropped with FORCE at the end
  const skyhooks: TestSkyhook[] = [];

  const scenario: Scenario = {
    sim,
    db,
    prefix,
    sql,
    skyhooks,
    get skyhook() {
      return skyhooks[0]!;
    },
    async addSkyhook(o) {
      const s = await startSkyhook({ databaseUrl: db.url, queuePrefix: prefix, role: o.role, env: { ...opts.env, ...o.env } });
      skyhooks.push(s);
      return s;
    },
    async company(simId, o = {}) {
      const token = `token-${simId}-${Math.random().toString(36).slice(2)}`;
      sim.addCompany({ id: simId, token });
      const created = await scenario.skyhook.admin('POST', '/companies', { name: simId, apiBaseUrl: sim.apiBaseUrl, apiToken: token });
      if (created.status !== 201) throw new Error(`company: ${created.status} ${JSON.stringify(created.body)}`);
      const webhook = await scenario.skyhook.admin('POST', `/companies/${created.body.id}/webhooks`, {
        eventTypes: o.eventTypes ?? ['TripRequest', 'ClientLeads', 'TripChatFromBuyer', 'EmptyLegs'],
        authType: o.authType ?? 'BASIC',
        sharedTarget: o.sharedTarget ?? false,
      });
      if (webhook.status !== 201) throw new Error(`webhook: ${webhook.status} ${JSON.stringify(webhook.body)}`);
      return { companyId: created.body.id, webhookId: webhook.body.id, token };
    },
    async settled(count, timeoutMs = 20_000) {
      await eventually(async () => {
        const c = await scenario.statusCounts();
        const total = Object.values(c).reduce((a, b) => a + b, 0);
        return total >= count && !c.received && !c.queued;
      }, `${count} notifications settled`, timeoutMs);
    },
    async statusCounts() {
      const { rows } = await sql.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM notifications GROUP BY status');
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    },
    fetchesOf(href) {
      return sim.report().fetches.filter((f) => f.href === href);
    },
    async close() {
      for (const s of skyhooks.reverse()) await s.stop();
      await sim.stop();
      await sql.end();
      await db.drop();
    },
  };
  await scenario.addSkyhook({ role: opts.role ?? 'all' });
  return scenario;
}
