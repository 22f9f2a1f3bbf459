/**
 * Quote submission (SPEC §6): validated (the total equals the line items' sum unless allowed),
 * idempotent by sellerUniqueQuoteIdentifier per company, the three ids of the answer stored; sent as a
 * decline is (rfq-answers.ts).
 */
import { eq } from 'drizzle-orm';
import type { z } from 'zod';
import type { createQuoteBody } from './schemas.js';
import type { Audit } from '../access/audit.js';
import { quotes, type QuoteRow } from '../db/schema/index.js';
import { Problem, badRequest } from '../lib/problem.js';
import { priceMismatch, type QuoteSubmission, type QuoteSubmitted } from '../marketplace/quotes.js';
import { heldUnknown, sendRfqAnswer, type RfqAnswerDeps } from './rfq-answers.js';
import { listOutbound } from './send-once.js';
import { quoteViewSchema, viewOf, type QuoteView } from './views.js';

type QuoteRequest = z.infer<typeof createQuoteBody>;

const view = (q: QuoteRow): QuoteView => viewOf(quoteViewSchema, q, { error: q.status === 'unknown' ? q.error : null });

const idOf = (part: { id?: unknown } | undefined): string | null => (typeof part?.id === 'string' ? part.id : null);

export function createQuotesService(deps: RfqAnswerDeps) {
  const { db } = deps;

  const service = {
    /** Sent once to the marketplace (a call: in the audit log, before and after, naming the request's fields). */
    async submit(companyId: string, input: QuoteRequest, audit: Pick<Audit, 'call'>): Promise<{ quote: QuoteView; created: boolean }> {
      const { quote } = input.submission;
      const mismatch = input.allowPriceMismatch ? null : priceMismatch(quote);
      if (mismatch) {
        throw badRequest(`totalPrice ${mismatch.total} is not the sum of the line items' prices (${mismatch.sum}); send allowPriceMismatch: true to submit it anyway.`, [
          { field: 'submission.quote.totalPrice', message: `must equal the sum of lineItems[].price (${mismatch.sum})` },
        ]);
      }
      const send = () => sendRfqAnswer(deps, companyId, {
        table: quotes,
        action: 'submitQuote',
        key: ['companyId', 'sellerUniqueQuoteIdentifier'],
        request: input,
        values: { sellerUniqueQuoteIdentifier: quote.sellerUniqueQuoteIdentifier, submission: input.submission },
        body: (r) => r.submission,
        name: `quote ${quote.sellerUniqueQuoteIdentifier}`,
        operation: 'quotes.submit',
        read: (answer) => {
          const submitted = answer as Partial<QuoteSubmitted> | undefined;
          const ids = { tripMessageId: idOf(submitted?.tripmsgs), sellerQuoteId: idOf(submitted?.sellerQuote), liftId: idOf(submitted?.lift) };
          // Submitted, but the ids the seed requires us to keep are missing: keep the row, say so.
          const incomplete =
            ids.tripMessageId && ids.sellerQuoteId && ids.liftId
              ? undefined
              : new Problem(502, 'Bad Gateway', 'The marketplace accepted the quote, but its answer lacks tripmsgs.id, sellerQuote.id or lift.id.', { code: 'marketplace_invalid_response' });
          return { columns: ids, incomplete };
        },
      });
      const { row, created } = await audit.call({ fields: Object.keys(input) }, send, (sent) => ({ targets: { quoteId: sent.row.id }, details: { created: sent.created } }));
      return { quote: view(row), created };
    },

    /**
     * Sends again a quote held `unknown`, exactly as stored, once an operator has checked that the
     * marketplace does not have it (the console's resend action; the API and CLI repeat the request with
     * resendUnknown). Its price was checked when it was first submitted.
     */
    async resendUnknown(companyId: string, quoteId: string, audit: Pick<Audit, 'call'>): Promise<{ quote: QuoteView; created: boolean }> {
      const { row, again } = await heldUnknown(db, quotes, companyId, quoteId, 'Quote', (q) => `Quote ${q.sellerUniqueQuoteIdentifier}`);
      return service.submit(companyId, { ...again, allowPriceMismatch: true, submission: row.submission as QuoteSubmission }, audit);
    },

    /** Newest first; `liftId` finds the quote for an availability upload's activity.tripId. */
    async list(companyId: string, opts: { liftId?: string; status?: QuoteRow['status']; limit: number; cursor?: string }): Promise<{ items: QuoteView[]; nextCursor: string | null }> {
      return listOutbound(deps, quotes, companyId, [opts.liftId ? eq(quotes.liftId, opts.liftId) : undefined, opts.status ? eq(quotes.status, opts.status) : undefined], opts, view);
    },
  };
  return service;
}
