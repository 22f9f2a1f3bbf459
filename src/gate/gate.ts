/**
 * A gate per key in Redis (SPEC §5.1, §5.2): what every process shares about a key whose work must be
 * shared fairly and held back when the far side asks: a company's fetches today (companies/), a
 * destination's deliveries next. Each key (an `id`) runs at most its limit of items at once, across
 * every worker; an item without a place is parked, no job for it, until one frees; a key told to slow down
 * is held, then paced; a paused key parks everything at no cost, however much waits.
 *
 * Keys, per id, under `<prefix>:<kind>:` (one hash tag: one Redis Cluster slot):
 *  - `<id>`          a hash: `max` (its limit), `lim` (the limit it runs at now: it starts low, grows with
 *                    answers, halves on a refusal; `ss` set after the first refusal: it then grows by one per
 *                    round), `held` (held until, ms) and `why`, `gap` and `next` (starts paced after a
 *                    refusal), `ur`/`urwhy` (no answer since), `ans` (last answered);
 *  - `<id>:running`  a sorted set of its items queued or running, scored by when their place lapses (a dead
 *                    worker's places free themselves);
 *  - `<id>:booked`   items delayed to a start booked for them (after a hold, or paced);
 *  - `<id>:parked`   items waiting for a place or for the key to resume, as `<item> <payload>` by when parked;
 *  - `paused`        the set of paused ids: a mirror of what the owner keeps in PostgreSQL, mended from it;
 *  - `trouble`       the ids that were held or found no answer (a hold or a no-answer adds one), so that
 *                    finding who is in trouble reads these few keys, never every key's hash; troubled()
 *                    drops an id once it is neither held nor unanswered (the companies' owner reads it;
 *                    a gate nobody asks keeps at most its own ids there, each gone with forget()).
 *
 * Each moment is one script (lua/, one file per intent, shared parts in lua/includes/), called with one
 * JSON argument: the gate's settings (fields() below) and the call's own named fields. admit (a place, or
 * parked), start (go, wait, or park), finish (the place given back, the answer applied, parked items handed
 * out), hold, hand-out, views. The scripts' priorities keep one FIFO queue fair: an item's job goes in
 * with its key's count of items queued or running.
 */
import type { ChainableCommander } from 'ioredis';
import { Batcher } from '../lib/batcher.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { luaScript, type Script } from '../lib/redis/scripts.js';

/** A key's limit starts here (slow start), however high its maximum: a first burst is small. */
const SLOW_START = 4;
/** A hold without a Retry-After lasts this long (SPEC §5.1 F3: "a floor of a few seconds"). */
export const HOLD_FLOOR_MS = 5000;
/** Paced starts never go slower than this many a second, speed up by RATE_STEP a second per second of answers, and end above UNPACED_RATE. */
const PACE = { minRate: 0.5, rateStep: 1, unpacedRate: 200 };
/** An item that ran before (a retry) and finds its key at its limit waits this long, and keeps its attempts. */
const OVER_LIMIT_RETRY_MS = 1000;
/** A place taken when an item is admitted lapses after this unless its work starts (the queue may be long). */
const ADMIT_LEASE_MS = 120_000;
/** A booked start this close is started now. */
const EARLY_MS = 25;

/** An item of a key: `item` names it at the gate, `payload` is what comes back out when it is handed out. */
export interface GateItem {
  id: string;
  item: string;
  payload: string;
}

/** An item's admission: the priority of its job, or parked. */
export type Admission = number | 'parked';

/** A parked item handed out (its place taken): add its job with this priority. */
export interface HandedOut {
  id: string;
  payload: string;
  priority: number;
}

export interface GateStartRequest extends GateItem {
  /** The key's limit: its own, or the default. */
  max: number;
  /** The owner's truth says the key is paused (the mirror may lag by a moment). */
  paused: boolean;
  /** The item ran before: over the limit it waits rather than parks, and keeps its attempts. */
  retried: boolean;
  /** A Redis key that keeps two starts of this item the start's `intervalMs` apart (C5 for a fetch). */
  slot?: string;
}

export type GateStart =
  | { kind: 'go' }
  /** Delayed `ms` without spending an attempt: a booked start after a hold or at the paced rate, or the slot. */
  | { kind: 'wait'; ms: number }
  /** Parked: the key is paused or at its limit; the item comes back out when a place frees. */
  | { kind: 'park' };

/** What the end of an item's work tells the gate. */
export type GateAnswer =
  /** The far side answered (any status but a refusal to go faster). */
  | { kind: 'answered' }
  /** 429, or 503 with Retry-After: the whole key is held, in every worker. */
  | { kind: 'throttled'; retryAfterMs?: number; why: string }
  /** No answer (a network error, a timeout): the key shows `unreachable` until one comes. */
  | { kind: 'no_answer'; why: string }
  /** Nothing was asked (nothing was pending). */
  | { kind: 'none' };

export interface GateEnd {
  id: string;
  item: string;
  max: number;
  answer: GateAnswer;
}

/** The gate's live view of one key. */
export interface GateView {
  /** Held until then (ms since the epoch), if in the future. */
  heldUntil: number | null;
  heldWhy: string | null;
  /** Since when no answer came, if none has since. */
  noAnswerSince: number | null;
  noAnswerWhy: string | null;
  /** When work of it was last answered. */
  answeredAt: number | null;
  /** The limit it runs at now (at most its maximum). */
  limitNow: number | null;
  /** Its items queued or running. */
  running: number;
  /** Its items parked. */
  parked: number;
}

export interface GateOptions {
  /** The limit of a key the gate has not been told one for. */
  defaultMax: number;
  /** A running item's place lapses after this (a dead worker's). */
  leaseMs: number;
}

const lua = (name: string) => new URL(`./lua/${name}.lua`, import.meta.url);

/** A JSON list from a script: Redis's cjson encodes an empty table as `{}`. */
const list = <T>(json: string): T[] => {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? (parsed as T[]) : [];
};

const num = (v: string | number | undefined): number | null => (v === undefined ? null : Number(v));

/** A key's view as the scripts answer it (lua/includes/view.lua): a field the key never had is absent. */
type RawView = Partial<Record<'held' | 'why' | 'ur' | 'urwhy' | 'lim' | 'max' | 'ans', string>> & { running: number; parked: number };

function viewOf(f: RawView, now: number): GateView {
  const held = num(f.held);
  const lim = num(f.lim);
  const max = num(f.max);
  const holding = held !== null && held > now;
  return {
    heldUntil: holding ? held : null,
    heldWhy: holding ? (f.why ?? null) : null,
    noAnswerSince: num(f.ur),
    noAnswerWhy: f.urwhy ?? null,
    limitNow: lim === null ? null : Math.max(1, Math.floor(max === null ? lim : Math.min(lim, max))),
    answeredAt: num(f.ans),
    running: f.running,
    parked: f.parked,
  };
}

/** Runs a MULTI; a command that failed inside it (ioredis answers it in the results) is thrown too. */
async function execAll(multi: ChainableCommander): Promise<void> {
  const failed = (await multi.exec())?.find(([err]) => err);
  if (failed) throw failed[0];
}

export class Gate {
  /** The hashes' prefix, `<prefix>:<kind>:`: a key's hash is this and its id. */
  readonly keyPrefix: string;
  readonly pausedSet: string;
  readonly troubleSet: string;
  private readonly scripts: {
    admit: Script<number[]>;
    start: Script<number[]>;
    finish: Script<string>;
    hold: Script<number>;
    handOut: Script<string>;
    views: Script<string>;
    troubled: Script<string>;
  };

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    kind: string,
    private readonly opts: GateOptions,
  ) {
    this.keyPrefix = `${prefix}:${kind}:`;
    this.pausedSet = `${prefix}:${kind}:paused`;
    this.troubleSet = `${prefix}:${kind}:trouble`;
    const define = <T>(name: string) => luaScript<T>(redis, `skyhookGate${name[0]!.toUpperCase()}${name.slice(1).replace(/-(.)/g, (_, c: string) => c.toUpperCase())}`, lua(name));
    this.scripts = { admit: define('admit'), start: define('start'), finish: define('finish'), hold: define('hold'), handOut: define('hand-out'), views: define('views'), troubled: define('troubled') };
  }

  /**
   * The gate's settings, the fields every script reads beside its own (lua/includes/gate.lua): also for a
   * script that admits with the gate's admit beside work of its own (processing/lua/admit-fetches.lua),
   * whose KEYS[1] is then the paused set.
   */
  fields<T extends object>(own: T) {
    return {
      gp: this.keyPrefix,
      paused: this.pausedSet,
      trouble: this.troubleSet,
      now: Date.now(),
      max: this.opts.defaultMax,
      slow: SLOW_START,
      admitLease: ADMIT_LEASE_MS,
      lease: this.opts.leaseMs,
      floor: HOLD_FLOOR_MS,
      early: EARLY_MS,
      overLimitMs: OVER_LIMIT_RETRY_MS,
      ...PACE,
      ...own,
    };
  }

  private call<T>(script: Script<T>, own: object, slots: string[] = []): Promise<T> {
    return script([this.pausedSet, ...slots], [JSON.stringify(this.fields(own))]);
  }

  /** Admits each item (its job is to be added, with this priority) or parks it. */
  async admit(items: GateItem[]): Promise<Admission[]> {
    if (items.length === 0) return [];
    const out = await this.call(this.scripts.admit, { items });
    return out.map((n) => (n === 0 ? 'parked' : n));
  }

  /** Decides each item's start (and takes its slot of `intervalMs` when it goes). */
  async start(requests: GateStartRequest[], intervalMs: number): Promise<GateStart[]> {
    if (requests.length === 0) return [];
    const out = await this.call(this.scripts.start, { interval: intervalMs, items: requests }, requests.flatMap((r) => (r.slot ? [r.slot] : [])));
    return requests.map((_, i) => {
      const code = Number(out[2 * i]);
      return code === 0 ? { kind: 'go' } : code === 1 ? { kind: 'wait', ms: Number(out[2 * i + 1]) } : { kind: 'park' };
    });
  }

  /** Gives the items' places back and applies their answers; answers the parked items now handed out (add their jobs). */
  async finish(ends: GateEnd[]): Promise<HandedOut[]> {
    if (ends.length === 0) return [];
    return list<HandedOut>(await this.call(this.scripts.finish, { items: ends }));
  }

  /** Holds a key for what is not an item's work (a lead's or a quote's 429): its items wait too, as a throttled answer would make them. */
  async hold(id: string, retryAfterMs: number | undefined, why: string): Promise<void> {
    await this.call(this.scripts.hold, { id, retryAfterMs, why });
  }

  /**
   * Hands out the parked items of these keys that have free places (their jobs to be added). Places free
   * when work ends (finish); this is for places that freed otherwise: a lapsed lease, a limit raised.
   */
  async handOut(ids: string[]): Promise<HandedOut[]> {
    if (ids.length === 0) return [];
    return list<HandedOut>(await this.call(this.scripts.handOut, { ids }));
  }

  /** Pauses a key and parks these items of it: nothing of it starts until it resumes. */
  async pause(id: string, parked: Omit<GateItem, 'id'>[] = []): Promise<void> {
    const multi = this.redis.multi().sadd(this.pausedSet, id);
    if (parked.length > 0) multi.zadd(`${this.keyPrefix}${id}:parked`, 'NX', ...parked.flatMap((p) => [Date.now(), `${p.item} ${p.payload}`]));
    await execAll(multi);
  }

  /**
   * Lifts a pause: its parked items and booked starts are dropped (the owner queues what waits again, from
   * its own truth, so none is queued twice), and so is any hold.
   */
  async resume(id: string): Promise<void> {
    const g = `${this.keyPrefix}${id}`;
    await execAll(this.redis.multi().srem(this.pausedSet, id).del(`${g}:parked`, `${g}:booked`).hdel(g, 'held', 'gap', 'next', 'why'));
  }

  /** The paused ids the mirror holds. */
  async paused(): Promise<string[]> {
    return this.redis.smembers(this.pausedSet);
  }

  /** A new limit for a key: applied to the next admissions at once. */
  async setMax(id: string, max: number): Promise<void> {
    await this.redis.hset(`${this.keyPrefix}${id}`, 'max', max);
  }

  /** Until when a key is held, if it is now. */
  async heldUntil(id: string): Promise<number | null> {
    const held = Number(await this.redis.hget(`${this.keyPrefix}${id}`, 'held'));
    return held > Date.now() ? held : null;
  }

  /** The gate's view of each id, in order. */
  async views(ids: string[]): Promise<GateView[]> {
    if (ids.length === 0) return [];
    const now = Date.now();
    return list<RawView>(await this.call(this.scripts.views, { now, ids })).map((f) => viewOf(f, now));
  }

  /** The keys held or unanswered now, with their views: read from the trouble set, whatever the number of keys. */
  async troubled(): Promise<{ id: string; view: GateView }[]> {
    const now = Date.now();
    return list<{ id: string; view: RawView }>(await this.call(this.scripts.troubled, { now })).map((t) => ({ id: t.id, view: viewOf(t.view, now) }));
  }

  /** Forgets a key: everything the gate keeps of it (its owner was deleted). */
  async forget(id: string): Promise<void> {
    const g = `${this.keyPrefix}${id}`;
    await execAll(this.redis.multi().srem(this.pausedSet, id).srem(this.troubleSet, id).del(g, `${g}:running`, `${g}:booked`, `${g}:parked`));
  }
}

/**
 * The ends of one process's work items, batched (one script per batch): each gives its place back, and the
 * parked items the batch hands out get their jobs (`addJobs`). A batch that fails is reported by its
 * callers: its places lapse by themselves, and its parked items stay parked until other work of their key
 * ends (or their owner's relay queues them again).
 */
export class GateFinishes {
  private readonly batcher: Batcher<GateEnd, undefined>;
  private readonly pending = new Set<Promise<undefined>>();
  /** Until when this process last said a key was held: one call per hold, not per refusal. */
  private readonly saidHeld = new Map<string, number>();

  constructor(
    gate: Pick<Gate, 'finish'>,
    addJobs: (handedOut: HandedOut[]) => Promise<void>,
    /** Told once per hold this process sees (a log line saying the key is throttled). */
    private readonly onHold: (id: string, untilMs: number, why: string) => void,
  ) {
    this.batcher = new Batcher(
      async (items) => {
        this.sayHolds(items);
        const freed = await gate.finish(items);
        if (freed.length > 0) await addJobs(freed);
        return items.map(() => ({ ok: true, value: undefined }));
      },
      { maxBatch: 500 },
    );
  }

  finish(end: GateEnd): Promise<undefined> {
    const done = this.batcher.add(end);
    this.pending.add(done);
    // The caller reports a failure; here it only leaves the pending set.
    void done.then(
      () => this.pending.delete(done),
      () => this.pending.delete(done),
    );
    return done;
  }

  /** Waits for the finishes asked so far (at shutdown: a place left taken would lapse only with its lease). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private sayHolds(items: GateEnd[]): void {
    const now = Date.now();
    for (const { id, answer } of items) {
      if (answer.kind !== 'throttled' || (this.saidHeld.get(id) ?? 0) > now) continue;
      const until = now + Math.max(answer.retryAfterMs ?? 0, HOLD_FLOOR_MS);
      if (this.saidHeld.size > 10_000) this.saidHeld.clear();
      this.saidHeld.set(id, until);
      this.onHold(id, until, answer.why);
    }
  }
}
