/** The overview (SPEC §13): per company its connection, webhooks, backlog, the last hour as charts, and why things fail. */
import type { FastifyInstance } from 'fastify';
import type { CompanyOverview } from '../../services/overview.service.js';
import { html } from '../html.js';
import { ago, page, query, time } from '../layout.js';
import type { ConsoleKit } from '../plugin.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const percentileOfMinutes = (xs: (number | null)[]) => {
  const seen = xs.filter((x): x is number => x !== null);
  return seen.length ? Math.max(...seen) : null;
};

export function overviewPage(scope: FastifyInstance, kit: ConsoleKit): void {
  scope.get('/', async (req, reply) => {
    const ctx = kit.ctx(req);
    const overview = await kit.deps.services.overview.overview();
    const epochs = overview.minutes.map((m) => Date.parse(m) / 1000);

    const card = (c: CompanyOverview) => {
      const s = c.series;
      const counts = JSON.stringify({ x: epochs, series: [['received', s.received], ['processed', s.processed], ['failed', s.failed]] });
      const latency = JSON.stringify({ x: epochs, points: true, series: [['p50 ms', s.p50Ms], ['p95 ms', s.p95Ms]] });
      const paused = c.company.connectionStatus === 'unauthorized';
      const worstP95 = percentileOfMinutes(s.p95Ms);
      return html`<article class="card" aria-labelledby="c-${c.company.id}">
  <header class="card-head">
    <h2 id="c-${c.company.id}"><a href="${kit.base}/companies/${c.company.id}">${c.company.name}</a></h2>
    ${paused ? html`<span class="badge s-failed">paused: token refused</span>` : html`<span class="badge s-processed">connection ok</span>`}
  </header>
  ${paused ? html`<p class="notice error">${c.company.connectionError ?? 'The marketplace refused the API token.'} Fetches wait until the token is replaced.</p>` : ''}
  <dl class="facts">
    <div><dt>Webhooks</dt><dd>${c.webhooks.active} active of ${c.webhooks.total}</dd></div>
    <div><dt>Backlog</dt><dd><a href="${kit.base}/notifications${query({ companyId: c.company.id, status: 'queued' })}">${c.backlog.pending} pending</a></dd></div>
    <div><dt>Oldest pending</dt><dd>${c.backlog.pending ? ago(c.backlog.oldestPendingAgeS) : '–'}</dd></div>
    <div><dt>Last hour</dt><dd>${sum(s.received)} received, ${sum(s.processed)} processed, <a href="${kit.base}/notifications${query({ companyId: c.company.id, status: 'failed' })}">${sum(s.failed)} failed</a></dd></div>
    <div><dt>Worst minute's p95</dt><dd>${worstP95 === null ? '–' : `${worstP95} ms`}</dd></div>
  </dl>
  <div class="charts">
    <figure>
      <figcaption>Notifications per minute, last hour</figcaption>
      <div class="chart" data-chart="${counts}" role="img" aria-label="Notifications received, processed and failed per minute over the last hour: ${sum(s.received)} received, ${sum(s.processed)} processed, ${sum(s.failed)} failed"></div>
    </figure>
    <figure>
      <figcaption>Received to processed, ms (p50, p95 per minute)</figcaption>
      <div class="chart" data-chart="${latency}" role="img" aria-label="Processing latency per minute over the last hour; worst p95 ${worstP95 ?? 'none'} ms"></div>
    </figure>
  </div>
  <h3>Top failure reasons, last 24 hours</h3>
  ${
    c.topFailures.length === 0
      ? html`<p class="muted">No failures.</p>`
      : html`<div class="table-wrap"><table>
    <thead><tr><th scope="col">Reason</th><th scope="col" class="num">Failures</th><th scope="col">Last</th></tr></thead>
    <tbody>${c.topFailures.map((f) => html`<tr><td class="wrap">${f.reason}</td><td class="num">${f.failures}</td><td>${time(f.lastFailedAt)}</td></tr>`)}</tbody>
  </table></div>`
  }
</article>`;
    };

    return kit.send(
      reply,
      page(ctx, {
        title: 'Overview',
        section: '',
        charts: true,
        body: html`<h1>Overview</h1>
<p class="muted">Times in UTC; the charts cover the last ${overview.minutes.length} minutes up to ${time(new Date().toISOString())}.</p>
${overview.companies.length === 0 ? html`<p>No company yet. <a href="${kit.base}/companies">Add one</a>.</p>` : overview.companies.map(card)}
${overview.truncated ? html`<p class="muted">Only the first ${overview.companies.length} companies are shown; see <a href="${kit.base}/companies">all companies</a>.</p>` : ''}`,
      }),
    );
  });
}
