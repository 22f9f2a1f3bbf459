/**
 * Rate limit of failed authentication per client address (SPEC §10): once an address has had `limit`
 * refusals (401) in a window, its further refusals are 429 with Retry-After until the window ends. Only
 * refusals are limited: a request whose credentials are valid is always served, whatever its address did
 * before, so a marketplace behind a shared address (or a proxy without TRUST_PROXY) is never locked out by
 * someone else's failures. In memory, per process: N api processes allow N times the limit, which still
 * tells a guesser to slow down.
 */
import { Problem } from './problem.js';

const MAX_ADDRESSES = 100_000;

export class AuthFailureLimiter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(private readonly opts: { limit: number; windowMs: number }) {}

  /** Counts a refusal of `address`, and answers it: `unauthorized` itself, or a 429 once the address is over the limit. */
  refusal(address: string, unauthorized: Problem, now = Date.now()): Problem {
    let w = this.windows.get(address);
    if (w && w.endsAt > now) w.count++;
    else {
      if (this.windows.size > MAX_ADDRESSES) {
        for (const [other, x] of this.windows) if (x.endsAt <= now) this.windows.delete(other);
        // Still full of live windows (many addresses failing at once): start over rather than walk the
        // whole map again on every failure. Forgetting counts errs on the side of letting requests in.
        if (this.windows.size > MAX_ADDRESSES) this.windows.clear();
      }
      w = { count: 1, endsAt: now + this.opts.windowMs };
      this.windows.set(address, w);
    }
    if (w.count <= this.opts.limit) return unauthorized;
    return new Problem(429, 'Too Many Requests', 'Too many failed authentications from this address; retry later.', {
      code: 'too_many_auth_failures',
      headers: { 'retry-after': String(Math.ceil((w.endsAt - now) / 1000)) },
    });
  }
}
