/**
 * Companies and their marketplace connections (SPEC §7, §14): validated here, their state changed through
 * src/companies/ (the only writer of a company's pause, credentials' verdict and limit). Secrets (the API
 * token, an avinode auth token, an OAuth client secret) are encrypted here and never leave in clear except
 * to the marketplace client. Setting or replacing credentials checks them with one harmless call (the
 * settings list) and records what the marketplace said.
 */
import { asc, eq, gt, ilike, inArray, or, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { connectionBody } from './schemas.js';
import type { CompanyStates, CredentialColumns } from '../companies/states.js';
import { connectionWarnings } from '../companies/usage.js';
import type { CompanyState } from '../companies/transitions.js';
import type { Database } from '../db/client.js';
import { connectionFromRow, findCompany } from '../db/company-connection.js';
import { companies, type CompanyRow } from '../db/schema/index.js';
import type { GateView } from '../gate/gate.js';
import { encryptSecret } from '../lib/crypto.js';
import { storableText } from '../lib/json-body.js';
import { decodeCursor, isUuid, pageOf } from '../db/pagination.js';
import { badRequest, notFound, type FieldError } from '../lib/problem.js';
import type { ApiConnection } from '../marketplace/client.js';
import { changedFields, givenFields, type Audit } from '../access/audit.js';
import { WEBHOOK_CHANGES_CHANNEL } from '../receiver/authenticate.js';
import { companyThrottled, marketplaceCall } from './marketplace-call.js';
import { companyViewSchema, viewOf, type CompanyView } from './views.js';

/** The `connection` object of POST and PATCH /admin/companies. */
type ConnectionInput = z.infer<typeof connectionBody>;

const companyView = (c: CompanyRow, { state, gate }: { state: CompanyState; gate: GateView | undefined }, defaultMaxFetches: number): CompanyView => viewOf(companyViewSchema, c, {
  state,
  fetches: {
    limit: c.fetchConcurrency ?? defaultMaxFetches,
    ownLimit: c.fetchConcurrency,
    limitNow: gate?.limitNow ?? null,
    running: gate?.running ?? 0,
    parked: gate?.parked ?? 0,
  },
  connection: {
    profile: c.connectionProfile,
    product: c.product,
    apiVersion: c.apiVersion,
    tokenUrl: c.oauthTokenUrl,
    clientId: c.oauthClientId,
    clientSecretExpiresAt: c.oauthClientSecretExpiresAt?.toISOString() ?? null,
    baseUrls: c.extraBaseUrls,
    storedSecrets: [
      ...(c.apiTokenEncrypted !== null ? (['apiToken'] as const) : []),
      ...(c.authTokenEncrypted !== null ? (['authToken'] as const) : []),
      ...(c.oauthClientSecretEncrypted !== null ? (['clientSecret'] as const) : []),
    ],
  },
  credentials: { status: c.credentialsStatus, checkedAt: c.credentialsCheckedAt?.toISOString() ?? null, error: c.credentialsError },
  connectionWarnings: connectionWarnings(c, Date.now()),
});

interface CompaniesDeps {
  db: Database;
  secretKey: Buffer;
  requireHttps: boolean;
  /** The companies' states and their gates (SPEC §5.1): every change of a company goes through it. */
  states: Pick<CompanyStates, 'change' | 'check' | 'states' | 'heldUntil' | 'hold'>;
  /** COMPANY_FETCH_CONCURRENCY. */
  defaultMaxFetches: number;
}

/** A company's columns by the field names of its view and requests (the audit log names the fields a change changed). */
const COMPANY_FIELDS = {
  name: 'name',
  fetchConcurrency: 'fetchConcurrency',
  // A secret given is sealed anew (a fresh nonce): it always differs, and says nothing of the one it replaces.
  apiTokenEncrypted: 'apiToken',
  connectionProfile: 'connection.profile',
  authTokenEncrypted: 'connection.authToken',
  oauthTokenUrl: 'connection.tokenUrl',
  oauthClientId: 'connection.clientId',
  oauthClientSecretEncrypted: 'connection.clientSecret',
  oauthClientSecretExpiresAt: 'connection.clientSecretExpiresAt',
  extraBaseUrls: 'connection.baseUrls',
  product: 'connection.product',
  apiVersion: 'connection.apiVersion',
} as const;

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createCompaniesService(deps: CompaniesDeps) {
  const { db, secretKey } = deps;

  /** Why `raw` is not an absolute http(s) URL without credentials or a fragment (https in production), or null. */
  function urlProblem(raw: string, opts: { query: boolean }): string | null {
    const url = URL.canParse(raw) ? new URL(raw) : null;
    if (!url || !['http:', 'https:'].includes(url.protocol)) return 'must be an absolute http(s) URL';
    if (deps.requireHttps && url.protocol !== 'https:') return 'must use https';
    if (url.username || url.password || url.hash || (!opts.query && url.search)) return `must not carry ${opts.query ? 'credentials or a fragment' : 'credentials, a query or a fragment'}`;
    return null;
  }

  const refuse = (problems: FieldError[]) => badRequest(problems.map((p) => `${p.field} ${p.message}.`).join(' '), problems);

  function normaliseBaseUrl(raw: string): string {
    const problem = urlProblem(raw, { query: false });
    if (problem) throw refuse([{ field: 'apiBaseUrl', message: problem }]);
    return new URL(raw).toString().replace(/\/+$/, '');
  }

  const seal = (value: string | undefined) => (value === undefined ? null : encryptSecret(secretKey, value));

  /**
   * The columns of a new connection, every one of them (nothing of the previous connection is left), checked
   * with the API token that goes with it (given now, or kept from before): every problem named by its field.
   */
  function connectionColumns(connection: ConnectionInput, apiToken: { given?: string; stored: string | null }) {
    const problems: FieldError[] = [];
    const oauth = connection.tokenUrl !== undefined;
    const hasApiToken = apiToken.given !== undefined || apiToken.stored !== null;
    if (connection.profile === 'avinode' && !hasApiToken) problems.push({ field: 'apiToken', message: 'is required by the avinode profile (it is sent as X-Avinode-ApiToken)' });
    if (connection.profile === 'bearer' && !oauth && !hasApiToken) problems.push({ field: 'apiToken', message: 'is required by the bearer profile without OAuth client credentials' });
    if (connection.profile === 'bearer' && oauth && apiToken.given !== undefined) problems.push({ field: 'apiToken', message: 'is not sent by a bearer connection with OAuth client credentials: leave it out' });
    const tokenUrlProblem = connection.tokenUrl === undefined ? null : urlProblem(connection.tokenUrl, { query: true });
    if (tokenUrlProblem) problems.push({ field: 'connection.tokenUrl', message: tokenUrlProblem });
    const baseUrls = connection.baseUrls ?? [];
    baseUrls.forEach((raw, i) => {
      const problem = urlProblem(raw, { query: false });
      if (problem) problems.push({ field: `connection.baseUrls.${i}`, message: problem });
    });
    if (problems.length > 0) throw refuse(problems);
    return {
      // A bearer connection with OAuth sends no API token: one kept from before is dropped, not left unused.
      apiTokenEncrypted: connection.profile === 'bearer' && oauth ? null : apiToken.given !== undefined ? seal(apiToken.given) : apiToken.stored,
      connectionProfile: connection.profile,
      authTokenEncrypted: seal(connection.authToken),
      oauthTokenUrl: connection.tokenUrl === undefined ? null : new URL(connection.tokenUrl).toString(),
      oauthClientId: connection.clientId ?? null,
      oauthClientSecretEncrypted: seal(connection.clientSecret),
      oauthClientSecretExpiresAt: connection.clientSecretExpiresAt === undefined ? null : new Date(connection.clientSecretExpiresAt),
      extraBaseUrls: [...new Set(baseUrls.map((raw) => new URL(raw).toString().replace(/\/+$/, '')))],
      product: connection.product ?? null,
      apiVersion: connection.apiVersion ?? null,
    };
  }

  /** An API token replacing the stored one, the rest of the connection kept. */
  function apiTokenColumns(current: CompanyRow, apiToken: string): CredentialColumns {
    if (current.connectionProfile === 'bearer' && current.oauthTokenUrl !== null) {
      throw refuse([{ field: 'apiToken', message: 'is not sent by this bearer connection, whose token comes from OAuth client credentials: replace the connection instead' }]);
    }
    return { apiTokenEncrypted: seal(apiToken) };
  }

  async function getRow(companyId: string): Promise<CompanyRow> {
    const row = await findCompany(db, companyId);
    if (!row) throw notFound(`Company ${companyId}`);
    return row;
  }

  /** The views of these rows, with their states (from PostgreSQL alone if Redis cannot be read). */
  async function views(rows: CompanyRow[]): Promise<CompanyView[]> {
    const states = await deps.states.states(rows);
    return rows.map((r, i) => companyView(r, states[i]!, deps.defaultMaxFetches));
  }

  const view = async (row: CompanyRow) => (await views([row]))[0]!;

  return {
    /** Stored, then checked: the answer's `credentials` says whether the marketplace accepted them (a call: in the audit log, before and after). */
    async create(input: { name: string; apiBaseUrl: string; apiToken?: string; connection?: ConnectionInput }, audit: Pick<Audit, 'call'>): Promise<CompanyView> {
      const apiBaseUrl = normaliseBaseUrl(input.apiBaseUrl);
      const columns = connectionColumns(input.connection ?? { profile: 'bearer' }, { given: input.apiToken, stored: null });
      const made = async () => {
        const [row] = await db
          .insert(companies)
          .values({ name: input.name, apiBaseUrl, ...columns })
          .returning();
        return view((await deps.states.check(row!.id)) ?? row!);
      };
      return audit.call({ fields: givenFields(input) }, made, (company) => ({ companyId: company.id, details: { credentials: company.credentials.status } }));
    },

    async list(opts: { limit: number; cursor?: string }): Promise<{ items: CompanyView[]; nextCursor: string | null }> {
      const after = opts.cursor === undefined ? undefined : decodeCursor(opts.cursor, isUuid);
      const rows = await db
        .select()
        .from(companies)
        .where(after ? gt(companies.id, after) : undefined)
        .orderBy(asc(companies.id))
        .limit(opts.limit + 1);
      const page = pageOf(rows, opts.limit, (last) => last.id, (row) => row);
      return { items: await views(page.items), nextCursor: page.nextCursor };
    },

    async get(companyId: string): Promise<CompanyView> {
      return view(await getRow(companyId));
    },

    /**
     * At most `limit` companies (1 to 100) whose name contains `query` in any case (`%` and `_` are matched as
     * themselves), or whose id it is: the id's, then the whole name's, then the names starting with it, each
     * group by name. An empty query: the first by name. Only what a picker shows is read: no gate is asked.
     * Two columns of one table, sorted in memory for the first `limit`: a contains-search no btree index can
     * serve, so it reads the table; at 10,000 companies, 5 to 17 ms (a pg_trgm index would serve it, at the
     * cost of the extension and a migration).
     */
    async search(query: string, limit: number): Promise<{ id: string; name: string }[]> {
      const q = query.trim();
      if (!storableText(q)) throw badRequest('The search contains a NUL character or a lone surrogate, which no name can contain.', [{ field: 'q', message: 'must not contain a NUL character or a lone surrogate' }]);
      const id = isUuid(q) ? q.toLowerCase() : undefined;
      // LIKE's escape character is the backslash: the operator's text matches as it is written.
      const literal = q.replace(/[\\%_]/g, '\\$&');
      const rank = sql`CASE WHEN ${companies.id} = ${id ?? null}::uuid THEN 0 WHEN ${companies.name} ILIKE ${literal} THEN 1 WHEN ${companies.name} ILIKE ${`${literal}%`} THEN 2 ELSE 3 END`;
      return db
        .select({ id: companies.id, name: companies.name })
        .from(companies)
        .where(q === '' ? undefined : or(ilike(companies.name, `%${literal}%`), id ? eq(companies.id, id) : undefined))
        .orderBy(rank, sql`lower(${companies.name})`, asc(companies.id))
        .limit(Math.min(100, Math.max(1, Math.floor(limit))));
    },

    /** The names of these companies, by id (tables show them beside ids). */
    async names(companyIds: string[]): Promise<Map<string, string>> {
      const ids = [...new Set(companyIds)].filter(isUuid);
      if (ids.length === 0) return new Map();
      const rows = await db.select({ id: companies.id, name: companies.name }).from(companies).where(inArray(companies.id, ids));
      return new Map(rows.map((r) => [r.id, r.name]));
    },

    /**
     * New credentials (an API token, a connection, or both) raise the credentials revision, lift a pause (the
     * company's waiting notifications are queued again at once) and are checked like a new company's. A
     * connection replaces the whole previous one; an API token not given is kept. A new fetch limit applies
     * at once.
     */
    async update(companyId: string, patch: { name?: string; apiToken?: string; connection?: ConnectionInput; fetchConcurrency?: number | null }, audit: Pick<Audit, 'change' | 'call'>): Promise<CompanyView> {
      const current = await getRow(companyId);
      const credentials =
        patch.connection !== undefined
          ? connectionColumns(patch.connection, { given: patch.apiToken, stored: current.apiTokenEncrypted })
          : patch.apiToken !== undefined
            ? apiTokenColumns(current, patch.apiToken)
            : undefined;
      const change = { name: patch.name, fetchConcurrency: patch.fetchConcurrency, credentials };
      const fields = changedFields(current, { name: patch.name, fetchConcurrency: patch.fetchConcurrency, ...credentials }, COMPANY_FIELDS);
      const found = (row: CompanyRow | undefined) => row ?? Promise.reject(notFound(`Company ${companyId}`));
      // New credentials are checked with a call to the marketplace; a name or a limit is a change of the database alone.
      const row = credentials
        ? await audit.call({ fields }, async () => found(await deps.states.change(companyId, change)), (r) => ({ details: { credentials: r.credentialsStatus } }))
        : await audit.change(async (within) => ({ value: await found(await deps.states.change(companyId, change, within)), fields }));
      // The receivers' cached webhooks carry the company's base URLs: a new connection reaches them at once.
      if (patch.connection !== undefined) await db.execute(sql`SELECT pg_notify(${WEBHOOK_CHANGES_CHANNEL}, '')`);
      return view(row);
    },

    /**
     * The company's row and its connection, decrypted for the marketplace client, and `call` to make a call
     * with it. A company the marketplace asked to wait is answered 503 with Retry-After, and a call that
     * meets a 429 holds the company (SPEC §5.1 F3: calls queue nothing, see docs/decisions.md).
     */
    async connection(companyId: string): Promise<{ row: CompanyRow; conn: ApiConnection; call: <T>(send: () => Promise<T>) => Promise<T> }> {
      const row = await getRow(companyId);
      const heldUntil = await deps.states.heldUntil(companyId);
      if (heldUntil !== null) throw companyThrottled(companyId, heldUntil);
      const throttled = (retryAfterMs: number | undefined, why: string) => deps.states.hold(companyId, retryAfterMs, why);
      return { row, conn: connectionFromRow(row, secretKey), call: (send) => marketplaceCall(send, throttled) };
    },

    async rememberSettingsPath(companyId: string, form: 'plural' | 'singular'): Promise<void> {
      await db.update(companies).set({ settingsPathForm: form }).where(eq(companies.id, companyId));
    },
  };

}

export type CompaniesService = ReturnType<typeof createCompaniesService>;
