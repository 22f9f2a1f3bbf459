/**
 * Where fetched resources are stored: the snapshot upsert, the event row with its NOTIFY, and the
 * notification rows' final status, in one transaction.
 */
import { sql } from 'drizzle-orm';
import type { Database, Tx } from '../db/client.js';
import type { HandlerRegistry } from './handlers/index.js';

export const EVENTS_CHANNEL = 'skyhook_events';

export interface Claimed {
  ids: number[];
  type: string;
  resourceId: string;
}

type Rows<T> = { rows: T[] };

/**
 * Stores the snapshot unless a fetch that started later already stored one (a snapshot is never
 * replaced by an older fetch), appends the event with its NOTIFY, and marks the covered notifications
 * processed: one statement, so one round trip. When the type has a handler, the statement and the
 * handler share a transaction. Returns the version the notifications are covered by.
 */
export async function storeSnapshot(
  db: Database,
  handlers: HandlerRegistry,
  input: { companyId: string; href: string; claimed: Claimed; fetchStartedAt: Date; resource: unknown },
): Promise<number> {
  const { companyId, href, claimed, fetchStartedAt, resource } = input;
  const store = async (q: Database | Tx) => {
    const result = (await q.execute(sql`
      WITH up AS (
        INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
        VALUES (${companyId}, ${href}, ${claimed.type}, ${claimed.resourceId}, 1, ${fetchStartedAt.toISOString()}, false, ${JSON.stringify(resource)}::jsonb)
        ON CONFLICT (company_id, href) DO UPDATE
          SET type = excluded.type, resource_id = excluded.resource_id, version = resources.version + 1,
              fetched_at = excluded.fetched_at, gone = false, body = excluded.body
          WHERE resources.fetched_at <= excluded.fetched_at
        RETURNING version
      ),
      -- Without a row from up, a later fetch already stored a newer copy; it covers these notifications too.
      cur AS (
        SELECT coalesce((SELECT version FROM up), (SELECT version FROM resources WHERE company_id = ${companyId} AND href = ${href})) AS version
      ),
      ev AS (
        INSERT INTO events (company_id, type, resource_id, href, snapshot_version)
        SELECT ${companyId}, ${claimed.type}, ${claimed.resourceId}, ${href}, version FROM up
        RETURNING id, snapshot_version
      ),
      done AS (
        UPDATE notifications
        SET status = 'processed', outcome = 'stored', snapshot_version = (SELECT version FROM cur),
            last_error = NULL, attempts = attempts + 1, processed_at = now()
        WHERE id = ANY(${toArray(claimed.ids)}::bigint[])
      )
      SELECT (SELECT version FROM cur) AS version, (SELECT version FROM up) AS stored,
             (SELECT pg_notify(${EVENTS_CHANNEL}, json_build_object(
                'id', ev.id, 'companyId', ${companyId}::text, 'type', ${claimed.type}::text, 'resourceId', ${claimed.resourceId}::text,
                'href', ${href}::text, 'snapshotVersion', ev.snapshot_version)::text) FROM ev) AS notified`)) as unknown as Rows<{ version: number; stored: number | null }>;
    return result.rows[0]!;
  };

  const handler = handlers.handlerFor(claimed.type);
  if (!handler) return (await store(db)).version;
  return db.transaction(async (tx) => {
    const { version, stored } = await store(tx);
    if (stored !== null) {
      await handler.handle({ tx, companyId, href, type: claimed.type, resourceId: claimed.resourceId, snapshot: { version, body: resource }, notificationIds: claimed.ids });
    }
    return version;
  });
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
    WHERE id = ANY(${toArray(ids)}::bigint[])`);
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
    WHERE id = ANY(${toArray(ids)}::bigint[])`);
}

/** drizzle's sql`` expands a JS array into a list of parameters; pg wants one array literal. */
const toArray = (ids: number[]): string => `{${ids.join(',')}}`;
