/**
 * Skyhook run as the role deploy/postgres/service-role.sql grants (docs/operations.md): it starts on a database
 * its owner migrated, serves, records its changes in the audit log, and cannot change or remove an entry.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const ROLE_SQL = new URL('../../deploy/postgres/service-role.sql', import.meta.url);
let db: TestDatabase;
let skyhook: TestSkyhook;
let owner: pg.Client;
const role = `skyhook_service_${randomBytes(4).toString('hex')}`;
const password = randomBytes(12).toString('hex');
let serviceUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  await owner.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  await owner.query((await readFile(ROLE_SQL, 'utf8')).replaceAll('skyhook_service', role));
  const url = new URL(db.url);
  url.username = role;
  url.password = password;
  serviceUrl = url.toString();
  skyhook = await startSkyhook({ databaseUrl: serviceUrl, queuePrefix: testQueuePrefix() });
});

afterAll(async () => {
  await skyhook?.stop();
  await owner?.query(`DROP OWNED BY ${role}`);
  await owner?.end();
  await db?.drop();
  const admin = new pg.Client({ connectionString: db.url.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${role}`);
  await admin.end();
});

it('starts without changing the schema, serves and records changes, and cannot change or remove an audit entry', async () => {
  const made = await skyhook.admin('POST', '/keys', { name: 'through the service role', role: 'viewer' });
  expect(made.status).toBe(201);
  const audit = await skyhook.admin('GET', '/audit');
  expect(audit.body.items[0]).toMatchObject({ action: 'POST /admin/keys', outcome: 'ok' });
  const service = new pg.Client({ connectionString: serviceUrl });
  await service.connect();
  try {
    await expect(service.query("UPDATE audit_log SET outcome = 'ok'")).rejects.toThrow(/permission denied for table audit_log/);
    await expect(service.query('DELETE FROM audit_log')).rejects.toThrow(/permission denied for table audit_log/);
    await expect(service.query('CREATE TABLE mine (id int)')).rejects.toThrow(/permission denied for schema public/);
    // Nor through one of its partitions (SPEC §5.3): refused by the grants, before the trigger would.
    const { rows } = await service.query<{ name: string }>(`SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'audit_log'::regclass LIMIT 1`);
    await expect(service.query(`DELETE FROM ${rows[0]!.name}`)).rejects.toThrow(/permission denied for table/);
    // And it may not make or drop partitions: the owner's `skyhook partitions maintain` does.
    await expect(service.query(`DROP TABLE ${rows[0]!.name}`)).rejects.toThrow(/must be owner/);
  } finally {
    await service.end();
  }
});
