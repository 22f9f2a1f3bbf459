import { Redis, type RedisOptions } from 'ioredis';

/**
 * Two kinds of Redis connection. A producer (HTTP handlers, relay) fails fast when Redis is down, so a
 * request never waits for it: the relay re-sends later. A worker connection waits and retries forever,
 * as BullMQ requires (maxRetriesPerRequest: null).
 */
export function connectRedis(url: string, kind: 'producer' | 'worker', name: string): Redis {
  const common: RedisOptions = {
    connectionName: name,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(200 * times, 2000),
  };
  const options: RedisOptions =
    kind === 'producer'
      ? { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 }
      : { ...common, maxRetriesPerRequest: null };
  const redis = new Redis(url, options);
  redis.on('error', () => {}); // reconnects by itself; readiness is reported by /readyz
  return redis;
}

/** Resolves when the connection is ready, or rejects after `ms`. */
export function redisReady(redis: Redis, ms = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis not ready after ${ms} ms`));
    }, ms);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/** Rejects with a timeout error when `promise` takes longer than `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Deletes every key under `prefix` (SCAN + UNLINK, never KEYS): the demo's and the bench's clean slate. */
export async function deleteKeysWithPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
