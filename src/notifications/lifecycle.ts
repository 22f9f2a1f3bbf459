/**
 * The notification lifecycle (SPEC §4, §5, §7.1) as an interface: every status change a notification can
 * make, each named by intent and owning its transaction and the writes that go with it; the data they take
 * and give. transitions.ts says which changes are allowed; postgres.ts is the implementation Skyhook runs
 * (the only code that writes notification state), test/helpers/memory-lifecycle.ts the fast tier's.
 * Callers take `Pick<>` views.
 */
import type { Change } from '../db/client.js';
import type { FetchAttemptOutcome } from '../db/schema/index.js';
import type { SpanRef } from '../lib/tracing.js';

export interface NewNotification {
  companyId: string;
  webhookId: string;
  resourceId: string;
  type: string;
  href: string;
  /** The body's text as received (already checked to be storable JSON). */
  bodyJson: string;
  /** `resync`: not from the marketplace, but a resync's row for a resource Skyhook knows (services/notifications.service.ts). */
  authenticatedBy: 'basic' | 'oauth' | 'resync';
  /**
   * `discarded`: its webhook is deactivated; it is kept, and nothing more happens to it (SPEC §4).
   * `not_fetched`: its href is under none of the company's base URLs: kept, `processed` with outcome
   * `not_fetched` at once, never fetched (SPEC §14).
   */
  disposition: 'accepted' | 'discarded' | 'not_fetched';
}

export type InsertedStatus = 'received' | 'queued' | 'discarded' | 'processed';

/**
 * The status a notification is accepted in: `queued` when its fetch job is added right after the commit
 * (Redis up: one write instead of an INSERT and a later UPDATE), `received` for the relay otherwise, and
 * `discarded` for a deactivated webhook's, `processed` (outcome `not_fetched`) for an href outside the company's base URLs.
 */
export const statusOnAccept = (row: Pick<NewNotification, 'disposition'>, queueing: boolean): InsertedStatus =>
  row.disposition === 'discarded' ? 'discarded' : row.disposition === 'not_fetched' ? 'processed' : queueing ? 'queued' : 'received';

/** A pending notification and its resource: the relay's rows, a replay's (received again). */
export interface PendingKey extends ResourceRef {
  id: number;
}

/** Claimed per job; a larger backlog for one href is taken by a follow-up job. */
export const CLAIM_LIMIT = 5000;

export interface Claimed {
  /** The notifications the fetch covers, oldest first. */
  ids: number[];
  receivedAt: number[];
  /** The latest notification's type and resource id: the snapshot is stored under them. */
  type: string;
  resourceId: string;
  /** The snapshot stored before this fetch, if any: the changes are computed against it. */
  previous: { version: number; body: unknown } | null;
}

/** One fetch attempt, as it is recorded (SPEC §7.1). */
export interface FetchAttempt {
  companyId: string;
  href: string;
  startedAt: Date;
  finishedAt: Date;
  /** Null for a network error or a timeout. */
  httpStatus: number | null;
  outcome: FetchAttemptOutcome;
  error: string | null;
  /** The notifications it covered. */
  ids: number[];
}

/** What an attempt does to its notifications (the implementations' one statement for retry, fail and gone). */
export type Verdict = { status: 'pending' } | { status: 'processed'; outcome: 'gone' } | { status: 'failed'; error: string };

/** A fetch that got the resource: what the batched store needs of it. */
export interface FetchedSnapshot {
  companyId: string;
  href: string;
  claimed: Claimed;
  fetchStartedAt: Date;
  fetchFinishedAt: Date;
  httpStatus: number;
  resource: unknown;
  /** RFC 6902 from the claimed previous snapshot to this one; null for the first. */
  changes: unknown[] | null;
  /** The fetch's snapshot span, when traces are exported: the type's handler is a span under it. */
  trace?: SpanRef;
}

export interface Stored {
  /** The version the notifications are covered by. */
  version: number;
  /** The version this fetch stored, or null when a fetch that started later had stored a newer copy. */
  stored: number | null;
  /** The event row of the stored version. */
  eventId: number | null;
  /** The destinations its event is to be delivered to (SPEC §5.2): a delivery of each was stored with it. */
  destinations: string[];
}

export interface NotificationSummary {
  id: number;
  companyId: string;
  webhookId: string;
  type: string;
  resourceId: string;
}

/** A company and one of its resources: where a fetch goes. */
export interface ResourceRef {
  companyId: string;
  href: string;
}

export interface NotificationLifecycle {
  /** accept: the receiver's commit of a batch, each in the status statusOnAccept gives it; answers ids and statuses in order. */
  accept(rows: NewNotification[], opts: { queueing: boolean }, within?: Change): Promise<{ id: number; status: InsertedStatus }[]>;
  /** queue: received -> queued, their jobs were added. */
  queue(ids: number[]): Promise<void>;
  /** unqueue: queued -> received, adding their jobs failed; the relay queues them later. */
  unqueue(ids: number[]): Promise<void>;
  /**
   * queue, for the relay: committed rows nobody queued, older than the grace, oldest first; `add` adds their
   * jobs and they become queued, together (a failed add leaves them received). Answers the rows queued.
   */
  queueUnqueued(graceMs: number, limit: number, add: (rows: PendingKey[]) => Promise<void>): Promise<PendingKey[]>;
  /** The relay: the next page of keys with rows left queued longer than `olderThanMs`, paused companies' left out. */
  staleQueuedKeys(olderThanMs: number, after: ResourceRef | undefined, limit: number): Promise<ResourceRef[]>;
  /** A company's resources with notifications still pending: what resuming it queues again. */
  pendingResources(companyId: string): Promise<ResourceRef[]>;
  /** What a fetch starting now covers, per key (indexed like `keys`; nothing pending: no entry). */
  claimPending(keys: ResourceRef[]): Promise<(Claimed | undefined)[]>;
  /** retry: the attempt recorded and counted; its notifications stay pending, for the next one (or parked: their company paused). */
  retry(attempt: FetchAttempt): Promise<void>;
  /** finish, failed: the attempt recorded, its notifications failed with `error`. */
  fail(attempt: FetchAttempt, error: string): Promise<void>;
  /** finish: fetched snapshots stored, their notifications processed; answers in input order. */
  storeFetched(items: FetchedSnapshot[]): Promise<Stored[]>;
  /** finish: processed, outcome `gone`, the stored snapshot flagged gone. */
  markGone(attempt: FetchAttempt): Promise<void>;
  /** replay: back to received, keeping the final state each had; answers what was replayed. `within`: a statement of that change. */
  replay(ids: number[], within?: Change): Promise<PendingKey[]>;
  /** What the live stream says of each notification. */
  summaries(ids: number[]): Promise<NotificationSummary[]>;
  /** A webhook deleted with its notifications and their history, statements of the admin's change `within` (a company is deleted by src/companies/). */
  deleteWebhook(webhookId: string, within: Change): Promise<void>;
}
