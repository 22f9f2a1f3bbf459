import { Problem } from '../lib/problem.js';
import { MarketplaceError } from '../marketplace/client.js';

/**
 * Marketplace failures become 502 problems naming what the marketplace said: entry by entry (its codes and
 * titles, read into one shape by the client whatever shape they came in), and in the detail. A refusal to
 * go faster (429, or 503 with Retry-After) also holds the company's other calls and fetches (SPEC §5.1 F3):
 * `throttled` is told of it.
 */
export async function marketplaceCall<T>(call: () => Promise<T>, throttled?: (retryAfterMs: number | undefined, why: string) => Promise<void>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof MarketplaceError) {
      if (throttled && (err.status === 429 || (err.status === 503 && err.retryAfterMs !== undefined))) await throttled(err.retryAfterMs, err.message);
      throw new Problem(502, 'Bad Gateway', `The marketplace refused the call: ${err.message}`, {
        code: `marketplace_${err.kind}`,
        errors: err.errors.map((e) => ({ field: e.field ?? 'marketplace', message: e.message, ...(e.code !== undefined ? { code: e.code } : {}) })),
      });
    }
    throw err;
  }
}

/** The answer to a call of a company the marketplace asked to wait (SPEC §5.1 F3): 503 with Retry-After, nothing sent. */
export function companyThrottled(companyId: string, untilMs: number): Problem {
  const seconds = Math.max(1, Math.ceil((untilMs - Date.now()) / 1000));
  return new Problem(503, 'Service Unavailable', `The marketplace asked company ${companyId}'s calls to wait until ${new Date(untilMs).toISOString()}; nothing was sent. Try again after Retry-After.`, {
    code: 'company_throttled',
    headers: { 'retry-after': String(seconds) },
  });
}
