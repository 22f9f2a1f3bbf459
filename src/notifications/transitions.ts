/**
 * Every status change a notification can make, named by intent (SPEC §4, §5, §7.1): the one table the
 * PostgreSQL statements' guards are built from (notifications/postgres.ts) and that the tests read.
 *
 *            accept (webhook deactivated) ──────────────────────────────> discarded
 *            accept (href outside the company's base URLs) ─────────────> processed (not_fetched)
 *   accept ─> received ──queue──> queued ──store, or gone──> processed
 *               ^  ^                │  │ ──fail: gave up, soft error, another 4xx──> failed
 *               │  └────unqueue─────┘  └──retry: attempts + 1, stays as it is
 *               └──────── replay (of processed, failed, or still pending) ───────────┘
 *
 * A company paused for refused credentials (SPEC §5.1 F4) or held by a rate limit (F3) is a state of the
 * company, not of its notifications: they stay `queued`, parked at its gate, until it resumes.
 */
import type { NotificationStatus } from '../db/schema/index.js';

/** Waiting for a fetch: the statuses a claim covers. */
export const PENDING = ['received', 'queued'] as const satisfies readonly NotificationStatus[];
/** Nothing more happens to these but a replay or the purge. */
export const FINAL = ['processed', 'failed', 'discarded'] as const satisfies readonly NotificationStatus[];

interface Transition {
  /** The statuses it applies to; a row in any other status is left alone (an empty list: a new row). */
  from: readonly NotificationStatus[];
  /** The statuses it may leave the row in; `retry` leaves it as it was, `purge` deletes it. */
  to: readonly NotificationStatus[];
}

export const TRANSITIONS = {
  /**
   * The receiver's commit: queued when its job is added right after, received for the relay, discarded for a
   * deactivated webhook, processed (outcome not_fetched) for an href under none of the company's base URLs.
   */
  accept: { from: [], to: ['received', 'queued', 'discarded', 'processed'] },
  /** Its fetch job was added (after the commit, or by the relay). */
  queue: { from: ['received'], to: ['queued'] },
  /** Adding the job failed: the relay queues it later. */
  unqueue: { from: ['queued'], to: ['received'] },
  /** A fetch to try again: the attempt is counted, the status kept. */
  retry: { from: PENDING, to: PENDING },
  /** A fetch stored its snapshot, or found the resource gone: processed. Or it gave up: failed. */
  finish: { from: PENDING, to: ['processed', 'failed'] },
  /**
   * Processed again from the start (not a discarded one: its webhook was deactivated; nor a processed one of
   * outcome NOT_REPLAYABLE_OUTCOME, which was never to be fetched).
   */
  replay: { from: ['received', 'queued', 'processed', 'failed'], to: ['received'] },
  /** Deleted past the retention period, with its history. */
  purge: { from: FINAL, to: [] },
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof TRANSITIONS;

/** The outcome of a notification whose href is under none of its company's base URLs: a replay would send it the token, so it has none. */
export const NOT_REPLAYABLE_OUTCOME = 'not_fetched';

/** Whether `name` applies to a row in `status` and may leave it in `to`. */
export function allowed(name: TransitionName, status: NotificationStatus | null, to: NotificationStatus | null): boolean {
  const t: Transition = TRANSITIONS[name];
  const fromOk = status === null ? t.from.length === 0 : t.from.includes(status);
  const toOk = to === null ? t.to.length === 0 : t.to.includes(to);
  return fromOk && toOk;
}

/** The SQL guard of a transition: `<column> IN ('a', 'b')`, from the table (the values are the enum's own). */
export function fromGuard(name: TransitionName, column = 'status'): string {
  const from: readonly string[] = TRANSITIONS[name].from;
  if (from.length === 0) throw new Error(`${name} applies to new rows only: it has no guard`);
  return `${column} IN (${from.map((s) => `'${s}'`).join(', ')})`;
}
