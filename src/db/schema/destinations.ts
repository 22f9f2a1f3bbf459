import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { companies, ownedByCompany, purgedWithCompany } from './companies.js';
import { timeId } from './partitioned.js';

/**
 * An endpoint of a company's own application that Skyhook delivers the company's events to (SPEC §5.2).
 * Its state (destinations/transitions.ts) is kept here: disabled (by whom, why), failing (its circuit open
 * since, the last error), and what the circuit counts; `throttled` is what its gate in Redis knows now.
 * A deleted destination is kept, marked `deleted_at`, with its deliveries' history until retention.
 */
export const destinations = pgTable(
  'destinations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    companyId: ownedByCompany(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    /** Resource types (`rfqs`, `tripmsgs`, ...) delivered; null: all. */
    resourceTypes: text('resource_types').array(),
    /** Marketplace event types (`TripRequest`, ...) behind a change, any of which makes it delivered; null: all. */
    eventTypes: text('event_types').array(),
    /** The signing secret (`whsec_...`), AES-256-GCM with SECRET_KEY: needed to sign, so never hashed. */
    secretEncrypted: text('secret_encrypted').notNull(),
    /** The secret before the last rotation, signing beside the new one until it expires. */
    previousSecretEncrypted: text('previous_secret_encrypted'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    /** Its own limits; null: DESTINATION_CONCURRENCY, no rate limit, DESTINATION_TIMEOUT_MS. */
    maxConcurrency: integer('max_concurrency'),
    ratePerSecond: integer('rate_per_second'),
    timeoutMs: integer('timeout_ms'),
    /** `disabled`: since when, why, by whom (`active: false` by a key, a 410, or no success for days). */
    disabledAt: timestamp('disabled_at', { withTimezone: true }),
    disabledReason: text('disabled_reason'),
    disabledBy: text('disabled_by'),
    /** `failing`: its circuit open since, with the error that opened it; its next probe. */
    failingSince: timestamp('failing_since', { withTimezone: true }),
    failingError: text('failing_error'),
    nextProbeAt: timestamp('next_probe_at', { withTimezone: true }),
    /** Failed attempts in a row (five open the circuit). */
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true }),
    lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('destinations_company_idx').on(t.companyId).where(sql`deleted_at IS NULL`)],
);

export type DestinationRow = typeof destinations.$inferSelect;

/** pending -> delivered | failed | skipped | expired (SPEC §5.2; destinations/transitions.ts). */
export const deliveryStatus = pgEnum('delivery_status', ['pending', 'delivered', 'failed', 'skipped', 'expired']);

/**
 * One event sent to one destination (SPEC §5.2), created in the transaction that stores the event. Its id
 * is the request's `webhook-id` on every attempt and replay. Ordered per (destination, href) by `version`.
 */
export const deliveries = pgTable(
  'deliveries',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('deliveries')),
    companyId: purgedWithCompany(),
    // No foreign key to its destination either: a destination is deleted with its company, whose rows are
    // purged in batches (src/companies/purge.ts); deleted alone, it stays (deleted_at) with its deliveries.
    destinationId: uuid('destination_id').notNull(),
    /** The event (no key: events are kept longer than deliveries, and the code keeps the link). */
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    href: text('href').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id').notNull(),
    version: integer('version').notNull(),
    status: deliveryStatus('status').notNull().default('pending'),
    /** A replay is sent outside the order of its resource's versions, and holds none of them back. */
    replay: boolean('replay').notNull().default(false),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    lastError: text('last_error'),
    lastStatus: integer('last_status'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    /** When it last reached a final status. */
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    // A destination's deliveries to send, oldest first; and whether an older version of a resource is pending.
    index('deliveries_due_idx').on(t.destinationId, t.id).where(sql`status = 'pending'`),
    index('deliveries_pending_idx').on(t.destinationId, t.href, t.version).where(sql`status = 'pending'`),
    index('deliveries_destination_idx').on(t.destinationId, t.id),
    index('deliveries_company_idx').on(t.companyId, t.id),
  ],
);

/** Every attempt of a delivery (SPEC §5.2): when, where, how long, the answer's status and first 4 KB, or the error. */
export const deliveryAttempts = pgTable(
  'delivery_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().default(timeId('delivery_attempts')),
    // No foreign key: an attempt may sit in a later day's partition than its delivery, which retention drops
    // first; deleting a destination deletes its attempts explicitly (docs/decisions.md, "Partitions").
    deliveryId: bigint('delivery_id', { mode: 'number' }).notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    durationMs: integer('duration_ms').notNull(),
    url: text('url').notNull(),
    httpStatus: integer('http_status'),
    error: text('error'),
    /** The first 4 KB of the answer's body. */
    response: text('response'),
    /** `probe`: sent while the destination's circuit was open. */
    probe: boolean('probe').notNull().default(false),
  },
  (t) => [index('delivery_attempts_delivery_idx').on(t.deliveryId)],
);

/**
 * Each company's last event position (SPEC §5.2, pull): an event's `seq` is taken from here in the statement
 * that stores it, under this row's lock, held until commit; so a company's events commit in `seq` order and
 * a reader after a position never misses one that commits later with a lower number.
 */
export const eventSequences = pgTable('event_sequences', {
  companyId: uuid('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  last: bigint('last', { mode: 'number' }).notNull(),
});
