/** `npm run demo`, run as a user would, to its summary, twice on the same database (it cleans up after itself). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';

const run = promisify(execFile);
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

it('runs to its summary with every notification processed, and leaves the database as it found it', async () => {
  const env = { ...process.env, DATABASE_URL: db.url, REDIS_URL, DEMO_QUEUE_PREFIX: testQueuePrefix(), FETCH_MIN_INTERVAL_MS: '100' };
  for (let round = 0; round < 2; round++) {
    const { stdout } = await run('node', ['bin/skyhook.js', 'demo', '--events', '40'], { env, timeout: 90_000 });
    expect(stdout).toContain('Summary');
    expect(stdout).toMatch(/lead demo-lead-\d+ created for demo-broker: marketplace id lead_/);
    expect(stdout).toMatch(/quote demo-quote-1 submitted for demo-charter: tripmsgs tm_\S+, sellerQuote sq_\S+, lift lift_/);
    expect(stdout).toContain('82 of 82 notifications processed');
    expect(stdout).toContain("every GET used its owner's token: true");
  }
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT (SELECT count(*) FROM companies)::int AS companies, (SELECT count(*) FROM notifications)::int AS notifications');
    expect(rows[0]).toEqual({ companies: 0, notifications: 0 });
  } finally {
    await client.end();
  }
}, 200_000);
