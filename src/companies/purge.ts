/**
 * A deleted company's rows in the tables that grow with traffic, purged in batches after its deletion
 * (SPEC §5.2). The deletion is one short transaction: the company's row and what is small with it (webhooks,
 * destinations, keys, leads, quotes, declines, resources) go, and the company is named in company_purges.
 * Its notifications with their replays and fetch attempts, its deliveries with their attempts and its events
 * have no key to it (db/schema/companies.ts purgedWithCompany) and are deleted here, BATCH rows a statement,
 * each statement its own transaction: no lock held long, however much the company had. Meanwhile readers
 * leave them out (db/schema/companies.ts notPurging). The purge runs once the deletion commits and in every retention pass (a
 * process that stopped halfway leaves the rest to the next); a company is forgotten once a purge finds
 * nothing left, FORGET_AFTER_MS after its deletion (what was written in the moment of the deletion goes too).
 */
import type pg from 'pg';

/** A pool, or one client (each statement then its own transaction all the same). */
type Sql = Pick<pg.Pool, 'query'>;

const BATCH = 5000;
const FORGET_AFTER_MS = 600_000;

/**
 * Each statement deletes at most $2 rows of company $1, with what hangs on them, and answers how many. Ids
 * as arrays (`= ANY(ARRAY(…))`), not `IN (subquery)`: PostgreSQL then finds each by its primary key where a
 * semi-join would read the whole table for every batch.
 */
const BATCHES = [
  `WITH n AS (DELETE FROM notifications WHERE id = ANY(ARRAY(SELECT id FROM notifications WHERE company_id = $1 LIMIT $2)) RETURNING id, fetch_attempt_ids),
     r AS (DELETE FROM notification_replays WHERE notification_id = ANY(ARRAY(SELECT id FROM n))),
     a AS (DELETE FROM fetch_attempts WHERE id = ANY(ARRAY(SELECT unnest(fetch_attempt_ids) FROM n)))
   SELECT count(*)::int AS n FROM n`,
  `WITH d AS (DELETE FROM deliveries WHERE id = ANY(ARRAY(SELECT id FROM deliveries WHERE company_id = $1 LIMIT $2)) RETURNING id),
     a AS (DELETE FROM delivery_attempts WHERE delivery_id = ANY(ARRAY(SELECT id FROM d)))
   SELECT count(*)::int AS n FROM d`,
  `WITH e AS (DELETE FROM events WHERE id = ANY(ARRAY(SELECT id FROM events WHERE company_id = $1 LIMIT $2)) RETURNING 1) SELECT count(*)::int AS n FROM e`,
];

/**
 * Purges every deleted company (or `only` that one) and answers how many rows went. Concurrent purges of
 * one company are safe: each batch deletes what the other left.
 */
export async function purgeDeletedCompanies(pool: Sql, opts: { only?: string; batch?: number; forgetAfterMs?: number } = {}): Promise<number> {
  const batch = opts.batch ?? BATCH;
  const { rows } = await pool.query<{ company_id: string }>('SELECT company_id FROM company_purges WHERE $1::uuid IS NULL OR company_id = $1', [opts.only ?? null]);
  let purged = 0;
  for (const { company_id: companyId } of rows) {
    for (const statement of BATCHES) {
      for (let n = batch; n === batch; purged += n) n = (await pool.query<{ n: number }>(statement, [companyId, batch])).rows[0]!.n;
    }
    await pool.query(`DELETE FROM company_purges WHERE company_id = $1 AND deleted_at < now() - make_interval(secs => $2::double precision / 1000)`, [companyId, opts.forgetAfterMs ?? FORGET_AFTER_MS]);
  }
  return purged;
}

/**
 * Deletes the companies matching `where` (`id = $1`, or `name LIKE $1`) as a deletion does: their rows, with
 * what cascades from them, and their names in company_purges, in one statement. Answers their ids.
 */
export async function removeCompanies(sql: Sql, where: 'id = $1' | 'name LIKE $1', value: string): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `WITH gone AS (DELETE FROM companies WHERE ${where} RETURNING id) INSERT INTO company_purges (company_id) SELECT id FROM gone ON CONFLICT DO NOTHING RETURNING company_id AS id`,
    [value],
  );
  return rows.map((r) => r.id);
}

/** The companies named like `pattern` (SQL LIKE) deleted, their rows purged at once (the demo's and the bench's clean-up). */
export async function deleteCompaniesNow(pool: Sql, pattern: string): Promise<void> {
  for (const id of await removeCompanies(pool, 'name LIKE $1', pattern)) await purgeDeletedCompanies(pool, { only: id, forgetAfterMs: 0 });
}
