/**
 * The failed-authentication limiter's memory bound: a flood of failures from ever new addresses must
 * neither grow the map without end nor walk the whole of it on every failure.
 */
import { describe, expect, it } from 'vitest';
import { AuthFailureLimiter } from '../../src/lib/auth-failure-limiter.js';

describe('AuthFailureLimiter', () => {
  it('blocks an address after `limit` failures until its window ends', () => {
    const limiter = new AuthFailureLimiter({ limit: 2, windowMs: 60_000 });
    limiter.recordFailure('10.0.0.1', 0);
    expect(limiter.blockedFor('10.0.0.1', 1)).toBe(0);
    limiter.recordFailure('10.0.0.1', 1);
    expect(limiter.blockedFor('10.0.0.1', 1000)).toBe(59);
    expect(limiter.blockedFor('10.0.0.1', 60_000)).toBe(0);
  });

  it('when more than 100,000 addresses are failing at once, it starts over instead of sweeping on every failure', () => {
    const limiter = new AuthFailureLimiter({ limit: 1, windowMs: 60_000 });
    limiter.recordFailure('victim', 0);
    expect(limiter.blockedFor('victim', 1)).toBe(60);
    for (let i = 0; i < 100_001; i++) limiter.recordFailure(`2001:db8::${i.toString(16)}`, 1);
    // All windows are live, so a sweep frees nothing: the map is cleared, and every count starts again.
    limiter.recordFailure('one more', 2);
    expect(limiter.blockedFor('victim', 3)).toBe(0);
    expect(limiter.blockedFor('one more', 3)).toBe(60);
  });
});
