import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { ownedByCompany } from './companies.js';

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
  (t) => [primaryKey({ columns: [t.companyId, t.href] }), index('resources_company_type_idx').on(t.companyId, t.type)],
);

/** One row per stored snapshot, so a company's own application can follow along with SQL (and NOTIFY). */
export const events = pgTable(
  'events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    companyId: ownedByCompany(),
    type: text('type').notNull(),
    resourceId: text('resource_id').notNull(),
    href: text('href').notNull(),
    snapshotVersion: integer('snapshot_version').notNull(),
    /** RFC 6902 JSON Patch from the previous stored version to this one; null for the first. */
    changes: jsonb('changes'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // A company's events in order (following along with SQL), and one resource's versions (its history).
  (t) => [index('events_company_idx').on(t.companyId, t.id), index('events_resource_idx').on(t.companyId, t.href, t.id)],
);

export type ResourceRow = typeof resources.$inferSelect;
