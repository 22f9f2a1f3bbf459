/**
 * What a pipeline asks of Redis and PostgreSQL (issue #33, part 2): counts read around a window, per
 * notification or per second, for Skyhook and the minimal pipeline (bench/baseline.ts) alike.
 *
 * - Redis: `INFO commandstats`, server-wide: another client's commands count too (a test suite running
 *   beside the bench), the bench's own INFO calls do not. A command a Lua script runs counts, under its own
 *   name: `total` is every command Redis executed, `evalsha`, `eval` and `fcall` (their `_ro` forms
 *   included) the scripts called.
 * - PostgreSQL: `pg_stat_database` for the measured database: transactions (commits and rollbacks; a
 *   statement outside BEGIN is one) and rows written. Read from a connection to another database, so the
 *   reading is not counted. A backend publishes its counts at most once a second, and those of its last
 *   second 10 s after it went idle (PostgreSQL 15's shared statistics): a window starts and ends after
 *   11 s of quiet. One kind of transaction is left out: a LISTEN connection's, one each time a NOTIFY wakes
 *   it, which it publishes only when it next runs a statement or ends (Skyhook's one listener, woken by
 *   the insert's and the store's NOTIFY: two a notification; the minimal pipeline has none). Measured on a
 *   throwaway server: a listener's transactions since its LISTEN all appeared at once when Skyhook stopped.
 * - The pipeline's own process: its write system calls (`syscw` in /proc/<pid>/io, all threads), nearly
 *   one per message it sends (a request to Redis or PostgreSQL, the GET, the answer to a notification),
 *   so about its round trips; each costs the sender a system call and wakes the other end. Unlike the CPU
 *   figures, the count hardly moves with the machine's speed.
 * - `pg_stat_statements`, only if the server preloads it (`shared_preload_libraries`): every statement,
 *   BEGIN and COMMIT included. It is read in a database of the bench's own, `skyhook_bench_stats`, where the
 *   bench creates the extension (the view needs it in the database it is read from).
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';

const STATS_DB = 'skyhook_bench_stats';

export interface Calls {
  redis: { total: number; evalsha: number; eval: number; fcall: number };
  /** statements is null when pg_stat_statements is not loaded. */
  postgres: { xacts: number; rowsInserted: number; rowsUpdated: number; rowsDeleted: number; statements: number | null };
  /** The pipeline's process's write system calls. */
  writes: number;
}

/** Write system calls so far of these processes (all their threads). */
export const processWrites = (pids: number[]): number =>
  pids.reduce((sum, pid) => sum + Number(/^syscw:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? NaN), 0);

export interface CallsReader {
  /** Whether PostgreSQL statements are counted (pg_stat_statements preloaded). */
  statements: boolean;
  redis(): Promise<Calls['redis']>;
  postgres(database: string): Promise<Calls['postgres']>;
  /** Everything, `pids` the pipeline's processes. */
  read(database: string, pids: number[]): Promise<Calls>;
  close(): Promise<void>;
}

export async function openCallsReader(server: string, redisUrl: string): Promise<CallsReader> {
  let sql = new pg.Client({ connectionString: `${server}/postgres` });
  await sql.connect();
  const preloaded = (await sql.query(`SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements' AS on`)).rows[0].on as boolean;
  if (preloaded) {
    if ((await sql.query('SELECT 1 FROM pg_database WHERE datname = $1', [STATS_DB])).rowCount === 0) await sql.query(`CREATE DATABASE ${STATS_DB}`);
    await sql.end();
    sql = new pg.Client({ connectionString: `${server}/${STATS_DB}` });
    await sql.connect();
    await sql.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  }
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  /** This reader's INFO calls so far: a reading counts those before it, not itself. */
  let ownInfo = 0;

  const readRedis = async (): Promise<Calls['redis']> => {
    const counts = { total: -ownInfo, evalsha: 0, eval: 0, fcall: 0 };
    const info = await redis.info('commandstats');
    ownInfo++;
    for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      const n = Number(calls);
      counts.total += n;
      const family = name!.replace(/_ro$/, '');
      if (family === 'evalsha' || family === 'eval' || family === 'fcall') counts[family] += n;
    }
    return counts;
  };
  const readPostgres = async (database: string): Promise<Calls['postgres']> => {
    const { rows } = await sql.query(
      `SELECT xact_commit + xact_rollback AS xacts, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = $1`,
      [database],
    );
    const row = rows[0] ?? {};
    let statements: number | null = null;
    if (preloaded) {
      const pgss = await sql.query(`SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`, [database]);
      statements = Number(pgss.rows[0].n);
    }
    return { xacts: Number(row.xacts ?? 0), rowsInserted: Number(row.tup_inserted ?? 0), rowsUpdated: Number(row.tup_updated ?? 0), rowsDeleted: Number(row.tup_deleted ?? 0), statements };
  };

  return {
    statements: preloaded,
    redis: readRedis,
    postgres: readPostgres,
    read: async (database, pids) => ({ redis: await readRedis(), postgres: await readPostgres(database), writes: processWrites(pids) }),
    close: async () => {
      redis.disconnect();
      await sql.end();
    },
  };
}

/** (after - before) / per, each count rounded to 2 decimals. */
export function callsBetween(before: Calls, after: Calls, per: number): Calls {
  const r = (a: number, b: number) => Math.round(((a - b) / per) * 100) / 100;
  const redis = { total: r(after.redis.total, before.redis.total), evalsha: r(after.redis.evalsha, before.redis.evalsha), eval: r(after.redis.eval, before.redis.eval), fcall: r(after.redis.fcall, before.redis.fcall) };
  const p = (k: keyof Omit<Calls['postgres'], 'statements'>) => r(after.postgres[k], before.postgres[k]);
  const statements = after.postgres.statements === null || before.postgres.statements === null ? null : r(after.postgres.statements, before.postgres.statements);
  return { redis, postgres: { xacts: p('xacts'), rowsInserted: p('rowsInserted'), rowsUpdated: p('rowsUpdated'), rowsDeleted: p('rowsDeleted'), statements }, writes: r(after.writes, before.writes) };
}

/** One line: Redis commands (scripts among them), PostgreSQL transactions, rows written, statements, the process's writes. */
export const formatCalls = (c: Calls): string =>
  `Redis ${c.redis.total} commands (evalsha ${c.redis.evalsha}, eval ${c.redis.eval}, fcall ${c.redis.fcall}); ` +
  `PostgreSQL ${c.postgres.xacts} transactions, rows +${c.postgres.rowsInserted} ~${c.postgres.rowsUpdated} -${c.postgres.rowsDeleted}` +
  (c.postgres.statements === null ? '' : `, ${c.postgres.statements} statements`) +
  `; the process ${c.writes} write system calls`;
