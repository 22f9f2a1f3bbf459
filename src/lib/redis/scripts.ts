/** Lua scripts as functions: how Skyhook's batches talk to Redis. */
import type { RedisClient } from './connection.js';

/**
 * SET NX PX per key, in one script: 0 for a key set now (this caller has it for its TTL), else how long
 * it stays taken. The TTL of the i-th key is ARGV[i] (whole milliseconds). A call's keys share one hash
 * tag (the queue prefix's), so on a Redis Cluster they live in one slot and a multi-key script is allowed.
 * One command for a whole batch of OAuth nonces.
 */
const RESERVE_KEYS = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, '1', 'PX', ARGV[i], 'NX') then
    out[i] = 0
  else
    out[i] = math.max(1, redis.call('PTTL', key))
  end
end
return out`;

export const reserveKeys = (redis: RedisClient) => redisScript<number[]>(redis, 'skyhookReserveKeys', RESERVE_KEYS);

/**
 * A Lua script as a function of its keys and arguments, defined once on `redis` under `name` (ioredis
 * sends EVALSHA, and the script itself when the server does not know it yet).
 */
export function redisScript<T>(redis: RedisClient, name: string, lua: string): (keys: string[], args: (string | number)[]) => Promise<T> {
  redis.defineCommand(name, { lua });
  const command = (redis as unknown as Record<string, (numKeys: number, ...rest: (string | number)[]) => Promise<T>>)[name]!.bind(redis);
  return (keys, args) => command(keys.length, ...keys, ...args);
}
