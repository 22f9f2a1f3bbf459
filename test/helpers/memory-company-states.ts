/**
 * A company's state in memory: the same intents as src/companies/postgres.ts, guarded by the same table
 * (companies/transitions.ts), over a plain map, with an in-memory stand-in for what the gate knows (a
 * hold). For the fast test tier, so it lives with the tests and ships in no build;
 * company-states-contract.ts beside it holds it to what the PostgreSQL implementation does.
 */
import { randomUUID } from 'node:crypto';
import type { CompanyRow } from '../../src/db/schema/index.js';
import type { CheckVerdict, CompanyStates, CredentialColumns } from '../../src/companies/states.js';
import { allowed, COMPANY_STATES, stateOf, type CompanyStateName } from '../../src/companies/transitions.js';
import { HOLD_FLOOR_MS, type GateView } from '../../src/gate/gate.js';

/** What new credentials start as: unchecked, a pause lifted. */
const UNCHECKED = { credentialsStatus: 'unchecked', credentialsCheckedAt: null, credentialsError: null, connectionStatus: 'ok', connectionError: null, pausedAt: null } as const;

/** A row as the companies table would hold it, with its defaults. */
export function memoryCompanyRow(over: Partial<CompanyRow> = {}): CompanyRow {
  const now = new Date();
  return {
    id: randomUUID(),
    name: 'A company',
    apiBaseUrl: 'https://api.example.com/api',
    apiTokenEncrypted: 'sealed',
    connectionProfile: 'bearer',
    authTokenEncrypted: null,
    oauthTokenUrl: null,
    oauthClientId: null,
    oauthClientSecretEncrypted: null,
    product: null,
    apiVersion: null,
    credentialsRevision: 1,
    ...UNCHECKED,
    fetchConcurrency: null,
    settingsPathForm: 'plural',
    createdAt: now,
    updatedAt: now,
    ...over,
  };
}

/** Over 80 lines on purpose: its body is the interface's methods, each short, over the maps they share. */
export function createMemoryCompanyStates(opts: {
  /** What the marketplace answers a check of these stored credentials (the default: accepted). */
  verdict?: (row: CompanyRow) => CheckVerdict;
  /** What resuming queues again (the default: nothing). */
  queueWaiting?: (companyId: string) => Promise<number>;
}) {
  const verdictOf = opts.verdict ?? (() => ({ status: 'accepted', error: null }));
  const queueWaiting = opts.queueWaiting ?? (async () => 0);
  const rows = new Map<string, CompanyRow>();
  const gates = new Map<string, GateView>();
  const gateOf = (id: string): GateView =>
    gates.get(id) ?? { heldUntil: null, heldWhy: null, noAnswerSince: null, noAnswerWhy: null, answeredAt: null, limitNow: null, running: 0, parked: 0 };
  const current = (id: string): CompanyStateName => stateOf(rows.get(id)!, gateOf(id)).status;

  const record = (row: CompanyRow, verdict: CheckVerdict) =>
    Object.assign(row, { credentialsStatus: verdict.status, credentialsCheckedAt: new Date(), credentialsError: verdict.error });

  const states: CompanyStates = {
    async change(companyId, change) {
      const row = rows.get(companyId);
      if (!row) return undefined;
      const wasPaused = row.connectionStatus === 'unauthorized';
      if (change.name !== undefined) row.name = change.name;
      if (change.fetchConcurrency !== undefined) row.fetchConcurrency = change.fetchConcurrency;
      row.updatedAt = new Date();
      const credentials: CredentialColumns | undefined = change.credentials;
      if (credentials === undefined) return { ...row };
      if (!allowed('replaceCredentials', current(companyId), 'unchecked')) throw new Error('replaceCredentials refused by the table');
      Object.assign(row, credentials, UNCHECKED, { credentialsRevision: row.credentialsRevision + 1 });
      const checked = await states.check(companyId);
      if (wasPaused && checked?.connectionStatus !== 'unauthorized') await queueWaiting(companyId);
      return checked;
    },
    async check(companyId) {
      const row = rows.get(companyId);
      if (!row) return undefined;
      const verdict = verdictOf(row);
      const pausing = verdict.status === 'refused' && allowed('recordCheck', current(companyId), 'paused');
      record(row, verdict);
      if (pausing) Object.assign(row, { connectionStatus: 'unauthorized', connectionError: `credentials check: ${verdict.error}`, pausedAt: new Date() });
      return { ...row };
    },
    async pause(companyId, refusal) {
      const row = rows.get(companyId);
      if (!row || row.credentialsRevision !== refusal.revision || !allowed('pause', current(companyId), 'paused')) return false;
      Object.assign(row, { connectionError: refusal.reason, pausedAt: row.connectionStatus === 'unauthorized' ? (row.pausedAt ?? new Date()) : new Date(), connectionStatus: 'unauthorized' });
      return true;
    },
    async probe(companyId) {
      const row = rows.get(companyId);
      if (!row || row.connectionStatus !== 'unauthorized') return false;
      const verdict = verdictOf(row);
      record(row, verdict);
      if (verdict.status !== 'accepted' || !allowed('recordProbe', 'paused', 'ok')) return false;
      Object.assign(row, { connectionStatus: 'ok', connectionError: null, pausedAt: null });
      await queueWaiting(companyId);
      return true;
    },
    async hold(companyId, retryAfterMs, why) {
      const until = Math.max(gateOf(companyId).heldUntil ?? 0, Date.now() + Math.max(retryAfterMs ?? 0, HOLD_FLOOR_MS));
      gates.set(companyId, { ...gateOf(companyId), heldUntil: until, heldWhy: why });
    },
    async heldUntil(companyId) {
      const held = gateOf(companyId).heldUntil;
      return held !== null && held > Date.now() ? held : null;
    },
    async states(list) {
      return list.map((r) => ({ state: stateOf(r, gateOf(r.id)), gate: gateOf(r.id) }));
    },
    async troubled() {
      const stated = [...rows.values()].sort((a, b) => a.id.localeCompare(b.id)).map((r) => ({ id: r.id, name: r.name, state: stateOf(r, gateOf(r.id)), gate: gateOf(r.id) }));
      const counts = Object.fromEntries(COMPANY_STATES.map((s) => [s, 0])) as Record<CompanyStateName, number>;
      for (const c of stated) counts[c.state.status] += 1;
      return { counts, companies: stated.filter((c) => c.state.status !== 'ok') };
    },
    async delete(companyId) {
      gates.delete(companyId);
      return rows.delete(companyId);
    },
  };
  return {
    ...states,
    /** For tests: a company as a new row would be (unchecked). */
    add(over: Partial<CompanyRow> = {}): CompanyRow {
      const row = memoryCompanyRow(over);
      rows.set(row.id, row);
      return { ...row };
    },
    paused: (companyId: string) => rows.get(companyId)?.connectionStatus === 'unauthorized',
    /** For tests: the stored row. */
    row: (companyId: string): CompanyRow | undefined => rows.get(companyId),
  };
}
