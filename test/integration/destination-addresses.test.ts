/**
 * A Skyhook in production mode (SPEC §5.2 "Addresses"): a destination is https at a public address unless
 * DESTINATION_ALLOW admits it (here 127.0.0.1/32 and the host `localhost`, for one company only). A literal
 * address that could never be admitted is a 400 naming `url` when the destination is created or changed; a
 * name is checked when the connection is made; and the rules hold at every attempt, so a destination
 * stored with http (in development, or under an entry since removed) is not sent to over http.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany, type SeededCompany } from '../helpers/fixtures.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const SECRET_KEY = Buffer.alloc(32, 11);

let db: TestDatabase;
let fx: DbHandle;
let skyhook: TestSkyhook;
let receiver: TestReceiver;
/** DESTINATION_ALLOW names acme; zeta has the production rules alone. */
let acme: SeededCompany;
let zeta: SeededCompany;
let port: string;

beforeAll(async () => {
  db = await createTestDatabase();
  fx = connectFixtures(db.url);
  acme = await seedCompany(fx.db, SECRET_KEY, { name: 'acme' });
  zeta = await seedCompany(fx.db, SECRET_KEY, { name: 'zeta' });
  receiver = await startReceiver();
  port = new URL(receiver.url).port;
  skyhook = await startSkyhook({
    databaseUrl: db.url,
    queuePrefix: testQueuePrefix(),
    role: 'api',
    env: {
      NODE_ENV: 'production',
      SECRET_KEY: SECRET_KEY.toString('base64'),
      PUBLIC_BASE_URL: 'https://hooks.example.com',
      DESTINATION_ALLOW: `127.0.0.1/32=${acme.id},localhost=${acme.id}`,
      DESTINATION_TIMEOUT_MS: '3000',
    },
  });
});

afterAll(async () => {
  await skyhook?.stop();
  await receiver?.close();
  await fx?.pool.end();
  await db?.drop();
});

const destinations = (companyId: string) => `/companies/${companyId}/destinations`;
const count = async () => (await fx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM destinations')).rows[0]!.n;

async function refused(companyId: string, url: string, message: RegExp) {
  const before = await count();
  const answer = await skyhook.admin('POST', destinations(companyId), { url });
  expect(answer.status, `${url}: ${JSON.stringify(answer.body)}`).toBe(400);
  expect(answer.body.errors).toEqual([{ field: 'url', message: expect.stringMatching(message) }]);
  expect(await count(), `${url}: nothing written`).toBe(before);
}

async function created(companyId: string, url: string): Promise<{ id: string; secret: string }> {
  const answer = await skyhook.admin('POST', destinations(companyId), { url });
  expect(answer.status, `${url}: ${JSON.stringify(answer.body)}`).toBe(201);
  return answer.body;
}

const test = async (companyId: string, id: string) => (await skyhook.admin('POST', `${destinations(companyId)}/${id}/test`)).body;

describe('destination addresses in production (SPEC §5.2)', () => {
  it('refuses http at 127.0.0.1 and https at 10.0.0.1 when the destination is created, naming url', async () => {
    await refused(zeta.id, `http://127.0.0.1:${port}/hooks/skyhook`, /^must use https$/);
    await refused(zeta.id, 'https://10.0.0.1/hooks', /10\.0\.0\.1 is not a public address/);
    await refused(zeta.id, `https://127.0.0.1:${port}/hooks/skyhook`, /127\.0\.0\.1 is not a public address/);
    // The allow-list admits 127.0.0.1 as an address, not http: acme too must use https there.
    await refused(acme.id, `http://127.0.0.1:${port}/hooks/skyhook`, /^must use https$/);
    await refused(acme.id, 'https://10.0.0.1/hooks', /10\.0\.0\.1 is not a public address/);
  });

  it('refuses the same when a URL is changed', async () => {
    const dest = await created(zeta.id, 'https://hooks.example.org/skyhook');
    const answer = await skyhook.admin('PATCH', `${destinations(zeta.id)}/${dest.id}`, { url: 'https://[::ffff:10.0.0.1]/hooks' });
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([{ field: 'url', message: expect.stringMatching(/is not a public address/) }]);
    expect((await skyhook.admin('GET', `${destinations(zeta.id)}/${dest.id}`)).body.url).toBe('https://hooks.example.org/skyhook');
  });

  it('DESTINATION_ALLOW 127.0.0.1/32 admits https at 127.0.0.1 for its company: the connection is made (and fails on TLS, the receiver being plain http)', async () => {
    const dest = await created(acme.id, `https://127.0.0.1:${port}/hooks/skyhook`);
    const attempt = await test(acme.id, dest.id);
    expect(attempt).toMatchObject({ delivered: false, httpStatus: null });
    expect(attempt.error).not.toMatch(/address refused|not a public address/);
  });

  it('a host in DESTINATION_ALLOW is admitted by name, over http: a request that verifies', async () => {
    const dest = await created(acme.id, `http://localhost:${port}/hooks/skyhook`);
    receiver.secrets = [dest.secret];
    const before = receiver.received.length;
    expect(await test(acme.id, dest.id)).toMatchObject({ delivered: true, httpStatus: 200 });
    expect(receiver.received.slice(before).map((r) => r.verifiedWith)).toEqual([0]);
  });

  it('another company: localhost over http is refused, and over https it is refused when the connection is made (it resolves to loopback)', async () => {
    await refused(zeta.id, `http://localhost:${port}/hooks/skyhook`, /^must use https$/);
    const dest = await created(zeta.id, `https://localhost:${port}/hooks/skyhook`);
    const before = receiver.attempts.length;
    const attempt = await test(zeta.id, dest.id);
    expect(attempt).toMatchObject({ delivered: false, httpStatus: null, error: expect.stringMatching(/^localhost resolves to .*is not a public address/) });
    expect(receiver.attempts.length).toBe(before);
  });

  it('a destination stored with http (in development, or under a rule since removed) is not sent to over http', async () => {
    const dest = await created(acme.id, `https://127.0.0.1:${port}/hooks/skyhook`);
    await fx.pool.query('UPDATE destinations SET url = $2 WHERE id = $1', [dest.id, `http://127.0.0.1:${port}/hooks/skyhook`]);
    receiver.secrets = [dest.secret];
    const before = receiver.attempts.length;
    const attempt = await test(acme.id, dest.id);
    expect(attempt).toMatchObject({ delivered: false, httpStatus: null, error: 'address refused: must use https' });
    expect(receiver.attempts.length, 'nothing reached the receiver').toBe(before);
  });
});
