/**
 * A company's one state (SPEC §5.1 F5) and every change of it, named by intent: the table the PostgreSQL
 * statements' guards are built from (companies/postgres.ts) and that the tests read.
 *
 *              replaceCredentials (from any state) ────────────────────────────────> unchecked
 *   unchecked ──recordCheck: accepted──> ok         recordCheck: refused ──┐
 *             ──recordCheck: no answer──> unreachable                       v
 *   any state ──pause: a fetch's 401/403 with the stored credentials──> paused
 *   paused ──recordProbe: accepted──> ok            paused ──recordProbe: refused or no answer──> paused
 *   any state ──delete──> (gone, with everything it owns)
 *
 * `paused` and a check's verdict are kept in PostgreSQL (companies.connection_status, paused_at,
 * connection_error, credentials_*). Two states are what the company's gate in Redis knows now
 * (src/gate/): `throttled` (a 429, or a 503 with Retry-After, held its calls until a time) and
 * `unreachable` (its fetches found no answer since a time); they show only while the company is not
 * paused, and end by themselves (the hold lapses, an answer comes). stateOf() orders them: paused,
 * throttled, unreachable, unchecked, ok.
 */
import type { CompanyRow } from '../db/schema/index.js';
import type { GateView } from '../gate/gate.js';

export const COMPANY_STATES = ['ok', 'paused', 'throttled', 'unreachable', 'unchecked'] as const;
export type CompanyStateName = (typeof COMPANY_STATES)[number];

/** A company's one state, as every surface shows it (services/views.ts companyStateSchema documents each field). */
export interface CompanyState {
  status: CompanyStateName;
  /** paused or unreachable: since when (ISO 8601). */
  since: string | null;
  /** throttled: until when. */
  until: string | null;
  /** The marketplace's words (paused, throttled), or what found no answer (unreachable). */
  reason: string | null;
}

interface Transition {
  from: readonly CompanyStateName[];
  to: readonly CompanyStateName[];
}

const ALL = COMPANY_STATES;
const NOT_PAUSED = ['ok', 'throttled', 'unreachable', 'unchecked'] as const satisfies readonly CompanyStateName[];

export const TRANSITIONS = {
  /** Credentials set or replaced (a new revision): a pause is lifted, and they are checked next. */
  replaceCredentials: { from: ALL, to: ['unchecked'] },
  /**
   * The check of the stored credentials (one harmless call, SPEC §14): accepted, refused (which pauses), or
   * no answer. A paused company's verdict is recorded, its pause left as it is (only a probe lifts it).
   */
  recordCheck: { from: NOT_PAUSED, to: ['ok', 'paused', 'unreachable'] },
  /** A fetch met 401/403 with the stored credentials (SPEC §5.1 F4): paused until they are replaced or a probe is accepted; already paused, `since` is kept. */
  pause: { from: ALL, to: ['paused'] },
  /** A paused company's probe with its refused credentials: accepted resumes it; anything else leaves it paused. */
  recordProbe: { from: ['paused'], to: ['ok', 'paused'] },
  /** Deleted with everything it owns. */
  delete: { from: ALL, to: [] },
} as const satisfies Record<string, Transition>;

export type CompanyIntent = keyof typeof TRANSITIONS;

/** Whether `intent` applies to a company in `from` and may leave it in `to` (null: deleted). */
export function allowed(intent: CompanyIntent, from: CompanyStateName, to: CompanyStateName | null): boolean {
  const t: Transition = TRANSITIONS[intent];
  return t.from.includes(from) && (to === null ? t.to.length === 0 : t.to.includes(to));
}

/** A paused company's row, in SQL: PostgreSQL keeps the pause as connection_status `unauthorized`. */
export const PAUSED_SQL = "connection_status = 'unauthorized'";

/**
 * The SQL condition under which an intent writes the pause PostgreSQL keeps: PAUSED_SQL when it applies
 * only to a paused company, its negation when never to one, TRUE when to both.
 */
export function pauseGuard(intent: CompanyIntent): string {
  const from: readonly CompanyStateName[] = TRANSITIONS[intent].from;
  const paused = from.includes('paused');
  if (paused && from.length === 1) return PAUSED_SQL;
  if (!paused) return `NOT (${PAUSED_SQL})`;
  return 'TRUE';
}


/** What the state is worked out from in PostgreSQL. */
export type StateColumns = Pick<CompanyRow, 'connectionStatus' | 'connectionError' | 'pausedAt' | 'credentialsStatus' | 'credentialsCheckedAt' | 'credentialsError'>;

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** The one state, from PostgreSQL's columns and what the gate knows now (none: Redis could not be read). */
export function stateOf(row: StateColumns, gate: GateView | undefined): CompanyState {
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
