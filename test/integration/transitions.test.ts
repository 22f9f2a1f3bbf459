/**
 * The transition table (src/notifications/transitions.ts) is what PostgreSQL does: each statement of the
 * lifecycle is applied to a notification in every status, and the row moves exactly when the table says it
 * may, to the status the table names; otherwise it is left as it was, its history untouched.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import type { NotificationStatus } from '../../src/db/schema/index.js';
import { createNotificationsRepository, type NotificationsRepository } from '../../src/notifications/postgres.js';
import { allowed, FINAL, PENDING, type TransitionName } from '../../src/notifications/transitions.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany, seedWebhook } from '../helpers/fixtures.js';

const SECRET_KEY = randomBytes(32);
const STATUSES: NotificationStatus[] = [...PENDING, ...FINAL];

let db: TestDatabase;
let fx: DbHandle;
let repo: NotificationsRepository;
let company: { id: string; webhookId: string };

beforeAll(async () => {
  db = await createTestDatabase();
  fx = connectFixtures(db.url);
  const { id } = await seedCompany(fx.db, SECRET_KEY);
  const webhook = await seedWebhook(fx.db, SECRET_KEY, { companyId: id, authType: 'BASIC', publicBaseUrl: 'http://127.0.0.1:3000' });
  company = { id, webhookId: webhook.id };
  repo = createNotificationsRepository(fx.pool);
});
afterAll(async () => {
  await fx?.pool.end();
  await db?.drop();
});

/** A notification in `status` (a final one set directly: how it got there is not under test). */
async function rowIn(status: NotificationStatus): Promise<number> {
  const href = `http://127.0.0.1:9/api/rfqs/${randomBytes(4).toString('hex')}`;
  const row = { companyId: company.id, webhookId: company.webhookId, resourceId: 'r', type: 'rfqs', href, bodyJson: '{}', authenticatedBy: 'basic' as const };
  const [id] = await repo.insert([row], [status === 'processed' || status === 'failed' ? 'received' : status]);
  if (status === 'processed' || status === 'failed') await fx.pool.query('UPDATE notifications SET status = $2, finished_at = now() WHERE id = $1', [id, status]);
  return id!;
}

const read = async (id: number) =>
  (await fx.pool.query<{ status: NotificationStatus; attempts: number }>('SELECT status, attempts FROM notifications WHERE id = $1', [id])).rows[0];

const attempt = (id: number) => ({
  companyId: company.id,
  href: 'http://127.0.0.1:9/api/rfqs/x',
  startedAt: new Date(),
  finishedAt: new Date(),
  httpStatus: 400,
  outcome: 'failed' as const,
  error: 'HTTP 400',
  ids: [id],
});

/** Each statement, the transition it is, and the status it aims for (null: kept as it was). */
const statements: { name: TransitionName; to: NotificationStatus | null; apply: (id: number) => Promise<unknown> }[] = [
  { name: 'queue', to: 'queued', apply: (id) => repo.queue([id]) },
  { name: 'unqueue', to: 'received', apply: (id) => repo.unqueue([id]) },
  { name: 'retry', to: null, apply: (id) => repo.recordAttempt(attempt(id), { status: 'pending' }) },
  { name: 'finish', to: 'failed', apply: (id) => repo.recordAttempt(attempt(id), { status: 'failed', error: 'HTTP 400' }) },
  { name: 'finish', to: 'processed', apply: (id) => repo.recordAttempt({ ...attempt(id), httpStatus: 404, outcome: 'gone' }, { status: 'processed', outcome: 'gone' }) },
  { name: 'finish', to: 'processed', apply: (id) => repo.markGone({ ...attempt(id), httpStatus: 410, outcome: 'gone' }) },
  // Refused credentials: the company paused, its notifications left pending (SPEC §5.1 F4).
  { name: 'retry', to: null, apply: (id) => repo.park({ ...attempt(id), httpStatus: 401, outcome: 'unauthorized' }, 0, 'GET: 401') },
  { name: 'replay', to: 'received', apply: (id) => repo.replay([id]) },
];

describe('the transition table, as PostgreSQL applies it', () => {
  for (const { name, to, apply } of statements) {
    it(`${name}${to ? ` to ${to}` : ''} (${apply.toString().match(/repo\.(\w+)/)?.[1]}): moves exactly the statuses the table allows`, async () => {
      const seen: Record<string, string> = {};
      const expected: Record<string, string> = {};
      for (const status of STATUSES) {
        const id = await rowIn(status);
        await apply(id);
        const after = await read(id);
        const moves = allowed(name, status, to ?? status);
        seen[status] = `${after!.status}${after!.attempts ? ' (counted)' : ''}`;
        // An attempt is counted on every row it may touch: retry and finish.
        const counted = moves && (name === 'retry' || name === 'finish');
        expected[status] = `${moves ? (to ?? status) : status}${counted ? ' (counted)' : ''}`;
      }
      expect(seen).toEqual(expected);
    });
  }

  it('accept: a new row is received, queued or discarded, never final otherwise', async () => {
    for (const status of ['processed', 'failed'] as const) {
      await expect(repo.insert([{ companyId: company.id, webhookId: company.webhookId, resourceId: 'r', type: 'rfqs', href: 'http://127.0.0.1:9/api/rfqs/a', bodyJson: '{}', authenticatedBy: 'basic' }], [status as never])).rejects.toThrow(
        `cannot be accepted as ${status}`,
      );
    }
  });

  it('purge: deletes final notifications past their retention, never a pending one', async () => {
    const ids = Object.fromEntries(await Promise.all(STATUSES.map(async (s) => [s, await rowIn(s)] as const)));
    await fx.pool.query(`UPDATE notifications SET received_at = now() - interval '40 days' WHERE id = ANY($1::bigint[])`, [Object.values(ids)]);
    while ((await repo.purgeBatch(30, 1000)) > 0);
    const { rows } = await fx.pool.query<{ id: string }>('SELECT id FROM notifications WHERE id = ANY($1::bigint[])', [Object.values(ids)]);
    const kept = new Set(rows.map((r) => Number(r.id)));
    expect(Object.fromEntries(STATUSES.map((s) => [s, kept.has(ids[s]!)]))).toEqual(Object.fromEntries(STATUSES.map((s) => [s, !allowed('purge', s, null)])));
  });
});
