/**
 * The OAuth nonce store (receiver/authenticate.ts) and its script (lib/redis/scripts.ts reserveKeys) against real Redis:
 * nonces checked together go in one batch, and each is kept for as long as its own timestamp can be
 * accepted, not for one TTL shared by the batch.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../src/lib/redis/keys.js';
import { NonceStore } from '../../src/receiver/authenticate.js';
import { REDIS_URL, testQueuePrefix } from '../helpers/database.js';

const SKEW = 300;
const prefix = testQueuePrefix();
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await redis.ping();
});

afterAll(async () => {
  redis.disconnect();
  await deleteKeysWithPrefix(REDIS_URL, prefix);
});

it('keeps each nonce of a batch until its own timestamp lapses, and refuses a nonce seen in the same batch', async () => {
  const store = new NonceStore(redis, prefix, SKEW);
  const now = Math.floor(Date.now() / 1000);
  // Asked in one turn: the first goes alone (the store is idle), the other four together in the next batch.
  const answers = await Promise.all([
    store.firstUse('client', 'first', now),
    store.firstUse('client', 'ahead', now + 300),
    store.firstUse('client', 'behind', now - 300),
    store.firstUse('client', 'now', now),
    store.firstUse('client', 'ahead', now + 300),
  ]);
  expect(answers).toEqual([true, true, true, true, false]);
  const kept = async (nonce: string) => redis.pttl(`${prefix}:nonce:client:${nonce}`);
  // Accepted until (timestamp + 301) s, plus the store's one-second margin.
  expect(await kept('ahead')).toBeGreaterThan(600_000);
  expect(await kept('ahead')).toBeLessThanOrEqual(602_000);
  expect(await kept('now')).toBeGreaterThan(300_000);
  expect(await kept('now')).toBeLessThanOrEqual(302_000);
  expect(await kept('behind')).toBeGreaterThan(0);
  expect(await kept('behind')).toBeLessThanOrEqual(2_000);
  expect(await store.firstUse('client', 'behind', now - 300)).toBe(false);
});
