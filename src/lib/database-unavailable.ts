/**
 * Whether an error means PostgreSQL is out of reach rather than the data wrong: lib/outages.ts reports it as
 * an outage, and every part that queries answers or waits accordingly (Redis's twin: lib/redis/connection.ts).
 */

/**
 * SQLSTATEs (and socket errors) meaning "the database is unreachable", not "your data is wrong".
 * drizzle wraps driver errors (DrizzleQueryError), so the causes are looked at too.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  const e = err as { code?: string; message?: string; cause?: unknown };
  if (!e || typeof e !== 'object' || depth > 3) return false;
  if (e.code && /^(08|53|57P0[1-3])/.test(e.code)) return true;
  if (e.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'].includes(e.code)) return true;
  if (/timeout exceeded when trying to connect|Connection terminated|connection timeout|Query read timeout/i.test(e.message ?? '')) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}
