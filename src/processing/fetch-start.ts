/**
 * The start of a fetch, batched across the worker's concurrent jobs: for every key in a batch, one
 * Redis script reserves the C5 fetch slot and one SELECT claims the pending notifications, the two
 * in parallel. A job whose slot is taken waits (it is delayed); a job with nothing pending gives its
 * slot back, so the next notification for that key is fetched at once.
 */
import type pg from 'pg';
import type { CachedPlans, Statement } from '../db/cached-plans.js';
import { Batcher } from '../lib/batcher.js';
import { redisScript, reserveKeys, type RedisClient, type ReserveKeys } from '../lib/redis.js';
import { fetchKey } from './fetch-queue.js';
import type { Claimed } from './snapshots.js';

/** Claimed per job; a larger backlog for one href is taken by a follow-up job. */
export const CLAIM_LIMIT = 5000;

export type FetchStart =
  /** The key's previous fetch started less than FETCH_MIN_INTERVAL_MS ago: try again in `waitMs`. */
  | { kind: 'wait'; waitMs: number }
  /** Nothing is pending for the key (an earlier fetch covered it). */
  | { kind: 'empty' }
  /** The slot is reserved and these rows, committed before now, are what this fetch covers (C4). */
  | { kind: 'claimed'; claimed: ClaimedRows };

export type ClaimedRows = Claimed & { receivedAt: number[] };

interface Key {
  companyId: string;
  href: string;
}

/** The pending rows of each key, oldest first, at most CLAIM_LIMIT per key. */
export const CLAIM_STATEMENT: Statement = {
  name: 'skyhook_claim',
  text: `
  SELECT k.ord, n.id, n.type, n.resource_id, n.received_at
  FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS k(company_id, href, ord)
  CROSS JOIN LATERAL (
    SELECT id, type, resource_id, received_at FROM notifications
    WHERE company_id = k.company_id AND href = k.href AND status IN ('received', 'queued')
    ORDER BY id LIMIT ${CLAIM_LIMIT}
  ) n
  ORDER BY k.ord, n.id`,
};

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
  private readonly batcher: Batcher<Key, FetchStart>;
  /** 0 when this fetch may start now (the slot is now its own), else how long the slot stays taken. */
  private readonly reserveSlots: ReserveKeys;
  private readonly settleScript: (keys: string[], args: (string | number)[]) => Promise<number>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly plans: CachedPlans,
    redis: RedisClient,
    private readonly prefix: string,
    private readonly minIntervalMs: number,
  ) {
    this.reserveSlots = reserveKeys(redis);
    this.settleScript = redisScript<number>(redis, 'skyhookSettleSlots', SETTLE_SLOTS);
    // Not split on failure (as writes are): nothing here fails for one key alone, and a rerun key by key
    // would find its own slot taken. A failed batch fails its jobs, which BullMQ retries.
    this.batcher = new Batcher(async (keys) => (await this.startMany(keys)).map((value) => ({ ok: true, value })), { maxBatch: 500, maxConcurrent: 1 });
  }

  begin(companyId: string, href: string): Promise<FetchStart> {
    return this.batcher.add({ companyId, href });
  }

  private slotKey(key: Key): string {
    return `${this.prefix}:fetch-slot:${fetchKey(key.companyId, key.href)}`;
  }

  private async startMany(keys: Key[]): Promise<FetchStart[]> {
    const slotKeys = keys.map((k) => this.slotKey(k));
    const [reserved, claimed] = await Promise.allSettled([
      this.minIntervalMs > 0 ? this.reserveSlots(slotKeys, this.minIntervalMs) : keys.map(() => 0),
      this.claim(keys),
    ]);
    if (reserved.status === 'rejected' || claimed.status === 'rejected') {
      // Slots this batch took for fetches that will not happen now are given back.
      const taken = reserved.status === 'fulfilled' ? slotKeys.filter((_, i) => reserved.value[i] === 0) : [];
      if (taken.length > 0 && this.minIntervalMs > 0) await this.settle(taken, taken.map(() => GIVE_BACK)).catch(() => {});
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
   * connection (BullMQ's 64) onto each new pipeline, and builds a command object per key. Measured alone
   * with 30 keys a batch: 4–7 µs of Node's CPU a key as a pipeline, 0.5–1.4 µs as a script; Redis's the same.
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
    if (keys.length > 0) void this.settle(keys, actions).catch(() => {});
  }

  /** One script for any mix of slots given back (GIVE_BACK) and reserved again (RESERVE_AGAIN). */
  private settle(keys: string[], actions: string[]): Promise<number> {
    return this.settleScript(keys, [this.minIntervalMs, ...actions]);
  }

  /** Indexed like `keys`; a key with nothing pending has no entry. */
  private async claim(keys: Key[]): Promise<(ClaimedRows | undefined)[]> {
    const { rows } = await this.pool.query<{ ord: string; id: string; type: string; resource_id: string; received_at: Date }>({
      name: this.plans.nameFor(CLAIM_STATEMENT),
      text: CLAIM_STATEMENT.text,
      values: [keys.map((k) => k.companyId), keys.map((k) => k.href)],
    });
    const claims: (ClaimedRows | undefined)[] = [];
    for (const row of rows) {
      const i = Number(row.ord) - 1;
      const c = (claims[i] ??= { ids: [], type: row.type, resourceId: row.resource_id, receivedAt: [] });
      c.ids.push(Number(row.id));
      c.receivedAt.push(row.received_at.getTime());
      // The latest notification names the type and resource id the snapshot is stored under.
      c.type = row.type;
      c.resourceId = row.resource_id;
    }
    return claims;
  }
}
