/** Once per test run: a freshly migrated template database that each test file clones; dropped at the end. */
import { randomBytes } from 'node:crypto';
import { migrateDatabase } from '../src/db/migrate.js';
import { dropRunDatabases, SERVER_URL, templateDatabase, withAdmin } from './helpers/database.js';

export default async function setup(): Promise<() => Promise<void>> {
  process.env.SKYHOOK_TEST_RUN = randomBytes(4).toString('hex');
  await withAdmin((c) => c.query(`CREATE DATABASE ${templateDatabase()}`));
  await migrateDatabase(`${SERVER_URL}/${templateDatabase()}`);
  return dropRunDatabases;
}
