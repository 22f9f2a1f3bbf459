/**
 * The log line per finished batch (SPEC §15): what finishes in one turn is one `info` line with counts by
 * company and outcome; under load, at most one line a second, nothing lost in between.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchSummary } from '../../src/lib/batch-summary.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

describe('a batch summary', () => {
  let lines: { fields: Record<string, unknown>; message: string }[];
  let summary: BatchSummary;
  beforeEach(() => {
    vi.useFakeTimers();
    lines = [];
    const log = { info: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) };
    summary = new BatchSummary(log as never, (n) => `received ${n} notifications`, { intervalMs: 1000, now: () => Date.now() });
  });
  afterEach(() => vi.useRealTimers());

  it('says a batch that finished together in one line, by company and outcome', async () => {
    for (let i = 0; i < 3; i++) summary.add(A, 'stored');
    summary.add(A, 'discarded');
    summary.add(B, 'stored');
    summary.add('unknown', '401');
    expect(lines).toEqual([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(lines).toEqual([{ fields: { notifications: 6, byCompany: { [A]: { stored: 3, discarded: 1 }, [B]: { stored: 1 }, unknown: { 401: 1 } } }, message: 'received 6 notifications' }]);
  });

  it('counts a fetch with many notifications as many', async () => {
    summary.add(A, 'processed', 40);
    await vi.advanceTimersByTimeAsync(0);
    expect(lines[0]!.fields).toEqual({ notifications: 40, byCompany: { [A]: { processed: 40 } } });
  });

  it('names what it counts: deliveries, by company and outcome', async () => {
    const log = { info: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) };
    const sent = new BatchSummary(log as never, (n) => `sent ${n} deliveries`, { counted: 'deliveries' });
    sent.add(A, 'delivered', 2);
    sent.add(A, 'retry');
    await vi.advanceTimersByTimeAsync(0);
    expect(lines).toEqual([{ fields: { deliveries: 3, byCompany: { [A]: { delivered: 2, retry: 1 } } }, message: 'sent 3 deliveries' }]);
  });

  it('under load, sums the batches of the next second into one line, and loses none', async () => {
    summary.add(A, 'stored');
    await vi.advanceTimersByTimeAsync(0);
    for (let ms = 0; ms < 990; ms += 10) {
      summary.add(A, 'stored');
      await vi.advanceTimersByTimeAsync(10);
    }
    expect(lines).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(20);
    expect(lines).toHaveLength(2);
    expect(lines[1]!.fields).toEqual({ notifications: 99, byCompany: { [A]: { stored: 99 } } });
    // A quiet process says nothing; the next batch is said at once when a second has passed.
    await vi.advanceTimersByTimeAsync(5000);
    summary.add(B, 'failed');
    await vi.advanceTimersByTimeAsync(0);
    expect(lines).toHaveLength(3);
  });

  it('says what is left when flushed (at shutdown), and nothing when there is nothing', () => {
    summary.flush();
    expect(lines).toEqual([]);
    summary.add(A, 'processed');
    summary.flush();
    expect(lines).toHaveLength(1);
  });
});
