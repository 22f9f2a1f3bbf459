/**
 * A marketplace-style rate limit: at most `perSecond` calls in any sliding second, as a ring of the last
 * `perSecond` admitted times (O(1) a call at any rate; a refused call takes no place in the window). No
 * imports, so bench/resource-server.ts uses it without loading the simulator.
 */
export const WINDOW_MS = 1000;

export class SlidingWindow {
  private readonly admitted: number[] = [];
  /** The slot of the oldest admitted time once the ring is full; the next to overwrite. */
  private oldest = 0;

  constructor(readonly perSecond: number) {
    if (!Number.isInteger(perSecond) || perSecond < 1) throw new RangeError(`perSecond must be a positive integer, not ${perSecond}`);
  }

  /** Admits the call at `now` (ms, any monotonic clock) and answers true, or answers false and records nothing. */
  tryTake(now: number = performance.now()): boolean {
    if (this.admitted.length < this.perSecond) {
      this.admitted.push(now);
      return true;
    }
    if (now - this.admitted[this.oldest]! < WINDOW_MS) return false;
    this.admitted[this.oldest] = now;
    this.oldest = (this.oldest + 1) % this.perSecond;
    return true;
  }
}
