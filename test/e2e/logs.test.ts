/**
 * Logs (SPEC §15): a live process reads well at `info`. Skyhook runs as its own process, the simulator
 * delivers notifications for three companies (one whose token the marketplace refuses) and a stranger
 * knocks with an unknown key; the process's own output is read: one `info` line per finished batch,
 * with counts by company and outcome, instead of a line per request (those stay at debug), and every
 * line about a company's notifications names the company.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createCompany, statusCounts, type FaultCompany } from '../faults/support.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { killAllChildren, spawnSkyhook, type SkyhookProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/skyhook.js';

type Line = { level: number; msg: string; companyId?: string; companyIds?: string[]; byCompany?: Record<string, Record<string, number>>; notifications?: number };

let db: TestDatabase;
let sql: pg.Pool;
let sim: Simulator;
let proc: SkyhookProcess;
let acme: FaultCompany;
let zeta: FaultCompany;
let revoked: FaultCompany;

const INFO = 30;
const DEBUG = 20;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = new pg.Pool({ connectionString: db.url, max: 2 });
  sql.on('error', () => {});
  sim = await startSimulator({ timeScale: 0.001 });
  proc = await spawnSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'all', env: { LOG_LEVEL: 'debug', FETCH_MIN_INTERVAL_MS: '0' } });
  acme = await createCompany(proc.admin, sim, 'acme', { eventTypes: ['TripRequest'] });
  zeta = await createCompany(proc.admin, sim, 'zeta', { authType: 'OAUTH', sharedTarget: true, eventTypes: ['ClientLeads'] });
  revoked = await createCompany(proc.admin, sim, 'revoked', { eventTypes: ['TripRequest'] });
  // The marketplace no longer accepts the token Skyhook holds for `revoked`: its fetch meets a 401 and pauses it.
  sim.addCompany({ id: 'revoked', token: 'a-token-skyhook-does-not-hold' });
  await sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 6, resources: 3 });
  await sim.fire({ companyId: 'zeta', eventType: 'ClientLeads', count: 3, resources: 3 });
  await sim.fire({ companyId: 'revoked', eventType: 'TripRequest', count: 1 });
  await sim.idle();
  await fetch(`${proc.url}/hooks/not-a-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  // The paused company's notification waits for new credentials (SPEC §5.1 F4).
  await eventually(async () => {
    const counts = await statusCounts(sql);
    const { rowCount } = await sql.query("SELECT 1 FROM companies WHERE connection_status = 'unauthorized'");
    return counts.processed === 9 && counts.queued === 1 && rowCount === 1 ? true : undefined;
  }, '9 processed, 1 waiting for its paused company', 20_000);
});

afterAll(async () => {
  await killAllChildren();
  await sim?.stop();
  await sql?.end();
  await db?.drop();
});

const lines = (): Line[] =>
  proc
    .lines()
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

/** Sums the counts of every `byCompany` line whose message matches. */
function summed(message: RegExp): { lines: Line[]; counts: Record<string, Record<string, number>> } {
  const matching = lines().filter((l) => l.level === INFO && message.test(l.msg));
  const counts: Record<string, Record<string, number>> = {};
  for (const line of matching) {
    for (const [company, outcomes] of Object.entries(line.byCompany ?? {})) {
      for (const [outcome, n] of Object.entries(outcomes)) (counts[company] ??= {})[outcome] = (counts[company]?.[outcome] ?? 0) + n;
    }
  }
  return { lines: matching, counts };
}

describe('the log of a live process (SPEC §15)', () => {
  it('says what was received in one info line per batch, by company and outcome, not one per request', async () => {
    const received = await eventually(async () => {
      const r = summed(/^received \d+ notifications?$/);
      return r.counts.unknown ? r : undefined;
    }, 'the received lines');
    expect(received.counts).toEqual({
      [acme.companyId]: { stored: 6 },
      [zeta.companyId]: { stored: 3 },
      [revoked.companyId]: { stored: 1 },
      unknown: { 401: 1 },
    });
    // 11 requests within about a second: a few lines, each a batch.
    expect(received.lines.length).toBeLessThanOrEqual(4);
    // Per request: at debug only, and naming the company.
    expect(lines().filter((l) => l.level === INFO && /stored/.test(l.msg) && !l.byCompany)).toEqual([]);
    const perRequest = lines().filter((l) => l.level === DEBUG && l.msg === 'notification stored');
    expect(perRequest).toHaveLength(10);
    expect(perRequest.every((l) => l.companyId !== undefined)).toBe(true);
  });

  it('says what the fetches finished in one info line per batch, by company and outcome; a paused company has finished nothing', async () => {
    const finished = await eventually(async () => {
      const f = summed(/^finished \d+ notifications?$/);
      return f.counts[acme.companyId]?.processed === 6 && f.counts[zeta.companyId]?.processed === 3 ? f : undefined;
    }, 'the finished lines');
    expect(finished.counts).toEqual({
      [acme.companyId]: { processed: 6 },
      [zeta.companyId]: { processed: 3 },
    });
    expect(finished.lines.length).toBeLessThanOrEqual(4);
  });

  it('names the company in every line about its notifications', () => {
    const all = lines();
    const started = all.findIndex((l) => l.msg === 'skyhook started');
    expect(started).toBeGreaterThanOrEqual(0);
    // What a process says about itself (start-up, its statements' plans) concerns no company.
    const processLevel = /^(skyhook started|the worker statements now keep their plans)/;
    const unnamed = all
      .slice(started + 1)
      .filter((l) => !processLevel.test(l.msg))
      .filter((l) => l.companyId === undefined && l.companyIds === undefined && l.byCompany === undefined);
    expect(unnamed).toEqual([]);
    // The refused token is said once, with its company.
    expect(all.filter((l) => /refused the company credentials/.test(l.msg)).map((l) => l.companyId)).toEqual([revoked.companyId]);
  });
});
