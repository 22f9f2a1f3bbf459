/**
 * Idempotent outbound calls (leads by clientIdentifier, quotes by sellerUniqueQuoteIdentifier): the
 * request that inserts the `sending` row is the only one that calls the marketplace; concurrent
 * repeats wait for its result and answer with the stored row. A failed call removes its row, so a
 * later request may try again; a row left `sending` by a crashed process is taken over once stale.
 */
import { Problem } from '../lib/problem.js';

export interface SendOnceSteps<Row> {
  /** INSERT ... ON CONFLICT DO NOTHING RETURNING: the new `sending` row, or null when one exists. */
  claim(): Promise<Row | null>;
  load(): Promise<Row | undefined>;
  isDone(row: Row): boolean;
  /** Atomically takes over a stale `sending` row (null when someone else did). */
  takeOverIfStale(row: Row): Promise<Row | null>;
  /** Calls the marketplace and stores its answer; returns the finished row. */
  send(row: Row): Promise<Row>;
  /** Removes a `sending` row whose call failed. */
  release(row: Row): Promise<void>;
}

const POLL_MS = 50;

export async function sendOnce<Row>(steps: SendOnceSteps<Row>, waitMs: number): Promise<{ row: Row; created: boolean }> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const mine = (await steps.claim()) ?? (await takeOver(steps));
    if (mine) {
      try {
        return { row: await steps.send(mine), created: true };
      } catch (err) {
        await steps.release(mine).catch(() => {});
        throw err;
      }
    }
    const existing = await steps.load();
    if (existing && steps.isDone(existing)) return { row: existing, created: false };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Problem(409, 'Conflict', 'An identical request is still being sent to the marketplace; retry shortly.', { code: 'in_progress' });

  async function takeOver(s: SendOnceSteps<Row>): Promise<Row | null> {
    const existing = await s.load();
    return existing && !s.isDone(existing) ? s.takeOverIfStale(existing) : null;
  }
}
