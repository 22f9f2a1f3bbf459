/**
 * Storing notifications: group commit. Concurrent requests' rows are written by one INSERT in one
 * transaction (synchronous_commit stays on; notifications/postgres.ts), so many requests share one
 * WAL flush. There is no timer: while a flush is in flight the next rows gather, so a lone request is
 * written at once and a busy receiver writes in batches (lib/batcher.ts). Every request is answered only
 * after its own row is committed.
 *
 * An accepted row is written `queued` when its fetch job will be added right after the commit (Redis is
 * up): one write per row instead of an INSERT and a later UPDATE. If that add fails, the follow-up sets
 * the rows back to `received` for the relay; if the process dies in between, the relay's scan of rows
 * left `queued` adds their jobs (relay.ts). A speed mechanism, kept for its measured gain:
 * docs/decisions.md, "Speed mechanisms".
 */
import { isDatabaseUnavailable } from '../db/client.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { NewNotification as NotificationRow } from '../notifications/lifecycle.js';
import { Batcher, splitOnFailure } from '../lib/batcher.js';
import { endsWith, type SpanRef, type Tracing } from '../lib/tracing.js';

export interface NewNotification extends NotificationRow {
  /** The request's wait for the commit, when traces are exported: the batch's span links to it. */
  trace?: SpanRef;
}

interface StoredNotification extends Omit<NotificationRow, 'disposition'> {
  id: number;
  status: 'received' | 'queued' | 'discarded';
  /** As given: the fetch job added for the row continues its trace (processing/enqueue.ts). */
  trace?: SpanRef;
}

type Accepted = StoredNotification & { status: 'received' | 'queued' };

/** What follows a commit: the accepted rows' fetch jobs are added (processing/enqueue.ts). */
interface CommitFollowUp {
  /** Whether accepted rows are stored `queued`: false while Redis is known to be down. */
  readonly queueing: boolean;
  /** Called with each committed batch's accepted rows; never awaited by a request. */
  afterCommit(rows: Accepted[]): void;
}

export class NotificationWriter {
  private readonly batcher: Batcher<NewNotification, StoredNotification>;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'accept'>,
    private readonly followUp: CommitFollowUp,
    /** A follow-up that threw (a bug): reported, never turned into the batch's failure. */
    private readonly onFollowUpError: (err: unknown) => void,
    /** Set when traces are exported: each commit is a span (lib/tracing.ts). */
    private readonly tracing?: Pick<Tracing, 'commitBatch'>,
    // One flush at a time: everything that arrives meanwhile goes in the next one (fewer, larger commits).
    opts = { maxBatch: 1000, maxConcurrent: 1 },
  ) {
    this.batcher = new Batcher(splitOnFailure((rows) => this.write(rows), isDatabaseUnavailable), opts);
  }

  /** Resolves once the row is committed; rejects when it is not (the caller answers 503). */
  insert(row: NewNotification): Promise<StoredNotification> {
    return this.batcher.add(row);
  }

  private async write(rows: NewNotification[]): Promise<StoredNotification[]> {
    const batch = this.tracing?.commitBatch(rows.map((r) => r.trace));
    const inserted = await endsWith(batch, this.notifications.accept(rows, { queueing: this.followUp.queueing }));
    // Field by field: V8 copies an object rest (`{ disposition, ...row }`) through a slow generic path.
    const stored = rows.map(
      (r, i): StoredNotification => ({
        companyId: r.companyId,
        webhookId: r.webhookId,
        resourceId: r.resourceId,
        type: r.type,
        href: r.href,
        bodyJson: r.bodyJson,
        authenticatedBy: r.authenticatedBy,
        id: inserted[i]!.id,
        status: inserted[i]!.status,
        trace: r.trace,
      }),
    );
    try {
      this.followUp.afterCommit(stored.filter((r): r is Accepted => r.status !== 'discarded'));
    } catch (err) {
      // Committed is committed: a failure here must not make the batch be written again. The relay
      // queues rows that were never queued.
      this.onFollowUpError(err);
    }
    return stored;
  }
}
