import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { webhooks } from './webhooks.js';

/** received -> queued -> processed | failed | discarded (SPEC §4). */
export const notificationStatus = pgEnum('notification_status', ['received', 'queued', 'processed', 'failed', 'discarded']);
export const authenticatedBy = pgEnum('authenticated_by', ['basic', 'oauth']);
/** What the covering fetch found: a stored snapshot, or a resource that is gone (404/410). */
export const fetchOutcome = pgEnum('fetch_outcome', ['stored', 'gone']);

export const notifications = pgTable(
  'notifications',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    // No foreign key of its own: the webhook's key covers it (a webhook belongs to one company, and deleting a
    // company deletes its webhooks, hence their notifications). A second key check per inserted row cost
    // the receiver's group commit about a tenth of its time in PostgreSQL.
    companyId: uuid('company_id').notNull(),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    /** The notification body's `id`: the id of the resource that changed. */
    resourceId: text('resource_id').notNull(),
    type: text('type').notNull(),
    href: text('href').notNull(),
    body: jsonb('body').notNull(),
    authenticatedBy: authenticatedBy('authenticated_by').notNull(),
    status: notificationStatus('status').notNull().default('received'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    outcome: fetchOutcome('outcome'),
    snapshotVersion: integer('snapshot_version'),
    processedAt: timestamp('processed_at', { withTimezone: true }),
  },
  (t) => [
    // The worker's claim: pending rows of one (company, href).
    index('notifications_pending_idx')
      .on(t.companyId, t.href)
      .where(sql`status in ('received', 'queued')`),
    // The relay: committed rows nobody queued yet.
    index('notifications_unqueued_idx').on(t.receivedAt).where(sql`status = 'received'`),
    index('notifications_company_idx').on(t.companyId, t.id),
    // Listing failures (admin, the failures_by_reason view). Partial: the common path (received, queued,
    // processed) adds no entry to it, which saves index work on every insert and status change.
    index('notifications_final_failed_idx')
      .on(t.id)
      .where(sql`status in ('failed', 'discarded')`),
    index('notifications_received_at_idx').on(t.receivedAt),
  ],
);

export type NotificationRow = typeof notifications.$inferSelect;
export type NotificationStatus = (typeof notificationStatus.enumValues)[number];
