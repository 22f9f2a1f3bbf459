/**
 * One state per company (SPEC §5.1 F5), worked out in one place from what PostgreSQL keeps (a pause, the
 * last credentials check) and what the company's gate knows now (a hold, fetches without an answer), and
 * shown the same way by the admin API, the CLI, the console, the metrics and the logs.
 */
import { asc } from 'drizzle-orm';
import type { z } from 'zod';
import type { Database } from '../db/client.js';
import { companies, type CompanyRow } from '../db/schema/index.js';
import type { GateView } from '../processing/company-gate.js';
import type { companyStateSchema } from './views.js';

export const COMPANY_STATES = ['ok', 'paused', 'throttled', 'unreachable', 'unchecked'] as const;
export type CompanyStateName = (typeof COMPANY_STATES)[number];

/** A company's one state, as the admin API shows it (views.ts companyStateSchema says what each field is). */
export type CompanyState = z.infer<typeof companyStateSchema>;

/** What a company's controls do, wherever they are asked for (admin API, CLI, console): the gate and the pause. */
export interface CompanyControls {
  /** Pauses the company at its gate (its credentials were refused when checked). */
  pause(companyId: string): Promise<void>;
  /** Lifts the pause at its gate and queues its waiting notifications again; answers how many resources. */
  resume(companyId: string): Promise<number>;
  /** Applies a new limit at once. */
  setMax(companyId: string, max: number): Promise<void>;
  /** The gate's view of each company (a Redis that cannot be read answers none: states come from PostgreSQL alone). */
  views(companyIds: string[]): Promise<GateView[]>;
  /** Until when the company's calls are held (a 429 met by any of its calls), if they are. */
  heldUntil(companyId: string): Promise<number | null>;
  /** Holds the company's calls and fetches (a 429 met by a lead, a quote or a settings call). */
  hold(companyId: string, retryAfterMs: number | undefined, why: string): Promise<void>;
}

type StateColumns = Pick<CompanyRow, 'connectionStatus' | 'connectionError' | 'pausedAt' | 'credentialsStatus' | 'credentialsCheckedAt' | 'credentialsError'>;

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** The one state, in order of what needs the operator most: paused, throttled, unreachable, unchecked, ok. */
export function companyState(row: StateColumns, gate: GateView | undefined): CompanyState {
  if (row.connectionStatus === 'unauthorized') return { status: 'paused', since: row.pausedAt?.toISOString() ?? null, until: null, reason: row.connectionError };
  if (gate?.heldUntil) return { status: 'throttled', since: null, until: iso(gate.heldUntil), reason: gate.heldWhy };
  if (gate?.noAnswerSince) return { status: 'unreachable', since: iso(gate.noAnswerSince), until: null, reason: gate.noAnswerWhy };
  // The check's verdict stands until a fetch of the company is answered after it.
  const answeredSinceCheck = gate?.answeredAt != null && (row.credentialsCheckedAt === null || gate.answeredAt > row.credentialsCheckedAt.getTime());
  if (row.credentialsStatus === 'unreachable' && !answeredSinceCheck) {
    return { status: 'unreachable', since: row.credentialsCheckedAt?.toISOString() ?? null, until: null, reason: row.credentialsError };
  }
  if (row.credentialsStatus === 'unchecked' && !answeredSinceCheck) return { status: 'unchecked', since: null, until: null, reason: null };
  return { status: 'ok', since: null, until: null, reason: null };
}

/** The gates' views of these companies; none when Redis cannot be read (the error goes to `onGateError`). */
export function gateViews(controls: Pick<CompanyControls, 'views'>, companyIds: string[], onGateError: (err: unknown) => void): Promise<GateView[]> {
  return controls.views(companyIds).catch((err: unknown) => {
    onGateError(err);
    return [];
  });
}

/** Every company's state, in id order: one query and one read of their gates (the metrics, the console's overview). */
export async function allCompanyStates(db: Database, controls: Pick<CompanyControls, 'views'>, onGateError: (err: unknown) => void): Promise<{ id: string; name: string; state: CompanyState; gate: GateView | undefined }[]> {
  const rows = await db
    .select({
      id: companies.id,
      name: companies.name,
      connectionStatus: companies.connectionStatus,
      connectionError: companies.connectionError,
      pausedAt: companies.pausedAt,
      credentialsStatus: companies.credentialsStatus,
      credentialsCheckedAt: companies.credentialsCheckedAt,
      credentialsError: companies.credentialsError,
    })
    .from(companies)
    .orderBy(asc(companies.id));
  const gates = await gateViews(controls, rows.map((r) => r.id), onGateError);
  return rows.map((r, i) => ({ id: r.id, name: r.name, state: companyState(r, gates[i]), gate: gates[i] }));
}
