/**
 * Destinations and their deliveries (SPEC §5.2) as an interface: every change of a destination's state and
 * of a delivery's status, named by intent, each owning its statement and what it tells the destination's
 * gate; and the reads the delivery worker, the relay and the admin surfaces need. transitions.ts says which
 * changes are allowed; postgres.ts is the implementation (the only code that writes a destination's state
 * or a delivery's status). Callers take `Pick<>` views.
 */
import type { Change } from '../db/client.js';
import type { DeliveryStatus } from './transitions.js';

/** What one attempt found, as it is recorded (SPEC §5.2: every attempt, never a secret). */
export interface DeliveryAttempt {
  deliveryId: number;
  /** Named in the log lines about its destination. */
  companyId: string;
  destinationId: string;
  startedAt: Date;
  durationMs: number;
  /** Where it went (the destination's URL when it was made). */
  url: string;
  /** Null: no answer (a network error, a timeout, an address refused). */
  httpStatus: number | null;
  error: string | null;
  /** The first 4 KB of the answer. */
  response: string | null;
}

/** What an attempt does: to its delivery, and to its destination. */
export type AttemptVerdict =
  /** 2xx: delivered; the destination answered. */
  | { kind: 'delivered' }
  /** Failed, another attempt at `nextAt`; `countsAgainst`: a failure of the destination (the circuit counts it), not a 429. */
  | { kind: 'retry'; nextAt: Date; countsAgainst: boolean }
  /** Failed, and it was the last attempt: failed. */
  | { kind: 'failed'; countsAgainst: boolean }
  /** 410 Gone: the destination is disabled; the delivery waits with the rest. */
  | { kind: 'gone' };

/** What a recorded attempt did to the destination. */
export interface AttemptEffect {
  /** Its circuit opened: it is `failing`, its deliveries parked behind a probe. */
  circuitOpened: boolean;
  /** It was disabled (a 410). */
  disabled: boolean;
  /** A probe was answered: its circuit closed, everything waiting resumes. */
  circuitClosed: boolean;
}

/** Where a delivery goes, as its destination is now (read with it: an edited URL or a rotated secret applies at once). */
export interface DestinationNow {
  url: string;
  /** Sealed (lib/crypto.ts): destinations/connections.ts opens them to sign. */
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
  maxConcurrency: number | null;
  ratePerSecond: number | null;
  timeoutMs: number | null;
  /** Failing or disabled: its deliveries wait parked at its gate. */
  paused: boolean;
}

/** A delivery to send, with what its request is built from (delivery/body.ts) and where it goes. */
export interface DeliveryToSend {
  id: number;
  companyId: string;
  destinationId: string;
  href: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  replay: boolean;
  event: {
    id: number;
    type: string;
    resourceId: string;
    version: number;
    eventTypes: string[];
    changes: unknown[] | null;
    snapshot: unknown;
    occurredAt: Date;
  };
  destination: DestinationNow;
}

/** A destination of a company: the unit of a delivery job (one at a time, across every worker). */
export interface DestinationKey {
  companyId: string;
  destinationId: string;
}

/** A (destination, resource): the unit of order. */
export interface DeliveryKey extends DestinationKey {
  href: string;
}

export interface DeliveryFilter {
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  before?: Date;
  status?: Exclude<DeliveryStatus, 'pending'>;
  resourceId?: string;
}

export interface DeliveryLifecycle {
  /**
   * The deliveries of a destination to send now, oldest first, at most one per resource and none of the
   * resources in `sending` (on their way already): each its resource's replay, or its oldest version
   * pending, and due (its next attempt's time passed). A resource whose oldest pending version waits for
   * its next attempt has none: its later versions wait for it.
   */
  claim(destinationId: string, sending: string[], limit: number): Promise<DeliveryToSend[]>;
  /** When the destination's next delivery is due (one that claim would answer then), or null when none is pending. */
  nextDue(destinationId: string): Promise<Date | null>;
  /** The oldest pending delivery of a destination: what probes it while its circuit is open. */
  oldestPending(destinationId: string): Promise<DeliveryToSend | undefined>;
  /**
   * deliver, retry or fail the delivery with the attempt recorded; and the destination: a success resets its
   * count of failures (closing its circuit: a probe), a failure counts (five open it), a 410 disables it.
   * `probe`: sent while the circuit is open, the attempt spends none of the delivery's.
   */
  record(attempt: DeliveryAttempt, verdict: AttemptVerdict, opts: { probe: boolean }): Promise<AttemptEffect>;
  /** skip: a deleted destination's pending deliveries, or those created before `before`; answers how many. */
  skipPending(destinationId: string, before?: Date): Promise<number>;
  /** replay: these deliveries pending again (a replay, outside the order, its retry schedule from the start); answers them. `within`: a statement of that change. */
  replay(ids: number[], within?: Change): Promise<DeliveryKey[]>;
  /**
   * replay, of a destination's deliveries matching `filter` (final ones only); `dryRun` only counts. `within`:
   * a statement of that change. With `fill`, a filter with `since` and no `status` also creates (create) the
   * deliveries missing: one for each event of the company stored since then (and before `before`, of
   * `resourceId`), stored within the deliveries' retention (`fill.keptDays`), that the destination's filter
   * matches now and that has none for it, as the statement storing the event makes them (pending, in its
   * resource's order); in the same statement. `matched` and `replayed` count them too; `created` says how many.
   */
  replayMatching(destinationId: string, filter: DeliveryFilter, dryRun: boolean, within?: Change, fill?: { keptDays: number }): Promise<{ matched: number; replayed: DeliveryKey[]; created: number }>;
  /** The relay: answering destinations with deliveries due since `graceMs` (their job may be lost). */
  overdueDestinations(graceMs: number, limit: number): Promise<DestinationKey[]>;
  /** expire: pending deliveries older than `retentionDays`; answers how many (by destination). `within`: as part of that change. */
  expire(retentionDays: number, within?: Change): Promise<{ companyId: string; destinationId: string; expired: number }[]>;
}
