import { index, integer, jsonb, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ownedByCompany } from './companies.js';

/**
 * `sending` marks the one request allowed to call the marketplace for a (company, key); concurrent
 * repeats wait for it to become `created`. `unknown`: the call may have reached the marketplace, but
 * no success was read (services/send-once.ts); only quotes and declines are held so: a lead is safe to resend.
 */
export const outboundStatus = pgEnum('outbound_status', ['sending', 'created', 'unknown']);

/** Client leads Skyhook created on the marketplace for a company; idempotent by clientIdentifier. */
export const leads = pgTable(
  'leads',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    companyId: ownedByCompany(),
    clientIdentifier: text('client_identifier').notNull(),
    kind: text('kind').notNull(),
    status: outboundStatus('status').notNull().default('sending'),
    /** The marketplace's id of the lead (its answer's data.id). */
    remoteId: text('remote_id'),
    request: jsonb('request').notNull(),
    response: jsonb('response'),
    /** The snapshot of this lead, once a `leads` notification for it was fetched. */
    resourceHref: text('resource_href'),
    snapshotVersion: integer('snapshot_version'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('leads_company_client_identifier_key').on(t.companyId, t.clientIdentifier), index('leads_remote_id_idx').on(t.companyId, t.remoteId)],
);

export type LeadRow = typeof leads.$inferSelect;
