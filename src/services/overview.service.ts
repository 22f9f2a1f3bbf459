/**
 * The console's overview (SPEC §13) for a deployment of any size: the deployment's totals, every company
 * that needs attention (paused, throttled, unreachable, failing in the last hour, or among the oldest
 * backlogs) with its last hour minute by minute and why it fails, then every other company as one compact
 * row, a page at a time, searched and sorted by PostgreSQL. Only what is in trouble or shown is read: the
 * states of the companies not ok (companies/states.ts troubled()), the companies with a backlog or a
 * failure, the deployment's own series, then the activity of the companies on the page alone; never every
 * company's activity or gate (docs/decisions.md, "The overview at any size").
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { failureReason, notPurging } from '../db/schema/index.js';
import type { CompanyStates, TroubledCompanies } from '../companies/states.js';
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

/** Rows of the compact table on a page: the healthy majority is paged, whatever its size. */
export const TABLE_PAGE_SIZE = 50;

export interface TableQuery {
  /** Part of a name (any case), or the start of an id. */
  search?: string;
  sort?: TableSort;
  dir?: SortDirection;
  /** The page of the table (1, the first, by default; past the last: the last). */
  page?: number;
}

/** One page of the compact table. */
export interface TablePage {
  /** How many companies match (the table's, not the page's). */
  total: number;
  /** The page shown (1 the first) and how many there are (at least 1). */
  page: number;
  pages: number;
  /** This page's rows, in the order asked. */
  items: CompanySummary[];
}

export interface Overview {
  /** The start of each minute of the series (ISO 8601), oldest first. */
  minutes: string[];
  /** Every company, whatever the search. */
  totals: DeploymentTotals;
  /** Every company that needs attention and matches the search, most urgent first. */
  attention: CompanyOverview[];
  /** Every other company that matches the search, a page of them in the order asked. */
  others: TablePage;
}

/** The order states need the operator in (companyState's): paused first, ok last. */
const STATE_RANK: Record<CompanyStateName, number> = { paused: 0, throttled: 1, unreachable: 2, unchecked: 3, ok: 4 };
const URGENT_STATES = new Set<CompanyStateName>(['paused', 'throttled', 'unreachable']);
const OK: CompanyState = { status: 'ok', since: null, until: null, reason: null };

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

/** The minutes of the series ending with `now`'s, and the first one's start. */
function minutesUpTo(now: Date): { first: Date; minutes: string[] } {
  const first = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - (OVERVIEW_MINUTES - 1) * 60_000);
  return { first, minutes: Array.from({ length: OVERVIEW_MINUTES }, (_, i) => new Date(first.getTime() + i * 60_000).toISOString()) };
}

/**
 * Only rows received in the two hours before the series starts are looked at for what finished in it
 * (notifications_received_at_idx): the default retries give up within 77 minutes (docs/decisions.md).
 */
const finishedIn = (first: Date) => sql`received_at >= ${new Date(first.getTime() - 2 * 3600_000)} AND finished_at >= ${first} AND status IN ('processed', 'failed')`;

/**
 * A timestamp's minute as its place in the series starting at `first` (0 its first minute; outside it below 0
 * or from OVERVIEW_MINUTES), worked out by PostgreSQL: the rows' timestamps are never parsed here.
 */
const minuteIn = (column: SQL, first: Date) => sql`floor(extract(epoch FROM ${column} - ${first}::timestamptz) / 60)::int`;
const inSeries = (i: number) => i >= 0 && i < OVERVIEW_MINUTES;

/** A deleted company's notifications, purged in batches after it (companies/purge.ts), are counted nowhere meanwhile. */
const NOT_PURGING = sql.raw(notPurging('company_id'));

/** Each company's pending notifications and the oldest one's age, as the `backlog` view counts them (notifications_pending_idx). */
const backlogSql = (these?: SQL) => sql`
  SELECT company_id, count(*) AS pending, extract(epoch FROM now() - min(received_at))::int AS oldest_pending_age_s
  FROM notifications WHERE status IN ('received', 'queued') AND ${NOT_PURGING}${these ? sql` AND ${these}` : sql``} GROUP BY company_id`;
const backlogOf = (r: { pending: string; oldest_pending_age_s: number }): Backlog => ({ pending: num(r.pending), oldestPendingAgeS: Math.max(0, num(r.oldest_pending_age_s)) });

/** What finished in a minute (the query groups by it): how many processed and failed, and the processed ones' latency. */
const FINISHED_COLUMNS = sql`count(*) FILTER (WHERE status = 'processed') AS processed,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p50,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at) * 1000) FILTER (WHERE status = 'processed') AS p95`;
type FinishedRow = { minute: number; processed: string; failed: string; p50: number | null; p95: number | null };

/** A minute's FINISHED_COLUMNS into the series; false (left out) for a minute outside it. */
function putFinished(s: MinuteSeries, r: FinishedRow): boolean {
  if (!inSeries(r.minute)) return false;
  s.processed[r.minute] = num(r.processed);
  s.failed[r.minute] = num(r.failed);
  s.p50Ms[r.minute] = optionalNum(r.p50);
  s.p95Ms[r.minute] = optionalNum(r.p95);
  return true;
}

/** A search as SQL over `companies c`: part of the name in any case (`%` and `_` as themselves), or the start of the id. */
function searchSql(search: string | undefined): SQL {
  const q = search?.trim().toLowerCase();
  if (!q) return sql`true`;
  const literal = q.replace(/[\\%_]/g, '\\$&');
  return sql`(c.name ILIKE ${`%${literal}%`} OR c.id::text LIKE ${`${literal}%`})`;
}

/** Most urgent first: paused, throttled, unreachable; then the most failures; then the oldest backlog. */
function byUrgency(a: CompanyOverview, b: CompanyOverview): number {
  const rank = (c: CompanyOverview) => (URGENT_STATES.has(c.state.status) ? STATE_RANK[c.state.status] : 3);
  return rank(a) - rank(b) || b.lastHour.failed - a.lastHour.failed || b.backlog.oldestPendingAgeS - a.backlog.oldestPendingAgeS || a.name.localeCompare(b.name);
}

/** What is known of every company before any is shown: the states of those not ok and the backlogs of those with one. */
interface Known {
  troubled: TroubledCompanies;
  states: Map<string, CompanyState>;
  backlogs: Map<string, Backlog>;
}

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createOverviewService(deps: { db: Database; states: Pick<CompanyStates, 'troubled'> }) {
  const { db } = deps;

  /** The companies not ok and the companies with a backlog (notifications_pending_idx): the few that carry information. */
  async function known(): Promise<Known> {
    const [troubled, backlog] = await Promise.all([
      deps.states.troubled(),
      db.execute<{ company_id: string; pending: string; oldest_pending_age_s: number }>(backlogSql()),
    ]);
    return {
      troubled,
      states: new Map(troubled.companies.map((c) => [c.id, c.state])),
      backlogs: new Map(backlog.rows.map((r) => [r.company_id, backlogOf(r)])),
    };
  }

  /** The whole deployment minute by minute (two grouped queries, by minute alone), and the companies with a failure in it (as lastHour counts them). */
  async function deploymentSeries(first: Date): Promise<{ series: MinuteSeries; failing: Set<string> }> {
    const [received, finished] = await Promise.all([
      db.execute<{ minute: number; n: string }>(sql`SELECT ${minuteIn(sql`received_at`, first)} AS minute, count(*) AS n FROM notifications WHERE received_at >= ${first} AND ${NOT_PURGING} GROUP BY 1`),
      db.execute<FinishedRow & { failing: string[] | null }>(sql`
        SELECT ${minuteIn(sql`finished_at`, first)} AS minute, ${FINISHED_COLUMNS},
               array_agg(DISTINCT company_id) FILTER (WHERE status = 'failed') AS failing
        FROM notifications WHERE ${finishedIn(first)} AND ${NOT_PURGING} GROUP BY 1`),
    ]);
    const s = emptySeries();
    const failing = new Set<string>();
    for (const r of received.rows) if (inSeries(r.minute)) s.received[r.minute] = num(r.n);
    for (const r of finished.rows) if (putFinished(s, r)) for (const id of r.failing ?? []) failing.add(id);
    return { series: s, failing };
  }

  /**
   * These companies' activity: five grouped queries over them alone (four when their backlogs are known
   * already). A company without a row in a query has nothing there (zeros).
   */
  async function activity(first: Date, ids: string[], now: Date, backlogs?: Map<string, Backlog>): Promise<Map<string, CompanyActivity>> {
    const byCompany = new Map<string, CompanyActivity>(ids.map((id) => [id, { ...blankActivity(), backlog: backlogs?.get(id) ?? { pending: 0, oldestPendingAgeS: 0 } }]));
    if (ids.length === 0) return byCompany;
    const these = sql`company_id = ANY(${sql.param(ids)}::uuid[])`;
    const [webhooks, backlog, received, finished, failures] = await Promise.all([
      db.execute<{ company_id: string; total: string; active: string }>(sql`SELECT company_id, count(*) AS total, count(*) FILTER (WHERE active) AS active FROM webhooks WHERE ${these} GROUP BY company_id`),
      backlogs ? { rows: [] } : db.execute<{ company_id: string; pending: string; oldest_pending_age_s: number }>(backlogSql(these)),
      // By the minute each arrived (notifications_received_at_idx).
      db.execute<{ company_id: string; minute: number; n: string }>(sql`
        SELECT company_id, ${minuteIn(sql`received_at`, first)} AS minute, count(*) AS n FROM notifications WHERE received_at >= ${first} AND ${these} GROUP BY 1, 2`),
      db.execute<FinishedRow & { company_id: string }>(sql`
        SELECT company_id, ${minuteIn(sql`finished_at`, first)} AS minute, ${FINISHED_COLUMNS}
        FROM notifications WHERE ${finishedIn(first)} AND ${these} GROUP BY 1, 2`),
      db.execute<{ company_id: string; reason: string; failures: string; last_failed_at: Date }>(sql`
        SELECT company_id, reason, failures, last_failed_at FROM (
          SELECT n.company_id, ${failureReason} AS reason, count(*) AS failures, max(n.finished_at) AS last_failed_at,
                 row_number() OVER (PARTITION BY n.company_id ORDER BY count(*) DESC, max(n.finished_at) DESC) AS rank
          FROM notifications n
          WHERE n.received_at >= ${new Date(now.getTime() - FAILURE_WINDOW_HOURS * 3600_000)} AND n.status = 'failed' AND n.company_id = ANY(${sql.param(ids)}::uuid[])
          GROUP BY 1, 2) t
        WHERE rank <= ${TOP_FAILURES} ORDER BY company_id, rank`),
    ]);
    const of = (id: string) => byCompany.get(id) ?? blankActivity();
    for (const r of webhooks.rows) of(r.company_id).webhooks = { total: num(r.total), active: num(r.active) };
    for (const r of backlog.rows) of(r.company_id).backlog = backlogOf(r);
    for (const r of received.rows) if (inSeries(r.minute)) of(r.company_id).series.received[r.minute] = num(r.n);
    for (const r of finished.rows) putFinished(of(r.company_id).series, r);
    for (const r of failures.rows) of(r.company_id).topFailures.push({ reason: r.reason, failures: num(r.failures), lastFailedAt: new Date(r.last_failed_at).toISOString() });
    for (const a of byCompany.values()) a.lastHour = lastHourOf(a.series);
    return byCompany;
  }

  /**
   * A page of the companies that match the search (but `exclude`), sorted by PostgreSQL: the states and
   * backlogs known go in as arrays (every other company is ok, with nothing pending); ties by name, then id.
   * Then the page's own activity: each row's state, backlog and last hour.
   */
  async function tablePage(query: TableQuery, k: Known, exclude: string[], first: Date, now: Date): Promise<TablePage> {
    const sort = query.sort ?? 'state';
    const dir = sql.raw((query.dir ?? DEFAULT_DIRECTION[sort]) === 'asc' ? 'ASC' : 'DESC');
    const ids = [...new Set([...k.states.keys(), ...k.backlogs.keys()])];
    const facts = sql`unnest(${sql.param(ids)}::uuid[], ${sql.param(ids.map((id) => STATE_RANK[k.states.get(id)?.status ?? 'ok']))}::int[], ${sql.param(ids.map((id) => k.backlogs.get(id)?.pending ?? 0))}::int[], ${sql.param(ids.map((id) => k.backlogs.get(id)?.oldestPendingAgeS ?? 0))}::int[]) AS f(id, rank, pending, oldest)`;
    const where = sql`${searchSql(query.search)} AND NOT (c.id = ANY(${sql.param(exclude)}::uuid[]))`;
    const [counted] = (await db.execute<{ n: number }>(sql`SELECT count(*)::int AS n FROM companies c WHERE ${where}`)).rows;
    const total = counted?.n ?? 0;
    const pages = Math.max(1, Math.ceil(total / TABLE_PAGE_SIZE));
    const page = Math.min(Math.max(1, query.page ?? 1), pages);
    const key: Record<TableSort, SQL> = { state: sql`coalesce(f.rank, 4)`, backlog: sql`coalesce(f.pending, 0)`, oldest: sql`coalesce(f.oldest, 0)`, name: sql`lower(c.name)` };
    const { rows } = await db.execute<{ id: string; name: string }>(sql`
      SELECT c.id, c.name FROM companies c LEFT JOIN ${facts} ON f.id = c.id
      WHERE ${where}
      ORDER BY ${key[sort]} ${dir}, c.name, c.id
      LIMIT ${TABLE_PAGE_SIZE} OFFSET ${(page - 1) * TABLE_PAGE_SIZE}`);
    const act = await activity(first, rows.map((r) => r.id), now, k.backlogs);
    const items = rows.map((r) => ({ id: r.id, name: r.name, state: k.states.get(r.id) ?? OK, backlog: k.backlogs.get(r.id) ?? { pending: 0, oldestPendingAgeS: 0 }, lastHour: act.get(r.id)!.lastHour }));
    return { total, page, pages, items };
  }

  return {
    async overview(query: TableQuery = {}, now = new Date()): Promise<Overview> {
      const { first, minutes } = minutesUpTo(now);
      const [k, { series: deployment, failing }] = await Promise.all([known(), deploymentSeries(first)]);

      // A paused company's backlog waits for new credentials by design: the oldest among the others.
      const oldest = [...k.backlogs]
        .filter(([id, b]) => k.states.get(id)?.status !== 'paused' && b.pending > 0 && b.oldestPendingAgeS >= OLDEST_BACKLOG_MIN_AGE_S)
        .sort((a, b) => b[1].oldestPendingAgeS - a[1].oldestPendingAgeS)
        .slice(0, OLDEST_BACKLOGS)
        .map(([id]) => id);
      const reasons = new Map<string, AttentionReason[]>();
      const tag = (id: string, why: AttentionReason) => reasons.set(id, [...(reasons.get(id) ?? []), why]);
      for (const c of k.troubled.companies) if (URGENT_STATES.has(c.state.status)) tag(c.id, c.state.status as AttentionReason);
      for (const id of failing) tag(id, 'failing');
      for (const id of oldest) tag(id, 'oldest backlog');
      const noticed = [...reasons.keys()];

      // The attention's activity beside the table's page, then the page's own: three round trips in all, however many companies.
      const [matching, noticedActivity, others] = await Promise.all([
        db.execute<{ id: string; name: string }>(sql`SELECT c.id, c.name FROM companies c WHERE c.id = ANY(${sql.param(noticed)}::uuid[]) AND ${searchSql(query.search)}`),
        activity(first, noticed, now, k.backlogs),
        tablePage(query, k, noticed, first, now),
      ]);
      const attention = matching.rows.map((r) => ({ id: r.id, name: r.name, state: k.states.get(r.id) ?? OK, ...noticedActivity.get(r.id)!, attention: reasons.get(r.id)! }));

      const backlogs = [...k.backlogs.values()];
      const totals: DeploymentTotals = {
        companies: sum(Object.values(k.troubled.counts)),
        ...lastHourOf(deployment),
        pending: sum(backlogs.map((b) => b.pending)),
        oldestPendingAgeS: Math.max(0, ...backlogs.map((b) => b.oldestPendingAgeS)),
        paused: k.troubled.counts.paused,
        throttled: k.troubled.counts.throttled,
        unreachable: k.troubled.counts.unreachable,
        series: deployment,
      };
      return { minutes, totals, attention: attention.sort(byUrgency), others };
    },

    /** Every company as a row of the compact table (the companies page), searched, sorted and paged; `companies` counts them all. */
    async companies(query: TableQuery = {}, now = new Date()): Promise<TablePage & { companies: number }> {
      const { first } = minutesUpTo(now);
      const k = await known();
      return { companies: sum(Object.values(k.troubled.counts)), ...(await tablePage(query, k, [], first, now)) };
    },

    /** One company's last hour, backlog and failures (its page; its state is the company view's). */
    async company(companyId: string, now = new Date()): Promise<{ minutes: string[]; activity: CompanyActivity }> {
      const { first, minutes } = minutesUpTo(now);
      const act = await activity(first, [companyId], now);
      return { minutes, activity: act.get(companyId)! };
    },
  };
}
