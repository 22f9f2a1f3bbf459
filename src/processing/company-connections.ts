/**
 * The worker's view of company API connections: status and decrypted token, cached for a moment so a
 * busy worker does not query and decrypt per job. A replaced token or a lifted pause is seen within
 * TTL_MS; the worker's own 401 handling forgets the entry at once.
 */
import { eq } from 'drizzle-orm';
import type pg from 'pg';
import type { Database } from '../db/client.js';
import { companies } from '../db/schema/index.js';
import { decryptSecret } from '../lib/crypto.js';

const TTL_MS = 2000;

export interface CompanyConnection {
  paused: boolean;
  apiToken: string;
  /** The token as stored, to tell later whether it was replaced. */
  sealedToken: string;
}

export class CompanyConnections {
  private readonly cache = new Map<string, { value: CompanyConnection | null; expiresAt: number }>();

  constructor(
    private readonly db: Database,
    private readonly secretKey: Buffer,
  ) {}

  async get(companyId: string): Promise<CompanyConnection | null> {
    const now = Date.now();
    const hit = this.cache.get(companyId);
    if (hit && hit.expiresAt > now) return hit.value;
    const [row] = await this.db
      .select({ status: companies.connectionStatus, token: companies.apiTokenEncrypted })
      .from(companies)
      .where(eq(companies.id, companyId))
      .limit(1);
    const value = row ? { paused: row.status === 'unauthorized', apiToken: decryptSecret(this.secretKey, row.token), sealedToken: row.token } : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(companyId, { value, expiresAt: now + TTL_MS });
    return value;
  }

  forget(companyId: string): void {
    this.cache.delete(companyId);
  }
}

/**
 * Pauses a company whose token the marketplace refused (SPEC §5), only if `sealedToken` is still its token:
 * a token replaced meanwhile is not the one refused. Answers whether it paused it. `reason` is what the
 * admin sees (connection_error).
 */
export async function pauseCompany(client: Pick<pg.PoolClient, 'query'>, companyId: string, sealedToken: string, reason: string): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE companies SET connection_status = 'unauthorized', connection_error = $2, updated_at = now() WHERE id = $1 AND api_token_encrypted = $3`,
    [companyId, reason, sealedToken],
  );
  return (rowCount ?? 0) > 0;
}
