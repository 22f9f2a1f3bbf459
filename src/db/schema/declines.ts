import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ownedByCompany } from './companies.js';
import { outboundStatus } from './leads.js';
import { rfqActionTarget } from './quotes.js';

/**
 * Requested lifts and RFQs Skyhook declined for a company; idempotent by (company, requestId): a lift or an
 * RFQ is declined once (docs/decisions.md).
 */
export const declines = pgTable(
  'declines',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    companyId: ownedByCompany(),
    /** The lift id or RFQ id declined. */
    requestId: text('request_id').notNull(),
    actAsAccount: text('act_as_account'),
    status: outboundStatus('status').notNull().default('sending'),
    declineReason: text('decline_reason').notNull(),
    /** The body sent: {message, declineReason, suppressNotification}. */
    body: jsonb('body').notNull(),
    target: rfqActionTarget('target').notNull(),
    targetUrl: text('target_url').notNull(),
    /** The trip message the decline was sent as, when the marketplace's answer names it. */
    tripMessageId: text('trip_message_id'),
    /** The trip message's stored resource, once Skyhook fetched it (the tripmsgs handler links it, as a quote's). */
    resourceHref: text('resource_href'),
    snapshotVersion: integer('snapshot_version'),
    response: jsonb('response'),
    /** Why the outcome is `unknown`: what happened to the call that may have sent it. */
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('declines_company_request_key').on(t.companyId, t.requestId),
    index('declines_company_created_idx').on(t.companyId, t.createdAt),
    index('declines_trip_message_idx').on(t.companyId, t.tripMessageId),
  ],
);

export type DeclineRow = typeof declines.$inferSelect;
