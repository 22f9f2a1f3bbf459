/**
 * Lua scripts as functions: how Skyhook's batches talk to Redis. Each script is a `.lua` file of its own,
 * loaded by name, as BullMQ keeps its commands; a line `--- @include "<path>"` (relative to the file, no
 * extension) is replaced by that file, once per script, so shared parts are written once.
 */
import { readFileSync } from 'node:fs';
import type { RedisClient } from './connection.js';

const INCLUDE = /^--- @include "([^"]+)"\s*$/gm;

/** The text of the script at `file` with its includes expanded (each at most once). */
function loadLua(file: URL, seen = new Set<string>()): string {
  return readFileSync(file, 'utf8').replace(INCLUDE, (_, path: string) => {
    const included = new URL(`${path}.lua`, file);
    if (seen.has(included.href)) return '';
    seen.add(included.href);
    return loadLua(included, seen);
  });
}

export type Script<T> = (keys: string[], args: (string | number)[]) => Promise<T>;

/**
 * The script in `file` (includes expanded) as a function of its keys and arguments, defined once on `redis`
 * under `name` (ioredis sends EVALSHA, and the script itself when the server does not know it yet).
 */
export function luaScript<T>(redis: RedisClient, name: string, file: URL): Script<T> {
  redis.defineCommand(name, { lua: loadLua(file) });
  const command = (redis as unknown as Record<string, (numKeys: number, ...rest: (string | number)[]) => Promise<T>>)[name]!.bind(redis);
  return (keys, args) => command(keys.length, ...keys, ...args);
}

/** reserve-keys.lua: SET NX PX for a batch of keys; per key 0 (taken now) or how long it stays taken. */
export const reserveKeys = (redis: RedisClient) => luaScript<number[]>(redis, 'skyhookReserveKeys', new URL('./lua/reserve-keys.lua', import.meta.url));
