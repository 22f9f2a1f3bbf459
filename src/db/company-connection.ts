/**
 * A company row's marketplace connection, decrypted for a call: the one reading of the connection columns,
 * shared by the services (admin calls) and the worker (href fetches). Its secrets never go further than the
 * marketplace client.
 */
import type { ApiConnection } from '../marketplace/connection.js';
import { decryptSecret } from '../lib/crypto.js';
import { eq } from 'drizzle-orm';
import type { Database } from './client.js';
import { companies, type CompanyRow } from './schema/index.js';

export function connectionFromRow(row: CompanyRow, secretKey: Buffer): ApiConnection {
  const open = (sealed: string | null) => (sealed === null ? undefined : decryptSecret(secretKey, sealed));
  const clientSecret = open(row.oauthClientSecretEncrypted);
  return {
    baseUrl: row.apiBaseUrl,
    companyId: row.id,
    revision: row.credentialsRevision,
    profile: row.connectionProfile,
    apiToken: open(row.apiTokenEncrypted),
    authToken: open(row.authTokenEncrypted),
    product: row.product ?? undefined,
    apiVersion: row.apiVersion ?? undefined,
    oauth: row.oauthTokenUrl !== null && row.oauthClientId !== null && clientSecret !== undefined ? { tokenUrl: row.oauthTokenUrl, clientId: row.oauthClientId, clientSecret } : undefined,
  };
}

/** One company's row, or undefined. */
export async function findCompany(db: Pick<Database, 'select'>, companyId: string): Promise<CompanyRow | undefined> {
  const [row] = await db.select().from(companies).where(eq(companies.id, companyId)).limit(1);
  return row;
}
