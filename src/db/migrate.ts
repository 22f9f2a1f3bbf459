/**
 * Creates the database if missing and applies drizzle's generated migrations under a PostgreSQL
 * advisory lock, so any number of processes can start at once (drizzle-kit migrate can hang without
 * a TTY, so it is never used at run time).
 */
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));
const MIGRATION_LOCK = 7_461_736_001; // arbitrary, fixed: "skyhook migrate"

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

export async function migrateDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS_FOLDER });
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    await client.end();
  }
}

/**
 * Migrates the database; only when it does not exist (3D000) is the server's `postgres` database used to
 * create it first. A managed PostgreSQL where the database was created in advance needs no access to
 * `postgres`.
 */
export async function prepareDatabase(url: string): Promise<void> {
  try {
    await migrateDatabase(url);
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err;
    await createDatabase(url);
    await migrateDatabase(url);
  }
}
