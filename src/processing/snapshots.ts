/**
 * Where fetched resources are stored: the snapshot upsert, the event row with its NOTIFY, and the
 * notification rows' final status, in one statement whose arrays are each one parameter.
 */
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { CachedPlans, Statement } from '../db/cached-plans.js';
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
    private readonly pool: pg.Pool,
    private readonly plans: CachedPlans,
    private readonly handlers: HandlerRegistry,
    /** Called when a batch is stored, just before its fetches are told (they all go on in this turn). */
    private readonly beforeResults: () => void = () => {},
  ) {
    const write = async (items: SnapshotInput[]) => {
      const stored = await this.write(items);
      this.beforeResults();
      return stored;
    };
    // A batch holds at most the worker's running jobs; the cap bounds the statement's size (each
    // resource may be up to 5 MB).
    this.batcher = new Batcher(splitOnFailure(write, isDatabaseUnavailable), { maxBatch: 64, maxConcurrent: 1 });
  }

  /** Returns the version the claimed notifications are covered by. */
  async store(input: SnapshotInput): Promise<number> {
    return (await this.batcher.add(input)).version;
  }

  private async write(items: SnapshotInput[]): Promise<Stored[]> {
    const handlers = items.map((i) => this.handlers.handlerFor(i.claimed.type));
    // Without handlers the statement commits by itself: no BEGIN and COMMIT round trips.
    if (handlers.every((h) => h === undefined)) return storeMany(this.pool, this.plans.nameFor(STORE_STATEMENT), items);
    return this.db.transaction(async (tx) => {
      const results = await storeManyIn(tx, items);
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
const STORE_SQL = `
  WITH input AS (
    SELECT k.*, b.body
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
      WITH ORDINALITY AS k(company_id, href, type, resource_id, fetched_at, ord)
    -- The bodies travel as one JSON array (one parameter), not as a text[] of JSON that pg would escape element by element.
    JOIN jsonb_array_elements($6::jsonb) WITH ORDINALITY AS b(body, ord) USING (ord)
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
    FROM unnest($7::bigint[], $8::bigint[]) AS x(id, ord)
    JOIN cur c ON c.ord = x.ord
    WHERE n.id = x.id
  )
  SELECT c.version, c.stored,
         (SELECT count(pg_notify('${EVENTS_CHANNEL}', json_build_object(
            'id', ev.id, 'companyId', ev.company_id::text, 'type', ev.type, 'resourceId', ev.resource_id,
            'href', ev.href, 'snapshotVersion', ev.snapshot_version)::text)) FROM ev) AS notified
  FROM cur c ORDER BY c.ord`;

export const STORE_STATEMENT: Statement = { name: 'skyhook_store_snapshots', text: STORE_SQL };

function storeParams(items: SnapshotInput[]): unknown[] {
  const col = <T>(f: (i: SnapshotInput) => T) => items.map(f);
  return [
    col((i) => i.companyId),
    col((i) => i.href),
    col((i) => i.claimed.type),
    col((i) => i.claimed.resourceId),
    col((i) => i.fetchStartedAt.toISOString()),
    JSON.stringify(col((i) => i.resource)),
    items.flatMap((i) => i.claimed.ids),
    items.flatMap((i, n) => i.claimed.ids.map(() => n + 1)),
  ];
}

function checked(rows: Stored[], items: SnapshotInput[]): Stored[] {
  if (rows.length !== items.length) throw new Error(`stored ${rows.length} of ${items.length} snapshots`);
  return rows;
}

/**
 * Without handlers: on the pool (the statement commits by itself), named once its cached plan would use
 * the indexes (db/cached-plans.ts): then each connection parses and plans it once.
 */
async function storeMany(pool: pg.Pool, name: string | undefined, items: SnapshotInput[]): Promise<Stored[]> {
  const { rows } = await pool.query<Stored>({ name, text: STORE_SQL, values: storeParams(items) });
  return checked(rows, items);
}

/** With handlers: the same statement inside their transaction. */
async function storeManyIn(tx: Tx, items: SnapshotInput[]): Promise<Stored[]> {
  const params = storeParams(items);
  // STORE_SQL's $n placeholders become drizzle parameters, in the order they appear.
  const chunks = STORE_SQL.split(/\$(\d+)/).map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql.param(params[Number(part) - 1])));
  const result = (await tx.execute(sql.join(chunks))) as unknown as Rows<Stored>;
  return checked(result.rows, items);
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
