/**
 * The OAuth nonce store (SPEC §4): a nonce is accepted once per clientIdentifier, and remembered in Redis
 * for as long as its timestamp could be accepted again. Concurrent requests' checks go to Redis together,
 * as one script that takes every new key (lib/redis/scripts.ts reserveKeys: one command, one round trip,
 * cheaper than a pipeline of one SET NX per key).
 */
import { Batcher } from '../lib/batcher.js';
import { type RedisClient } from '../lib/redis/connection.js';
import { reserveKeys } from '../lib/redis/scripts.js';

/** The least a nonce is kept, whatever its timestamp (the floor). */
const MIN_TTL_MS = 1000;
/** A replay verified just before its timestamp lapses reaches Redis a little later (the batch ahead, the round trip). */
const MARGIN_MS = 1000;

/**
 * How long a nonce must be kept. verifyOAuthHeader accepts a timestamp while |floor(now / 1000) - timestamp|
 * <= skew, that is until (timestamp + skew + 1) s: a timestamp 300 s ahead stays valid about 601 s.
 */
function nonceTtlMs(timestampSeconds: number, skewSeconds: number, nowMs: number): number {
  return Math.max(MIN_TTL_MS, Math.ceil((timestampSeconds + skewSeconds + 1) * 1000 + MARGIN_MS - nowMs));
}

interface Reservation {
  key: string;
  ttlMs: number;
}

export class NonceStore {
  private readonly batcher: Batcher<Reservation, boolean>;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    /** The accepted timestamp skew, OAUTH_TIMESTAMP_SKEW_S. */
    private readonly skewSeconds: number,
  ) {
    const reserve = reserveKeys(redis);
    this.batcher = new Batcher(
      async (reservations) => {
        // 0: the nonce was not seen, and is now remembered.
        const replies = await reserve(
          reservations.map((r) => r.key),
          reservations.map((r) => r.ttlMs),
        );
        return reservations.map((_, i) => ({ ok: true, value: replies[i] === 0 }));
      },
      { maxBatch: 1000, maxConcurrent: 1 },
    );
  }

  /**
   * True the first time a nonce is seen; rejects when Redis cannot say (the caller answers 503).
   * `timestampSeconds` is the request's accepted oauth_timestamp: the nonce is kept while it could be.
   */
  firstUse(clientIdentifier: string, nonce: string, timestampSeconds: number): Promise<boolean> {
    // Under the queue prefix's hash tag: on a Redis Cluster every key of a batch is in one slot.
    return this.batcher.add({
      key: `${this.prefix}:nonce:${clientIdentifier}:${nonce}`,
      // Counted from the check, not from when the batch leaves: the wait only makes the key live longer.
      ttlMs: nonceTtlMs(timestampSeconds, this.skewSeconds, Date.now()),
    });
  }
}
