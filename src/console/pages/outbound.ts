/**
 * Leads, quotes and declines (SPEC §13): a company's lists, the quotes and declines whose outcome is unknown
 * first, each with the resend action (after checking on the marketplace that it did not arrive; SPEC §6,
 * services/send-once.ts); and the RFQ page's Quote… and Decline… forms, posted to the same services.
 */
import { auditOf, type Audit } from '../../access/audit.js';
import { companyInReach, ownCompany } from '../../access/guard.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Problem } from '../../lib/problem.js';
import { companyIdParams, resourceHistoryQuery } from '../../services/schemas.js';
import type { DeclineView, QuoteView } from '../../services/views.js';
import { parseForm } from '../forms.js';
import { companyPicker, pickCompany } from '../company-picker.js';
import { html } from '../html.js';
import { can, csrfField, doneNotice, page, pager, problemBox, query, table, time, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../kit.js';
import { resourcePage } from './notifications.js';
import { declineForm, declineRequestOf, quoteForm, quoteRequestOf } from './rfq-forms.js';

const cursor = z.string().max(200).optional();
const outboundQuery = z.object({ companyId: z.uuid().optional(), leadsCursor: cursor, quotesCursor: cursor, declinesCursor: cursor });
const answerParams = z.object({ companyId: z.uuid(), id: z.uuid() });
const PAGE = 25;
const DONE: Record<string, string> = {
  resent: 'The quote was sent again.',
  'resent-decline': 'The decline was sent again.',
  quoted: 'The quote was submitted.',
  declined: 'The decline was sent.',
};

const outcome = (a: { status: string; error: string | null }) =>
  html`${a.status === 'created' ? html`<span class="badge s-processed">created</span>` : a.status === 'unknown' ? html`<span class="badge s-failed">unknown</span>` : html`<span class="badge s-queued">${a.status}</span>`}${
    a.error ? html`<br><span class="error-text small">${a.error}</span>` : ''
  }`;

/** The resend action of a quote or a decline held unknown. */
const resendForm = (ctx: PageContext, action: string, what: string) =>
  !can(ctx, 'send')
    ? html`<td data-label="Action"><span class="muted">–</span></td>`
    : html`<td data-label="Action"><form method="post" action="${ctx.base}${action}" data-confirm="Resend ${what}? Only if you checked on the marketplace that the buyer did not get it.">${csrfField(ctx)}<button type="submit" class="small" aria-label="Resend ${what}">Resend</button></form></td>`;

/** Where it was sent: the RFQ's action href, or the assumed path. */
const sentTo = (a: { target: string | null; targetUrl: string | null }) =>
  a.targetUrl ? html`<span class="small">${a.target === 'snapshot_href' ? "RFQ's href" : 'assumed path'}</span><br><code class="wrap small">${a.targetUrl}</code>` : html`<span class="muted">–</span>`;

function quotesTable(ctx: PageContext, quotes: QuoteView[], withResend: boolean) {
  const rows = quotes.map(
    (q) => html`<tr>
    <td data-label="Seller quote identifier" class="wrap">${q.sellerUniqueQuoteIdentifier}${q.actAsAccount ? html`<br><span class="muted small">as ${q.actAsAccount}</span>` : ''}</td>
    <td data-label="Request" class="wrap">${q.requestId}</td>
    <td data-label="Status">${outcome(q)}</td>
    <td data-label="Marketplace ids" class="wrap small">${q.tripMessageId ? html`trip message ${q.tripMessageId}<br>seller quote ${q.sellerQuoteId}<br>lift ${q.liftId}` : html`<span class="muted">–</span>`}</td>
    <td data-label="Sent to">${sentTo(q)}</td>
    <td data-label="Submitted">${time(q.createdAt)}</td>
    ${withResend ? resendForm(ctx, `/companies/${q.companyId}/quotes/${q.id}/resend`, `quote ${q.sellerUniqueQuoteIdentifier}`) : ''}
  </tr>`,
  );
  return table(['Seller quote identifier', 'Request', 'Status', 'Marketplace ids', 'Sent to', 'Submitted', withResend && 'Action'], rows, { class: 'cards' });
}

function declinesTable(ctx: PageContext, declines: DeclineView[], withResend: boolean) {
  const rows = declines.map(
    (d) => html`<tr>
    <td data-label="Request" class="wrap">${d.requestId}${d.actAsAccount ? html`<br><span class="muted small">as ${d.actAsAccount}</span>` : ''}</td>
    <td data-label="Reason">${d.decline.declineReason}${d.decline.message ? html`<br><span class="muted small wrap">${d.decline.message}</span>` : ''}</td>
    <td data-label="Status">${outcome(d)}</td>
    <td data-label="Trip message" class="wrap small">${d.tripMessageId ?? html`<span class="muted">–</span>`}${d.resourceHref ? html`<br><span class="muted">stored, version ${d.snapshotVersion}</span>` : ''}</td>
    <td data-label="Sent to">${sentTo(d)}</td>
    <td data-label="Declined">${time(d.createdAt)}</td>
    ${withResend ? resendForm(ctx, `/companies/${d.companyId}/declines/${d.id}/resend`, `the decline of ${d.requestId}`) : ''}
  </tr>`,
  );
  return table(['Request', 'Reason', 'Status', 'Trip message', 'Sent to', 'Declined', withResend && 'Action'], rows, { class: 'cards' });
}

// Over 80 lines on purpose: a registrar, one page or form after another, each a few lines; the helpers it shares sit above it.
/** Quotes and declines of unknown outcome shown at once, of each: more are said to be there. */
const UNKNOWN_SHOWN = 100;

export function outboundPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { companies, leads, quotes, declines } = kit.deps.services;

  const outboundPage = async (req: FastifyRequest, reply: FastifyReply, companyIdGiven?: string, problem?: Problem) => {
    const ctx = kit.ctx(req);
    // The company field's text, read into companyId (company-picker.ts); none picked: the first company by id.
    const pick = await pickCompany(companies, companyIdGiven ? { ...(req.query as object), companyId: companyIdGiven, company: undefined } : req.query, ownCompany(req));
    const q = parseForm(outboundQuery, pick.query);
    // A company key sees its own company's, whatever the picker says.
    q.companyId = companyInReach(req, q.companyId);
    const first = pick.problem || q.companyId ? undefined : (await companies.list({ limit: 1 })).items[0];
    const companyId = q.companyId ?? first?.id;
    const picker = html`<form method="get" action="${ctx.base}/outbound" class="filters" aria-label="Choose a company">
  ${companyPicker(ctx, { id: 'o-company', label: 'Company', picked: first ? { companyId: first.id, text: first.name } : pick.picked, placeholder: 'Type a name or paste an id' })}
  <div class="buttons"><button type="submit">Show</button></div>
</form>`;
    if (pick.problem) {
      const body = html`<h1>Leads &amp; quotes</h1>${picker}${problemBox(pick.problem)}`;
      return kit.send(reply, page(ctx, { title: 'Leads & quotes', section: '/outbound', body }), pick.problem.status);
    }
    if (!companyId) return kit.send(reply, page(ctx, { title: 'Leads & quotes', section: '/outbound', body: html`<h1>Leads &amp; quotes</h1><p>No company yet.</p>` }));
    const [unknown, unknownDeclines, quotePage, declinePage, leadPage] = await Promise.all([
      quotes.list(companyId, { status: 'unknown', limit: UNKNOWN_SHOWN }),
      declines.list(companyId, { status: 'unknown', limit: UNKNOWN_SHOWN }),
      quotes.list(companyId, { limit: PAGE, cursor: q.quotesCursor }),
      declines.list(companyId, { limit: PAGE, cursor: q.declinesCursor }),
      leads.list(companyId, { limit: PAGE, cursor: q.leadsCursor }),
    ]);
    /** Newest and Older links of one of the three lists: each pages with a cursor of its own. */
    const listPager = (label: string, cursor: 'quotesCursor' | 'declinesCursor' | 'leadsCursor', next: string | null, older: string) =>
      pager(`${label} pages`, (c) => `${ctx.base}/outbound${query({ companyId, [cursor]: c })}`, q[cursor], next, `Older ${older} →`);
    const body = html`<h1>Leads &amp; quotes</h1>
${picker}
${problem ? problemBox(problem) : ''}
<section aria-labelledby="unknown">
<h2 id="unknown">Quotes and declines whose outcome is unknown</h2>
${
  unknown.items.length === 0 && unknownDeclines.items.length === 0
    ? html`<p class="muted">None: every quote's and decline's outcome is known.</p>`
    : html`<p>The marketplace may have received these, but no success was read. Check on the marketplace: resend only what is not there.</p>${
        unknown.items.length > 0 ? quotesTable(ctx, unknown.items, true) : ''
      }${unknownDeclines.items.length > 0 ? declinesTable(ctx, unknownDeclines.items, true) : ''}${
        unknown.nextCursor || unknownDeclines.nextCursor
          ? html`<p class="notice warn">More are unknown than the ${UNKNOWN_SHOWN} of each shown here: resend or settle these, and the next ones appear (the admin API lists them all: <code>GET …/quotes?status=unknown</code>, <code>GET …/declines?status=unknown</code>).</p>`
          : ''
      }`
}
</section>
<section aria-labelledby="quotes">
<h2 id="quotes">Quotes</h2>
${quotePage.items.length === 0 ? html`<p class="muted">No quote submitted.</p>` : quotesTable(ctx, quotePage.items, false)}
${listPager('Quote', 'quotesCursor', quotePage.nextCursor, 'quotes')}
</section>
<section aria-labelledby="declines">
<h2 id="declines">Declines</h2>
${declinePage.items.length === 0 ? html`<p class="muted">No lift or RFQ declined.</p>` : declinesTable(ctx, declinePage.items, false)}
${listPager('Decline', 'declinesCursor', declinePage.nextCursor, 'declines')}
</section>
<section aria-labelledby="leads">
<h2 id="leads">Leads</h2>
${
  leadPage.items.length === 0
    ? html`<p class="muted">No lead created.</p>`
    : table(
        ['Client identifier', 'Kind', 'Status', 'Marketplace id', 'Created'],
        leadPage.items.map((l) => html`<tr><td class="wrap">${l.clientIdentifier}</td><td>${l.kind}</td><td>${l.status}</td><td class="wrap">${l.remoteId ?? '–'}</td><td>${time(l.createdAt)}</td></tr>`),
      )
}
${listPager('Lead', 'leadsCursor', leadPage.nextCursor, 'leads')}
</section>`;
    return kit.send(reply, page(ctx, { title: 'Leads & quotes', section: '/outbound', body, notice: doneNotice(req.query, DONE) }), problem?.status ?? 200);
  };

  scope.get('/outbound', async (req, reply) => outboundPage(req, reply));

  /** The Resend of a quote or a decline held unknown; a refusal is shown on this page. */
  const resend = (kind: 'quotes' | 'declines', resendUnknown: (companyId: string, id: string, audit: Audit) => Promise<unknown>, done: string) =>
    scope.post(`/companies/:companyId/${kind}/:id/resend`, { config: { access: 'send' } }, async (req, reply) => {
      const { companyId, id } = parseForm(answerParams, req.params);
      return kit.act(reply, () => resendUnknown(companyId, id, auditOf(req)), () => `/outbound${query({ companyId, done })}`, (problem) => outboundPage(req, reply, companyId, problem));
    });
  resend('quotes', (companyId, id, audit) => quotes.resendUnknown(companyId, id, audit), 'resent');
  resend('declines', (companyId, id, audit) => declines.resendUnknown(companyId, id, audit), 'resent-decline');

  /**
   * An RFQ page's Quote… or Decline…, posted to the service as the admin API posts it; what is refused (a
   * field, the marketplace) is shown on that RFQ's page, which the form's href names.
   */
  const rfqAnswer = <S extends z.ZodType<{ href: string }>>(path: string, formSchema: S, send: (companyId: string, form: z.infer<S>, audit: Audit) => Promise<unknown>, done: string) =>
    scope.post(`/companies/:companyId/${path}`, { config: { access: 'send' } }, async (req, reply) => {
      const { companyId } = parseForm(companyIdParams, req.params);
      const form = parseForm(formSchema, req.body);
      return kit.act(reply, () => send(companyId, form, auditOf(req)), () => `/outbound${query({ companyId, done })}`, (problem) =>
        resourcePage(kit, req, reply, parseForm(resourceHistoryQuery, { companyId, href: form.href }), problem),
      );
    });
  rfqAnswer('rfq-quotes', quoteForm, (companyId, form, audit) => quotes.submit(companyId, quoteRequestOf(form), audit), 'quoted');
  rfqAnswer('rfq-declines', declineForm, (companyId, form, audit) => declines.decline(companyId, declineRequestOf(form), audit), 'declined');
}
