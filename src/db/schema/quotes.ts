import { index, integer, jsonb, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { ownedByCompany } from './companies.js';
import { outboundStatus } from './leads.js';

/**
 * Where a quote or a decline was sent (services/rfq-answers.ts): the action href of the stored RFQ snapshot,
 * or the assumed path under the company's API base URL when Skyhook has no snapshot carrying one.
 */
export const rfqActionTarget = pgEnum('rfq_action_target', ['snapshot_href', 'assumed_path']);

/** Quotes Skyhook submitted to buyers for a company; idempotent by sellerUniqueQuoteIdentifier. */
export const quotes = pgTable(
  'quotes',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    companyId: ownedByCompany(),
    sellerUniqueQuoteIdentifier: text('seller_unique_quote_identifier').notNull(),
    /** The lift id or RFQ id the quote answers (seed §4.2). */
    requestId: text('request_id').notNull(),
    actAsAccount: text('act_as_account'),
    status: outboundStatus('status').notNull().default('sending'),
    submission: jsonb('submission').notNull(),
    /** Stored with the sent message, the quote and the booked activity (seed §4.2). */
    tripMessageId: text('trip_message_id'),
    sellerQuoteId: text('seller_quote_id'),
    liftId: text('lift_id'),
    response: jsonb('response'),
    /** Why the outcome is `unknown`: what happened to the call that may have submitted it. */
    error: text('error'),
    resourceHref: text('resource_href'),
    snapshotVersion: integer('snapshot_version'),
    /** Where it was sent; null for quotes submitted before Skyhook recorded it. */
    target: rfqActionTarget('target'),
    targetUrl: text('target_url'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('quotes_company_seller_quote_key').on(t.companyId, t.sellerUniqueQuoteIdentifier),
    index('quotes_lift_idx').on(t.companyId, t.liftId),
    index('quotes_trip_message_idx').on(t.companyId, t.tripMessageId),
  ],
);

export type QuoteRow = typeof quotes.$inferSelect;
