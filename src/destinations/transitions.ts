/**
 * A destination's one state and a delivery's status (SPEC §5.2), and every change of them, named by
 * intent: the tables the PostgreSQL statements' guards are built from (destinations/postgres.ts) and that
 * the tests read.
 *
 * A destination:
 *   ok ──5 failed attempts in a row (openCircuit)──> failing ──a probe answered (closeCircuit)──> ok
 *   ok ──429, or 503 with Retry-After (the gate's hold)──> throttled ──(the hold ends)──> ok
 *   any state ──disable: `active: false`, a 410, or no success for DESTINATION_DISABLE_AFTER_DAYS──> disabled
 *   disabled ──enable (what waits sent, or skipped when older than a time)──> ok
 * `disabled` and `failing` are kept in PostgreSQL (destinations.disabled_*, failing_*); `throttled` is what
 * its gate in Redis knows (src/gate/), and shows only while it is neither disabled nor failing.
 *
 * A delivery:
 *   create ──> pending ──deliver──> delivered
 *                 │ ──retry (an attempt failed: its next one scheduled)──> pending
 *                 │ ──fail (the last attempt failed while the destination answered)──> failed
 *                 │ ──skip (its destination deleted, or enabled skipping what is older)──> skipped
 *                 │ ──expire (past RETENTION_DAYS, still pending)──> expired
 *   delivered, failed, skipped, expired ──replay──> pending (sent again, the same webhook-id, outside the order)
 */
import type { DestinationRow } from '../db/schema/index.js';
import type { GateView } from '../gate/gate.js';

export const DESTINATION_STATES = ['ok', 'failing', 'throttled', 'disabled'] as const;
export type DestinationStateName = (typeof DESTINATION_STATES)[number];

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'skipped', 'expired'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A destination's one state, as every surface shows it. */
export interface DestinationState {
  status: DestinationStateName;
  /** failing or disabled: since when (ISO 8601). */
  since: string | null;
  /** throttled: until when. */
  until: string | null;
  /** failing: the last error; throttled: the receiver's words; disabled: why. */
  reason: string | null;
  /** disabled: by whom (a key, `skyhook` for its own rules). */
  by: string | null;
}

interface Transition<S extends string> {
  from: readonly S[];
  to: readonly S[];
}

export const DESTINATION_TRANSITIONS = {
  /** Five failed attempts in a row: its deliveries park behind one probe (not polled, whatever their number). */
  openCircuit: { from: ['ok', 'throttled'], to: ['failing'] },
  /** A probe (the oldest pending delivery, on the schedule) was answered 2xx: everything waiting resumes, in order. */
  closeCircuit: { from: ['failing'], to: ['ok'] },
  /** `active: false`, a 410 Gone, or no success for days: its deliveries wait parked. */
  disable: { from: ['ok', 'failing', 'throttled', 'disabled'], to: ['disabled'] },
  /** `active: true`: what waits is sent (or, asked, what is older than a time is skipped). */
  enable: { from: ['disabled'], to: ['ok'] },
} as const satisfies Record<string, Transition<DestinationStateName>>;

export const DELIVERY_TRANSITIONS = {
  create: { from: [], to: ['pending'] },
  deliver: { from: ['pending'], to: ['delivered'] },
  retry: { from: ['pending'], to: ['pending'] },
  fail: { from: ['pending'], to: ['failed'] },
  skip: { from: ['pending'], to: ['skipped'] },
  expire: { from: ['pending'], to: ['expired'] },
  replay: { from: ['delivered', 'failed', 'skipped', 'expired'], to: ['pending'] },
} as const satisfies Record<string, Transition<DeliveryStatus>>;

export type DestinationIntent = keyof typeof DESTINATION_TRANSITIONS;
export type DeliveryIntent = keyof typeof DELIVERY_TRANSITIONS;

/** Whether a delivery `intent` applies to one in `from` and may leave it in `to`. */
export function allowedDelivery(intent: DeliveryIntent, from: DeliveryStatus, to: DeliveryStatus): boolean {
  const t: Transition<DeliveryStatus> = DELIVERY_TRANSITIONS[intent];
  return t.from.includes(from) && t.to.includes(to);
}

/** The SQL guard of a delivery transition: `<column> IN ('a', 'b')`, from the table. */
export function deliveryGuard(intent: DeliveryIntent, column = 'status'): string {
  const from: readonly string[] = DELIVERY_TRANSITIONS[intent].from;
  if (from.length === 0) throw new Error(`${intent} applies to new rows only: it has no guard`);
  return `${column} IN (${from.map((s) => `'${s}'`).join(', ')})`;
}

/** What PostgreSQL keeps of a state, in SQL: a destination disabled, or failing (its circuit open). */
export const DISABLED_SQL = 'disabled_at IS NOT NULL';
export const FAILING_SQL = 'disabled_at IS NULL AND failing_since IS NOT NULL';

/** The SQL guard of a destination intent on what PostgreSQL keeps: the states it applies from, as conditions. */
export function destinationGuard(intent: DestinationIntent): string {
  const from: readonly DestinationStateName[] = DESTINATION_TRANSITIONS[intent].from;
  const conditions = new Set(from.map((s) => (s === 'disabled' ? DISABLED_SQL : s === 'failing' ? FAILING_SQL : `disabled_at IS NULL AND failing_since IS NULL`)));
  return [...conditions].map((c) => `(${c})`).join(' OR ');
}

export type DestinationStateColumns = Pick<DestinationRow, 'disabledAt' | 'disabledReason' | 'disabledBy' | 'failingSince' | 'failingError'>;

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** The one state, from PostgreSQL's columns and what the gate knows now (none: Redis could not be read). */
export function destinationStateOf(row: DestinationStateColumns, gate: GateView | undefined): DestinationState {
  if (row.disabledAt) return { status: 'disabled', since: row.disabledAt.toISOString(), until: null, reason: row.disabledReason, by: row.disabledBy };
  if (row.failingSince) return { status: 'failing', since: row.failingSince.toISOString(), until: null, reason: row.failingError, by: null };
  if (gate?.heldUntil) return { status: 'throttled', since: null, until: iso(gate.heldUntil), reason: gate.heldWhy, by: null };
  return { status: 'ok', since: null, until: null, reason: null, by: null };
}
