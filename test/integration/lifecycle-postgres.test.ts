/**
 * The lifecycle's contract (test/helpers/lifecycle-contract.ts) against its PostgreSQL implementation,
 * src/notifications/postgres.ts, on a database of its own.
 */
import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany, seedWebhook } from '../helpers/fixtures.js';
import { lifecycleContract } from '../helpers/lifecycle-contract.js';

const SECRET_KEY = randomBytes(32);
let db: TestDatabase | undefined;
let fx: DbHandle | undefined;

lifecycleContract('PostgreSQL', async () => {
  db = await createTestDatabase();
  const handle = connectFixtures(db.url);
  fx = handle;
  const { id } = await seedCompany(handle.db, SECRET_KEY);
  const webhook = await seedWebhook(handle.db, SECRET_KEY, { companyId: id, authType: 'BASIC', publicBaseUrl: 'http://127.0.0.1:3000' });
  const { rows } = await handle.pool.query<{ credentials_revision: number }>('SELECT credentials_revision FROM companies WHERE id = $1', [id]);
  return {
    lifecycle: createNotificationsRepository(handle.pool),
    company: { id, webhookId: webhook.id, revision: rows[0]!.credentials_revision },
    age: async (ids, days) =>
      void (await handle.pool.query(`UPDATE notifications SET received_at = received_at - make_interval(days => $2) WHERE id = ANY($1::bigint[])`, [ids, days])),
    read: async (nid) =>
      (
        await handle.pool.query('SELECT status, attempts, last_error AS "lastError", snapshot_version AS "snapshotVersion" FROM notifications WHERE id = $1', [nid])
      ).rows[0],
    pause: async (companyId) => void (await handle.pool.query("UPDATE companies SET connection_status = 'unauthorized', paused_at = now() WHERE id = $1", [companyId])),
    resource: async (ref) => (await handle.pool.query('SELECT version, gone FROM resources WHERE company_id = $1 AND href = $2', [ref.companyId, ref.href])).rows[0],
  };
});

afterAll(async () => {
  await fx?.pool.end();
  await db?.drop();
});
