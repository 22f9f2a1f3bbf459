import { sql } from 'drizzle-orm';
import { integer, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * `unauthorized`: the company is paused (SPEC §5.1 F4): the marketplace refused its credentials (a fetch's
 * 401/403, or the check when they were set), and its fetches are parked until they are replaced.
 */
export const connectionStatus = pgEnum('connection_status', ['ok', 'unauthorized']);
/** Which spelling of the webhook-settings PUT the company's marketplace answered (SPEC §6). */
export const settingsPathForm = pgEnum('settings_path_form', ['plural', 'singular']);
/** How calls to the marketplace are authenticated (SPEC §14; marketplace/connection.ts builds the headers). */
export const connectionProfile = pgEnum('connection_profile', ['bearer', 'avinode']);
/**
 * What the one harmless call made when the credentials were set or replaced found (SPEC §14):
 * `unchecked` (never checked: a company from before the check existed), `accepted`, `refused` (the
 * marketplace or its token endpoint said no), `unreachable` (no answer, or a 5xx/429: try again later).
 */
export const credentialsStatus = pgEnum('credentials_status', ['unchecked', 'accepted', 'refused', 'unreachable']);

export const companies = pgTable('companies', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  apiBaseUrl: text('api_base_url').notNull(),
  /** AES-256-GCM with SECRET_KEY; never returned, never logged. Null for a bearer connection with OAuth client credentials. */
  apiTokenEncrypted: text('api_token_encrypted'),
  connectionProfile: connectionProfile('connection_profile').notNull().default('bearer'),
  /** avinode: the fixed `Authorization: Bearer` token, AES-256-GCM; null when OAuth client credentials give it. */
  authTokenEncrypted: text('auth_token_encrypted'),
  /** OAuth 2.0 client credentials: all three set, or none. */
  oauthTokenUrl: text('oauth_token_url'),
  oauthClientId: text('oauth_client_id'),
  oauthClientSecretEncrypted: text('oauth_client_secret_encrypted'),
  /** When the OAuth client secret expires, as the marketplace said when it was issued (SPEC §14); null: not recorded. */
  oauthClientSecretExpiresAt: timestamp('oauth_client_secret_expires_at', { withTimezone: true }),
  /**
   * Further base URLs the company's token may be sent to besides `api_base_url` (SPEC §14: the scheduling
   * product's host, say), normalised like it; an href under none of them is stored and never fetched.
   */
  extraBaseUrls: text('extra_base_urls').array().notNull().default(sql`'{}'`),
  /**
   * The last successful marketplace call with the company's credentials (SPEC §14: the marketplace deactivates
   * a connection unused for 60 days), written at most once a minute per company (companies/usage.ts).
   */
  connectionLastUsedAt: timestamp('connection_last_used_at', { withTimezone: true }),
  /** avinode: `X-Avinode-Product` and `X-Avinode-ApiVersion`. */
  product: text('product'),
  apiVersion: text('api_version'),
  /**
   * Raised whenever the API token or the connection is replaced: a 401 earned by older credentials neither
   * pauses the company nor lands on the newer credentials' check.
   */
  credentialsRevision: integer('credentials_revision').notNull().default(1),
  credentialsStatus: credentialsStatus('credentials_status').notNull().default('unchecked'),
  credentialsCheckedAt: timestamp('credentials_checked_at', { withTimezone: true }),
  credentialsError: text('credentials_error'),
  connectionStatus: connectionStatus('connection_status').notNull().default('ok'),
  connectionError: text('connection_error'),
  /** When the company was paused (connection_status became `unauthorized`); null while it is not. */
  pausedAt: timestamp('paused_at', { withTimezone: true }),
  /** At most this many fetches of the company at once, across every worker (SPEC §5.1 F2); null: COMPANY_FETCH_CONCURRENCY. */
  fetchConcurrency: integer('fetch_concurrency'),
  settingsPathForm: settingsPathForm('settings_path_form').notNull().default('plural'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export type CompanyRow = typeof companies.$inferSelect;

/** The company_id column of a company's own rows, deleted with it. */
export const ownedByCompany = () => uuid('company_id').notNull().references(() => companies.id, { onDelete: 'cascade' });

/**
 * The company_id column of a table that grows with traffic: no key to the company, whose deletion would then
 * delete them all in its transaction; they are purged in batches after it (src/companies/purge.ts).
 */
export const purgedWithCompany = () => uuid('company_id').notNull();

/**
 * A deleted company whose rows in the growing tables are being purged (SPEC §5.2): readers leave them out
 * meanwhile; the row goes once a purge finds nothing left, a while after the deletion (what was written in its moment).
 */
export const companyPurges = pgTable('company_purges', {
  companyId: uuid('company_id').primaryKey(),
  deletedAt: timestamp('deleted_at', { withTimezone: true }).notNull().defaultNow(),
});

/** SQL true for a row whose `column` (a company_id) names no company being purged: readers leave the others out. */
export const notPurging = (column: string): string => `${column} NOT IN (SELECT company_id FROM company_purges)`;
