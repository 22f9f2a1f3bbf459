import { sql } from 'drizzle-orm';
import { bigint, check, index, jsonb, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { companies } from './companies.js';
import { timeId } from './partitioned.js';
import { bytea } from './webhooks.js';

/** SPEC §10.1: what a key may do (access/roles.ts holds the table of permissions). */
export const keyRole = pgEnum('key_role', ['admin', 'operator', 'viewer', 'company']);

/**
 * Keys to the admin API, the console and the remote CLI (SPEC §10.1). Only the key's SHA-256 is kept (it
 * is 32 random bytes: a slow hash adds nothing), found by a unique index. A revoked key stays listed.
 * A company key goes with its company.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    name: text('name').notNull(),
    role: keyRole('role').notNull(),
    companyId: uuid('company_id').references(() => companies.id, { onDelete: 'cascade' }),
    digest: bytea('digest').notNull(),
    /** The key's first characters (`skh_AbCd`), to tell keys apart in a list and in a secret scanner's report. */
    hint: text('hint').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    /** Written at most once a minute per process (access/keys.ts). */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('api_keys_digest_idx').on(t.digest), check('api_keys_company_role', sql`(${t.role} = 'company') = (${t.companyId} IS NOT NULL)`)],
);

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/**
 * Who changed what (SPEC §10.1). A change of the database alone is one row, appended in the change's own
 * transaction; a change that calls outside it (the marketplace) is two: `started` before the call, then
 * its outcome (a row whose `settles` names the first), so an entry left `started` says the process stopped
 * during the call (access/audit.ts). No foreign key: a deleted company or key must not take its entries
 * with it. A trigger (migration 0013) refuses UPDATE, DELETE and TRUNCATE: entries go only by retention.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('audit_log')),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    /** `key`, `bootstrap` (ADMIN_TOKEN) or `local` (the CLI on the database's own environment). */
    actorKind: text('actor_kind').notNull(),
    /** The key's id; null for the bootstrap token and the local CLI. */
    actorId: uuid('actor_id'),
    /** The key's name, `ADMIN_TOKEN`, or the local user (`cli:alice`). */
    actorName: text('actor_name').notNull(),
    /** The client's address (null for the local CLI). */
    address: text('address'),
    action: text('action').notNull(),
    companyId: uuid('company_id'),
    /** The ids acted on, by name (`{webhookId: ...}`). */
    targets: jsonb('targets').$type<Record<string, string | number>>().notNull().default({}),
    /** `ok`, `refused` (a 4xx, the marketplace's 502 included) or `failed`; a call's first row `started`, its second the outcome. */
    outcome: text('outcome').notNull(),
    /** The `started` row of the call this row gives the outcome of (null for every other row). */
    settles: bigint('settles', { mode: 'number' }),
    /** The names of the fields changed, never their values. */
    fields: text('fields').array().notNull().default(sql`'{}'::text[]`),
    /** A bulk action's filter and count, a refusal's status and the names of the fields it was sent: never a secret. */
    details: jsonb('details').$type<Record<string, unknown>>(),
  },
  (t) => [
    index('audit_log_at_idx').on(t.at),
    index('audit_log_company_idx').on(t.companyId, t.id),
    index('audit_log_actor_idx').on(t.actorId, t.id),
    index('audit_log_settles_idx').on(t.settles).where(sql`settles IS NOT NULL`),
  ],
);
