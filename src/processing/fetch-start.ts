/**
 * The start of a fetch, batched across the worker's concurrent jobs: for every job in a batch, one Redis
 * script passes its company's gate (company-gate.ts: paused, held, paced, at its limit) and reserves the C5
 * fetch slot, while one SELECT claims the pending notifications, the two in parallel (the claim only reads:
 * a job that does not go ignores it). A job whose slot is taken or whose company is held waits (it is
 * delayed); a parked one ends; a job with nothing pending gives its slot back, so the next notification
 * for that key is fetched at once.
 */
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { Claimed } from '../notifications/lifecycle.js';
import { Batcher } from '../lib/batcher.js';
import { type RedisClient } from '../lib/redis/connection.js';
import { redisScript } from '../lib/redis/scripts.js';
import type { CompanyGate } from './company-gate.js';
import { fetchKey, type ResourceKey } from './fetch.queue.js';

export type FetchStart =
  /** The key's previous fetch started less than FETCH_MIN_INTERVAL_MS ago, or its company is held or paced: try again in `waitMs`. */
  | { kind: 'wait'; waitMs: number }
  /** The company is paused or at its limit: the href is parked until it has a slot (company-gate.ts). */
  | { kind: 'park' }
  /** Nothing is pending for the key (an earlier fetch covered it). */
  | { kind: 'empty' }
  /** The slot is reserved and these rows, committed before now, are what this fetch covers (C4). */
  | { kind: 'claimed'; claimed: Claimed };

/** What a starting job tells the gate about itself. */
export interface StartRequest {
  resource: ResourceKey;
  /** Its company's limit (SPEC §5.1 F2). */
  max: number;
  /** PostgreSQL says its company is paused. */
  paused: boolean;
  /** The job ran before (a retry keeps its attempts: it waits rather than parks). */
  retried: boolean;
}

const GIVE_BACK = 'd';
const RESERVE_AGAIN = 'r';
/**
 * For each key, ARGV[i + 1] says: give the slot back (DEL), or reserve it again for ARGV[1] ms from now.
 * Its keys share the queue prefix's hash tag (one slot on a Redis Cluster).
 */
const SETTLE_SLOTS = `
for i, key in ipairs(KEYS) do
  if ARGV[i + 1] == '${GIVE_BACK}' then redis.call('DEL', key) else redis.call('PEXPIRE', key, ARGV[1]) end
end
return #KEYS`;

export class FetchStarts {
  private readonly batcher: Batcher<StartRequest, FetchStart>;
  private readonly settleScript: (keys: string[], args: (string | number)[]) => Promise<number>;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'claimPending'>,
    private readonly gate: Pick<CompanyGate, 'start'>,
    redis: RedisClient,
    private readonly prefix: string,
    private readonly minIntervalMs: number,
    /** A slot that could not be settled lapses by itself after minIntervalMs: reported, not fatal. */
    private readonly onError: (err: unknown) => void,
  ) {
    this.settleScript = redisScript<number>(redis, 'skyhookSettleSlots', SETTLE_SLOTS);
    // Not split on failure (as writes are): nothing here fails for one key alone, and a rerun key by key
    // would find its own slot taken. A failed batch fails its jobs, which BullMQ retries.
    this.batcher = new Batcher(async (keys) => (await this.startMany(keys)).map((value) => ({ ok: true, value })), { maxBatch: 500, maxConcurrent: 1 });
  }

  begin(request: StartRequest): Promise<FetchStart> {
    return this.batcher.add(request);
  }

  private slotKey(key: ResourceKey): string {
    return `${this.prefix}:fetch-slot:${fetchKey(key)}`;
  }

  private async startMany(requests: StartRequest[]): Promise<FetchStart[]> {
    const keys = requests.map((r) => r.resource);
    const slotKeys = keys.map((k) => this.slotKey(k));
    const [gated, claimed] = await Promise.allSettled([
      this.gate.start(
        requests.map((r, i) => ({ ...r.resource, fetchKey: fetchKey(r.resource), max: r.max, paused: r.paused, retried: r.retried, slotKey: slotKeys[i]! })),
        this.minIntervalMs,
      ),
      this.notifications.claimPending(keys),
    ]);
    if (gated.status === 'rejected' || claimed.status === 'rejected') {
      // Slots this batch took for fetches that will not happen now are given back.
      const taken = gated.status === 'fulfilled' ? slotKeys.filter((_, i) => gated.value[i]!.kind === 'go') : [];
      if (taken.length > 0 && this.minIntervalMs > 0) await this.settle(taken, taken.map(() => GIVE_BACK)).catch(this.onError);
      throw gated.status === 'rejected' ? gated.reason : (claimed as PromiseRejectedResult).reason;
    }
    const claims = claimed.value;
    const starts: FetchStart[] = gated.value.map((gate, i) => {
      if (gate.kind === 'wait') return { kind: 'wait', waitMs: gate.ms };
      if (gate.kind === 'park') return { kind: 'park' };
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
      if (kind === 'wait' || kind === 'park') return;
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
