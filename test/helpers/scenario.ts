/**
 * A scenario: the marketplace simulator and Skyhook, both really started, with companies created
 * through Skyhook's admin API and webhooks registered on the simulator by Skyhook itself.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { startSimulator, type FetchRecord, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { createCompany, settled, statusCounts, type FaultCompany } from '../faults/support.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from './database.js';
import { startSkyhook, type TestSkyhook } from './skyhook.js';

export interface Scenario {
  sim: Simulator;
  db: TestDatabase;
  prefix: string;
  sql: pg.Pool;
  skyhooks: TestSkyhook[];
  /** The Skyhook that serves HTTP (the first started). */
  skyhook: TestSkyhook;
  addSkyhook(opts: { role: 'api' | 'worker' | 'all'; env?: Record<string, string> }): Promise<TestSkyhook>;
  /** Creates the company in Skyhook (and the simulator) and one webhook for it (support.ts createCompany). */
  company(simId: string, opts?: Parameters<typeof createCompany>[3]): Promise<FaultCompany>;
  /** Waits until `count` notifications are stored and none is pending; answers the counts per status. */
  settled(count: number, timeoutMs?: number): Promise<Record<string, number>>;
  statusCounts(): Promise<Record<string, number>>;
  /** GETs the simulator recorded for href. */
  fetchesOf(href: string): FetchRecord[];
  close(): Promise<void>;
}

export async function startScenario(opts: {
  role?: 'api' | 'worker' | 'all';
  env?: Record<string, string>;
  sim?: SimulatorOptions;
  /** The first Skyhook's logger (to read what it logs). */
  log?: Logger;
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
      const log = skyhooks.length === 0 ? opts.log : undefined;
      const s = await startSkyhook({ databaseUrl: db.url, queuePrefix: prefix, role: o.role, env: { ...opts.env, ...o.env }, log });
      skyhooks.push(s);
      return s;
    },
    company: (simId, o) => createCompany(scenario.skyhook.admin, sim, simId, o),
    settled: (count, timeoutMs = 20_000) => settled(sql, count, timeoutMs),
    statusCounts: () => statusCounts(sql),
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
