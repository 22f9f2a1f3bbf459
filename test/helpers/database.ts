/**
 * Test isolation: every test file gets its own database, cloned from a template that global-setup
 * migrated once (cloning is far faster than migrating), and its own BullMQ/Redis key prefix.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const SERVER_URL = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
/** Set by global-setup: one id per test run, so runs side by side never touch each other's databases. */
export const runId = (): string => process.env.SKYHOOK_TEST_RUN ?? 'local';
export const templateDatabase = (): string => `skyhook_tpl_${runId()}`;
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `skyhook_t_${runId()}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${templateDatabase()}`));
  return {
    name,
    url: `${SERVER_URL}/${name}`,
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}

export const testQueuePrefix = (): string => `{skyhook-t-${randomBytes(5).toString('hex')}}`;

/** Drops the template and any database of this run a crashed test file left behind. */
export async function dropRunDatabases(): Promise<void> {
  await withAdmin(async (c) => {
    const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2', [
      templateDatabase(),
      `skyhook\\_t\\_${runId()}\\_%`,
    ]);
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
  });
}

export { withAdmin };
