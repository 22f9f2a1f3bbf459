/** `npm run demo`, run as a user would, to its summary, twice on the same database (it cleans up after itself). */
import { execFile, spawn } from 'node:child_process';
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

it('runs to its summary with every notification processed and every event delivered and verified, and leaves the database as it found it', async () => {
  const env = { ...process.env, DATABASE_URL: db.url, REDIS_URL, DEMO_QUEUE_PREFIX: testQueuePrefix(), FETCH_MIN_INTERVAL_MS: '100' };
  for (let round = 0; round < 2; round++) {
    const { stdout } = await run('node', ['bin/skyhook.js', 'demo', '--events', '40'], { env, timeout: 90_000 });
    expect(stdout).toContain('Summary');
    expect(stdout).toMatch(/lead demo-lead-\d+ created for demo-broker: marketplace id lead_/);
    expect(stdout).toMatch(/quote demo-quote-1 submitted for demo-charter: tripmsgs tm_\S+, sellerQuote sq_\S+, lift lift_/);
    expect(stdout).toContain('82 of 82 notifications processed');
    expect(stdout).toContain("every GET used its owner's token: true");
    // Each company's destination is the demo's own receiver, which verifies every delivery with the destination's secret.
    const [, delivered, stored, verified] = /^(\d+) of (\d+) events delivered to the companies' own applications, (\d+) verified with their destination's secret$/m.exec(stdout) ?? [];
    expect(Number(stored)).toBeGreaterThan(0);
    expect([delivered, verified]).toEqual([stored, stored]);
    expect(stdout).toMatch(/^ {2}demo-charter .* (\d+) +\1 +\1 *$/m);
    expect(stdout).toMatch(/Operator console: http:\/\/127\.0\.0\.1:\d+\/console {2}\(sign in with the admin token \S+\)/);
    expect(stdout).toContain('npm run demo -- --keep');
  }
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT (SELECT count(*) FROM companies)::int AS companies, (SELECT count(*) FROM notifications)::int AS notifications, (SELECT count(*) FROM destinations)::int AS destinations, (SELECT count(*) FROM deliveries)::int AS deliveries',
    );
    expect(rows[0]).toEqual({ companies: 0, notifications: 0, destinations: 0, deliveries: 0 });
  } finally {
    await client.end();
  }
}, 200_000);

it('with --keep, leaves the stack running for the console until Ctrl-C, then cleans up', async () => {
  const env = { ...process.env, DATABASE_URL: db.url, REDIS_URL, DEMO_QUEUE_PREFIX: testQueuePrefix(), FETCH_MIN_INTERVAL_MS: '100' };
  const child = spawn('node', ['bin/skyhook.js', 'demo', '--events', '5', '--keep'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8');
  const kept = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('Press Ctrl-C')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the demo exited (${code}) before keeping the stack:\n${stdout}`)));
  });
  await kept;
  const [, url, token] = /Operator console: (\S+) {2}\(sign in with the admin token (\S+)\)/.exec(stdout) ?? [];
  const signIn = await fetch(`${url}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: token! }).toString(),
  });
  expect(signIn.status).toBe(303);
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const overview = await (await fetch(url!, { headers: { cookie } })).text();
  expect(overview).toContain('Demo · Broker (OAUTH, shared targetURI)');
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  expect(await exited).toBe(0);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    expect((await client.query('SELECT count(*)::int AS n FROM companies')).rows[0].n).toBe(0);
  } finally {
    await client.end();
  }
}, 120_000);
