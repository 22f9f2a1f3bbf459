/**
 * The gate's scripts (src/gate/) against real Redis, moment by moment: admit, start, finish, hold, hand
 * out, pause, resume and forget, as several workers would call them, for the companies' fetches (SPEC §5.1
 * F2-F4).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../src/lib/redis/keys.js';
import { Gate, type GateAnswer } from '../../src/gate/gate.js';
import { fetchKey } from '../../src/processing/fetch.queue.js';
import { testQueuePrefix } from '../helpers/database.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(REDIS_URL);
const prefix = testQueuePrefix();
const company = '11111111-1111-4111-8111-111111111111';
const other = '22222222-2222-4222-8222-222222222222';
/** Two workers' gates on their own connections, sharing Redis. */
const redisOfTwo = new Redis(REDIS_URL);
const gates = [new Gate(redis, prefix, 'company', { defaultMax: 3, leaseMs: 60_000 }), new Gate(redisOfTwo, prefix, 'company', { defaultMax: 3, leaseMs: 60_000 })];
const [one, two] = gates as [Gate, Gate];

/** A company's resource at its gate: the item is its fetch key, the payload its href. */
const resource = (n: number, companyId = company) => {
  const href = `https://api.example.com/api/rfqs/${n}`;
  return { id: companyId, item: fetchKey({ companyId, href }), payload: href };
};
const start = (gate: Gate, n: number, opts: { companyId?: string; max?: number; paused?: boolean; retried?: boolean } = {}) => {
  const r = resource(n, opts.companyId);
  return gate.start([{ ...r, max: opts.max ?? 3, paused: opts.paused ?? false, retried: opts.retried ?? false, slot: `${prefix}:fetch-slot:${r.item}` }], 0).then((s) => s[0]!);
};
const finish = (gate: Gate, n: number, answer: GateAnswer, companyId = company) => gate.finish([{ id: companyId, item: resource(n, companyId).item, max: 3, answer }]);
const handedOut = (n: number, priority: number, companyId = company) => ({ id: companyId, payload: resource(n, companyId).payload, priority });

beforeEach(async () => {
  await deleteKeysWithPrefix(REDIS_URL, prefix);
});
afterAll(async () => {
  await deleteKeysWithPrefix(REDIS_URL, prefix);
  redis.disconnect();
  redisOfTwo.disconnect();
});

describe('the gate', () => {
  it('F2: admits a company up to its limit across workers, parks the rest, and hands them back as places free', async () => {
    // Slow start: 3 is the limit here, under the start of 4.
    // Admitted with their priorities: how many jobs the company has queued or running.
    expect(await one.admit([resource(1), resource(2)])).toEqual([1, 2]);
    expect(await two.admit([resource(3), resource(4), resource(1)])).toEqual([3, 'parked', 3]); // 1 holds its place already
    // F1: another company has places of its own, and its first job goes ahead of this one's.
    expect(await one.admit([resource(9, other)])).toEqual([1]);
    expect((await one.views([company]))[0]).toMatchObject({ running: 3, parked: 1 });
    expect(await start(two, 1)).toEqual({ kind: 'go' });
    // A job that was never admitted (a follow-up, say) parks when the company is full.
    expect(await start(one, 5)).toEqual({ kind: 'park' });
    // Its end frees one place: the oldest parked resource comes back out, admitted, for its job to be added.
    expect(await finish(two, 1, { kind: 'answered' })).toEqual([handedOut(4, 3)]);
    expect((await one.views([company]))[0]).toMatchObject({ running: 3, parked: 1 });
    expect(await start(one, 4)).toEqual({ kind: 'go' }); // its place is its own
  });

  it("a dead worker's places lapse with their lease, and a hand-out gives the parked resources their places", async () => {
    const shortLease = new Gate(redis, prefix, 'company', { defaultMax: 3, leaseMs: 50 });
    await shortLease.admit([resource(1), resource(2), resource(3), resource(4)]);
    for (const n of [1, 2, 3]) expect(await start(shortLease, n)).toEqual({ kind: 'go' });
    // The worker dies: no finish comes. Its places lapse; only a hand-out notices.
    expect(await shortLease.handOut([company])).toEqual([]);
    await new Promise((r) => setTimeout(r, 100));
    expect(await shortLease.handOut([company, other])).toEqual([handedOut(4, 1)]);
  });

  it('a retried job over the limit waits (keeping its attempts) instead of parking', async () => {
    await one.admit([resource(1), resource(2), resource(3)]);
    expect(await start(one, 7, { retried: true })).toEqual({ kind: 'wait', ms: 1000 });
    expect((await one.views([company]))[0]!.parked).toBe(0);
  });

  it('F3: a 429 met by one worker holds the company in the other, booking starts after the hold, paced', async () => {
    await one.admit([resource(1), resource(2), resource(3)]);
    expect(await start(one, 1)).toEqual({ kind: 'go' });
    const before = Date.now();
    await finish(one, 1, { kind: 'throttled', retryAfterMs: 2000, why: 'marketplace answered 429' });
    const view = (await two.views([company]))[0]!;
    expect(view.heldUntil).toBeGreaterThanOrEqual(before + 2000);
    expect(view.heldWhy).toBe('marketplace answered 429');
    const second = await start(two, 2);
    const third = await start(two, 3);
    expect(second.kind).toBe('wait');
    expect(third.kind).toBe('wait');
    const [w2, w3] = [second, third].map((s) => (s as { ms: number }).ms);
    expect(w2).toBeGreaterThan(1900);
    // Paced: half the rate the company had (half its limit a second, the first time: 1.5 a second).
    expect(w3! - w2!).toBeGreaterThan(600);
    // A duplicate wake before its booked start waits again; the other company is not held.
    expect((await start(two, 2)).kind).toBe('wait');
    expect(await start(two, 9, { companyId: other })).toEqual({ kind: 'go' });
    // The limit halved (3 -> 1) and grows back with answers.
    expect((await one.views([company]))[0]!.limitNow).toBe(1);
    // Leads and quotes see the hold too.
    expect(await one.heldUntil(company)).toBe(view.heldUntil);
    expect(await one.heldUntil(other)).toBeNull();
  });

  it('a hold without Retry-After lasts the floor; no answer marks the company unreachable until one comes', async () => {
    const before = Date.now();
    await one.hold(company, undefined, 'marketplace answered 429');
    expect((await one.views([company]))[0]!.heldUntil).toBeGreaterThanOrEqual(before + 5000);
    await finish(one, 4, { kind: 'no_answer', why: 'the GET timed out' }, other);
    expect((await one.views([other]))[0]).toMatchObject({ noAnswerWhy: 'the GET timed out', noAnswerSince: expect.any(Number) });
    await finish(one, 4, { kind: 'answered' }, other);
    expect((await one.views([other]))[0]).toMatchObject({ noAnswerSince: null, answeredAt: expect.any(Number) });
  });

  it('notes who is held or unanswered in its trouble set, and drops them once neither (a hold lapsed, an answer came)', async () => {
    expect(await one.troubled()).toEqual([]);
    await finish(one, 1, { kind: 'answered' });
    expect(await one.troubled()).toEqual([]); // an answer alone is no trouble
    await one.hold(company, 200, 'marketplace answered 429');
    await finish(two, 4, { kind: 'no_answer', why: 'the GET timed out' }, other);
    const both = await two.troubled();
    expect(both.map((t) => t.id).sort()).toEqual([company, other].sort());
    expect(both.find((t) => t.id === company)!.view).toMatchObject({ heldWhy: 'marketplace answered 429', heldUntil: expect.any(Number) });
    expect(both.find((t) => t.id === other)!.view).toMatchObject({ noAnswerWhy: 'the GET timed out' });
    await finish(one, 4, { kind: 'answered' }, other);
    expect((await one.troubled()).map((t) => t.id)).toEqual([company]);
    // The hold is the floor's (5 s): once lapsed, the company leaves the set at the next reading.
    await redis.hset(`${one.keyPrefix}${company}`, 'held', Date.now() - 1);
    expect(await one.troubled()).toEqual([]);
    expect(await redis.scard(one.troubleSet)).toBe(0);
  });

  it('F4: a paused company parks everything, gives nothing back, and resumes with an empty parked set', async () => {
    await one.admit([resource(1)]);
    await one.pause(company, [resource(1)]);
    expect(await one.admit([resource(2)])).toEqual(['parked']);
    expect(await start(two, 1)).toEqual({ kind: 'park' });
    expect(await finish(two, 1, { kind: 'none' })).toEqual([]); // nothing dispatched while paused
    expect(await one.paused()).toEqual([company]);
    expect((await one.views([company]))[0]!.parked).toBe(2);
    await two.resume(company);
    expect(await one.paused()).toEqual([]);
    // The caller queues the pending resources again from PostgreSQL: none is left parked to be queued twice.
    expect((await one.views([company]))[0]!.parked).toBe(0);
    expect(await one.admit([resource(2)])).toEqual([1]);
  });

  it('PostgreSQL says paused before the mirror does: the job parks all the same', async () => {
    expect(await start(one, 1, { paused: true })).toEqual({ kind: 'park' });
    expect((await one.views([company]))[0]!.parked).toBe(1);
  });

  it('forgets a key whole: nothing of a deleted company stays in Redis', async () => {
    await one.admit([resource(1), resource(2), resource(3), resource(4)]);
    await one.hold(company, 60_000, 'marketplace answered 429');
    await one.pause(company, [resource(5)]);
    await one.admit([resource(9, other)]);
    await one.forget(company);
    expect((await one.troubled()).map((t) => t.id)).toEqual([]);
    const keys = await redis.keys(`${prefix}:*`);
    expect(keys.filter((k) => k.includes(company))).toEqual([]);
    expect(await one.paused()).toEqual([]);
    expect(keys.some((k) => k.includes(other))).toBe(true);
  });
});
