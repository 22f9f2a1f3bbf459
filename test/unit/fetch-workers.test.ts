/** How a process splits WORKER_CONCURRENCY over its BullMQ Workers. */
import { describe, expect, it } from 'vitest';
import { concurrencyShare } from '../../src/processing/fetch-worker.js';

describe('the fetch workers’ concurrency', () => {
  it('splits a total over the workers without losing or adding a job', () => {
    for (const total of [4, 5, 7, 32, 127, 128]) {
      const shares = [0, 1, 2, 3].map((i) => concurrencyShare(total, 4, i));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(total);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    }
  });
});
