import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { timeId } from './partitioned.js';

/** received -> queued -> processed | failed | discarded (SPEC §4). */
export const notificationStatus = pgEnum('notification_status', ['received', 'queued', 'processed', 'failed', 'discarded']);
/** How the marketplace's request was authenticated; `resync`: Skyhook made the row itself, to fetch a known resource again (SPEC §14). */
export const authenticatedBy = pgEnum('authenticated_by', ['basic', 'oauth', 'resync']);
/**
 * What the covering fetch found: a stored snapshot, or a resource that is gone (404/410); `not_fetched`: its
 * href is under none of the company's base URLs, so it was stored and never fetched (SPEC §14).
 */
export const fetchOutcome = pgEnum('fetch_outcome', ['stored', 'gone', 'not_fetched']);

export const notifications = pgTable(
  'notifications',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('notifications')),
    // No foreign key: a key check per inserted row would slow the receiver's group commit, and a deleted
    // company's notifications are purged in batches after its deletion (src/companies/purge.ts); deleting a
    // webhook deletes its notifications explicitly (src/notifications/postgres.ts).
    companyId: uuid('company_id').notNull(),
    webhookId: uuid('webhook_id').notNull(),
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
    /** When it last became `queued` (a replay queues it again; the earlier time is kept with the replay). */
    queuedAt: timestamp('queued_at', { withTimezone: true }),
    /** Set only when it was processed. */
    processedAt: timestamp('processed_at', { withTimezone: true }),
    /** When it last reached a final status: processed, failed or discarded. */
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    /**
     * Every fetch attempt that covered it, oldest first (fetch_attempts.id): its history outlives replays.
     * Null until the first (an empty array would cost every stored row its bytes).
     */
    fetchAttemptIds: bigint('fetch_attempt_ids', { mode: 'number' }).array(),
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
    // The list's filters (admin API, console) that select few rows: each finds its newest at once, where
    // a scan of the primary key goes through every notification (docs/performance.md, "The console").
    index('notifications_type_idx').on(t.type, t.id),
    index('notifications_resource_id_idx').on(t.resourceId, t.id),
    index('notifications_href_idx').on(t.href, t.id),
    // Also deleting a webhook: its notifications are found by it, not by a scan.
    index('notifications_webhook_idx').on(t.webhookId, t.id),
  ],
);

export type NotificationRow = typeof notifications.$inferSelect;
export type NotificationStatus = (typeof notificationStatus.enumValues)[number];

/** What one fetch attempt found (SPEC §7.1). */
export const fetchAttemptOutcome = pgEnum('fetch_attempt_outcome', ['stored', 'gone', 'retry', 'failed', 'soft_error', 'unauthorized']);

/**
 * One row per attempt of a (company, href) fetch, shared by every notification it covered: a busy
 * resource's history costs a row per fetch, not per notification.
 */
export const fetchAttempts = pgTable(
  'fetch_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('fetch_attempts')),
    // No foreign key, as notifications have none of their own: its check cost every stored fetch, and
    // a deleted company's are purged with its notifications (src/companies/purge.ts).
    companyId: uuid('company_id').notNull(),
    href: text('href').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }).notNull(),
    /** Null for a network error or a timeout. */
    httpStatus: integer('http_status'),
    outcome: fetchAttemptOutcome('outcome').notNull(),
    error: text('error'),
    /** The snapshot version it stored, when it stored one. */
    snapshotVersion: integer('snapshot_version'),
    /** The notifications it covered (retention removes an attempt once none of them is kept). */
    notificationIds: bigint('notification_ids', { mode: 'number' }).array().notNull(),
  },
  // Read by id only (a notification's fetch_attempt_ids; retention): no other index to keep up per fetch.
);

/** A replay of a notification, with the final state it replaced: a replay adds history, it never erases it. */
export const notificationReplays = pgTable(
  'notification_replays',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('notification_replays')),
    // No foreign key: a replay may sit in a later day's partition than its notification, which retention
    // drops first; deleting a webhook or a company deletes its replays explicitly (docs/decisions.md, "Partitions").
    notificationId: bigint('notification_id', { mode: 'number' }).notNull(),
    replayedAt: timestamp('replayed_at', { withTimezone: true }).notNull().defaultNow(),
    previousStatus: notificationStatus('previous_status').notNull(),
    previousQueuedAt: timestamp('previous_queued_at', { withTimezone: true }),
    previousFinishedAt: timestamp('previous_finished_at', { withTimezone: true }),
    previousError: text('previous_error'),
  },
  (t) => [index('notification_replays_notification_idx').on(t.notificationId)],
);

export type FetchAttemptRow = typeof fetchAttempts.$inferSelect;
export type FetchAttemptOutcome = (typeof fetchAttemptOutcome.enumValues)[number];
export type NotificationReplayRow = typeof notificationReplays.$inferSelect;
