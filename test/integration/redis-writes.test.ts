/**
 * gatherWrites (lib/redis.ts) against real Redis: commands issued in one turn leave in one write, every
 * one is answered, and the connection is not held after that turn.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { gatherWrites } from '../../src/lib/redis/scripts.js';
import { REDIS_URL, testQueuePrefix } from '../helpers/database.js';

const key = `${testQueuePrefix()}:gathered`;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  await redis.ping();
});

afterAll(async () => {
  await redis.del(key);
  redis.disconnect();
});

it('sends the commands of one turn in one write, answers each, and holds nothing back afterwards', async () => {
  const socket = redis.stream;
  const writev = vi.spyOn(socket, '_writev');
  const write = vi.spyOn(socket, '_write');

  gatherWrites(redis);
  const answers = await Promise.all(Array.from({ length: 20 }, () => redis.incr(key)));
  expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  expect(writev.mock.calls.length + write.mock.calls.length).toBe(1);

  // A later turn's commands go out at once, each in its own write, as before.
  writev.mockClear();
  write.mockClear();
  await new Promise((r) => setImmediate(r));
  expect(await redis.incr(key)).toBe(21);
  expect(await redis.incr(key)).toBe(22);
  expect(writev.mock.calls.length + write.mock.calls.length).toBe(2);
});
