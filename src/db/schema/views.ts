/**
 * Views for the usual admin questions, so they read well in psql (README: "Admin queries").
 */
import { sql } from 'drizzle-orm';
import { bigint, integer, numeric, pgView, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** Per company: notifications not yet final, and the age of the oldest. */
export const backlogView = pgView('backlog', {
  companyId: uuid('company_id'),
  company: text('company'),
  pending: bigint('pending', { mode: 'number' }),
  oldestPendingAt: timestamp('oldest_pending_at', { withTimezone: true }),
  oldestPendingAgeS: integer('oldest_pending_age_s'),
}).as(
  sql`SELECT c.id AS company_id, c.name AS company,
             count(n.id) AS pending,
             min(n.received_at) AS oldest_pending_at,
             coalesce(extract(epoch FROM now() - min(n.received_at)), 0)::int AS oldest_pending_age_s
      FROM companies c
      LEFT JOIN notifications n ON n.company_id = c.id AND n.status IN ('received', 'queued')
      GROUP BY c.id, c.name`,
);

/** A failure's reason: its last error without the variable tail of a retried one (shared with services/overview.service.ts). */
export const failureReason = sql`regexp_replace(coalesce(n.last_error, 'unknown'), '^gave up after \\d+ attempts: ', '')`;

/** Failed notifications grouped by reason (the last error without its variable tail), with when the last one failed. */
export const failuresView = pgView('failures_by_reason', {
  companyId: uuid('company_id'),
  company: text('company'),
  type: text('type'),
  reason: text('reason'),
  failures: bigint('failures', { mode: 'number' }),
  firstFailedAt: timestamp('first_failed_at', { withTimezone: true }),
  lastFailedAt: timestamp('last_failed_at', { withTimezone: true }),
}).as(
  sql`SELECT n.company_id, c.name AS company, n.type,
             ${failureReason} AS reason,
             count(*) AS failures, min(n.finished_at) AS first_failed_at, max(n.finished_at) AS last_failed_at
      FROM notifications n JOIN companies c ON c.id = n.company_id
      WHERE n.status = 'failed'
      GROUP BY 1, 2, 3, 4`,
);

/** Per resource, from the fetch attempts kept: how often it was fetched, how often that failed, and the last error. */
export const fetchesByResourceView = pgView('fetches_by_resource', {
  companyId: uuid('company_id'),
  company: text('company'),
  href: text('href'),
  fetches: bigint('fetches', { mode: 'number' }),
  failures: bigint('failures', { mode: 'number' }),
  lastFetchedAt: timestamp('last_fetched_at', { withTimezone: true }),
  lastFailedAt: timestamp('last_failed_at', { withTimezone: true }),
  lastError: text('last_error'),
}).as(
  sql`SELECT a.company_id, c.name AS company, a.href,
             count(*) AS fetches,
             count(*) FILTER (WHERE a.outcome NOT IN ('stored', 'gone')) AS failures,
             max(a.started_at) AS last_fetched_at,
             max(a.started_at) FILTER (WHERE a.outcome NOT IN ('stored', 'gone')) AS last_failed_at,
             (array_agg(a.error ORDER BY a.id DESC) FILTER (WHERE a.error IS NOT NULL))[1] AS last_error
      FROM fetch_attempts a JOIN companies c ON c.id = a.company_id
      GROUP BY 1, 2, 3`,
);

/** Per hour and company: received, processed, failed, and the median receive-to-process latency. */
export const throughputView = pgView('throughput_hourly', {
  hour: timestamp('hour', { withTimezone: true }),
  companyId: uuid('company_id'),
  company: text('company'),
  received: bigint('received', { mode: 'number' }),
  processed: bigint('processed', { mode: 'number' }),
  failed: bigint('failed', { mode: 'number' }),
  p50Ms: numeric('p50_ms'),
}).as(
  sql`SELECT date_trunc('hour', n.received_at) AS hour, n.company_id, c.name AS company,
             count(*) AS received,
             count(*) FILTER (WHERE n.status = 'processed') AS processed,
             count(*) FILTER (WHERE n.status = 'failed') AS failed,
             round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM n.processed_at - n.received_at) * 1000)
                    FILTER (WHERE n.status = 'processed'))::numeric, 1) AS p50_ms
      FROM notifications n JOIN companies c ON c.id = n.company_id
      GROUP BY 1, 2, 3`,
);
