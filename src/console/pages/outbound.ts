/**
 * Leads and quotes (SPEC §13): a company's lists, the quotes whose outcome is unknown first, each with
 * the resend action (after checking on the marketplace that it did not arrive; SPEC §6, services/send-once.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Problem } from '../../lib/problem.js';
import type { QuoteView } from '../../services/quotes.service.js';
import { html } from '../html.js';
import { csrfField, notice, page, problemBox, query, time, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../plugin.js';
import { parseForm } from './notifications.js';

const outboundQuery = z.object({ companyId: z.uuid().optional(), leadsCursor: z.string().max(200).optional(), quotesCursor: z.string().max(200).optional() });
const quoteParams = z.object({ companyId: z.uuid(), quoteId: z.uuid() });
const PAGE = 25;

const quoteStatus = (q: QuoteView) =>
  q.status === 'created' ? html`<span class="badge s-processed">created</span>` : q.status === 'unknown' ? html`<span class="badge s-failed">unknown</span>` : html`<span class="badge s-queued">${q.status}</span>`;

function quotesTable(ctx: PageContext, quotes: QuoteView[], withResend: boolean) {
  return html`<div class="table-wrap"><table class="cards">
  <thead><tr><th scope="col">Seller quote identifier</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Marketplace ids</th><th scope="col">Submitted</th>${withResend ? html`<th scope="col">Action</th>` : ''}</tr></thead>
  <tbody>${quotes.map(
    (q) => html`<tr>
    <td data-label="Seller quote identifier" class="wrap">${q.sellerUniqueQuoteIdentifier}${q.actAsAccount ? html`<br><span class="muted small">as ${q.actAsAccount}</span>` : ''}</td>
    <td data-label="Request" class="wrap">${q.requestId}</td>
    <td data-label="Status">${quoteStatus(q)}${q.error ? html`<br><span class="error-text small">${q.error}</span>` : ''}</td>
    <td data-label="Marketplace ids" class="wrap small">${q.tripMessageId ? html`trip message ${q.tripMessageId}<br>seller quote ${q.sellerQuoteId}<br>lift ${q.liftId}` : html`<span class="muted">–</span>`}</td>
    <td data-label="Submitted">${time(q.createdAt)}</td>
    ${
      withResend
        ? html`<td data-label="Action"><form method="post" action="${ctx.base}/companies/${q.companyId}/quotes/${q.id}/resend" data-confirm="Resend quote ${q.sellerUniqueQuoteIdentifier}? Only if you checked on the marketplace that the buyer did not get it.">${csrfField(ctx)}<button type="submit" class="small" aria-label="Resend quote ${q.sellerUniqueQuoteIdentifier}">Resend</button></form></td>`
        : ''
    }
  </tr>`,
  )}</tbody>
</table></div>`;
}

export function outboundPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { companies, leads, quotes } = kit.deps.services;

  const outboundPage = async (req: FastifyRequest, reply: FastifyReply, companyIdGiven?: string, problem?: Problem) => {
    const ctx = kit.ctx(req);
    const q = parseForm(outboundQuery, req.query);
    const all = await companies.list({ limit: 500 });
    const companyId = companyIdGiven ?? q.companyId ?? all.items[0]?.id;
    const picker = html`<form method="get" action="${ctx.base}/outbound" class="filters" aria-label="Choose a company">
  <div class="field wide"><label for="o-company">Company</label><select id="o-company" name="companyId">${all.items.map(
    (c) => html`<option value="${c.id}"${c.id === companyId ? html` selected` : ''}>${c.name}</option>`,
  )}</select></div>
  <div class="buttons"><button type="submit">Show</button></div>
</form>`;
    if (!companyId) return kit.send(reply, page(ctx, { title: 'Leads & quotes', section: '/outbound', body: html`<h1>Leads &amp; quotes</h1><p>No company yet.</p>` }));
    const [unknown, quotePage, leadPage] = await Promise.all([
      quotes.list(companyId, { status: 'unknown', limit: 100 }),
      quotes.list(companyId, { limit: PAGE, cursor: q.quotesCursor }),
      leads.list(companyId, { limit: PAGE, cursor: q.leadsCursor }),
    ]);
    const done = (req.query as { done?: string }).done === 'resent' ? notice('The quote was sent again.') : undefined;
    const body = html`<h1>Leads &amp; quotes</h1>
${picker}
${problem ? problemBox(problem) : ''}
<section aria-labelledby="unknown">
<h2 id="unknown">Quotes whose outcome is unknown</h2>
${
  unknown.items.length === 0
    ? html`<p class="muted">None: every submitted quote's outcome is known.</p>`
    : html`<p>The marketplace may have received these, but no success was read. Check on the marketplace: resend only a quote that is not there.</p>${quotesTable(ctx, unknown.items, true)}`
}
</section>
<section aria-labelledby="quotes">
<h2 id="quotes">Quotes</h2>
${quotePage.items.length === 0 ? html`<p class="muted">No quote submitted.</p>` : quotesTable(ctx, quotePage.items, false)}
<nav class="pager" aria-label="Quote pages">${q.quotesCursor ? html`<a href="${ctx.base}/outbound${query({ companyId })}">Newest</a>` : ''}${
      quotePage.nextCursor ? html`<a href="${ctx.base}/outbound${query({ companyId, quotesCursor: quotePage.nextCursor })}">Older quotes →</a>` : ''
    }</nav>
</section>
<section aria-labelledby="leads">
<h2 id="leads">Leads</h2>
${
  leadPage.items.length === 0
    ? html`<p class="muted">No lead created.</p>`
    : html`<div class="table-wrap"><table>
  <thead><tr><th scope="col">Client identifier</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Marketplace id</th><th scope="col">Created</th></tr></thead>
  <tbody>${leadPage.items.map(
    (l) => html`<tr><td class="wrap">${l.clientIdentifier}</td><td>${l.kind}</td><td>${l.status}</td><td class="wrap">${l.remoteId ?? '–'}</td><td>${time(l.createdAt)}</td></tr>`,
  )}</tbody>
</table></div>`
}
<nav class="pager" aria-label="Lead pages">${q.leadsCursor ? html`<a href="${ctx.base}/outbound${query({ companyId })}">Newest</a>` : ''}${
      leadPage.nextCursor ? html`<a href="${ctx.base}/outbound${query({ companyId, leadsCursor: leadPage.nextCursor })}">Older leads →</a>` : ''
    }</nav>
</section>`;
    return kit.send(reply, page(ctx, { title: 'Leads & quotes', section: '/outbound', body, notice: done }), problem?.status ?? 200);
  };

  scope.get('/outbound', async (req, reply) => outboundPage(req, reply));

  scope.post('/companies/:companyId/quotes/:quoteId/resend', async (req, reply) => {
    const { companyId, quoteId } = parseForm(quoteParams, req.params);
    try {
      await quotes.resendUnknown(companyId, quoteId);
      return kit.redirect(reply, `/outbound${query({ companyId, done: 'resent' })}`);
    } catch (err) {
      const problem = kit.problem(err);
      if (problem.status >= 500 && problem.status !== 502 && problem.status !== 503) throw err;
      return outboundPage(req, reply, companyId, problem);
    }
  });
}
