/**
 * The failed-authentication limiter: past `limit` refusals in a window an address's refusals become 429s,
 * and its memory is bounded: a flood of failures from ever new addresses must neither grow the map without
 * end nor walk the whole of it on every failure.
 */
import { describe, expect, it } from 'vitest';
import { AuthFailureLimiter } from '../../src/lib/auth-failure-limiter.js';
import { Problem } from '../../src/lib/problem.js';

const unauthorized = new Problem(401, 'Unauthorized', 'no');

describe('AuthFailureLimiter', () => {
  it('answers the refusals past `limit` with a 429 and Retry-After until the window ends', () => {
    const limiter = new AuthFailureLimiter({ limit: 2, windowMs: 60_000 });
    expect(limiter.refusal('10.0.0.1', unauthorized, 0)).toBe(unauthorized);
    expect(limiter.refusal('10.0.0.1', unauthorized, 1)).toBe(unauthorized);
    const third = limiter.refusal('10.0.0.1', unauthorized, 1000);
    expect(third.status).toBe(429);
    expect(third.extra.headers).toEqual({ 'retry-after': '59' });
    expect(limiter.refusal('10.0.0.2', unauthorized, 1000)).toBe(unauthorized);
    expect(limiter.refusal('10.0.0.1', unauthorized, 60_000)).toBe(unauthorized);
  });

  it('when more than 100,000 addresses are failing at once, it starts over instead of sweeping on every failure', () => {
    const limiter = new AuthFailureLimiter({ limit: 1, windowMs: 60_000 });
    limiter.refusal('victim', unauthorized, 0);
    expect(limiter.refusal('victim', unauthorized, 0).extra.headers).toEqual({ 'retry-after': '60' });
    for (let i = 0; i < 100_001; i++) limiter.refusal(`2001:db8::${i.toString(16)}`, unauthorized, 1);
    // All windows are live, so a sweep frees nothing: the map is cleared, and every count starts again.
    limiter.refusal('one more', unauthorized, 2);
    expect(limiter.refusal('one more', unauthorized, 2).status).toBe(429);
    expect(limiter.refusal('victim', unauthorized, 3)).toBe(unauthorized);
  });
});
