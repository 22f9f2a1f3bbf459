import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authorizationHeader } from '../../src/marketplace/connection.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { SlidingWindow, WINDOW_MS } from '../../src/simulator/rate-window.js';
import { prng } from '../helpers/prng.js';

const ACME = { id: 'acme', token: 'acme-token-0123456789' };
const GLOBEX = { id: 'globex', token: 'globex-token-0123456789' };

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('SlidingWindow', () => {
  it('admits perSecond calls in any second; a refused call takes no place', () => {
    const window = new SlidingWindow(3);
    const at = (now: number) => window.tryTake(now);
    expect([at(0), at(10), at(20)]).toEqual([true, true, true]);
    expect([at(30), at(500), at(999)]).toEqual([false, false, false]);
    // The call of t=0 leaves the window at t=1000; the refusals of 30-999 took nothing.
    expect(at(1000)).toBe(true);
    expect(at(1005)).toBe(false);
    expect(at(1010)).toBe(true);
    expect(at(1020)).toBe(true);
    expect(at(1021)).toBe(false);
  });

  it('over random arrivals: never more than perSecond admitted in any sliding second, and a call is refused only when the second before it is full', () => {
    const random = prng(7);
    for (const perSecond of [1, 4, 10]) {
      const window = new SlidingWindow(perSecond);
      const admitted: number[] = [];
      let now = 0;
      for (let i = 0; i < 1000; i++) {
        now += random() * (3 * WINDOW_MS) / perSecond;
        const inLastSecond = admitted.filter((t) => t > now - WINDOW_MS).length;
        const ok = window.tryTake(now);
        expect(ok).toBe(inLastSecond < perSecond);
        if (ok) admitted.push(now);
      }
      for (const start of admitted) expect(admitted.filter((t) => t >= start && t < start + WINDOW_MS).length).toBeLessThanOrEqual(perSecond);
    }
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new SlidingWindow(0)).toThrow(RangeError);
    expect(() => new SlidingWindow(2.5)).toThrow(RangeError);
  });
});

describe('per-company resource faults', () => {
  let sim: Simulator;
  let href: string;

  beforeEach(async () => {
    sim = await startSimulator({ companies: [ACME, GLOBEX] });
    const [acme] = await sim.fire({ companyId: ACME.id, eventType: 'TripRequest' });
    href = acme?.notification.href ?? '';
  });

  afterEach(() => sim.stop());

  const get = async (url: string, token = ACME.token) => {
    const response = await fetch(url, { headers: { authorization: authorizationHeader(token) } });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Json };
  };
  const control = async (companyId: string, body: unknown) => {
    const response = await fetch(`${sim.url}/_sim/companies/${companyId}/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  };

  it('a rate limit answers 429 with its Retry-After above perSecond, counts both, and leaves other companies alone', async () => {
    const [globex] = await sim.fire({ companyId: GLOBEX.id, eventType: 'TripRequest' });
    expect(await control(ACME.id, { resourceRateLimit: { perSecond: 5, retryAfterS: 2 } })).toEqual({
      status: 200,
      body: { resourceLatencyMs: 0, resourceRateLimit: { perSecond: 5, retryAfterS: 2 } },
    });

    const answers = await Promise.all(Array.from({ length: 12 }, () => get(href)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(7);
    for (const answer of refused) {
      expect(answer).toMatchObject({ status: 429, retryAfter: '2', body: { data: null, meta: { errors: [{ code: 'rate_limited' }] } } });
    }
    const others = await Promise.all(Array.from({ length: 12 }, () => get(globex?.notification.href ?? '', GLOBEX.token)));
    expect(others.every((a) => a.status === 200)).toBe(true);
    expect(sim.report().resourceGets).toEqual({ acme: { answered: 5, refused429: 7 }, globex: { answered: 12, refused429: 0 } });

    // The refusals took no place: a second after the admitted five, five more are answered.
    await new Promise((resolve) => setTimeout(resolve, 1050));
    const later = await Promise.all(Array.from({ length: 6 }, () => get(href)));
    expect(later.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429]);

    sim.setCompanyFaults(ACME.id, { resourceRateLimit: null });
    const unlimited = await Promise.all(Array.from({ length: 12 }, () => get(href)));
    expect(unlimited.every((a) => a.status === 200)).toBe(true);
    expect(sim.report().resourceGets.acme).toEqual({ answered: 22, refused429: 8 });
  });

  it("a company's latency delays its resource answers only", async () => {
    const [globex] = await sim.fire({ companyId: GLOBEX.id, eventType: 'TripRequest' });
    sim.setCompanyFaults(ACME.id, { resourceLatencyMs: 400 });
    let started = Date.now();
    expect((await get(href)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(395);
    started = Date.now();
    expect((await get(globex?.notification.href ?? '', GLOBEX.token)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(300);
  });

  it('updates partially, clears with null, and refuses unknown knobs, bad values and unknown companies naming them', async () => {
    await control(ACME.id, { resourceLatencyMs: 50, resourceRateLimit: { perSecond: 10, retryAfterS: 1 } });
    expect((await control(ACME.id, { resourceLatencyMs: null })).body).toEqual({ resourceLatencyMs: 0, resourceRateLimit: { perSecond: 10, retryAfterS: 1 } });
    expect((await control(ACME.id, {})).body).toEqual({ resourceLatencyMs: 0, resourceRateLimit: { perSecond: 10, retryAfterS: 1 } });

    const misspelt = await control(ACME.id, { resourceLatency: 5 });
    expect(misspelt.status).toBe(400);
    expect(misspelt.body.error).toContain('resourceLatency');
    const zero = await control(ACME.id, { resourceRateLimit: { perSecond: 0, retryAfterS: 2 } });
    expect(zero.status).toBe(400);
    expect(zero.body.error).toMatch(/^resourceRateLimit\.perSecond: /);
    const partial = await control(ACME.id, { resourceRateLimit: { perSecond: 3 } });
    expect(partial.status).toBe(400);
    expect(partial.body.error).toMatch(/^resourceRateLimit\.retryAfterS: /);
    const unknown = await control('initech', { resourceLatencyMs: 5 });
    expect(unknown).toEqual({ status: 400, body: { error: 'companyId: unknown company "initech"' } });
    expect(() => sim.setCompanyFaults(ACME.id, { resourceLatencyMs: -1 })).toThrow(/^resourceLatencyMs: /);
    // Nothing refused changed anything.
    expect((await control(ACME.id, {})).body).toEqual({ resourceLatencyMs: 0, resourceRateLimit: { perSecond: 10, retryAfterS: 1 } });
  });
});
