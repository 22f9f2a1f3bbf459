import { boolean, customType, index, integer, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { ownedByCompany } from './companies.js';

export const authType = pgEnum('auth_type', ['BASIC', 'OAUTH']);

export const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' });

/**
 * Skyhook's row for one webhook setting on the marketplace. A BASIC secret is kept only as its SHA-256
 * (it is 32 random bytes, so a slow KDF adds nothing); an OAUTH secret must be kept encrypted because
 * verifying a signature needs it.
 */
export const webhooks = pgTable(
  'webhooks',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    companyId: ownedByCompany(),
    remoteId: text('remote_id').notNull(),
    remoteVersion: integer('remote_version'),
    endpointKey: text('endpoint_key').notNull().unique(),
    /** Where the marketplace posts: this webhook's own URL or the shared `/hooks`. */
    targetUri: text('target_uri').notNull(),
    clientIdentifier: text('client_identifier').notNull().unique(),
    authType: authType('auth_type').notNull(),
    secretSha256: bytea('secret_sha256'),
    secretEncrypted: text('secret_encrypted'),
    previousSecretSha256: bytea('previous_secret_sha256'),
    previousSecretEncrypted: text('previous_secret_encrypted'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    eventTypes: text('event_types').array().notNull(),
    displayName: text('display_name').notNull(),
    active: boolean('active').notNull().default(true),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('webhooks_company_idx').on(t.companyId)],
);

export type WebhookRow = typeof webhooks.$inferSelect;
