/**
 * Creates the database if missing and applies drizzle's generated migrations under a PostgreSQL
 * advisory lock, so any number of processes can start at once (drizzle-kit migrate can hang without
 * a TTY, so it is never used at run time). Each migration commits on its own, in drizzle's journal
 * (drizzle.__drizzle_migrations, the same rows drizzle's migrator writes), and waits for a table's lock
 * at most LOCK_TIMEOUT before it rolls back and tries again: a migration never queues the service's
 * queries behind a long read (docs/decisions.md, "Partitions").
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator';
import pg from 'pg';
import { withoutPassword } from '../lib/redact.js';
import { describeError } from '../lib/error-reporter.js';
import { isDatabaseUnavailable } from '../lib/database-unavailable.js';

const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));
const MIGRATION_LOCK = 7_461_736_001; // arbitrary, fixed: "skyhook migrate"
/** How long one statement of a migration may wait for a lock before its migration rolls back and retries. */
const LOCK_TIMEOUT_MS = 500;
const LOCK_RETRIES = 120;

/** Creates the database `url` names, through the server's `postgres` database. */
async function createDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!name) throw new Error('DATABASE_URL names no database');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((err: { code?: string }) => {
      if (err.code !== '42P04') throw err; // created by a process starting beside us
    });
  } finally {
    await client.end();
  }
}

/**
 * Whether the newest migration is applied (as drizzle's migrator decides it: by its folder's time). Then
 * nothing is run, not even drizzle's `CREATE SCHEMA IF NOT EXISTS`: a role that may not create anything
 * (docs/operations.md, "A database role for the service") starts on a database its owner migrated.
 */
async function upToDate(client: pg.Client): Promise<boolean> {
  const newest = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).at(-1)?.folderMillis ?? 0;
  const journal = await client.query<{ present: boolean }>(`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`);
  if (!journal.rows[0]?.present) return false;
  const { rows } = await client.query<{ applied: string | null }>('SELECT max(created_at)::text AS applied FROM drizzle.__drizzle_migrations');
  return rows[0]?.applied != null && Number(rows[0].applied) >= newest;
}

/** The migrations' tags in order (readMigrationFiles answers them in this order, without their names). */
function journalTags(): string[] {
  const journal = JSON.parse(readFileSync(`${MIGRATIONS_FOLDER}/meta/_journal.json`, 'utf8')) as { entries: { tag: string }[] };
  return journal.entries.map((e) => e.tag);
}

/** One migration in its own transaction, its journal row with it; a lock not granted in time retries it whole. */
async function applyMigration(client: pg.Client, migration: MigrationMeta): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      for (const statement of migration.sql) if (statement.trim()) await client.query(statement);
      await client.query('INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)', [migration.hash, migration.folderMillis]);
      await client.query('COMMIT');
      return;
    } catch (err) {
      await client.query('ROLLBACK');
      // 55P03: lock_not_available, a long read or a busy table held it; anything else is the migration's fault.
      if ((err as { code?: string }).code !== '55P03' || attempt >= LOCK_RETRIES) throw err;
    }
    await sleep(Math.min(100 * attempt, 2000));
  }
}

/** `upTo`: the tag of the last migration to apply (the conversion test makes the previous version's database). */
export async function migrateDatabase(url: string, opts: { upTo?: string } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    if (!opts.upTo && (await upToDate(client))) return;
    await client.query('CREATE SCHEMA IF NOT EXISTS drizzle');
    await client.query('CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)');
    const { rows } = await client.query<{ applied: string | null }>('SELECT max(created_at)::text AS applied FROM drizzle.__drizzle_migrations');
    const applied = Number(rows[0]?.applied ?? 0);
    // As drizzle's migrator decides: every migration younger than the newest applied one, in order.
    const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
    const last = opts.upTo ? journalTags().indexOf(opts.upTo) : migrations.length - 1;
    if (last < 0) throw new Error(`no migration ${opts.upTo}`);
    for (const migration of migrations.slice(0, last + 1)) {
      if (migration.folderMillis > applied) await applyMigration(client, migration);
    }
  } finally {
    // Ending the session releases its advisory lock: no unlock to send, nor to fail.
    await client.end();
  }
}

/**
 * Migrates the database; only when it does not exist (3D000) is the server's `postgres` database used to
 * create it first. A managed PostgreSQL where the database was created in advance needs no access to
 * `postgres`. A failure is a DatabaseStartError naming PostgreSQL and DATABASE_URL (without its password).
 */
export async function prepareDatabase(url: string): Promise<void> {
  try {
    try {
      await migrateDatabase(url);
    } catch (err) {
      if ((err as { code?: string }).code !== '3D000') throw err;
      await createDatabase(url);
      await migrateDatabase(url);
    }
  } catch (err) {
    throw new DatabaseStartError(url, err);
  }
}

/** Why the database could not be prepared, in one line that names PostgreSQL and DATABASE_URL. */
export class DatabaseStartError extends Error {
  /** PostgreSQL is unreachable (refused, down, starting up): worth waiting for, unlike a refusal. */
  readonly unavailable: boolean;

  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    const unavailable = isDatabaseUnavailable(cause);
    const what = unavailable ? 'is not reachable' : 'refused';
    super(`PostgreSQL at ${withoutPassword(url)} (DATABASE_URL) ${what}: ${describeError(cause)}`);
    this.unavailable = unavailable;
  }
}

/**
 * Prepares the database, waiting while PostgreSQL is unreachable (a process may start before it does:
 * compose, a managed database restarting). Each failed try goes to `onWait`; any other failure (a wrong
 * password, a missing permission) is thrown, since waiting would not mend it. Ends early when `signal` aborts.
 */
export async function waitForDatabase(url: string, opts: { onWait: (err: DatabaseStartError) => void; signal?: AbortSignal }): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await prepareDatabase(url);
      return;
    } catch (err) {
      if (!(err instanceof DatabaseStartError) || !err.unavailable) throw err;
      opts.onWait(err);
    }
    await sleep(Math.min(250 * 2 ** attempt, 5000), undefined, { signal: opts.signal }).catch(() => opts.signal?.throwIfAborted());
  }
}
