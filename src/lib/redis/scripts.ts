/** Lua scripts as functions: how Skyhook's batches talk to Redis. */
import type { RedisClient } from './connection.js';

/**
 * SET NX PX per key, in one script: 0 for a key set now (this caller has it for its TTL), else how long
 * it stays taken. The TTL is ARGV[i] for the i-th key when there is one per key, else ARGV[1] for all.
 * A call's keys share one hash tag (the queue prefix's), so on a Redis Cluster they live in one slot and
 * a multi-key script is allowed. One command for a whole batch of OAuth nonces (the C5 fetch slots are
 * taken by the company gate's own script).
 */
const RESERVE_KEYS = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, '1', 'PX', ARGV[i] or ARGV[1], 'NX') then
    out[i] = 0
  else
    out[i] = math.max(1, redis.call('PTTL', key))
  end
end
return out`;

/** `ttlMs`: one TTL (whole milliseconds) for every key, or one per key, in the keys' order. */
type ReserveKeys = (keys: string[], ttlMs: number | readonly number[]) => Promise<number[]>;

export function reserveKeys(redis: RedisClient): ReserveKeys {
  const script = redisScript<number[]>(redis, 'skyhookReserveKeys', RESERVE_KEYS);
  return (keys, ttlMs) => {
    if (typeof ttlMs === 'number') return script(keys, [ttlMs]);
    // A short list would give the keys past its end ARGV[1]'s TTL without a word: refuse it instead.
    if (ttlMs.length !== keys.length) return Promise.reject(new Error(`reserveKeys: ${keys.length} keys but ${ttlMs.length} TTLs`));
    return script(keys, [...ttlMs]);
  };
}

/**
 * A Lua script as a function of its keys and arguments, defined once on `redis` under `name` (ioredis
 * sends EVALSHA, and the script itself when the server does not know it yet).
 */
export function redisScript<T>(redis: RedisClient, name: string, lua: string): (keys: string[], args: (string | number)[]) => Promise<T> {
  redis.defineCommand(name, { lua });
  const command = (redis as unknown as Record<string, (numKeys: number, ...rest: (string | number)[]) => Promise<T>>)[name]!.bind(redis);
  return (keys, args) => command(keys.length, ...keys, ...args);
}
