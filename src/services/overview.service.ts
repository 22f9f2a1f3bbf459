/**
 * The console's overview (SPEC §13) for a deployment of any size: the deployment's totals, every company
 * that needs attention (paused, throttled, unreachable, failing in the last hour, or among the oldest
 * backlogs) with its last hour minute by minute and why it fails, then every other company as one compact
 * row. The same handful of grouped queries whatever the number of companies: one per kind, never one per company.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { failureReason } from '../db/schema/index.js';
import type { CompanyStates } from '../companies/states.js';
import type { CompanyState, CompanyStateName } from '../companies/transitions.js';

/** The per-minute series cover this many minutes, the current one last. */
const OVERVIEW_MINUTES = 60;
/** Top failure reasons: of the notifications received over this many hours, this many per company. */
const FAILURE_WINDOW_HOURS = 24;
const TOP_FAILURES = 5;
/** The companies with the oldest backlogs need attention: this many of them (not paused), whose oldest is at least this old. */
export const OLDEST_BACKLOGS = 5;
export const OLDEST_BACKLOG_MIN_AGE_S = 60;

export interface MinuteSeries {
  received: number[];
  processed: number[];
  failed: number[];
  /** Received to processed, ms; null for a minute in which nothing was processed. */
  p50Ms: (number | null)[];
  p95Ms: (number | null)[];
}

export interface Backlog {
  pending: number;
  /** 0 without a backlog. */
  oldestPendingAgeS: number;
}

interface LastHour {
  received: number;
  processed: number;
  failed: number;
}

/** A company's last hour and what waits: what its card and its page show. */
export interface CompanyActivity {
  webhooks: { total: number; active: number };
  backlog: Backlog;
  lastHour: LastHour;
  series: MinuteSeries;
  topFailures: { reason: string; failures: number; lastFailedAt: string }[];
}

/** One company as a row of the compact table. */
export interface CompanySummary {
  id: string;
  name: string;
  state: CompanyState;
  backlog: Backlog;
  lastHour: LastHour;
}

export type AttentionReason = 'paused' | 'throttled' | 'unreachable' | 'failing' | 'oldest backlog';

export interface CompanyOverview extends CompanySummary, CompanyActivity {
  /** Why it needs attention (never empty in `Overview.attention`). */
  attention: AttentionReason[];
}

interface DeploymentTotals extends LastHour {
  companies: number;
  pending: number;
  /** The oldest pending notification of any company (0: none pending). */
  oldestPendingAgeS: number;
  paused: number;
  throttled: number;
  unreachable: number;
  /** The whole deployment minute by minute (latency over every company's notifications). */
  series: MinuteSeries;
}

export const TABLE_SORTS = ['state', 'backlog', 'oldest', 'name'] as const;
export type TableSort = (typeof TABLE_SORTS)[number];
type SortDirection = 'asc' | 'desc';
/** The direction each sort starts in: what needs the operator most comes first. */
export const DEFAULT_DIRECTION: Record<TableSort, SortDirection> = { state: 'asc', backlog: 'desc', oldest: 'desc', name: 'asc' };

export interface TableQuery {
  /** Part of a name (any case), or the start of an id. */
  search?: string;
  sort?: TableSort;
  dir?: SortDirection;
}

export interface Overview {
  /** The start of each minute of the series (ISO 8601), oldest first. */
  minutes: string[];
  /** Every company, whatever the search. */
  totals: DeploymentTotals;
  /** Every company that needs attention and matches the search, most urgent first. */
  attention: CompanyOverview[];
  /** Every other company that matches the search, in the order asked. */
  others: CompanySummary[];
}

/** The order states need the operator in (companyState's): paused first, ok last. */
const STATE_RANK: Record<CompanyStateName, number> = { paused: 0, throttled: 1, unreachable: 2, unchecked: 3, ok: 4 };
const URGENT_STATES = new Set<CompanyStateName>(['paused', 'throttled', 'unreachable']);

const num = (v: unknown): number => Number(v ?? 0);
const optionalNum = (v: unknown): number | null => (v === null || v === undefined ? null : Math.round(Number(v) * 10) / 10);
const emptySeries = (): MinuteSeries => ({
  received: Array<number>(OVERVIEW_MINUTES).fill(0),
  processed: Array<number>(OVERVIEW_MINUTES).fill(0),
  failed: Array<number>(OVERVIEW_MINUTES).fill(0),
  p50Ms: Array<number | null>(OVERVIEW_MINUTES).fill(null),
  p95Ms: Array<number | null>(OVERVIEW_MINUTES).fill(null),
});
const blankActivity = (): CompanyActivity => ({
  webhooks: { total: 0, active: 0 },
  backlog: { pending: 0, oldestPendingAgeS: 0 },
  lastHour: { received: 0, processed: 0, failed: 0 },
  series: emptySeries(),
  topFailures: [],
});
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const lastHourOf = (s: MinuteSeries): LastHour => ({ received: sum(s.received), processed: sum(s.processed), failed: sum(s.failed) });

/** Whether a company matches a search: part of its name in any case, or the start of its id. */
function matchesSearch(c: { id: string; name: string }, search: string | undefined): boolean {
  const q = search?.trim().toLowerCase();
  return !q || c.name.toLowerCase().includes(q) || c.id.startsWith(q);
}

/** Sorts rows for the compact table; ties by name, then id, so the order is stable. */
function sortCompanies<T extends CompanySummary>(rows: T[], sort: TableSort = 'state', dir: SortDirection = DEFAULT_DIRECTION[sort]): T[] {
  const key: Record<TableSort, (c: T) => number | string> = {
    state: (c) => STATE_RANK[c.state.status],
    backlog: (c) => c.backlog.pending,
    oldest: (c) => c.backlog.oldestPendingAgeS,
    name: (c) => c.name.toLowerCase(),
  };
  const sign = dir === 'asc' ? 1 : -1;
  const by = key[sort];
  return rows.sort((a, b) => {
    const x = by(a);
    const y = by(b);
    if (x !== y) return (x < y ? -1 : 1) * sign;
    return a.name.localeCompare(b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}

/** Most urgent first: paused, throttled, unreachable; then the most failures; then the oldest backlog. */
function byUrgency(a: CompanyOverview, b: CompanyOverview): number {
  const rank = (c: CompanyOverview) => (URGENT_STATES.has(c.state.status) ? STATE_RANK[c.state.status] : 3);
  return rank(a) - rank(b) || b.lastHour.failed - a.lastHour.failed || b.backlog.oldestPendingAgeS - a.backlog.oldestPendingAgeS || a.name.localeCompare(b.name);
}

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createOverviewService(deps: { db: Database; states: Pick<CompanyStates, 'all'> }) {
  const { db } = deps;

  /**
   * Every company's activity (or one company's): five grouped queries, each over every company at once,
   * and the deployment's own series. A company without a row in a query has nothing there (zeros).
   */
  async function activity(now: Date, companyId?: string) {
    const first = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - (OVERVIEW_MINUTES - 1) * 60_000);
    const minutes = Array.from({ length: OVERVIEW_MINUTES }, (_, i) => new Date(first.getTime() + i * 60_000).toISOString());
    const only = (column: SQL) => (companyId === undefined ? sql`` : sql` AND ${column} = ${companyId}`);
    const [webhooks, backlog, received, finished, failures] = await Promise.all([
      db.execute<{ company_id: string; total: string; active: string }>(
        sql`SELECT company_id, count(*) AS total, count(*) FILTER (WHERE active) AS active FROM webhooks WHERE true${only(sql`company_id`)} GROUP BY company_id`,
      ),
      // Only companies with something pending (notifications_pending_idx); as the `backlog` view counts it.
      db.execute<{ company_id: string; pending: string; oldest_pending_age_s: number }>(sql`
        SELECT company_id, count(*) AS pending, extract(epoch FROM now() - min(received_at))::int AS oldest_pending_age_s
        FROM notifications WHERE status IN ('received', 'queued')${only(sql`company_id`)}
        GROUP BY company_id`),
      // By the minute each arrived (notifications_received_at_idx).
      db.execute<{ company_id: string; minute: Date; n: string }>(sql`
        SELECT company_id, date_trunc('minute', received_at) AS minute, count(*) AS n
        FROM notifications WHERE received_at >= ${first}${only(sql`company_id`)}
        GROUP BY 1, 2`),
      // By the minute each finished, per company and (whole = 1) for the deployment: one scan for both. Only
      // rows received in the two hours before the series starts are looked at (the index again): the
      // default retries give up within 77 minutes (docs/decisions.md).
      db.execute<{ company_id: string | null; whole: number; minute: Date; processed: string; failed: string; p50: number | null; p95: number | null }>(sql`
        SELECT company_id, GROUPING(company_id) AS whole, date_trunc('minute', finished_at) AS minute,
               count(*) FILTER (WHERE status = 'processed') AS processed,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p50,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p95
        FROM notifications
        WHERE received_at >= ${new Date(first.getTime() - 2 * 3600_000)} AND finished_at >= ${first} AND status IN ('processed', 'failed')${only(sql`company_id`)}
        GROUP BY GROUPING SETS ((company_id, date_trunc('minute', finished_at)), (date_trunc('minute', finished_at)))`),
      db.execute<{ company_id: string; reason: string; failures: string; last_failed_at: Date }>(sql`
        SELECT company_id, reason, failures, last_failed_at FROM (
          SELECT n.company_id, ${failureReason} AS reason, count(*) AS failures, max(n.finished_at) AS last_failed_at,
                 row_number() OVER (PARTITION BY n.company_id ORDER BY count(*) DESC, max(n.finished_at) DESC) AS rank
          FROM notifications n
          WHERE n.received_at >= ${new Date(now.getTime() - FAILURE_WINDOW_HOURS * 3600_000)} AND n.status = 'failed'${only(sql`n.company_id`)}
          GROUP BY 1, 2) t
        WHERE rank <= ${TOP_FAILURES} ORDER BY company_id, rank`),
    ]);

    const index = new Map(minutes.map((m, i) => [m, i]));
    const at = (minute: Date | string) => index.get(new Date(minute).toISOString());
    const byCompany = new Map<string, CompanyActivity>();
    const of = (id: string): CompanyActivity => {
      let a = byCompany.get(id);
      if (!a) byCompany.set(id, (a = blankActivity()));
      return a;
    };
    const deployment = emptySeries();

    for (const r of webhooks.rows) of(r.company_id).webhooks = { total: num(r.total), active: num(r.active) };
    for (const r of backlog.rows) {
      of(r.company_id).backlog = { pending: num(r.pending), oldestPendingAgeS: Math.max(0, num(r.oldest_pending_age_s)) };
    }
    for (const r of received.rows) {
      const i = at(r.minute);
      if (i === undefined) continue;
      of(r.company_id).series.received[i] = num(r.n);
      deployment.received[i]! += num(r.n);
    }
    for (const r of finished.rows) {
      const i = at(r.minute);
      if (i === undefined) continue;
      const s = Number(r.whole) === 1 ? deployment : r.company_id === null ? undefined : of(r.company_id).series;
      if (!s) continue;
      s.processed[i] = num(r.processed);
      s.failed[i] = num(r.failed);
      s.p50Ms[i] = optionalNum(r.p50);
      s.p95Ms[i] = optionalNum(r.p95);
    }
    for (const r of failures.rows) of(r.company_id).topFailures.push({ reason: r.reason, failures: num(r.failures), lastFailedAt: new Date(r.last_failed_at).toISOString() });
    for (const a of byCompany.values()) a.lastHour = lastHourOf(a.series);
    return { minutes, byCompany, deployment };
  }

  /** Every company with its state and its activity: one read of the states and gates, the grouped queries beside it. */
  async function everyCompany(now: Date) {
    const [states, act] = await Promise.all([deps.states.all(), activity(now)]);
    const companies = states.map((s) => ({ id: s.id, name: s.name, state: s.state, ...(act.byCompany.get(s.id) ?? blankActivity()) }));
    return { minutes: act.minutes, deployment: act.deployment, companies };
  }

  const summary = (c: CompanySummary): CompanySummary => ({ id: c.id, name: c.name, state: c.state, backlog: c.backlog, lastHour: c.lastHour });

  return {
    async overview(query: TableQuery = {}, now = new Date()): Promise<Overview> {
      const { minutes, deployment, companies } = await everyCompany(now);

      // A paused company's backlog waits for new credentials by design: the oldest among the others.
      const oldest = new Set(
        companies
          .filter((c) => c.state.status !== 'paused' && c.backlog.pending > 0 && c.backlog.oldestPendingAgeS >= OLDEST_BACKLOG_MIN_AGE_S)
          .sort((a, b) => b.backlog.oldestPendingAgeS - a.backlog.oldestPendingAgeS)
          .slice(0, OLDEST_BACKLOGS)
          .map((c) => c.id),
      );
      const attention: CompanyOverview[] = [];
      const others: CompanySummary[] = [];
      const totals: DeploymentTotals = {
        companies: companies.length,
        ...lastHourOf(deployment),
        pending: 0,
        oldestPendingAgeS: 0,
        paused: 0,
        throttled: 0,
        unreachable: 0,
        series: deployment,
      };
      for (const c of companies) {
        totals.pending += c.backlog.pending;
        totals.oldestPendingAgeS = Math.max(totals.oldestPendingAgeS, c.backlog.oldestPendingAgeS);
        const status = c.state.status;
        const urgent = status === 'paused' || status === 'throttled' || status === 'unreachable';
        if (urgent) totals[status] += 1;

        if (!matchesSearch(c, query.search)) continue;
        const why: AttentionReason[] = [
          ...(urgent ? [status] : []),
          ...(c.lastHour.failed > 0 ? (['failing'] as const) : []),
          ...(oldest.has(c.id) ? (['oldest backlog'] as const) : []),
        ];
        if (why.length > 0) attention.push({ ...c, attention: why });
        else others.push(summary(c));
      }
      return { minutes, totals, attention: attention.sort(byUrgency), others: sortCompanies(others, query.sort, query.dir) };
    },

    /** Every company as a row of the compact table (the companies page), searched and sorted. */
    async companies(query: TableQuery = {}, now = new Date()): Promise<{ total: number; items: CompanySummary[] }> {
      const { companies } = await everyCompany(now);
      const items = companies.filter((c) => matchesSearch(c, query.search)).map(summary);
      return { total: companies.length, items: sortCompanies(items, query.sort, query.dir) };
    },

    /** One company's last hour, backlog and failures (its page; its state is the company view's). */
    async company(companyId: string, now = new Date()): Promise<{ minutes: string[]; activity: CompanyActivity }> {
      const act = await activity(now, companyId);
      return { minutes: act.minutes, activity: act.byCompany.get(companyId) ?? blankActivity() };
    },
  };
}

