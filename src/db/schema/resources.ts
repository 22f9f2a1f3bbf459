import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { ownedByCompany, purgedWithCompany } from './companies.js';
import { timeId } from './partitioned.js';

/** The latest fetched copy of what a notification's href points to, per company. */
export const resources = pgTable(
  'resources',
  {
    companyId: ownedByCompany(),
    href: text('href').notNull(),
    type: text('type').notNull(),
    resourceId: text('resource_id').notNull(),
    /** Incremented by every stored fetch. */
    version: integer('version').notNull().default(1),
    /** When the fetch that produced this copy started: an older fetch never replaces it. */
    fetchedAt: timestamp('fetched_at', { withTimezone: true }).notNull(),
    gone: boolean('gone').notNull().default(false),
    body: jsonb('body'),
  },
  (t) => [
    primaryKey({ columns: [t.companyId, t.href] }),
    // A company's resources of a type, and one of them by its id (the RFQ a quote or a decline answers).
    index('resources_company_type_id_idx').on(t.companyId, t.type, t.resourceId),
    // An RFQ found by one of its requested lifts' ids (a quote or a decline of a lift: services/rfq-answers.ts).
    index('resources_lifts_idx').using('gin', sql`(${t.body} -> 'sellerLift') jsonb_path_ops`),
  ],
);

/**
 * One row per stored snapshot: what a company's destinations are sent and its pull feed reads (SPEC §5.2),
 * and what its own application can follow with SQL (and NOTIFY).
 */
export const events = pgTable(
  'events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('events')),
    companyId: purgedWithCompany(),
    /** Its place among the company's events, in commit order (event_sequences): the pull feed's cursor. */
    seq: bigint('seq', { mode: 'number' }).notNull(),
    type: text('type').notNull(),
    resourceId: text('resource_id').notNull(),
    href: text('href').notNull(),
    snapshotVersion: integer('snapshot_version').notNull(),
    /** RFC 6902 JSON Patch from the previous stored version to this one; null for the first. */
    changes: jsonb('changes'),
    /** The marketplace event types behind the change (of the notifications it covers; docs/decisions.md). */
    eventTypes: text('event_types').array().notNull().default(sql`'{}'`),
    /** The version's body as fetched: deliveries and the pull feed send it (null for events stored before it was kept). */
    snapshot: jsonb('snapshot'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // One resource's versions (its history). A company's events in order (the pull feed, following along with
  // SQL) are found by a unique (company_id, seq) index in each partition (<partition>_company_seq_idx, made with
  // it): a partitioned table's unique index must hold its partition key, so the rule event_sequences keeps
  // makes seq unique across partitions (docs/decisions.md, "Partitions").
  (t) => [index('events_resource_idx').on(t.companyId, t.href, t.id)],
);

export type ResourceRow = typeof resources.$inferSelect;
