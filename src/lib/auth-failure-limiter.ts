/**
 * Rate limit of failed authentication per client address (SPEC §10): after `limit` answers of 401 in
 * a window, the address gets 429 until the window ends. In memory, per process: the check costs one
 * Map lookup on every request, and N api processes allow N times the limit, which still stops guessing.
 */
const MAX_ADDRESSES = 100_000;

export class AuthFailureLimiter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(private readonly opts: { limit: number; windowMs: number }) {}

  /** Seconds until the address may try again, or 0 when it is not blocked. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.windows.get(address);
    if (!w || w.endsAt <= now || w.count < this.opts.limit) return 0;
    return Math.ceil((w.endsAt - now) / 1000);
  }

  recordFailure(address: string, now = Date.now()): void {
    const w = this.windows.get(address);
    if (w && w.endsAt > now) {
      w.count++;
      return;
    }
    if (this.windows.size > MAX_ADDRESSES) {
      this.sweep(now);
      // Still full of live windows (many addresses failing at once): start over rather than walk the
      // whole map again on every failure. Forgetting counts errs on the side of letting requests in.
      if (this.windows.size > MAX_ADDRESSES) this.windows.clear();
    }
    this.windows.set(address, { count: 1, endsAt: now + this.opts.windowMs });
  }

  private sweep(now: number): void {
    for (const [address, w] of this.windows) if (w.endsAt <= now) this.windows.delete(address);
  }
}
