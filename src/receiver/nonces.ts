/**
 * The OAuth nonce store (SPEC §4): a nonce is accepted once per clientIdentifier within the timestamp
 * window, remembered in Redis for both sides of it. Concurrent requests' checks go to Redis together,
 * as one pipeline of SET NX (one write, one round trip), instead of one command each.
 */
import { Batcher } from '../lib/batcher.js';
import type { RedisClient } from '../lib/redis.js';

export class NonceStore {
  private readonly batcher: Batcher<string, boolean>;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    ttlSeconds: number,
  ) {
    this.batcher = new Batcher(
      async (keys) => {
        const pipeline = redis.pipeline();
        for (const key of keys) pipeline.set(key, '1', 'EX', ttlSeconds, 'NX');
        const replies = (await pipeline.exec()) ?? [];
        return keys.map((_, i) => {
          const [error, reply] = replies[i] ?? [new Error('Redis gave no reply'), null];
          return error ? { ok: false, error } : { ok: true, value: reply === 'OK' };
        });
      },
      { maxBatch: 1000, maxConcurrent: 1 },
    );
  }

  /** True the first time a nonce is seen; rejects when Redis cannot say (the caller answers 503). */
  firstUse(clientIdentifier: string, nonce: string): Promise<boolean> {
    // Under the queue prefix's hash tag: on a Redis Cluster every key of a pipeline is in one slot.
    return this.batcher.add(`${this.prefix}:nonce:${clientIdentifier}:${nonce}`);
  }
}
