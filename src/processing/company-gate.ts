/**
 * Many companies, each on its own (SPEC §5.1): the gate every fetch of a company passes, kept in Redis so
 * that every worker process shares it (docs/decisions.md, "Many companies").
 *
 * Per company, under the queue prefix (one hash tag: one Redis Cluster slot):
 *  - `company:<id>`          a hash: `max` (its limit, F2), `lim` (the limit it runs at now: it starts low,
 *                            doubles while answers come, halves on a refusal, then grows by one per round),
 *                            `held` (throttled until, F3), `gap` and `next` (starts paced after a refusal),
 *                            `why` (the marketplace's words), `ur`/`urwhy` (no answer since), `ans`
 *                            (last answered);
 *  - `company:<id>:running`  a sorted set of its fetch keys in the queue or running, scored by when the slot
 *                            lapses (a dead worker's slots free themselves);
 *  - `company:<id>:booked`   fetch keys delayed to a start time it booked (after a hold, or paced);
 *  - `company:<id>:parked`   resources waiting for a slot, or for new credentials (`<fetch key> <href>`,
 *                            oldest first): no job exists for them, so a parked resource costs nothing
 *                            however long it waits (F4);
 *  - `paused`                the set of paused companies, a mirror of companies.connection_status that the
 *                            paused-company loop (paused-companies.ts) keeps in step.
 *
 * The three moments, each one script for a whole batch:
 *  - admit (enqueue.ts): a resource gets a job while its company has a free slot; else it is parked (and
 *    one whose key's job already covers it gets none: the same script asks BullMQ's keys);
 *  - start (fetch-start.ts): a paused company's job parks; a held or paced one is delayed to a booked start
 *    (no attempt spent); one beyond the limit parks (a retried one waits, so it keeps its attempts);
 *  - finish (fetch-job.ts): the slot is freed, the answer adjusts the limit and the pace, and as many parked
 *    hrefs as there are free slots come back out to be queued.
 * The fetch queue itself stays one FIFO: with each company holding at most its limit of jobs in it, a
 * newcomer's job waits behind at most the busy companies' limits, not behind their backlogs (F1).
 * Notifications stay `queued` in PostgreSQL whatever the gate does: a parked href lost with Redis is queued
 * again by the relay (its rows are old and queued), and resuming a paused company reads its hrefs from
 * PostgreSQL.
 */
import type { ChainableCommander } from 'ioredis';
import type { Logger } from 'pino';
import { Batcher } from '../lib/batcher.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { redisScript } from '../lib/redis/scripts.js';
import { fetchKey, type ResourceKey } from './fetch.queue.js';

/** Set while a paused company's next probe is not due (paused-companies.ts). */
export const probeKey = (prefix: string, companyId: string): string => `${prefix}:probe:${companyId}`;

/** A company's limit starts here (slow start), however high its maximum: a first burst is small. */
const SLOW_START = 4;
/** A hold without a Retry-After lasts this long (SPEC §5.1 F3: "a floor of a few seconds"). */
const HOLD_FLOOR_MS = 5000;
/** Paced starts never go slower than this many a second. */
const MIN_RATE = 0.5;
/** Paced starts speed up by this many a second, every second the answers come. */
const RATE_STEP = 1;
/** Above this many starts a second, pacing ends. */
const UNPACED_RATE = 200;
/** A job that ran before (a retry) and finds its company at its limit waits this long, and keeps its attempts. */
const OVER_LIMIT_RETRY_MS = 1000;
/** A slot taken when a job is added lapses after this unless the job starts (the queue may be long). */
const ADMIT_LEASE_MS = 120_000;
/** A booked start this close is started now. */
const EARLY_MS = 25;

/** Where BullMQ keeps a queue's deduplication keys, jobs and delayed set (COVERED_LUA reads them). */
export interface QueueKeys {
  dedup: string;
  job: string;
  delayed: string;
}

/**
 * What admission answers for a resource: its job is to be added with this priority; it is parked; or its
 * key's job, waiting or already followed up, covers it (BullMQ would ignore the add).
 */
export type Admission = number | 'parked' | 'covered';

/**
 * A resource the gate admitted: its job's BullMQ priority is its company's count of jobs queued or running
 * (a company's first job goes ahead of a busy company's hundredth: F1), so the queue stays deep and fair.
 */
export interface Admitted extends ResourceKey {
  priority: number;
}

type GateStart =
  | { kind: 'go' }
  /** Delayed `ms` without spending an attempt: a booked start after a hold or at the paced rate, or the C5 slot. */
  | { kind: 'wait'; ms: number }
  /** Parked: the company is paused or at its limit; the href comes back out when a slot frees. */
  | { kind: 'park' };

/** What a fetch's end tells the gate. */
export type GateAnswer =
  /** The marketplace answered (any status but a refusal to go faster). */
  | { kind: 'answered' }
  /** 429, or 503 with Retry-After: the company is held, every worker's fetches of it. */
  | { kind: 'throttled'; retryAfterMs?: number; why: string }
  /** No answer (a network error, a timeout): the company shows `unreachable` until one comes. */
  | { kind: 'no_answer'; why: string }
  /** No GET was made (nothing was pending). */
  | { kind: 'none' };

export interface GateStartRequest extends ResourceKey {
  fetchKey: string;
  /** The company's limit: its own, or the default (SPEC §5.1 F2). */
  max: number;
  /** PostgreSQL says the company is paused (the mirror may lag by a moment). */
  paused: boolean;
  /** The job ran before: over the limit it waits rather than parks, and keeps its attempts. */
  retried: boolean;
  /** The C5 slot of its resource (fetch-start.ts). */
  slotKey: string;
}

interface FinishRequest extends ResourceKey {
  fetchKey: string;
  max: number;
  answer: GateAnswer;
}

/** The gate's live view of one company (admin API, console, metrics). */
export interface GateView {
  /** Throttled until then (ms since the epoch), if in the future. */
  heldUntil: number | null;
  heldWhy: string | null;
  /** Since when no answer came, if none has since. */
  noAnswerSince: number | null;
  noAnswerWhy: string | null;
  /** When a fetch of it was last answered. */
  answeredAt: number | null;
  /** The limit it runs at now (at most its maximum). */
  limitNow: number | null;
  /** Its fetches in the queue or running. */
  running: number;
  /** Its hrefs parked. */
  parked: number;
}

const LIB = `
local function limitOf(g, max, slow)
  local lim = tonumber(redis.call('HGET', g, 'lim')) or math.min(max, slow)
  return math.max(1, math.min(max, math.floor(lim)))
end
local function runningOf(R, now)
  redis.call('ZREMRANGEBYSCORE', R, '-inf', now)
  return redis.call('ZCARD', R)
end
`;

/**
 * Whether BullMQ's add of a deduplicated job would change nothing (the `covered` admission): mirrors the
 * deduplicate path of BullMQ's add script (keepLastIfActive). The key's job exists and
 *  - is not active (waiting, or delayed): the add does nothing (C1). Safe to skip: when the job runs it
 *    claims every row committed before its claim, and the rows being queued are committed before this check;
 *  - or is active and its follow-up is already stored (`dn:<id>`): the add would only store the same
 *    follow-up again (C2). The follow-up job is created when the active one ends and claims these rows.
 * Anything else (no job, a job whose hash is gone, an active job without a follow-up) needs BullMQ's add.
 * "Active" is read from the job itself, in constant time: BullMQ sets `processedOn` in the same script
 * that moves a job to `active`, and an active job is not in the `delayed` set. A job that ran before and
 * waits again (a retry, a stalled job) also counts as active: the side that adds.
 * Reads BullMQ's key layout (`de:<id>` holds the job id; the job is the hash `<queue>:<jobId>`; `delayed`
 * is a sorted set); test/integration/fetch-queue.test.ts holds it to the pinned BullMQ's behaviour.
 * Under a flood most adds find their key's job still waiting, and BullMQ's add script then does nothing
 * useful at a high price: a speed mechanism kept for its measured gain (docs/decisions.md).
 */
const COVERED_LUA = `
local function covered(dedup, job, delayed, fk)
  local id = redis.call('GET', dedup .. fk)
  if not id or redis.call('EXISTS', job .. id) == 0 then return false end
  local mayBeActive = redis.call('HEXISTS', job .. id, 'processedOn') == 1 and not redis.call('ZSCORE', delayed, id)
  return not mayBeActive or redis.call('EXISTS', job .. 'dn:' .. fk) == 1
end
`;

/**
 * KEYS: the paused set (every key of the gate shares its hash tag: on a Redis Cluster the script runs on
 * that slot's node). ARGV: gate prefix, paused set, now, default max, slow start, lease, then the queue's
 * dedup prefix, job prefix and delayed set, then per resource
 * (company id, fetch key, href). Answers per resource -1 (its job covers it already), 0 (parked), or the
 * priority of its job: its company's count of jobs queued or running, itself included.
 */
const ADMIT_LUA = `${LIB}${COVERED_LUA}
local gp, pausedSet, now, default, slow, lease = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local dedup, job, delayed = ARGV[7], ARGV[8], ARGV[9]
local out = {}
for i = 1, (#ARGV - 9) / 3 do
  local b = 9 + (i - 1) * 3
  local cid, fk, href = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local g = gp .. cid
  local R = g .. ':running'
  out[i] = 0
  if covered(dedup, job, delayed, fk) then
    out[i] = -1
  elseif redis.call('SISMEMBER', pausedSet, cid) == 0 then
    local max = tonumber(redis.call('HGET', g, 'max')) or default
    if redis.call('ZSCORE', R, fk) or runningOf(R, now) < limitOf(g, max, slow) then
      redis.call('ZADD', R, now + lease, fk)
      out[i] = redis.call('ZCARD', R)
    end
  end
  if out[i] == 0 then redis.call('ZADD', g .. ':parked', 'NX', now, fk .. ' ' .. href) end
end
return out`;

/**
 * KEYS: the C5 slot of each job's resource. ARGV: gate prefix, paused set, now, C5 interval, lease, slow
 * start, then per job (company id, fetch key, href, max, paused 0/1, retried 0/1). Answers per job a pair:
 * 0 go, 1 wait (ms), 2 park.
 */
const START_LUA = `${LIB}
local gp, pausedSet, now, interval, lease, slow = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local out = {}
for i, slot in ipairs(KEYS) do
  local b = 6 + (i - 1) * 6
  local cid, fk, href, max, paused, retried = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4]), ARGV[b + 5], ARGV[b + 6]
  local g = gp .. cid
  local R, B, P = g .. ':running', g .. ':booked', g .. ':parked'
  local code, ms = 0, 0
  if tonumber(redis.call('HGET', g, 'max')) ~= max then redis.call('HSET', g, 'max', max) end
  if paused == '1' or redis.call('SISMEMBER', pausedSet, cid) == 1 then
    redis.call('ZREM', R, fk)
    redis.call('ZREM', B, fk)
    redis.call('ZADD', P, 'NX', now, fk .. ' ' .. href)
    code = 2
  else
    local booked = tonumber(redis.call('ZSCORE', B, fk))
    if booked and booked > now + ${EARLY_MS} then
      code, ms = 1, booked - now
    elseif booked then
      redis.call('ZREM', B, fk)
    elseif not redis.call('ZSCORE', R, fk) and runningOf(R, now) >= limitOf(g, max, slow) then
      if retried == '1' then code, ms = 1, ${OVER_LIMIT_RETRY_MS} else code = 2 end
    else
      local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
      local t = math.max(now, tonumber(redis.call('HGET', g, 'held')) or 0, tonumber(redis.call('HGET', g, 'next')) or 0)
      if gap > 0 then redis.call('HSET', g, 'next', t + gap) end
      if t > now + ${EARLY_MS} then
        redis.call('ZADD', B, t, fk)
        redis.call('ZADD', R, t + lease, fk)
        code, ms = 1, t - now
      end
    end
    if code == 2 then redis.call('ZADD', P, 'NX', now, fk .. ' ' .. href) end
    if code == 0 then
      redis.call('ZADD', R, now + lease, fk)
      if interval > 0 and not redis.call('SET', slot, '1', 'PX', interval, 'NX') then
        code, ms = 1, math.max(1, redis.call('PTTL', slot))
      end
    end
  end
  out[2 * i - 1] = code
  out[2 * i] = ms
end
return out`;

/**
 * KEYS: the paused set (as ADMIT_LUA's). ARGV: gate prefix, paused set, now, slow start, hold floor, admit
 * lease, then per job (company id, fetch key or '' for a call that is not a fetch, max, answer kind,
 * retry-after ms or '', why; kind 'kick' with no fetch key only hands out). Frees each job's slot, applies
 * its answer, and takes out of the parked sets as many resources as each company has free slots, admitted
 * (their slots taken): answers them as (company id, href, priority) triples, whose jobs the caller adds.
 */
const FINISH_LUA = `${LIB}
local gp, pausedSet, now, slow, floor, lease = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local touched, maxes = {}, {}
for i = 1, (#ARGV - 6) / 6 do
  local b = 6 + (i - 1) * 6
  local cid, fk, max, kind, ra, why = ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3]), ARGV[b + 4], tonumber(ARGV[b + 5]), ARGV[b + 6]
  local g = gp .. cid
  if fk ~= '' then redis.call('ZREM', g .. ':running', fk) end
  if fk ~= '' or kind == 'kick' then
    touched[#touched + 1] = cid
    maxes[cid] = tonumber(redis.call('HGET', g, 'max')) or max
  end
  if kind == 'throttled' then
    local held = math.max(tonumber(redis.call('HGET', g, 'held')) or 0, now + math.max(ra or 0, floor))
    local lim = limitOf(g, max, slow)
    local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
    local rate = math.max(${MIN_RATE}, (gap > 0 and 1000 / gap or lim) / 2)
    redis.call('HSET', g, 'held', held, 'why', why, 'lim', math.max(1, math.floor(lim / 2)), 'ss', 1, 'gap', 1000 / rate)
    redis.call('HDEL', g, 'ur', 'urwhy')
  elseif kind == 'answered' then
    redis.call('HDEL', g, 'ur', 'urwhy')
    redis.call('HSET', g, 'ans', now)
    local lim = tonumber(redis.call('HGET', g, 'lim')) or math.min(max, slow)
    if lim < max then
      if redis.call('HEXISTS', g, 'ss') == 1 then lim = lim + 1 / lim else lim = lim + 1 end
      redis.call('HSET', g, 'lim', math.min(max, lim))
    end
    local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
    if gap > 0 then
      local rate = 1000 / gap
      rate = rate + ${RATE_STEP} / rate
      if rate >= ${UNPACED_RATE} then redis.call('HDEL', g, 'gap', 'next') else redis.call('HSET', g, 'gap', 1000 / rate) end
    end
  elseif kind == 'no_answer' then
    if redis.call('HSETNX', g, 'ur', now) == 1 then redis.call('HSET', g, 'urwhy', why) end
  end
end
local out, seen = {}, {}
for _, cid in ipairs(touched) do
  if not seen[cid] then
    seen[cid] = true
    local g = gp .. cid
    if redis.call('SISMEMBER', pausedSet, cid) == 0 then
      local R = g .. ':running'
      local free = limitOf(g, maxes[cid], slow) - runningOf(R, now)
      if free > 0 then
        local popped = redis.call('ZPOPMIN', g .. ':parked', free)
        for j = 1, #popped, 2 do
          local sep = string.find(popped[j], ' ', 1, true)
          redis.call('ZADD', R, now + lease, string.sub(popped[j], 1, sep - 1))
          out[#out + 1] = cid
          out[#out + 1] = string.sub(popped[j], sep + 1)
          out[#out + 1] = redis.call('ZCARD', R)
        end
      end
    end
  end
end
return out`;

/** Reads the views of many companies: per company its hash fields, running and parked counts. KEYS: the paused set (as ADMIT_LUA's). */
const VIEW_LUA = `
local gp, now = ARGV[1], tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV do
  local g = gp .. ARGV[i]
  local f = redis.call('HMGET', g, 'held', 'why', 'ur', 'urwhy', 'lim', 'max', 'ans')
  redis.call('ZREMRANGEBYSCORE', g .. ':running', '-inf', now)
  out[#out + 1] = f[1] or false
  out[#out + 1] = f[2] or false
  out[#out + 1] = f[3] or false
  out[#out + 1] = f[4] or false
  out[#out + 1] = f[5] or false
  out[#out + 1] = f[6] or false
  out[#out + 1] = f[7] or false
  out[#out + 1] = redis.call('ZCARD', g .. ':running')
  out[#out + 1] = redis.call('ZCARD', g .. ':parked')
end
return out`;

/** A running fetch's place at its company's gate lapses this long after its fetch timeout (a dead worker's). */
const LEASE_MARGIN_MS = 30_000;

/** The gate's settings, from the configuration: the same in every process. */
export const gateOptions = (fetch: { companyConcurrency: number; timeoutMs: number; pausedProbeIntervalMs: number }) => ({
  defaultMax: fetch.companyConcurrency,
  leaseMs: fetch.timeoutMs + LEASE_MARGIN_MS,
  probeIntervalMs: fetch.pausedProbeIntervalMs,
});

/** Runs a MULTI; a command that failed inside it (ioredis answers it in the results) is thrown too. */
async function execAll(multi: ChainableCommander): Promise<void> {
  const failed = (await multi.exec())?.find(([err]) => err);
  if (failed) throw failed[0];
}

type Script<T> = (keys: string[], args: (string | number)[]) => Promise<T>;

const num = (v: unknown): number | null => (v === null || v === false || v === undefined ? null : Number(v));
const str = (v: unknown): string | null => (v === null || v === false || v === undefined ? null : String(v));

export class CompanyGate {
  private readonly gatePrefix: string;
  private readonly pausedSet: string;
  private readonly startScript: Script<number[]>;
  private readonly finishScript: Script<string[]>;
  private readonly admitScript: Script<number[]>;
  private readonly viewScript: Script<(string | number | null)[]>;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly opts: {
      defaultMax: number;
      /** A running fetch's slot lapses after this (a dead worker's). */
      leaseMs: number;
      /** A paused company's refused credentials are tried again this long after its pause (paused-companies.ts). */
      probeIntervalMs: number;
    },
  ) {
    this.gatePrefix = `${prefix}:company:`;
    this.pausedSet = `${prefix}:paused`;
    this.startScript = redisScript(redis, 'skyhookGateStart', START_LUA);
    this.finishScript = redisScript(redis, 'skyhookGateFinish', FINISH_LUA);
    this.admitScript = redisScript(redis, 'skyhookGateAdmit', ADMIT_LUA);
    this.viewScript = redisScript(redis, 'skyhookGateView', VIEW_LUA);
  }

  /**
   * Admits each resource (its job is to be added, with this priority) or parks it; one whose key's job in
   * `queue` covers it already is `covered` (COVERED_LUA).
   */
  async admit(resources: (ResourceKey & { fetchKey: string })[], queue: QueueKeys): Promise<Admission[]> {
    if (resources.length === 0) return [];
    const args = resources.flatMap((r) => [r.companyId, r.fetchKey, r.href]);
    const out = await this.admitScript(
      [this.pausedSet],
      [this.gatePrefix, this.pausedSet, Date.now(), this.opts.defaultMax, SLOW_START, ADMIT_LEASE_MS, queue.dedup, queue.job, queue.delayed, ...args],
    );
    return out.map((n) => (n === -1 ? 'covered' : n === 0 ? 'parked' : n));
  }

  /** Decides each job's start (and takes its C5 slot of `intervalMs` when it goes). */
  async start(jobs: GateStartRequest[], intervalMs: number): Promise<GateStart[]> {
    if (jobs.length === 0) return [];
    const args = jobs.flatMap((j) => [j.companyId, j.fetchKey, j.href, j.max, j.paused ? 1 : 0, j.retried ? 1 : 0]);
    const out = await this.startScript(
      jobs.map((j) => j.slotKey),
      [this.gatePrefix, this.pausedSet, Date.now(), intervalMs, this.opts.leaseMs, SLOW_START, ...args],
    );
    return jobs.map((_, i) => {
      const code = Number(out[2 * i]);
      return code === 0 ? { kind: 'go' } : code === 1 ? { kind: 'wait', ms: Number(out[2 * i + 1]) } : { kind: 'park' };
    });
  }

  /** Frees the jobs' slots and applies their answers; answers the parked resources now admitted (add their jobs). */
  async finish(jobs: FinishRequest[]): Promise<Admitted[]> {
    if (jobs.length === 0) return [];
    const args = jobs.flatMap((j) => {
      const a = j.answer;
      return [j.companyId, j.fetchKey, j.max, a.kind, a.kind === 'throttled' ? (a.retryAfterMs ?? '') : '', a.kind === 'throttled' || a.kind === 'no_answer' ? a.why : ''];
    });
    return this.runFinish(args);
  }

  /** FINISH_LUA for these jobs' arguments; answers the parked resources it admitted from its (company id, href, priority) triples. */
  private async runFinish(jobArgs: (string | number)[]): Promise<Admitted[]> {
    const out = await this.finishScript([this.pausedSet], [this.gatePrefix, this.pausedSet, Date.now(), SLOW_START, HOLD_FLOOR_MS, ADMIT_LEASE_MS, ...jobArgs]);
    const admitted: Admitted[] = [];
    for (let i = 0; i < out.length; i += 3) admitted.push({ companyId: out[i]!, href: out[i + 1]!, priority: Number(out[i + 2]) });
    return admitted;
  }

  /** Pauses a company and parks these resources of it (its credentials were refused: nothing is fetched until they are replaced). */
  async pause(companyId: string, resources: ResourceKey[] = []): Promise<void> {
    const multi = this.redis.multi().sadd(this.pausedSet, companyId).set(probeKey(this.prefix, companyId), '1', 'PX', this.opts.probeIntervalMs, 'NX');
    const now = Date.now();
    if (resources.length > 0) multi.zadd(`${this.gatePrefix}${companyId}:parked`, 'NX', ...resources.flatMap((r) => [now, `${fetchKey(r)} ${r.href}`]));
    await execAll(multi);
  }

  /**
   * Lifts a pause: the company's hrefs are no longer parked for it. The caller queues its pending resources
   * again (from PostgreSQL: a Redis that lost the parked set loses nothing).
   */
  async resume(companyId: string): Promise<void> {
    const g = `${this.gatePrefix}${companyId}`;
    // Its parked hrefs are queued again from PostgreSQL by the caller; the set is dropped so none is queued twice.
    await execAll(this.redis.multi().srem(this.pausedSet, companyId).del(`${g}:parked`, `${g}:booked`).hdel(g, 'held', 'gap', 'next', 'why'));
  }

  /** The paused companies the mirror holds. */
  async pausedCompanies(): Promise<string[]> {
    return this.redis.smembers(this.pausedSet);
  }

  /** A new limit for a company (the admin set it): applied to the next admissions at once. */
  async setMax(companyId: string, max: number): Promise<void> {
    await this.redis.hset(`${this.gatePrefix}${companyId}`, 'max', max);
  }

  /**
   * Holds a company's calls (a lead's or a quote's 429): its fetches wait too, and so do its other calls
   * (heldUntil), as a fetch's 429 would do.
   */
  async hold(companyId: string, retryAfterMs: number | undefined, why: string): Promise<void> {
    const max = Number(await this.redis.hget(`${this.gatePrefix}${companyId}`, 'max')) || this.opts.defaultMax;
    await this.runFinish([companyId, '', max, 'throttled', retryAfterMs ?? '', why]);
  }

  /**
   * Hands out the parked resources of these companies that have free places (admitted: add their jobs).
   * Places free when fetches end; this is for places that freed otherwise (a lease that lapsed after a
   * worker died, a limit raised).
   */
  async kick(companyIds: string[]): Promise<Admitted[]> {
    if (companyIds.length === 0) return [];
    return this.runFinish(companyIds.flatMap((id) => [id, '', this.opts.defaultMax, 'kick', '', '']));
  }

  /** Until when a company is held, if it is now. */
  async heldUntil(companyId: string): Promise<number | null> {
    const held = Number(await this.redis.hget(`${this.gatePrefix}${companyId}`, 'held'));
    return held > Date.now() ? held : null;
  }

  /** The gate's view of each company, in order. */
  async views(companyIds: string[]): Promise<GateView[]> {
    if (companyIds.length === 0) return [];
    const now = Date.now();
    const out = await this.viewScript([this.pausedSet], [this.gatePrefix, now, ...companyIds]);
    return companyIds.map((_, i) => {
      const f = out.slice(i * 9, i * 9 + 9);
      const held = num(f[0]);
      const lim = num(f[4]);
      const max = num(f[5]);
      return {
        heldUntil: held !== null && held > now ? held : null,
        heldWhy: held !== null && held > now ? str(f[1]) : null,
        noAnswerSince: num(f[2]),
        noAnswerWhy: str(f[3]),
        limitNow: lim === null ? null : Math.max(1, Math.floor(max === null ? lim : Math.min(lim, max))),
        answeredAt: num(f[6]),
        running: Number(f[7]),
        parked: Number(f[8]),
      };
    });
  }
}

/**
 * The ends of one process's fetch jobs, batched (one script per batch): each frees its slot, and the parked
 * resources the batch admits get their jobs (`addJobs`). A batch that fails is reported: its slots lapse by
 * themselves, and its parked hrefs stay parked until another fetch of their company ends (or the relay
 * queues their old rows again).
 */
export class GateFinishes {
  private readonly batcher: Batcher<FinishRequest, undefined>;
  private readonly pending = new Set<Promise<undefined>>();
  /** Until when this process last said a company was throttled: one line per hold, not per refusal. */
  private readonly saidHeld = new Map<string, number>();

  constructor(
    gate: Pick<CompanyGate, 'finish'>,
    addJobs: (resources: Admitted[]) => Promise<void>,
    private readonly log: Pick<Logger, 'warn'>,
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

  finish(request: FinishRequest): Promise<undefined> {
    const done = this.batcher.add(request);
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

  private sayHolds(items: FinishRequest[]): void {
    const now = Date.now();
    for (const { companyId, answer } of items) {
      if (answer.kind !== 'throttled' || (this.saidHeld.get(companyId) ?? 0) > now) continue;
      const until = now + Math.max(answer.retryAfterMs ?? 0, HOLD_FLOOR_MS);
      if (this.saidHeld.size > 10_000) this.saidHeld.clear();
      this.saidHeld.set(companyId, until);
      this.log.warn({ companyId, state: 'throttled', until: new Date(until).toISOString(), reason: answer.why }, 'the marketplace asked the company to slow down: its fetches are held, then paced');
    }
  }
}
