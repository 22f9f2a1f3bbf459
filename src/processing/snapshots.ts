/**
 * Where fetched resources are stored: the snapshot upsert, the event row with its NOTIFY, and the
 * notification rows' final status, in one statement. Arrays are passed with sql.param (one parameter):
 * drizzle's sql`` would otherwise expand a JS array into a list of parameters.
 */
import { sql } from 'drizzle-orm';
import { isDatabaseUnavailable, type Database, type Tx } from '../db/client.js';
import { Batcher, splitOnFailure } from '../lib/batcher.js';
import type { HandlerRegistry } from './handlers/index.js';

export const EVENTS_CHANNEL = 'skyhook_events';

export interface Claimed {
  ids: number[];
  type: string;
  resourceId: string;
}

type Rows<T> = { rows: T[] };

export interface SnapshotInput {
  companyId: string;
  href: string;
  claimed: Claimed;
  fetchStartedAt: Date;
  resource: unknown;
}

interface Stored {
  /** The version the notifications are covered by. */
  version: number;
  /** The version this fetch stored, or null when a fetch that started later had stored a newer copy. */
  stored: number | null;
}

/**
 * Stores fetched resources. The concurrent jobs' snapshots are written together: one statement, and one
 * commit (the worker's group commit, like ingest's). When some of them have a handler, the statement and
 * those handlers share one transaction; if a handler fails, the batch is rolled back and written again
 * one fetch at a time (splitOnFailure), so a failing handler fails only its own fetch.
 */
export class SnapshotStore {
  private readonly batcher: Batcher<SnapshotInput, Stored>;

  constructor(
    private readonly db: Database,
    private readonly handlers: HandlerRegistry,
  ) {
    // A batch holds at most the worker's running jobs; the cap bounds the statement's size (each
    // resource may be up to 5 MB).
    this.batcher = new Batcher(splitOnFailure((items) => this.write(items), isDatabaseUnavailable), { maxBatch: 64, maxConcurrent: 1 });
  }

  /** Returns the version the claimed notifications are covered by. */
  async store(input: SnapshotInput): Promise<number> {
    return (await this.batcher.add(input)).version;
  }

  private async write(items: SnapshotInput[]): Promise<Stored[]> {
    const handlers = items.map((i) => this.handlers.handlerFor(i.claimed.type));
    // Without handlers the statement commits by itself: no BEGIN and COMMIT round trips.
    if (handlers.every((h) => h === undefined)) return storeMany(this.db, items);
    return this.db.transaction(async (tx) => {
      const results = await storeMany(tx, items);
      for (const [i, handler] of handlers.entries()) {
        const { companyId, href, claimed, resource } = items[i]!;
        const { version, stored } = results[i]!;
        if (handler && stored !== null) {
          await handler.handle({ tx, companyId, href, type: claimed.type, resourceId: claimed.resourceId, snapshot: { version, body: resource }, notificationIds: claimed.ids });
        }
      }
      return results;
    });
  }
}

/**
 * One statement for any number of fetches (of distinct keys: C3 guarantees that): each snapshot is
 * upserted unless a fetch that started later already stored one (a snapshot is never replaced by an
 * older fetch), an event row with its NOTIFY is appended per stored snapshot, and the covered
 * notifications are marked processed. Results come back in input order.
 */
async function storeMany(q: Database | Tx, items: SnapshotInput[]): Promise<Stored[]> {
  const col = <T>(f: (i: SnapshotInput) => T) => sql.param(items.map(f));
  const coveredIds = items.flatMap((i) => i.claimed.ids);
  const coveredOrd = items.flatMap((i, n) => i.claimed.ids.map(() => n + 1));
  const result = (await q.execute(sql`
    WITH input AS (
      SELECT k.*, b.body
      FROM unnest(${col((i) => i.companyId)}::uuid[], ${col((i) => i.href)}::text[], ${col((i) => i.claimed.type)}::text[],
                  ${col((i) => i.claimed.resourceId)}::text[], ${col((i) => i.fetchStartedAt.toISOString())}::timestamptz[])
        WITH ORDINALITY AS k(company_id, href, type, resource_id, fetched_at, ord)
      -- The bodies travel as one JSON array (one parameter), not as a text[] of JSON that pg would escape element by element.
      JOIN jsonb_array_elements(${JSON.stringify(items.map((i) => i.resource))}::jsonb) WITH ORDINALITY AS b(body, ord) USING (ord)
    ),
    up AS (
      INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
      SELECT company_id, href, type, resource_id, 1, fetched_at, false, body FROM input ORDER BY ord
      ON CONFLICT (company_id, href) DO UPDATE
        SET type = excluded.type, resource_id = excluded.resource_id, version = resources.version + 1,
            fetched_at = excluded.fetched_at, gone = false, body = excluded.body
        WHERE resources.fetched_at <= excluded.fetched_at
      RETURNING company_id, href, version
    ),
    -- Without a row from up, a later fetch already stored a newer copy (read as it was before this
    -- statement): it covers these notifications too.
    cur AS (
      SELECT i.ord, i.company_id, i.href, i.type, i.resource_id, u.version AS stored, coalesce(u.version, r.version) AS version
      FROM input i
      LEFT JOIN up u ON u.company_id = i.company_id AND u.href = i.href
      LEFT JOIN resources r ON r.company_id = i.company_id AND r.href = i.href
    ),
    ev AS (
      INSERT INTO events (company_id, type, resource_id, href, snapshot_version)
      SELECT company_id, type, resource_id, href, stored FROM cur WHERE stored IS NOT NULL ORDER BY ord
      RETURNING id, company_id, type, resource_id, href, snapshot_version
    ),
    done AS (
      UPDATE notifications n
      SET status = 'processed', outcome = 'stored', snapshot_version = c.version,
          last_error = NULL, attempts = n.attempts + 1, processed_at = now()
      FROM unnest(${sql.param(coveredIds)}::bigint[], ${sql.param(coveredOrd)}::bigint[]) AS x(id, ord)
      JOIN cur c ON c.ord = x.ord
      WHERE n.id = x.id
    )
    SELECT c.version, c.stored,
           (SELECT count(pg_notify(${EVENTS_CHANNEL}, json_build_object(
              'id', ev.id, 'companyId', ev.company_id::text, 'type', ev.type, 'resourceId', ev.resource_id,
              'href', ev.href, 'snapshotVersion', ev.snapshot_version)::text)) FROM ev) AS notified
    FROM cur c ORDER BY c.ord`)) as unknown as Rows<Stored>;
  if (result.rows.length !== items.length) throw new Error(`stored ${result.rows.length} of ${items.length} snapshots`);
  return result.rows;
}

/** 404/410: the resource is gone; its snapshot (if any) is kept and flagged. */
export async function markGone(db: Database, input: { companyId: string; href: string; ids: number[]; fetchStartedAt: Date }): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      UPDATE resources SET gone = true, fetched_at = ${input.fetchStartedAt.toISOString()}
      WHERE company_id = ${input.companyId} AND href = ${input.href} AND fetched_at <= ${input.fetchStartedAt.toISOString()}`);
    await finish(tx, input.ids, { status: 'processed', outcome: 'gone' });
  });
}

export async function markFailed(db: Database | Tx, ids: number[], error: string): Promise<void> {
  await finish(db, ids, { status: 'failed', error });
}

/** A retryable failure: the rows stay pending, with the attempt counted and the reason kept. */
export async function recordAttempt(db: Database, ids: number[], error: string): Promise<void> {
  await db.execute(sql`
    UPDATE notifications SET attempts = attempts + 1, last_error = ${error}
    WHERE id = ANY(${sql.param(ids)}::bigint[])`);
}

async function finish(
  db: Database | Tx,
  ids: number[],
  r: { status: 'processed' | 'failed'; outcome?: 'stored' | 'gone'; snapshotVersion?: number; error?: string },
): Promise<void> {
  await db.execute(sql`
    UPDATE notifications
    SET status = ${r.status}, outcome = ${r.outcome ?? null}, snapshot_version = ${r.snapshotVersion ?? null},
        last_error = ${r.error ?? null}, attempts = attempts + 1,
        processed_at = now()
    WHERE id = ANY(${sql.param(ids)}::bigint[])`);
}
