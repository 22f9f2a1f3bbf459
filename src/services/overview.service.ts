/**
 * The operator console's overview (SPEC §13): per company its connection, webhooks, backlog, the last
 * hour minute by minute (received, processed, failed, received-to-processed latency p50 and p95) and the
 * top failure reasons. Read-only; a handful of grouped queries for all companies at once.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { failureReason } from '../db/schema/index.js';
import type { CompaniesService, CompanyView } from './companies.service.js';

/** The per-minute series cover this many minutes, the current one last. */
export const OVERVIEW_MINUTES = 60;
/** Top failure reasons: of the notifications received over this many hours, this many per company. */
const FAILURE_WINDOW_HOURS = 24;
const TOP_FAILURES = 5;
/** Companies the overview shows (the first, by id); more is a list, not an overview. */
const MAX_COMPANIES = 100;

export interface MinuteSeries {
  received: number[];
  processed: number[];
  failed: number[];
  /** Received to processed, ms; null for a minute in which nothing was processed. */
  p50Ms: (number | null)[];
  p95Ms: (number | null)[];
}

export interface CompanyOverview {
  company: CompanyView;
  webhooks: { total: number; active: number };
  backlog: { pending: number; oldestPendingAgeS: number };
  series: MinuteSeries;
  topFailures: { reason: string; failures: number; lastFailedAt: string }[];
}

export interface Overview {
  /** The start of each minute of the series (ISO 8601), oldest first. */
  minutes: string[];
  companies: CompanyOverview[];
  /** More companies exist than the overview shows. */
  truncated: boolean;
}

const num = (v: unknown): number => Number(v ?? 0);
const optionalNum = (v: unknown): number | null => (v === null || v === undefined ? null : Math.round(Number(v) * 10) / 10);

export function createOverviewService(deps: { db: Database; companies: Pick<CompaniesService, 'list'> }) {
  const { db } = deps;

  return {
    async overview(now = new Date()): Promise<Overview> {
      const first = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - (OVERVIEW_MINUTES - 1) * 60_000);
      const minutes = Array.from({ length: OVERVIEW_MINUTES }, (_, i) => new Date(first.getTime() + i * 60_000).toISOString());
      const page = await deps.companies.list({ limit: MAX_COMPANIES });
      const [webhooks, backlog, received, finished, failures] = await Promise.all([
        db.execute<{ company_id: string; total: string; active: string }>(
          sql`SELECT company_id, count(*) AS total, count(*) FILTER (WHERE active) AS active FROM webhooks GROUP BY company_id`,
        ),
        db.execute<{ company_id: string; pending: string; oldest_pending_age_s: number }>(sql`SELECT company_id, pending, oldest_pending_age_s FROM backlog`),
        // By the minute each arrived (notifications_received_at_idx).
        db.execute<{ company_id: string; minute: Date; n: string }>(sql`
          SELECT company_id, date_trunc('minute', received_at) AS minute, count(*) AS n
          FROM notifications WHERE received_at >= ${first}
          GROUP BY 1, 2`),
        // By the minute each finished. Only rows received in the two hours before the series starts are
        // looked at (the index again): the default retries give up within 77 minutes (docs/decisions.md).
        db.execute<{ company_id: string; minute: Date; processed: string; failed: string; p50: number | null; p95: number | null }>(sql`
          SELECT company_id, date_trunc('minute', finished_at) AS minute,
                 count(*) FILTER (WHERE status = 'processed') AS processed,
                 count(*) FILTER (WHERE status = 'failed') AS failed,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p50,
                 percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p95
          FROM notifications
          WHERE received_at >= ${new Date(first.getTime() - 2 * 3600_000)} AND finished_at >= ${first} AND status IN ('processed', 'failed')
          GROUP BY 1, 2`),
        db.execute<{ company_id: string; reason: string; failures: string; last_failed_at: Date }>(sql`
          SELECT company_id, reason, failures, last_failed_at FROM (
            SELECT n.company_id, ${failureReason} AS reason, count(*) AS failures, max(n.finished_at) AS last_failed_at,
                   row_number() OVER (PARTITION BY n.company_id ORDER BY count(*) DESC, max(n.finished_at) DESC) AS rank
            FROM notifications n
            WHERE n.received_at >= ${new Date(now.getTime() - FAILURE_WINDOW_HOURS * 3600_000)} AND n.status = 'failed'
            GROUP BY 1, 2) t
          WHERE rank <= ${TOP_FAILURES} ORDER BY company_id, rank`),
      ]);

      const index = new Map(minutes.map((m, i) => [m, i]));
      const at = (minute: Date | string) => index.get(new Date(minute).toISOString());
      const companies = page.items.map((company): CompanyOverview => {
        const w = webhooks.rows.find((r) => r.company_id === company.id);
        const b = backlog.rows.find((r) => r.company_id === company.id);
        const empty = () => Array<number>(OVERVIEW_MINUTES).fill(0);
        const series: MinuteSeries = { received: empty(), processed: empty(), failed: empty(), p50Ms: Array(OVERVIEW_MINUTES).fill(null), p95Ms: Array(OVERVIEW_MINUTES).fill(null) };
        for (const r of received.rows) {
          const i = r.company_id === company.id ? at(r.minute) : undefined;
          if (i !== undefined) series.received[i] = num(r.n);
        }
        for (const r of finished.rows) {
          const i = r.company_id === company.id ? at(r.minute) : undefined;
          if (i === undefined) continue;
          series.processed[i] = num(r.processed);
          series.failed[i] = num(r.failed);
          series.p50Ms[i] = optionalNum(r.p50);
          series.p95Ms[i] = optionalNum(r.p95);
        }
        return {
          company,
          webhooks: { total: num(w?.total), active: num(w?.active) },
          backlog: { pending: num(b?.pending), oldestPendingAgeS: num(b?.oldest_pending_age_s) },
          series,
          topFailures: failures.rows
            .filter((r) => r.company_id === company.id)
            .map((r) => ({ reason: r.reason, failures: num(r.failures), lastFailedAt: new Date(r.last_failed_at).toISOString() })),
        };
      });
      return { minutes, companies, truncated: page.nextCursor !== null };
    },
  };
}

export type OverviewService = ReturnType<typeof createOverviewService>;
