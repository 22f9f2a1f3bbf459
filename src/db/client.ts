import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as schema from './schema/index.js';

/** The query API over a pool (`$client`: a change opens its transaction on one of the pool's clients). */
export type Database = NodePgDatabase<typeof schema> & { $client: pg.Pool };
/**
 * What a handler writes with inside a transaction: the query API, which a drizzle transaction and a drizzle
 * instance bound to a transaction's client both have.
 */
export type Tx = Pick<Database, 'select' | 'selectDistinct' | 'insert' | 'update' | 'delete' | 'execute' | 'query' | '$with' | 'with'>;

export interface DbHandle {
  pool: pg.Pool;
  db: Database;
}

/** A pool closes a connection idle this long (bench/run.ts waits it out before its idle readings). */
export const POOL_IDLE_TIMEOUT_MS = 30_000;

/**
 * One pool per role: the receiver's pool must not wait behind worker transactions.
 * Every wait is bounded, so a database that stops answering turns into a 503, not a hang.
 */
export function connectDatabase(
  url: string,
  opts: {
    max: number;
    applicationName: string;
    /** Set: every statement on the pool's connections is planned generically (runtime.ts says why). */
    genericPlans?: boolean;
    onError?: (err: Error) => void;
    onConnect?: () => void;
  },
): DbHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max,
    ...(opts.genericPlans ? { options: '-c plan_cache_mode=force_generic_plan' } : {}),
    connectionTimeoutMillis: 3000,
    query_timeout: 15_000,
    idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS,
    application_name: opts.applicationName,
  });
  // A client losing its connection must not crash the process, idle (pool 'error') or checked out
  // (the client's own 'error', which pg-pool does not listen to): the query fails, the pool reconnects,
  // and the loss goes to `onError` (reported, rate-limited, by a long-running process).
  const lost = (err: Error) => opts.onError?.(err);
  pool.on('error', lost);
  pool.on('connect', (client) => {
    client.on('error', lost);
    opts.onConnect?.();
  });
  return { pool, db: drizzle({ client: pool, schema }) };
}

/**
 * Runs `fn` in a transaction on one client of the pool. A client that cannot even roll back is broken:
 * it is destroyed, not returned to the pool.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    await client.query('BEGIN');
    result = await fn(client);
    await client.query('COMMIT');
  } catch (err) {
    const broken = await client.query('ROLLBACK').then(() => false, () => true);
    client.release(broken);
    throw err;
  }
  client.release();
  return result;
}

/** What a change's statements run on: the query builders (not the relational API, which would cost a schema per change). */
export type ChangeTx = Pick<Database, 'select' | 'insert' | 'update' | 'delete' | 'execute'>;

/**
 * One change made in one transaction: its statements through drizzle (`tx`) or as raw SQL (`client`, the
 * same connection), and what must follow its commit (a gate told, jobs queued), run once it committed,
 * in order, never when it rolled back. The audit entry of an admin change is one of its statements
 * (access/audit.ts).
 */
export interface Change {
  tx: ChangeTx;
  client: Pick<pg.PoolClient, 'query'>;
  afterCommit(effect: () => Promise<unknown>): void;
}

/** Runs `work` as one change on `db`'s pool: committed, then its effects. */
export async function inChange<T>(db: Pick<Database, '$client'>, work: (change: Change) => Promise<T>): Promise<T> {
  const effects: (() => Promise<unknown>)[] = [];
  const result = await inTransaction(db.$client, (client) =>
    // Without the schema: building its relational config costs 0.4 ms, a query builder 4 µs.
    work({ tx: drizzle({ client }), client, afterCommit: (effect) => void effects.push(effect) }),
  );
  for (const effect of effects) await effect();
  return result;
}
