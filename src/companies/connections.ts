/**
 * The worker's view of company API connections: status and decrypted connection, cached for a moment so a
 * busy worker does not query and decrypt per job. Replaced credentials or a lifted pause are seen within
 * TTL_MS; the worker's own 401 handling forgets the entry at once.
 */
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
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
