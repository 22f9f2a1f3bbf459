/** Once per test run: a freshly migrated template database that each test file clones. */
import { migrateDatabase } from '../src/db/migrate.js';
import { dropDatabase, SERVER_URL, TEMPLATE_DATABASE } from './helpers/database.js';
import pg from 'pg';

export default async function setup(): Promise<() => Promise<void>> {
  await dropDatabase(TEMPLATE_DATABASE);
  const admin = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
  await admin.connect();
  // Leftovers of an interrupted run.
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'skyhook\\_t\\_%'`);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await admin.end();
  await migrateDatabase(`${SERVER_URL}/${TEMPLATE_DATABASE}`);
  return async () => {};
}
