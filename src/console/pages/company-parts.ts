/**
 * What the overview and the companies pages both show of a company (SPEC §13): its one state (§5.1 F5),
 * its last hour as charts, its top failure reasons, and the compact table of many companies, searched,
 * sorted and paged on the server through the query string (it works without script, by keyboard: links
 * and a GET form).
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { CompanyState } from '../../companies/transitions.js';
import { DEFAULT_DIRECTION, TABLE_PAGE_SIZE, TABLE_SORTS, type CompanyActivity, type MinuteSeries, type TablePage, type TableQuery, type TableSort } from '../../services/overview.service.js';
import { parseForm } from '../forms.js';
import { html, type Html } from '../html.js';
import { ago, numHeading, query, table, time } from '../layout.js';

/** One formatter for every count (`toLocaleString` builds one a call: 50 ms for the 3,000 counts of 1,000 rows here). */
const numbers = new Intl.NumberFormat('en');
export const count = (n: number): string => numbers.format(n);
export const plural = (n: number, singular: string, many = `${singular}s`): string => `${count(n)} ${n === 1 ? singular : many}`;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
export const secondsSince = (iso: string): number => Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));

/** The table's query string: ?q=&sort=&dir=&tablePage= (anything else in it is the page's own). */
const tableQuerySchema = z.object({
  q: z.string().max(200).optional(),
  sort: z.enum(TABLE_SORTS).optional(),
  dir: z.enum(['asc', 'desc']).optional(),
  tablePage: z.coerce.number().int().min(1).max(1_000_000).optional(),
});
type TableParams = z.infer<typeof tableQuerySchema>;

export const tableParams = (req: FastifyRequest): TableParams => parseForm(tableQuerySchema, req.query);

export const tableQuery = (p: TableParams): TableQuery => ({ search: p.q, sort: p.sort, dir: p.dir, page: p.tablePage });

const STATE_CLASS: Record<CompanyState['status'], string> = { ok: 's-processed', paused: 's-failed', throttled: 's-queued', unreachable: 's-failed', unchecked: 's-discarded' };

/** A company's state as a badge: the word is always there, the class only picks a colour. */
export const stateBadge = (state: CompanyState): Html => html`<span class="badge ${STATE_CLASS[state.status]}">${state.status}</span>`;

/** Since or until when (a company's state or a destination's): "since 2026-… UTC (3 h 2 min)", "until 2026-… UTC". */
export function stateWhen(state: Pick<CompanyState, 'since' | 'until'>): Html | '' {
  if (state.since) return html`since ${time(state.since)} (${ago(secondsSince(state.since))})`;
  if (state.until) return html`until ${time(state.until)}`;
  return '';
}

/** Since or until when, and why, in words: "since 2026-… UTC (3 h 2 min): the marketplace answered 401". */
export function stateDetail(state: CompanyState): Html | '' {
  const when = stateWhen(state);
  if (!when && !state.reason) return '';
  return html`${when}${when && state.reason ? ': ' : ''}${state.reason ? html`<span class="wrap">${state.reason}</span>` : ''}`;
}

/** What the state means for the operator, for the states that stop or slow a company. */
export function stateNotice(state: CompanyState): Html | '' {
  const detail = stateDetail(state);
  switch (state.status) {
    case 'paused':
      return html`<p class="notice error"><strong>Paused</strong> ${detail}. Its notifications wait, and resume when the credentials are replaced (or a probe is accepted).</p>`;
    case 'throttled':
      return html`<p class="notice warn"><strong>Throttled</strong> ${detail}. The marketplace asked it to slow down; its fetches wait until then.</p>`;
    case 'unreachable':
      return html`<p class="notice error"><strong>Unreachable</strong> ${detail}.</p>`;
    default:
      return '';
  }
}

/** The last hour as two charts: notifications per minute, and received-to-processed latency. */
export function activityCharts(minutes: string[], s: MinuteSeries, label: string, opts: { height?: number } = {}): Html {
  const epochs = minutes.map((m) => Date.parse(m) / 1000);
  const counts = JSON.stringify({ x: epochs, series: [['received', s.received], ['processed', s.processed], ['failed', s.failed]] });
  const latency = JSON.stringify({ x: epochs, points: true, series: [['p50 ms', s.p50Ms], ['p95 ms', s.p95Ms]] });
  const worstP95 = worst(s.p95Ms);
  const height = opts.height ? html` data-height="${opts.height}"` : '';
  return html`<div class="charts">
    <figure>
      <figcaption>Notifications per minute, last hour</figcaption>
      <div class="chart" data-chart="${counts}"${height} role="img" aria-label="${label}: notifications received, processed and failed per minute over the last hour: ${sum(s.received)} received, ${sum(s.processed)} processed, ${sum(s.failed)} failed"></div>
    </figure>
    <figure>
      <figcaption>Received to processed, ms (p50, p95 per minute)</figcaption>
      ${
        worstP95 === null
          ? html`<p class="muted chart-empty">Nothing processed in the last hour.</p>`
          : html`<div class="chart" data-chart="${latency}"${height} role="img" aria-label="${label}: processing latency per minute over the last hour; worst p95 ${worstP95} ms"></div>`
      }
    </figure>
  </div>`;
}

export const worst = (xs: (number | null)[]): number | null => {
  const seen = xs.filter((x): x is number => x !== null);
  return seen.length ? Math.max(...seen) : null;
};

export function failuresTable(failures: CompanyActivity['topFailures']): Html {
  if (failures.length === 0) return html`<p class="muted">No failures.</p>`;
  return table(['Reason', numHeading('Failures'), 'Last'], failures.map((f) => html`<tr><td class="wrap">${f.reason}</td><td class="num">${f.failures}</td><td>${time(f.lastFailedAt)}</td></tr>`));
}

const SORT_LABELS: Record<TableSort, string> = { state: 'State', backlog: 'Backlog', oldest: 'Oldest pending', name: 'Name' };

/**
 * The search and sort form (GET: the query string is the state, so a link or a reload shows the same
 * list). The usual order puts what needs the operator first: paused before ok, the largest backlog, the
 * oldest pending; names from A.
 */
export function tableForm(action: string, p: TableParams, opts: { label: string; id: string }): Html {
  const sort = p.sort ?? 'state';
  return html`<form method="get" action="${action}" class="filters table-filters" role="search" aria-label="${opts.label}">
  <div class="field wide"><label for="${opts.id}-q">Name or id</label><input id="${opts.id}-q" name="q" type="search" value="${p.q ?? ''}" maxlength="200" autocomplete="off"></div>
  <div class="field"><label for="${opts.id}-sort">Sort by</label><select id="${opts.id}-sort" name="sort">${TABLE_SORTS.map(
    (s) => html`<option value="${s}"${s === sort ? html` selected` : ''}>${SORT_LABELS[s]}</option>`,
  )}</select></div>
  <div class="field"><label for="${opts.id}-dir">Order</label><select id="${opts.id}-dir" name="dir">
    <option value=""${p.dir === undefined ? html` selected` : ''}>Usual</option>
    <option value="asc"${p.dir === 'asc' ? html` selected` : ''}>Ascending</option>
    <option value="desc"${p.dir === 'desc' ? html` selected` : ''}>Descending</option>
  </select></div>
  <div class="buttons"><button type="submit">Show</button>${p.q || p.sort || p.dir ? html`<a href="${action}">Clear</a>` : ''}</div>
</form>`;
}

/**
 * Many companies, one short row each: name, state, backlog, oldest pending, and the last hour's counts.
 * The sortable columns' headings are links that sort by them (again: the other way).
 */
export function companyTable(base: string, action: string, rows: TablePage['items'], p: TableParams, caption: string): Html {
  const sort = p.sort ?? 'state';
  const dir = p.dir ?? DEFAULT_DIRECTION[sort];
  const heading = (key: TableSort, extra = '') => {
    const active = key === sort;
    const next = active ? (dir === 'asc' ? 'desc' : 'asc') : DEFAULT_DIRECTION[key];
    const href = `${action}${query({ q: p.q, sort: key, dir: next === DEFAULT_DIRECTION[key] ? undefined : next })}`;
    return html`<th scope="col"${extra ? html` class="${extra}"` : ''}${active ? html` aria-sort="${dir === 'asc' ? 'ascending' : 'descending'}"` : ''}><a href="${href}">${SORT_LABELS[key]}${active ? (dir === 'asc' ? ' ▲' : ' ▼') : ''}</a></th>`;
  };
  const headings = [heading('name'), heading('state'), heading('backlog', 'num'), heading('oldest', 'num'), numHeading('Received (1 h)'), numHeading('Processed (1 h)'), numHeading('Failed (1 h)')];
  const cells = rows.map(
    (c) => html`<tr><td><a href="${base}/companies/${c.id}">${c.name}</a></td><td>${stateBadge(c.state)}</td><td class="num">${count(c.backlog.pending)}</td><td class="num">${
      c.backlog.pending ? ago(c.backlog.oldestPendingAgeS) : '–'
    }</td><td class="num">${count(c.lastHour.received)}</td><td class="num">${count(c.lastHour.processed)}</td><td class="num">${count(c.lastHour.failed)}</td></tr>`,
  );
  return table(headings, cells, { class: 'companies', caption });
}

/**
 * The pages of the compact table (TABLE_PAGE_SIZE rows each): first, previous, next and last, as links that
 * keep the search and the sort; `href` builds a page's URL from the table's query.
 */
export function tablePager(t: TablePage, p: TableParams, href: (q: Record<string, string | number | undefined>) => string, label: string): Html {
  if (t.pages <= 1) return html``;
  const to = (n: number) => href({ q: p.q, sort: p.sort, dir: p.dir, tablePage: n === 1 ? undefined : n });
  const from = (t.page - 1) * TABLE_PAGE_SIZE + 1;
  return html`<nav class="pager" aria-label="${label}">
  ${t.page > 1 ? html`<a href="${to(1)}">First</a> <a href="${to(t.page - 1)}" rel="prev">← Previous ${TABLE_PAGE_SIZE}</a>` : ''}
  <span>Companies ${count(from)}–${count(from + t.items.length - 1)} of ${count(t.total)} (page ${count(t.page)} of ${count(t.pages)})</span>
  ${t.page < t.pages ? html`<a href="${to(t.page + 1)}" rel="next">Next ${Math.min(TABLE_PAGE_SIZE, t.total - t.page * TABLE_PAGE_SIZE)} →</a> <a href="${to(t.pages)}">Last</a>` : ''}
</nav>`;
}
