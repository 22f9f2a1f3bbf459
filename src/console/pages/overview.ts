/**
 * The overview page (SPEC §13; what it shows: services/overview.service.ts): the companies that need attention
 * as cards, most urgent first and a page at a time, then the others as a compact table, searched, sorted
 * and paged on the server through the query string.
 */
import { ownCompany } from '../../access/guard.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { OLDEST_BACKLOG_MIN_AGE_S, OLDEST_BACKLOGS, type AttentionReason, type CompanyOverview, type Overview } from '../../services/overview.service.js';
import { parseForm } from '../forms.js';
import { html, type Html } from '../html.js';
import { ago, numHeading, page, query, table, time } from '../layout.js';
import type { ConsoleKit } from '../kit.js';
import { activityCharts, companyTable, count, failuresTable, stateBadge, stateNotice, stateWhen, tableForm, tablePager, tableParams, tableQuery, worst } from './company-parts.js';

/**
 * Cards per page: each carries two charts, so a deployment where hundreds need attention pages through
 * them; the list above the cards names every one of them, one short row each.
 */
const ATTENTION_PER_PAGE = 10;

const pageParams = z.object({ page: z.coerce.number().int().min(1).max(100_000).optional() });

/** The reasons a card tags beside the state's badge: the ones that are not the state itself. */
const tagsOf = (c: CompanyOverview): AttentionReason[] => c.attention.filter((a) => a === 'failing' || a === 'oldest backlog');

// Over 80 lines on purpose: one page, its sections in the order they show (the cards, their pager and the list share the page's state).
export function overviewPage(scope: FastifyInstance, kit: ConsoleKit): void {
  scope.get('/', async (req, reply) => {
    // A company key's console is its company's alone: its company's page is its overview.
    const own = ownCompany(req);
    if (own !== undefined) return kit.redirect(reply, `/companies/${own}`);
    const ctx = kit.ctx(req);
    const p = tableParams(req);
    const { page: pageNo = 1 } = parseForm(pageParams, req.query);
    const overview = await kit.deps.services.overview.overview(tableQuery(p));
    const notifications = (q: Record<string, string>) => `${ctx.base}/notifications${query(q)}`;

    const card = (c: CompanyOverview): Html => {
      const worstP95 = worst(c.series.p95Ms);
      return html`<article class="card" aria-labelledby="c-${c.id}">
  <header class="card-head">
    <h3 id="c-${c.id}"><a href="${ctx.base}/companies/${c.id}">${c.name}</a></h3>
    ${stateBadge(c.state)}${tagsOf(c).map((t) => html` <span class="badge tag">${t}</span>`)}
  </header>
  ${stateNotice(c.state)}
  <dl class="facts">
    <div><dt>Webhooks</dt><dd>${c.webhooks.active} active of ${c.webhooks.total}</dd></div>
    <div><dt>Backlog</dt><dd><a href="${notifications({ companyId: c.id, status: 'queued' })}">${count(c.backlog.pending)} pending</a></dd></div>
    <div><dt>Oldest pending</dt><dd>${c.backlog.pending ? ago(c.backlog.oldestPendingAgeS) : '–'}</dd></div>
    <div><dt>Last hour</dt><dd>${count(c.lastHour.received)} received, ${count(c.lastHour.processed)} processed, <a href="${notifications({ companyId: c.id, status: 'failed' })}">${count(c.lastHour.failed)} failed</a></dd></div>
    <div><dt>Worst minute's p95</dt><dd>${worstP95 === null ? '–' : `${worstP95} ms`}</dd></div>
  </dl>
  ${activityCharts(overview.minutes, c.series, c.name, { height: 150 })}
  <h4>Top failure reasons, last 24 hours</h4>
  ${failuresTable(c.topFailures)}
</article>`;
    };

    const pages = Math.max(1, Math.ceil(overview.attention.length / ATTENTION_PER_PAGE));
    const shown = Math.min(pageNo, pages);
    const cards = overview.attention.slice((shown - 1) * ATTENTION_PER_PAGE, shown * ATTENTION_PER_PAGE);
    const pageLink = (n: number) => `${ctx.base}${query({ q: p.q, sort: p.sort, dir: p.dir, tablePage: p.tablePage, page: n === 1 ? undefined : n })}#attention`;
    const pager =
      pages > 1
        ? html`<nav class="pager" aria-label="Pages of companies needing attention">
  ${shown > 1 ? html`<a href="${pageLink(shown - 1)}" rel="prev">← Previous ${ATTENTION_PER_PAGE}</a>` : ''}
  <span>Companies ${count((shown - 1) * ATTENTION_PER_PAGE + 1)}–${count((shown - 1) * ATTENTION_PER_PAGE + cards.length)} of ${count(overview.attention.length)} (page ${shown} of ${pages})</span>
  ${shown < pages ? html`<a href="${pageLink(shown + 1)}" rel="next">Next ${Math.min(ATTENTION_PER_PAGE, overview.attention.length - shown * ATTENTION_PER_PAGE)} →</a>` : ''}
</nav>`
        : '';
    /** Every company that needs attention, one row each, linked to its card (on this page of cards or another). */
    const attentionRows = overview.attention.map((c, i) => {
      const onPage = Math.floor(i / ATTENTION_PER_PAGE) + 1;
      const href = onPage === shown ? `#c-${c.id}` : pageLink(onPage).replace(/#attention$/, `#c-${c.id}`);
      return html`<tr><td><a href="${href}">${c.name}</a></td><td>${stateBadge(c.state)} <span class="small muted">${stateWhen(c.state)}</span></td><td class="small">${tagsOf(c).join(', ')}</td><td class="num">${count(c.backlog.pending)}</td><td class="num">${
        c.backlog.pending ? ago(c.backlog.oldestPendingAgeS) : '–'
      }</td><td class="num">${count(c.lastHour.failed)}</td></tr>`;
    });
    const attentionList = table(['Name', 'State', 'Why', numHeading('Backlog'), numHeading('Oldest pending'), numHeading('Failed (1 h)')], attentionRows, {
      class: 'companies attention-list',
      caption: 'Every company that needs attention, most urgent first; its card follows',
    });
    const searching = p.q ? html` matching “${p.q}”` : '';
    const othersPager = tablePager(overview.others, p, (q) => `${ctx.base}${query({ ...q, page: pageNo === 1 ? undefined : pageNo })}#others`, 'Pages of the other companies');

    const body = html`<h1>Overview</h1>
<p class="muted">Times in UTC; the last hour is the ${overview.minutes.length} minutes up to ${time(new Date().toISOString())}.</p>
<p class="jump">Jump to <a href="#attention">companies needing attention</a> · <a href="#others">every other company</a></p>
${summary(ctx.base, overview)}
${
  overview.totals.companies === 0
    ? html`<p>No company yet. <a href="${ctx.base}/companies">Add one</a>.</p>`
    : html`${tableForm(ctx.base, p, { label: 'Find a company', id: 'find' })}
<section aria-labelledby="attention" class="attention">
<h2 id="attention">Needs attention <span class="muted">(${count(overview.attention.length)}${searching})</span></h2>
<p class="hint">Paused, throttled or unreachable; with failures in the last hour; or among the ${OLDEST_BACKLOGS} oldest backlogs of the others (pending over ${ago(OLDEST_BACKLOG_MIN_AGE_S)}). Most urgent first.</p>
${overview.attention.length === 0 ? html`<p class="notice ok">${p.q ? 'No company needing attention matches.' : 'Every company is fine.'}</p>` : html`${attentionList}${pager}${cards.map(card)}${pager}`}
</section>
<section aria-labelledby="others">
<h2 id="others">Every other company <span class="muted">(${count(overview.others.total)}${searching})</span></h2>
${
  overview.others.total === 0
    ? html`<p class="muted">${p.q ? 'No other company matches.' : 'None: every company needs attention.'}</p>`
    : html`<p class="hint">Received, processed and failed count the last hour. Sort by a column's heading, or with the form above; find one company by its name or id with the form.</p>
${othersPager}
${companyTable(ctx.base, ctx.base, overview.others.items, p, 'Companies that need no attention: state, backlog, and the last hour')}
${othersPager}`
}
</section>`
}`;
    return kit.send(reply, page(ctx, { title: 'Overview', section: '', charts: true, body }));
  });
}

/** The whole deployment: totals across every company, and its last hour as charts. */
function summary(base: string, o: Overview): Html {
  const t = o.totals;
  const fact = (label: string, value: Html | string, warn = false) => html`<div${warn ? html` class="warn"` : ''}><dt>${label}</dt><dd>${value}</dd></div>`;
  return html`<section aria-labelledby="deployment">
<h2 id="deployment">Deployment</h2>
<dl class="totals">
  ${fact('Companies', count(t.companies))}
  ${fact('Received, last hour', count(t.received))}
  ${fact('Processed, last hour', count(t.processed))}
  ${fact('Failed, last hour', html`<a href="${base}/notifications?status=failed">${count(t.failed)}</a>`, t.failed > 0)}
  ${fact('Backlog, pending', html`<a href="${base}/notifications?status=queued">${count(t.pending)}</a>`)}
  ${fact('Oldest pending', t.pending ? ago(t.oldestPendingAgeS) : '–', t.oldestPendingAgeS >= OLDEST_BACKLOG_MIN_AGE_S)}
  ${fact('Paused', count(t.paused), t.paused > 0)}
  ${fact('Throttled', count(t.throttled), t.throttled > 0)}
  ${fact('Unreachable', count(t.unreachable), t.unreachable > 0)}
</dl>
${t.companies > 0 ? activityCharts(o.minutes, t.series, 'Every company') : ''}
</section>`;
}
