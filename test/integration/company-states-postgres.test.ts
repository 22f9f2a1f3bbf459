/**
 * A company's state's contract (test/helpers/company-states-contract.ts) against its PostgreSQL
 * implementation, src/companies/postgres.ts, with its gate in Redis and the simulator as the marketplace
 * (its settings list is the check's harmless call); then what only this implementation has: the gate kept
 * in step, mended from PostgreSQL, and forgotten with a deleted company.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createCompanyStates, type CompanyStatesRepository } from '../../src/companies/postgres.js';
import type { DbHandle } from '../../src/db/client.js';
import { findCompany } from '../../src/db/company-connection.js';
import { Gate } from '../../src/gate/gate.js';
import { encryptSecret } from '../../src/lib/crypto.js';
import { deleteKeysWithPrefix } from '../../src/lib/redis/keys.js';
import { MarketplaceClient } from '../../src/marketplace/client.js';
import { webhookSettingsApi } from '../../src/marketplace/webhook-settings.js';
import { fetchKey } from '../../src/processing/fetch.queue.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany } from '../helpers/fixtures.js';
import { companyStatesContract } from '../helpers/company-states-contract.js';

const SECRET_KEY = randomBytes(32);
const prefix = testQueuePrefix();
const redis = new Redis(REDIS_URL);
let db: TestDatabase | undefined;
let fx: DbHandle | undefined;
let sim: Simulator | undefined;
const requeued = new Map<string, number>();
/** Each company's refused tokens, which acceptRefused makes the simulator know. */
const refusedTokens = new Map<string, string[]>();
let states: CompanyStatesRepository;
let gate: Gate;

const token = () => randomBytes(12).toString('hex');

async function setup() {
  db = await createTestDatabase();
  fx = connectFixtures(db.url);
  sim = await startSimulator({ timeScale: 0.001 });
  gate = new Gate(redis, prefix, 'company', { defaultMax: 8, leaseMs: 60_000 });
  states = createCompanyStates({
    db: fx.db,
    gate,
    redis,
    prefix,
    secretKey: SECRET_KEY,
    settings: webhookSettingsApi(new MarketplaceClient({ timeoutMs: 2000 })),
    queueWaiting: async (companyId) => (requeued.set(companyId, (requeued.get(companyId) ?? 0) + 1), 0),
    fetchKey,
    defaultMaxFetches: 8,
    probeIntervalMs: 60_000,
    gateTimeoutMs: 2000,
    log: pino({ level: 'silent' }),
    onGateError: (err) => {
      throw err;
    },
  });
  return states;
}

/** A token the simulator knows (a company of its own there), or one it refuses (remembered for acceptRefused). */
function credentialsToken(companyId: string, kind: 'accepted' | 'refused'): string {
  const t = token();
  if (kind === 'accepted') sim!.addCompany({ id: `sim-${t}`, token: t });
  else refusedTokens.set(companyId, [...(refusedTokens.get(companyId) ?? []), t]);
  return t;
}

companyStatesContract('PostgreSQL, Redis and the simulator', async () => {
  await setup();
  return {
    states,
    newCompany: async (kind) => {
      const apiBaseUrl = kind === 'no answer' ? 'http://127.0.0.1:9/api' : sim!.apiBaseUrl;
      const t = token();
      const { id } = await seedCompany(fx!.db, SECRET_KEY, { apiBaseUrl, apiToken: t });
      if (kind === 'accepted') sim!.addCompany({ id: `sim-${t}`, token: t });
      if (kind === 'refused') refusedTokens.set(id, [t]);
      return { id, revision: 1 };
    },
    credentials: (companyId, kind) => ({ apiTokenEncrypted: encryptSecret(SECRET_KEY, credentialsToken(companyId, kind)) }),
    acceptRefused: async (companyId) => {
      for (const t of refusedTokens.get(companyId) ?? []) sim!.addCompany({ id: `sim-${t}`, token: t });
    },
    requeued: (companyId) => requeued.get(companyId) ?? 0,
    exists: async (companyId) => (await findCompany(fx!.db, companyId)) !== undefined,
  };
});

describe('the gate as the mirror of PostgreSQL', () => {
  const newCompany = async (kind: 'accepted' | 'refused') => {
    const t = token();
    const { id } = await seedCompany(fx!.db, SECRET_KEY, { apiBaseUrl: sim!.apiBaseUrl, apiToken: t });
    if (kind === 'accepted') sim!.addCompany({ id: `sim-${t}`, token: t });
    return id;
  };

  it('a pause parks the refused hrefs at the gate; new credentials resume it there; a limit reaches it at once', async () => {
    const id = await newCompany('accepted');
    await states.check(id);
    await states.pause(id, { revision: 1, reason: 'GET: 401', hrefs: ['https://api.example.com/api/rfqs/1', 'https://api.example.com/api/rfqs/2'] });
    expect(await gate.paused()).toContain(id);
    expect((await gate.views([id]))[0]).toMatchObject({ parked: 2 });
    await states.change(id, { credentials: { apiTokenEncrypted: encryptSecret(SECRET_KEY, credentialsToken(id, 'accepted')) }, fetchConcurrency: 3 });
    expect(await gate.paused()).not.toContain(id);
    // What waits is queued again from PostgreSQL: nothing stays parked to be queued twice.
    expect((await gate.views([id]))[0]).toMatchObject({ parked: 0 });
    expect(await redis.hget(`${gate.keyPrefix}${id}`, 'max')).toBe('3');
  });

  it('repair(): a pause or a resume the gate missed is mended from PostgreSQL, and a deleted company is forgotten there', async () => {
    const paused = await newCompany('refused');
    const resumed = await newCompany('accepted');
    const deleted = await newCompany('accepted');
    await fx!.pool.query(`UPDATE companies SET connection_status = 'unauthorized', paused_at = now() WHERE id = $1`, [paused]);
    await gate.pause(resumed);
    await gate.pause(deleted);
    await fx!.pool.query('DELETE FROM companies WHERE id = $1', [deleted]);
    const before = requeued.get(resumed) ?? 0;
    await states.repair();
    const mirrored = await gate.paused();
    expect(mirrored).toContain(paused);
    expect(mirrored).not.toContain(resumed);
    expect(mirrored).not.toContain(deleted);
    expect(requeued.get(resumed)).toBe(before + 1);
  });

  it('delete: nothing of the company stays in Redis', async () => {
    const id = await newCompany('refused');
    await states.check(id);
    await states.hold(id, 60_000, 'marketplace answered 429');
    await states.pause(id, { revision: 1, reason: 'GET: 401', hrefs: ['https://api.example.com/api/rfqs/9'] });
    expect((await redis.keys(`${prefix}*${id}*`)).length).toBeGreaterThan(0);
    expect(await states.delete(id)).toBe(true);
    expect(await redis.keys(`${prefix}*${id}*`)).toEqual([]);
    expect(await gate.paused()).not.toContain(id);
  });
});

afterAll(async () => {
  await deleteKeysWithPrefix(REDIS_URL, prefix);
  redis.disconnect();
  await sim?.stop();
  await fx?.pool.end();
  await db?.drop();
});
