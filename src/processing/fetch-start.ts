/**
 * The start of a fetch, batched across the worker's concurrent jobs: for every key in a batch, one
 * Redis script reserves the C5 fetch slot and one SELECT claims the pending notifications, the two
 * in parallel. A job whose slot is taken waits (it is delayed); a job with nothing pending gives its
 * slot back, so the next notification for that key is fetched at once.
 */
import type { CachedPlans } from '../db/cached-plans.js';
import type { Claimed, NotificationsRepository } from '../db/notifications.repository.js';
import { Batcher } from '../lib/batcher.js';
import { type RedisClient } from '../lib/redis/connection.js';
import { redisScript, reserveKeys, type ReserveKeys } from '../lib/redis/scripts.js';
import { fetchKey, type ResourceKey } from './fetch.queue.js';

export type FetchStart =
  /** The key's previous fetch started less than FETCH_MIN_INTERVAL_MS ago: try again in `waitMs`. */
  | { kind: 'wait'; waitMs: number }
  /** Nothing is pending for the key (an earlier fetch covered it). */
  | { kind: 'empty' }
  /** The slot is reserved and these rows, committed before now, are what this fetch covers (C4). */
  | { kind: 'claimed'; claimed: Claimed };

const GIVE_BACK = 'd';
const RESERVE_AGAIN = 'r';
/**
 * For each key, ARGV[i + 1] says: give the slot back (DEL), or reserve it again for ARGV[1] ms from now.
 * Its keys share the queue prefix's hash tag, as reserveKeys' do (one slot on a Redis Cluster).
 */
const SETTLE_SLOTS = `
for i, key in ipairs(KEYS) do
  if ARGV[i + 1] == '${GIVE_BACK}' then redis.call('DEL', key) else redis.call('PEXPIRE', key, ARGV[1]) end
end
return #KEYS`;

export class FetchStarts {
  private readonly batcher: Batcher<ResourceKey, FetchStart>;
  /** 0 when this fetch may start now (the slot is now its own), else how long the slot stays taken. */
  private readonly reserveSlots: ReserveKeys;
  private readonly settleScript: (keys: string[], args: (string | number)[]) => Promise<number>;

  constructor(
    private readonly notifications: Pick<NotificationsRepository, 'claimPending'>,
    private readonly plans: CachedPlans,
    redis: RedisClient,
    private readonly prefix: string,
    private readonly minIntervalMs: number,
    /** A slot that could not be settled lapses by itself after minIntervalMs: reported, not fatal. */
    private readonly onError: (err: unknown) => void,
  ) {
    this.reserveSlots = reserveKeys(redis);
    this.settleScript = redisScript<number>(redis, 'skyhookSettleSlots', SETTLE_SLOTS);
    // Not split on failure (as writes are): nothing here fails for one key alone, and a rerun key by key
    // would find its own slot taken. A failed batch fails its jobs, which BullMQ retries.
    this.batcher = new Batcher(async (keys) => (await this.startMany(keys)).map((value) => ({ ok: true, value })), { maxBatch: 500, maxConcurrent: 1 });
  }

  begin(resource: ResourceKey): Promise<FetchStart> {
    return this.batcher.add(resource);
  }

  private slotKey(key: ResourceKey): string {
    return `${this.prefix}:fetch-slot:${fetchKey(key)}`;
  }

  private async startMany(keys: ResourceKey[]): Promise<FetchStart[]> {
    const slotKeys = keys.map((k) => this.slotKey(k));
    const [reserved, claimed] = await Promise.allSettled([
      this.minIntervalMs > 0 ? this.reserveSlots(slotKeys, this.minIntervalMs) : keys.map(() => 0),
      this.notifications.claimPending(this.plans, keys),
    ]);
    if (reserved.status === 'rejected' || claimed.status === 'rejected') {
      // Slots this batch took for fetches that will not happen now are given back.
      const taken = reserved.status === 'fulfilled' ? slotKeys.filter((_, i) => reserved.value[i] === 0) : [];
      if (taken.length > 0 && this.minIntervalMs > 0) await this.settle(taken, taken.map(() => GIVE_BACK)).catch(this.onError);
      throw reserved.status === 'rejected' ? reserved.reason : (claimed as PromiseRejectedResult).reason;
    }
    const waits = reserved.value;
    const claims = claimed.value;
    const starts: FetchStart[] = keys.map((_, i) => {
      if (waits[i]! > 0) return { kind: 'wait', waitMs: waits[i]! };
      const claimed = claims[i];
      return claimed ? { kind: 'claimed', claimed } : { kind: 'empty' };
    });
    if (this.minIntervalMs > 0) this.settleSlots(slotKeys, starts);
    return starts;
  }

  /**
   * Without holding up the batch's jobs (one script, not awaited; if it fails, the slots lapse as
   * reserved):
   * - a slot reserved for nothing is given back: it would make the next notification of its key wait
   *   for no reason;
   * - a slot whose fetch starts now is reserved again from now. It was reserved before the claim, which
   *   can take tens of milliseconds under load, and C5 is about when the marketplace sees the GETs: the
   *   next fetch of the key must wait FETCH_MIN_INTERVAL_MS from this one's GET, not from its claim.
   * One script rather than a pipeline of DEL and PEXPIRE: ioredis copies every script defined on the
   * connection (BullMQ's 64) onto each new pipeline, and builds a command object per key.
   */
  private settleSlots(slotKeys: string[], starts: FetchStart[]): void {
    const keys: string[] = [];
    const actions: string[] = [];
    slotKeys.forEach((key, i) => {
      const kind = starts[i]!.kind;
      if (kind === 'wait') return;
      keys.push(key);
      actions.push(kind === 'empty' ? GIVE_BACK : RESERVE_AGAIN);
    });
    if (keys.length > 0) void this.settle(keys, actions).catch(this.onError);
  }

  /** One script for any mix of slots given back (GIVE_BACK) and reserved again (RESERVE_AGAIN). */
  private settle(keys: string[], actions: string[]): Promise<number> {
    return this.settleScript(keys, [this.minIntervalMs, ...actions]);
  }
}
