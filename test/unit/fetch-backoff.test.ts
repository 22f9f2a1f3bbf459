/**
 * The fetch retry schedule (SPEC §5): exponential backoff with jitter, and a marketplace's Retry-After as
 * a floor on the next wait, never a replacement: `429` with `Retry-After: 1` on every attempt must not use
 * up a notification's attempts in seconds.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { fetchBackoff, RetryableFetchError } from '../../src/processing/fetch.queue.js';

const defaults = loadConfig({}).fetch;
const throttled = (retryAfterMs?: number) => new RetryableFetchError('marketplace answered 429', retryAfterMs);

describe('fetchBackoff', () => {
  it('grows exponentially, with jitter within the upper half of each step, up to FETCH_BACKOFF_MAX_MS', () => {
    const opts = { backoffBaseMs: 2000, backoffMaxMs: 900_000 };
    expect(fetchBackoff(1, throttled(), opts, () => 0)).toBe(1000);
    expect(fetchBackoff(1, throttled(), opts, () => 1)).toBe(2000);
    expect(fetchBackoff(4, throttled(), opts, () => 0)).toBe(8000);
    expect(fetchBackoff(20, throttled(), opts, () => 1)).toBe(900_000);
  });

  it('takes a Retry-After longer than the backoff as the next wait, capped at FETCH_BACKOFF_MAX_MS', () => {
    const opts = { backoffBaseMs: 2000, backoffMaxMs: 900_000 };
    expect(fetchBackoff(1, throttled(30_000), opts, () => 0)).toBe(30_000);
    expect(fetchBackoff(1, throttled(86_400_000), opts, () => 0)).toBe(900_000);
  });

  it('never shortens the schedule for a shorter Retry-After (a floor, not a replacement)', () => {
    const opts = { backoffBaseMs: 2000, backoffMaxMs: 900_000 };
    expect(fetchBackoff(6, throttled(1000), opts, () => 0)).toBe(32_000);
    expect(fetchBackoff(6, throttled(0), opts, () => 0)).toBe(32_000);
  });

  it('with the default settings, attempts answered `429 Retry-After: 1` still span about an hour', () => {
    // The waits between the attempts, each at its shortest and at its longest.
    const span = (random: () => number) => {
      let total = 0;
      for (let attemptsMade = 1; attemptsMade < defaults.attempts; attemptsMade++) total += fetchBackoff(attemptsMade, throttled(1000), defaults, random);
      return total;
    };
    expect(span(() => 0)).toBeGreaterThan(35 * 60_000);
    expect(span(() => 1)).toBeLessThan(80 * 60_000);
  });
});
