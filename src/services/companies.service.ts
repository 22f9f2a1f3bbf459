/** Companies and their API connections. The token is encrypted at rest and never leaves this module in clear except to the marketplace client. */
import { asc, eq, gt, inArray } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { companies, type CompanyRow } from '../db/schema/index.js';
import { decryptSecret, encryptSecret } from '../lib/crypto.js';
import { decodeCursor, encodeCursor, isUuid } from '../db/pagination.js';
import { badRequest, notFound } from '../lib/problem.js';
import type { ApiConnection } from '../marketplace/client.js';
import type { CompanyView } from './views.js';

export type { CompanyView };

export const companyView = (c: CompanyRow): CompanyView => ({
  id: c.id,
  name: c.name,
  apiBaseUrl: c.apiBaseUrl,
  connectionStatus: c.connectionStatus,
  connectionError: c.connectionError,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
});

export interface CompaniesDeps {
  db: Database;
  secretKey: Buffer;
  requireHttps: boolean;
}

export function createCompaniesService(deps: CompaniesDeps) {
  const { db, secretKey } = deps;

  function normaliseBaseUrl(raw: string): string {
    const url = URL.canParse(raw) ? new URL(raw) : null;
    if (!url || !['http:', 'https:'].includes(url.protocol)) throw badRequest('apiBaseUrl must be an absolute http(s) URL.', [{ field: 'apiBaseUrl', message: 'must be an absolute http(s) URL' }]);
    if (deps.requireHttps && url.protocol !== 'https:') throw badRequest('apiBaseUrl must use https.', [{ field: 'apiBaseUrl', message: 'must use https' }]);
    if (url.username || url.password || url.search || url.hash) throw badRequest('apiBaseUrl must not carry credentials, a query or a fragment.', [{ field: 'apiBaseUrl', message: 'must not carry credentials, a query or a fragment' }]);
    return url.toString().replace(/\/+$/, '');
  }

  async function getRow(companyId: string): Promise<CompanyRow> {
    const [row] = await db.select().from(companies).where(eq(companies.id, companyId)).limit(1);
    if (!row) throw notFound(`Company ${companyId}`);
    return row;
  }

  return {
    async create(input: { name: string; apiBaseUrl: string; apiToken: string }): Promise<CompanyView> {
      const [row] = await db
        .insert(companies)
        .values({ name: input.name, apiBaseUrl: normaliseBaseUrl(input.apiBaseUrl), apiTokenEncrypted: encryptSecret(secretKey, input.apiToken) })
        .returning();
      return companyView(row!);
    },

    async list(opts: { limit: number; cursor?: string }): Promise<{ items: CompanyView[]; nextCursor: string | null }> {
      const after = opts.cursor === undefined ? undefined : decodeCursor(opts.cursor, isUuid);
      const rows = await db
        .select()
        .from(companies)
        .where(after ? gt(companies.id, after) : undefined)
        .orderBy(asc(companies.id))
        .limit(opts.limit + 1);
      const items = rows.slice(0, opts.limit).map(companyView);
      return { items, nextCursor: rows.length > opts.limit ? encodeCursor(items.at(-1)!.id) : null };
    },

    async get(companyId: string): Promise<CompanyView> {
      return companyView(await getRow(companyId));
    },

    /** The names of these companies, by id (tables show them beside ids). */
    async names(companyIds: string[]): Promise<Map<string, string>> {
      const ids = [...new Set(companyIds)].filter(isUuid);
      if (ids.length === 0) return new Map();
      const rows = await db.select({ id: companies.id, name: companies.name }).from(companies).where(inArray(companies.id, ids));
      return new Map(rows.map((r) => [r.id, r.name]));
    },

    /** Replacing the token also lifts an `unauthorized` pause: the paused fetches resume by themselves. */
    async update(companyId: string, patch: { name?: string; apiToken?: string }): Promise<CompanyView> {
      await getRow(companyId);
      const [row] = await db
        .update(companies)
        .set({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.apiToken !== undefined ? { apiTokenEncrypted: encryptSecret(secretKey, patch.apiToken), connectionStatus: 'ok' as const, connectionError: null } : {}),
          updatedAt: new Date(),
        })
        .where(eq(companies.id, companyId))
        .returning();
      return companyView(row!);
    },

    async connection(companyId: string): Promise<{ row: CompanyRow; conn: ApiConnection }> {
      const row = await getRow(companyId);
      return { row, conn: { baseUrl: row.apiBaseUrl, token: decryptSecret(secretKey, row.apiTokenEncrypted) } };
    },

    async rememberSettingsPath(companyId: string, form: 'plural' | 'singular'): Promise<void> {
      await db.update(companies).set({ settingsPathForm: form }).where(eq(companies.id, companyId));
    },
  };
}

export type CompaniesService = ReturnType<typeof createCompaniesService>;
