/**
 * The CLI against a running Skyhook's admin API (SPEC §10.1): `skyhook --url <url> …` (or SKYHOOK_URL) with
 * a key in SKYHOOK_API_KEY answers what the local CLI answers, with that key's reach (403 for a permission
 * its role lacks, 404 for another company's ids), and its changes are audited as the key's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { runSkyhook, type Run } from '../helpers/cli.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

let db: TestDatabase;
let skyhook: TestSkyhook;
let fixtures: DbHandle;
let local: NodeJS.ProcessEnv;
let companyA: string;
let companyB: string;
const keys: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  const prefix = testQueuePrefix();
  skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: prefix });
  fixtures = connectFixtures(db.url);
  companyA = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Alpha Charter' })).id;
  companyB = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Bravo Jets' })).id;
  for (const [role, companyId] of [['admin'], ['viewer'], ['company', companyA]] as const) {
    keys[role] = (await skyhook.admin('POST', '/keys', { name: `${role} key`, role, companyId })).body.key;
  }
  local = { ...process.env, DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix, ADMIN_TOKEN, LOG_LEVEL: 'silent' };
}, 60_000);

afterAll(async () => {
  await skyhook?.stop();
  await fixtures?.pool.end();
  await db?.drop();
});

/** `skyhook --url <Skyhook> args` with `key`; no database in its environment, so nothing can run locally. */
const remote = (key: string | undefined, args: string[]): Promise<Run> => {
  const { DATABASE_URL: _db, ...rest } = local;
  return runSkyhook({ ...rest, DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', ...(key ? { SKYHOOK_API_KEY: key } : { SKYHOOK_API_KEY: '' }) }, ['--url', skyhook.url, ...args]);
};

describe('skyhook --url (SPEC §10.1)', { timeout: 90_000 }, () => {
  it('answers what the local CLI answers', async () => {
    const [here, there, hereHuman, thereHuman] = await Promise.all([
      runSkyhook(local, ['companies', 'list', '--json']),
      remote(keys.viewer, ['companies', 'list', '--json']),
      runSkyhook(local, ['companies', 'get', companyA]),
      remote(keys.viewer, ['companies', 'get', companyA]),
    ]);
    expect(there, there.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(there.stdout)).toEqual(JSON.parse(here.stdout));
    expect(thereHuman.stdout).toBe(hereHuman.stdout);
  });

  it('lists keys as the local CLI does, a page at a time', async () => {
    const [here, there, firstTwo] = await Promise.all([
      runSkyhook(local, ['keys', 'list', '--json']),
      remote(keys.admin, ['keys', 'list', '--json']),
      remote(keys.admin, ['keys', 'list', '--limit', '2', '--json']),
    ]);
    expect(there, there.stderr).toMatchObject({ code: 0, stderr: '' });
    const listed = JSON.parse(there.stdout);
    expect(listed.items.map((k: { name: string }) => k.name)).toEqual(expect.arrayContaining(['admin key', 'viewer key', 'company key']));
    // The remote calls mark the admin key used, perhaps after the local list read it: compare all but that.
    const ids = (items: { id: string }[]) => items.map((k) => k.id);
    expect(ids(listed.items)).toEqual(ids(JSON.parse(here.stdout).items));
    const page = JSON.parse(firstTwo.stdout);
    expect(ids(page.items)).toEqual(ids(listed.items).slice(0, 2));
    expect(page.nextCursor).not.toBeNull();
  });

  it("holds the key's reach: 403 for what its role may not do, 404 for another company's ids", async () => {
    const [viewerCreates, companyReadsOther, companyList] = await Promise.all([
      remote(keys.viewer, ['keys', 'create', '--name', 'x', '--role', 'viewer']),
      remote(keys.company, ['companies', 'get', companyB]),
      remote(keys.company, ['companies', 'list', '--json']),
    ]);
    expect(viewerCreates).toMatchObject({ code: 1, stdout: '' });
    expect(viewerCreates.stderr.trim()).toBe('skyhook: The viewer role may not create, list and revoke keys. (403 Forbidden)');
    expect(companyReadsOther.code).toBe(1);
    expect(companyReadsOther.stderr.trim()).toBe(`skyhook: Company ${companyB} was not found (404 Not Found)`);
    expect(JSON.parse(companyList.stdout).items.map((c: { id: string }) => c.id)).toEqual([companyA]);
  });

  it("audits its changes as the key's, not the local user's", async () => {
    const made = await remote(keys.admin, ['keys', 'create', '--name', 'made remotely', '--role', 'viewer', '--json']);
    expect(made, made.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(made.stdout).key).toMatch(/^skh_/);
    const audit = await skyhook.admin('GET', '/audit?action=/admin/keys');
    expect(audit.body.items[0]).toMatchObject({ actor: { kind: 'key', name: 'admin key' }, action: 'POST /admin/keys', outcome: 'ok', fields: ['name', 'role'] });
  });

  it('says what is missing: a key, a usable address, or a command that needs the database', async () => {
    const [noKey, badUrl, tail] = await Promise.all([
      remote(undefined, ['companies', 'list']),
      runSkyhook({ ...local, SKYHOOK_API_KEY: keys.viewer }, ['--url', 'ftp://x', 'companies', 'list']),
      remote(keys.viewer, ['notifications', 'tail']),
    ]);
    expect(noKey).toMatchObject({ code: 2, stdout: '' });
    expect(noKey.stderr.trim()).toBe('skyhook: SKYHOOK_API_KEY must hold a key (skh_...) to run commands against a Skyhook at --url or SKYHOOK_URL');
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr.trim()).toBe('skyhook: --url must be http or https (got "ftp://x")');
    expect(tail.code).toBe(2);
    expect(tail.stderr).toContain('this command runs only where Skyhook');
  });
});
