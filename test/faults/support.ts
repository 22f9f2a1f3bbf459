/**
 * Shared by the fault tests (not a test file itself): companies created through a Skyhook's admin API and
 * registered on the simulator, counts read straight from PostgreSQL, and the end-of-test comparisons of
 * what the simulator sent against what Skyhook stored and processed.
 */
import type pg from 'pg';
import { expect } from 'vitest';
import type { EventType } from '../../src/marketplace/contract.js';
import type { Simulator, SimulatorReport } from '../../src/simulator/index.js';
import { eventually, type AdminCall } from '../helpers/skyhook.js';

export type { AdminCall };

export interface FaultCompany {
  simId: string;
  companyId: string;
  webhookId: string;
  remoteWebhookId: string;
  token: string;
}

/** The company on the simulator and in Skyhook (admin API), with one webhook Skyhook registers itself. */
export async function createCompany(
  admin: AdminCall,
  sim: Simulator,
  simId: string,
  opts: { authType?: 'BASIC' | 'OAUTH'; sharedTarget?: boolean; eventTypes?: EventType[]; apiBaseUrl?: string } = {},
): Promise<FaultCompany> {
  const token = `token-${simId}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  sim.addCompany({ id: simId, token });
  const created = await admin('POST', '/companies', { name: simId, apiBaseUrl: opts.apiBaseUrl ?? sim.apiBaseUrl, apiToken: token });
  if (created.status !== 201) throw new Error(`company: ${created.status} ${JSON.stringify(created.body)}`);
  const webhook = await admin('POST', `/companies/${created.body.id}/webhooks`, {
    eventTypes: opts.eventTypes ?? ['TripRequest', 'ClientLeads', 'TripChatFromBuyer', 'EmptyLegs'],
    authType: opts.authType ?? 'BASIC',
    sharedTarget: opts.sharedTarget ?? false,
  });
  if (webhook.status !== 201) throw new Error(`webhook: ${webhook.status} ${JSON.stringify(webhook.body)}`);
  return { simId, companyId: created.body.id, webhookId: webhook.body.id, remoteWebhookId: webhook.body.remoteId, token };
}

export async function statusCounts(sql: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await sql.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM notifications GROUP BY status');
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

export const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/** Waits until at least `count` rows exist and none is `received` or `queued`. */
export async function settled(sql: pg.Pool, count: number, timeoutMs: number): Promise<Record<string, number>> {
  return eventually(async () => {
    const c = await statusCounts(sql);
    return total(c) >= count && !c.received && !c.queued ? c : undefined;
  }, `${count} notifications settled`, timeoutMs);
}

/** Rows stored per (Skyhook company id, notification id). */
async function storedPerNotification(sql: pg.Pool): Promise<Map<string, number>> {
  const { rows } = await sql.query<{ company_id: string; resource_id: string; n: string }>(
    'SELECT company_id, resource_id, count(*) AS n FROM notifications GROUP BY 1, 2',
  );
  return new Map(rows.map((r) => [`${r.company_id}|${r.resource_id}`, Number(r.n)]));
}

/**
 * The comparison every fault test ends with: each notification the simulator delivered is stored at
 * least once (under the right company) and at most once per delivery attempt plus duplicate; no row
 * exists that the simulator did not send; every row is processed; each resource's snapshot is the
 * simulator's final version.
 *
 * The simulator fires the same resource id many times (each event is a new version), so stored rows
 * are compared per resource: rows stored for it >= notifications delivered for it.
 */
export async function expectNothingMissing(
  sql: pg.Pool,
  report: SimulatorReport,
  companiesBySimId: Record<string, FaultCompany>,
  opts: { allowExtraPerResource?: (simNotifications: number, attempts: number) => number } = {},
): Promise<void> {
  const bySkyhookCompany = new Map(Object.values(companiesBySimId).map((c) => [c.simId, c.companyId]));
  const sent = new Map<string, { notifications: number; attempts: number }>();
  for (const n of report.notifications) {
    const companyId = bySkyhookCompany.get(n.companyId);
    if (!companyId) continue;
    expect(n.status, `delivery of ${n.href}`).toBe('delivered');
    const key = `${companyId}|${n.id}`;
    const tally = sent.get(key) ?? { notifications: 0, attempts: 0 };
    tally.notifications++;
    tally.attempts += n.attempts;
    sent.set(key, tally);
  }
  const stored = await storedPerNotification(sql);
  const missing: string[] = [];
  const tooMany: string[] = [];
  for (const [key, { notifications, attempts }] of sent) {
    const n = stored.get(key) ?? 0;
    if (n < notifications) missing.push(`${key}: sent ${notifications}, stored ${n}`);
    const ceiling = opts.allowExtraPerResource ? opts.allowExtraPerResource(notifications, attempts) : notifications;
    if (n > ceiling) tooMany.push(`${key}: sent ${notifications} (${attempts} attempts), stored ${n}, at most ${ceiling}`);
  }
  const ours = new Set(bySkyhookCompany.values());
  const unknown = [...stored.keys()].filter((key) => ours.has(key.split('|')[0]!) && !sent.has(key));
  expect(missing, 'notifications the simulator delivered but Skyhook did not store').toEqual([]);
  expect(tooMany, 'notifications stored more often than they were delivered').toEqual([]);
  expect(unknown, 'rows the simulator never sent').toEqual([]);

  const counts = await statusCounts(sql);
  expect(counts).toEqual({ processed: total(counts) });

  await expectSnapshotsCurrent(sql, report, companiesBySimId);
}

/** Every resource of these companies has a snapshot whose body is the simulator's final version. */
async function expectSnapshotsCurrent(sql: pg.Pool, report: SimulatorReport, companiesBySimId: Record<string, FaultCompany>): Promise<void> {
  const { rows } = await sql.query<{ company_id: string; href: string; body: { version?: number } | null }>('SELECT company_id, href, body FROM resources');
  const snapshots = new Map(rows.map((r) => [`${r.company_id}|${r.href}`, r.body?.version]));
  const stale: string[] = [];
  for (const r of report.resources) {
    const company = companiesBySimId[r.companyId];
    if (!company) continue;
    const version = snapshots.get(`${company.companyId}|${r.href}`);
    if (version !== r.version) stale.push(`${r.href}: simulator v${r.version}, snapshot v${String(version)}`);
  }
  expect(stale, 'snapshots that are not the simulator’s final version').toEqual([]);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
