/**
 * The worker's view of company API connections: status and decrypted connection, cached for a moment so a
 * busy worker does not query and decrypt per job. Replaced credentials or a lifted pause are seen within
 * TTL_MS; the worker's own 401 handling forgets the entry at once.
 */
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import type { Database } from '../db/client.js';
import { connectionFromRow } from '../db/company-connection.js';
import { companies } from '../db/schema/index.js';
import type { ApiConnection } from '../marketplace/connection.js';

const TTL_MS = 2000;
const MAX_CACHED = 10_000;

export interface CompanyConnection {
  paused: boolean;
  /** Its fetches at once, across every worker (SPEC §5.1 F2): its own limit, or the default. */
  maxFetches: number;
  connection: ApiConnection;
  /** The credentials revision the connection is of, to tell later whether they were replaced. */
  revision: number;
}

export class CompanyConnections {
  /** Boxed: an unknown company (null) is remembered too. */
  private readonly cache = new LRUCache<string, { value: CompanyConnection | null }>({ max: MAX_CACHED, ttl: TTL_MS });

  constructor(
    private readonly db: Database,
    private readonly secretKey: Buffer,
    /** COMPANY_FETCH_CONCURRENCY: the limit of a company without its own. */
    private readonly defaultMaxFetches: number,
  ) {}

  async get(companyId: string): Promise<CompanyConnection | null> {
    const hit = this.cache.get(companyId);
    if (hit) return hit.value;
    const [row] = await this.db.select().from(companies).where(eq(companies.id, companyId)).limit(1);
    const value = row
      ? {
          paused: row.connectionStatus === 'unauthorized',
          maxFetches: row.fetchConcurrency ?? this.defaultMaxFetches,
          connection: connectionFromRow(row, this.secretKey),
          revision: row.credentialsRevision,
        }
      : null;
    this.cache.set(companyId, { value });
    return value;
  }

  forget(companyId: string): void {
    this.cache.delete(companyId);
  }
}

/**
 * Pauses a company whose credentials the marketplace refused (SPEC §5.1 F4), only if `revision` is still its
 * credentials revision: credentials replaced meanwhile are not the ones refused. Answers whether it paused
 * it. `reason` is what the admin sees (connection_error); `paused_at` keeps the first refusal's time.
 */
export async function pauseCompany(client: Pick<pg.PoolClient, 'query'>, companyId: string, revision: number, reason: string): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE companies SET connection_status = 'unauthorized', connection_error = $2, updated_at = now(),
       paused_at = CASE WHEN connection_status = 'unauthorized' THEN coalesce(paused_at, now()) ELSE now() END
     WHERE id = $1 AND credentials_revision = $3`,
    [companyId, reason, revision],
  );
  return (rowCount ?? 0) > 0;
}
