/**
 * Once per test run: a freshly migrated template database that each test file clones, with the growing
 * tables' partitions made ahead (as a process's start-up makes them); dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateDatabase } from '../src/db/migrate.js';
import { maintainPartitions } from '../src/db/partitions.js';
import { dropRunDatabases, SERVER_URL, templateDatabase, withAdmin } from './helpers/database.js';

export default async function setup(): Promise<() => Promise<void>> {
  process.env.SKYHOOK_TEST_RUN = randomBytes(4).toString('hex');
  await withAdmin((c) => c.query(`CREATE DATABASE ${templateDatabase()}`));
  await migrateDatabase(`${SERVER_URL}/${templateDatabase()}`);
  const pool = new pg.Pool({ connectionString: `${SERVER_URL}/${templateDatabase()}`, max: 1 });
  try {
    await maintainPartitions(pool, {});
  } finally {
    await pool.end();
  }
  return dropRunDatabases;
}
