/**
 * An RFQ's answers on its resource page (SPEC §13): "Quote…" and "Decline…", each a form on the whole RFQ or
 * one of its requested lifts, posted to the quotes and declines services (outbound.ts) as the admin API
 * posts them. The form fields are read back into the admin API's own request schemas.
 */
import { z } from 'zod';
import { createDeclineBody, createQuoteBody } from '../../services/schemas.js';
import { decodeJsonBody, storableText } from '../../lib/json-body.js';
import { badRequest, Problem } from '../../lib/problem.js';
import { DECLINE_REASONS } from '../../marketplace/declines.js';
import { asRequest } from '../forms.js';
import { html, type Html } from '../html.js';
import { can, csrfField, type PageContext } from '../layout.js';

/** The ids an RFQ can be answered on: the RFQ's own, then each requested lift's (`sellerLift[].id`). */
function answerableIds(body: unknown): { id: string; label: string }[] {
  const rfq = typeof body === 'object' && body !== null ? (body as { id?: unknown; sellerLift?: unknown }) : {};
  const lifts = Array.isArray(rfq.sellerLift) ? rfq.sellerLift : [rfq.sellerLift];
  const liftIds = lifts.map((l: { id?: unknown } | undefined) => l?.id).filter((id): id is string => typeof id === 'string');
  return [...(typeof rfq.id === 'string' ? [{ id: rfq.id, label: `The whole RFQ (${rfq.id})` }] : []), ...liftIds.map((id) => ({ id, label: `Requested lift ${id}` }))];
}

const requestPicker = (prefix: string, ids: { id: string; label: string }[]) =>
  html`<label for="${prefix}-request">Answer</label><select id="${prefix}-request" name="requestId" required>${ids.map((o) => html`<option value="${o.id}">${o.label}</option>`)}</select>
  <label for="${prefix}-as">Act as user login (optional)</label><input id="${prefix}-as" name="actAsAccount" maxlength="200" autocomplete="off">`;

/** The two forms, folded; `href` brings the operator back to this resource when the marketplace refuses. */
export function rfqAnswerForms(ctx: PageContext, companyId: string, href: string, body: unknown): Html {
  const ids = answerableIds(body);
  if (ids.length === 0 || !can(ctx, 'send')) return html``;
  const back = html`<input type="hidden" name="href" value="${href}">`;
  return html`<section aria-labelledby="answer" class="rfq-answers">
<h2 id="answer">Answer this RFQ</h2>
<p class="hint">Sent to the action href this RFQ carries, or to the assumed path when it carries none; sent once, as through the admin API.</p>
<details><summary>Quote…</summary>
<form method="post" action="${ctx.base}/companies/${companyId}/rfq-quotes" class="stack">${csrfField(ctx)}${back}
  ${requestPicker('q', ids)}
  <label for="q-submission">Submission (JSON: {message?, suppressNotification?, quote}; see examples/quote.json)</label>
  <textarea id="q-submission" name="submission" rows="12" required spellcheck="false"></textarea>
  <label class="check"><input type="checkbox" name="allowPriceMismatch" value="true"> Submit even if the total is not the sum of the line items</label>
  <button type="submit">Submit the quote</button>
</form>
</details>
<details><summary>Decline…</summary>
<form method="post" action="${ctx.base}/companies/${companyId}/rfq-declines" class="stack">${csrfField(ctx)}${back}
  ${requestPicker('d', ids)}
  <label for="d-reason">Reason</label><select id="d-reason" name="declineReason" required><option value="">Choose a reason</option>${DECLINE_REASONS.map((r) => html`<option value="${r}">${r}</option>`)}</select>
  <label for="d-message">Message to the buyer (optional)</label><textarea id="d-message" name="message" rows="3" maxlength="10000"></textarea>
  <label class="check"><input type="checkbox" name="suppressNotification" value="true"> Suppress the buyer's notification</label>
  <button type="submit">Decline</button>
</form>
</details>
</section>`;
}

const flag = z.literal('true').optional();
// A form's text reaches jsonb and text columns, which refuse a NUL or a lone surrogate (a 500, not a 400).
const text = z.string().refine(storableText, 'must not contain a NUL character or a lone surrogate');
const common = { href: text.pipe(z.string().min(1).max(4096)), requestId: text.optional(), actAsAccount: text.optional() };
export const quoteForm = z.object({ ...common, submission: z.string().optional(), allowPriceMismatch: flag });
export const declineForm = z.object({ ...common, declineReason: text.optional(), message: text.optional(), suppressNotification: flag });

/** The quote form as the admin API's quote request; the submission is JSON text. */
export function quoteRequestOf(form: z.infer<typeof quoteForm>): z.output<typeof createQuoteBody> {
  let submission: unknown;
  try {
    // As strict as the admin API's JSON bodies: what PostgreSQL could not store is refused here.
    submission = decodeJsonBody(Buffer.from(form.submission ?? '', 'utf8'));
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    const why = err.detail ?? 'not valid JSON';
    throw badRequest(`Please correct: submission must be JSON, such as the "submission" of examples/quote.json (${why})`, [{ field: 'submission', message: 'must be JSON' }]);
  }
  const { requestId, actAsAccount, allowPriceMismatch } = form;
  return asRequest(createQuoteBody, { requestId, actAsAccount, allowPriceMismatch: allowPriceMismatch === 'true', submission });
}

/** The decline form as the admin API's decline request. */
export function declineRequestOf(form: z.infer<typeof declineForm>): z.output<typeof createDeclineBody> {
  const { requestId, actAsAccount, declineReason, message, suppressNotification } = form;
  const decline = { declineReason, message, suppressNotification: suppressNotification === 'true' };
  // The form's fields are the request's and its decline's, by name: `decline.declineReason` is `declineReason`.
  return asRequest(createDeclineBody, { requestId, actAsAccount, decline }, (path) => path.filter((step) => step !== 'decline').join('.'));
}
