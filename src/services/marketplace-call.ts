import { Problem } from '../lib/problem.js';
import { MarketplaceError } from '../marketplace/client.js';

/**
 * Marketplace failures become 502 problems naming what the marketplace said: entry by entry (its codes and
 * titles, read into one shape by the client whatever shape they came in), and in the detail.
 */
export async function marketplaceCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof MarketplaceError) {
      throw new Problem(502, 'Bad Gateway', `The marketplace refused the call: ${err.message}`, {
        code: `marketplace_${err.kind}`,
        errors: err.errors.map((e) => ({ field: e.field ?? 'marketplace', message: e.message, ...(e.code !== undefined ? { code: e.code } : {}) })),
      });
    }
    throw err;
  }
}
