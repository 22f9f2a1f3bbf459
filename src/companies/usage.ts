/**
 * When a company's marketplace connection was last used successfully (SPEC §14: the marketplace deactivates a
 * connection it has not seen used for 60 days). Any 2xx answer counts (assumed), a fetch's or an admin call's.
 * Recorded cheaply: at most one write a minute per company and process, and the statement itself skips a row
 * written less than a minute ago, so a busy company costs a write a minute, not one per call.
 */
import { and, asc, eq, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { companies } from '../db/schema/index.js';

/** How often a company's last use is written, at most. */
export const USAGE_WRITE_INTERVAL_MS = 60_000;

/** The marketplace deactivates a connection unused this long; Skyhook warns ten days before (SPEC §14). */
export const CONNECTION_IDLE_LIMIT_DAYS = 60;
export const CONNECTION_IDLE_WARN_DAYS = 50;
/** A quiet company gets one harmless call when its connection was last used this long ago (jobs in companies/keep-alive.ts). */
export const CONNECTION_KEEP_ALIVE_DAYS = 30;
/** An OAuth client secret is warned about this long before it expires. */
export const CLIENT_SECRET_WARN_DAYS = 14;

const DAY_MS = 86_400_000;

export class ConnectionUsage {
  private readonly lastWrite = new Map<string, number>();

  constructor(
    private readonly db: Pick<Database, 'update'>,
    /** A write that failed: reported (rate-limited) and counted by the caller; the next call writes again. */
    private readonly onError: (err: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A successful call with the company's credentials: written unless this process wrote it within the interval. */
  used(companyId: string | undefined): void {
    if (companyId === undefined) return;
    const at = this.now();
    if (at - (this.lastWrite.get(companyId) ?? -Infinity) < USAGE_WRITE_INTERVAL_MS) return;
    this.lastWrite.set(companyId, at);
    const stale = sql`now() - make_interval(secs => ${USAGE_WRITE_INTERVAL_MS / 1000})`;
    this.db
      .update(companies)
      .set({ connectionLastUsedAt: sql`now()` })
      .where(and(eq(companies.id, companyId), or(isNull(companies.connectionLastUsedAt), lt(companies.connectionLastUsedAt, stale))))
      .then(
        () => undefined,
        (err: unknown) => {
          this.lastWrite.delete(companyId);
          this.onError(err);
        },
      );
  }
}

/** What a company's connection needs an operator for soon, as its view and the metrics say it. */
export interface ConnectionWarning {
  kind: 'connection_unused' | 'client_secret_expiring';
  /** When the marketplace deactivates the connection, or the secret expires. */
  at: string;
  message: string;
}

/**
 * The warnings of one company's connection at `now`: unused for CONNECTION_IDLE_WARN_DAYS (since its last
 * successful call, or since the company was created when it never made one), or an OAuth client secret
 * expiring within CLIENT_SECRET_WARN_DAYS (or expired).
 */
export function connectionWarnings(
  c: { connectionLastUsedAt: Date | null; createdAt: Date; oauthClientSecretExpiresAt: Date | null; oauthClientSecretEncrypted: string | null },
  now: number,
): ConnectionWarning[] {
  const warnings: ConnectionWarning[] = [];
  const since = (c.connectionLastUsedAt ?? c.createdAt).getTime();
  if (now - since >= CONNECTION_IDLE_WARN_DAYS * DAY_MS) {
    const at = new Date(since + CONNECTION_IDLE_LIMIT_DAYS * DAY_MS);
    warnings.push({
      kind: 'connection_unused',
      at: at.toISOString(),
      message: `the connection was last used ${c.connectionLastUsedAt ? c.connectionLastUsedAt.toISOString() : 'never (created ' + c.createdAt.toISOString() + ')'}; the marketplace deactivates a connection unused for ${CONNECTION_IDLE_LIMIT_DAYS} days, ${at.getTime() > now ? 'on' : 'since'} ${at.toISOString()}`,
    });
  }
  const expires = c.oauthClientSecretEncrypted !== null ? c.oauthClientSecretExpiresAt : null;
  if (expires && expires.getTime() - now <= CLIENT_SECRET_WARN_DAYS * DAY_MS) {
    warnings.push({
      kind: 'client_secret_expiring',
      at: expires.toISOString(),
      message: `the OAuth client secret ${expires.getTime() > now ? 'expires' : 'expired'} ${expires.toISOString()}: get a new one from the marketplace and replace the connection`,
    });
  }
  return warnings;
}

/**
 * The warnings of the companies that have one now, for the gauges (`skyhook_connection_warning`): the few
 * that may warn are picked by PostgreSQL, so the scrape's read does not grow with healthy companies.
 */
export async function allConnectionWarnings(db: Pick<Database, 'select'>, now = Date.now()): Promise<{ id: string; warnings: ConnectionWarning[] }[]> {
  const unusedSince = new Date(now - CONNECTION_IDLE_WARN_DAYS * DAY_MS);
  const expiringBy = new Date(now + CLIENT_SECRET_WARN_DAYS * DAY_MS);
  const rows = await db
    .select({
      id: companies.id,
      connectionLastUsedAt: companies.connectionLastUsedAt,
      createdAt: companies.createdAt,
      oauthClientSecretExpiresAt: companies.oauthClientSecretExpiresAt,
      oauthClientSecretEncrypted: companies.oauthClientSecretEncrypted,
    })
    .from(companies)
    .where(or(sql`coalesce(${companies.connectionLastUsedAt}, ${companies.createdAt}) <= ${unusedSince}`, and(isNotNull(companies.oauthClientSecretEncrypted), lte(companies.oauthClientSecretExpiresAt, expiringBy))))
    .orderBy(asc(companies.id));
  return rows.map((r) => ({ id: r.id, warnings: connectionWarnings(r, now) })).filter((c) => c.warnings.length > 0);
}
