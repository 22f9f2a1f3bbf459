import type { Redis } from 'ioredis';
import { connectRedis, masterNodes, redisReady, type RedisTarget } from './connection.js';

/**
 * Deletes every key under `prefix` (SCAN + UNLINK, never KEYS): the demo's and the bench's clean slate.
 * On a cluster SCAN sees one node's keys only, so it runs on every master. A URL means a standalone server.
 */
export async function deleteKeysWithPrefix(target: RedisTarget | string, prefix: string): Promise<void> {
  const redis = connectRedis(typeof target === 'string' ? { redisUrl: target } : target, 'producer', 'skyhook-cleanup');
  try {
    await redisReady(redis);
    const masters = masterNodes(redis);
    if (!masters) throw new Error('a Redis Cluster master is unreachable');
    for (const node of masters) await deleteOnNode(node, `${prefix}:*`);
  } finally {
    redis.disconnect();
  }
}

async function deleteOnNode(node: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    // One UNLINK per key: keys of different slots cannot share a command on a cluster node.
    if (keys.length === 0) continue;
    const results = await node.pipeline(keys.map((key) => ['unlink', key])).exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0];
  } while (cursor !== '0');
}
