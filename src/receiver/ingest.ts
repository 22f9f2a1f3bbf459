/**
 * Storing notifications: group commit. Concurrent requests' rows are written by one INSERT in one
 * transaction (synchronous_commit stays on), so many requests share one WAL flush. There is no timer:
 * while a flush is in flight the next rows gather, so a lone request is written at once and a busy
 * receiver writes in batches (lib/batcher.ts). Every request is answered only after its own row is committed.
 *
 * An accepted row is written `queued` when its fetch job will be added right after the commit (Redis is
 * up): one write per row instead of an INSERT and a later UPDATE, which was PostgreSQL's largest
 * statement under ingest. If that add fails, the follow-up sets the rows back to `received` for the relay; if
 * the process dies in between, the relay's scan of rows left `queued` adds their jobs (relay.ts).
 */
import type pg from 'pg';
import { isDatabaseUnavailable } from '../db/client.js';
import { Batcher, splitOnFailure } from '../lib/batcher.js';

export interface NewNotification {
  companyId: string;
  webhookId: string;
  resourceId: string;
  type: string;
  href: string;
  /** The body's text as received (already checked to be storable JSON). */
  bodyJson: string;
  authenticatedBy: 'basic' | 'oauth';
  /** `accepted` is stored `queued` or `received` (see above). */
  disposition: 'accepted' | 'discarded';
}

export interface StoredNotification extends Omit<NewNotification, 'disposition'> {
  id: number;
  status: 'received' | 'queued' | 'discarded';
}

type Accepted = StoredNotification & { status: 'received' | 'queued' };

/** What follows a commit: the accepted rows' fetch jobs are added (processing/fetch-queue.ts). */
export interface CommitFollowUp {
  /** Whether accepted rows are stored `queued`: false while Redis is known to be down. */
  readonly queueing: boolean;
  /** Called with each committed batch's accepted rows; never awaited by a request. */
  afterCommit(rows: Accepted[]): void;
}

/**
 * INSERT from unnest(): one statement shape for any batch size, so PostgreSQL plans it once.
 * RETURNING yields rows in the order unnest produced them (PostgreSQL inserts and returns them in
 * executor order); the ids are matched to the requests by that order.
 */
const INSERT_SQL = `
  INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                       $7::authenticated_by[], $8::notification_status[])
  RETURNING id`;

export class NotificationWriter {
  private readonly batcher: Batcher<NewNotification, StoredNotification>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly followUp: CommitFollowUp,
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
    const accepted: Accepted['status'] = this.followUp.queueing ? 'queued' : 'received';
    const statuses: StoredNotification['status'][] = rows.map((r) => (r.disposition === 'accepted' ? accepted : 'discarded'));
    const column = <K extends keyof NewNotification>(key: K) => rows.map((r) => r[key]);
    // Named: each connection parses and plans it once.
    const result = await this.pool.query<{ id: string }>({ name: 'skyhook_insert_notifications', text: INSERT_SQL }, [
      column('companyId'),
      column('webhookId'),
      column('resourceId'),
      column('type'),
      column('href'),
      column('bodyJson'),
      column('authenticatedBy'),
      statuses,
    ]);
    if (result.rows.length !== rows.length) throw new Error(`inserted ${result.rows.length} of ${rows.length} notifications`);
    // Built field by field: an object rest (`{ disposition, ...row }`) and spread cost about 2 µs a row here.
    const stored = rows.map(
      (r, i): StoredNotification => ({
        companyId: r.companyId,
        webhookId: r.webhookId,
        resourceId: r.resourceId,
        type: r.type,
        href: r.href,
        bodyJson: r.bodyJson,
        authenticatedBy: r.authenticatedBy,
        id: Number(result.rows[i]!.id),
        status: statuses[i]!,
      }),
    );
    try {
      this.followUp.afterCommit(stored.filter((r): r is Accepted => r.status !== 'discarded'));
    } catch {
      // Committed is committed: a failure here must not make the batch be written again. The relay
      // queues rows that were never queued.
    }
    return stored;
  }
}
