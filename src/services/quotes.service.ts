/**
 * Quote submission (SPEC §6): validated (the total equals the line items' sum unless allowed),
 * idempotent by sellerUniqueQuoteIdentifier per company, the three ids of the answer stored.
 */
import { and, eq, getTableColumns } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { quotes, type QuoteRow } from '../db/schema/index.js';
import { newestFirst } from '../db/pagination.js';
import { Problem, badRequest, notFound } from '../lib/problem.js';
import type { MarketplaceClient } from '../marketplace/client.js';
import { priceMismatch, submitQuotePath, type QuoteSubmission, type QuoteSubmitted } from '../marketplace/quotes.js';
import type { CompaniesService } from './companies.service.js';
import { sendOnce } from './send-once.js';
import type { QuoteView } from './views.js';

export type { QuoteView };

export interface QuoteRequest {
  requestId: string;
  actAsAccount?: string;
  allowPriceMismatch?: boolean;
  /** Send again a quote held `unknown` (services/send-once.ts). */
  resendUnknown?: boolean;
  submission: QuoteSubmission;
}

const view = (q: QuoteRow): QuoteView => ({
  id: q.id,
  companyId: q.companyId,
  requestId: q.requestId,
  sellerUniqueQuoteIdentifier: q.sellerUniqueQuoteIdentifier,
  actAsAccount: q.actAsAccount,
  status: q.status,
  error: q.status === 'unknown' ? q.error : null,
  tripMessageId: q.tripMessageId,
  sellerQuoteId: q.sellerQuoteId,
  liftId: q.liftId,
  resourceHref: q.resourceHref,
  snapshotVersion: q.snapshotVersion,
  createdAt: q.createdAt.toISOString(),
});

const idOf = (part: { id?: unknown } | undefined): string | null => (typeof part?.id === 'string' ? part.id : null);

export function createQuotesService(deps: { db: Database; companies: CompaniesService; marketplace: MarketplaceClient; timeoutMs: number }) {
  const { db } = deps;

  const service = {
    async submit(companyId: string, input: QuoteRequest): Promise<{ quote: QuoteView; created: boolean }> {
      const { quote } = input.submission;
      const mismatch = input.allowPriceMismatch ? null : priceMismatch(quote);
      if (mismatch) {
        throw badRequest(`totalPrice ${mismatch.total} is not the sum of the line items' prices (${mismatch.sum}); send allowPriceMismatch: true to submit it anyway.`, [
          { field: 'submission.quote.totalPrice', message: `must equal the sum of lineItems[].price (${mismatch.sum})` },
        ]);
      }
      const { conn, call } = await deps.companies.connection(companyId);
      // Outside sendOnce, which tells a refused call from one that may have been acted on by its MarketplaceError.
      const { row, created } = await call(() =>
        sendOnce(db, {
          table: quotes,
          key: ['companyId', 'sellerUniqueQuoteIdentifier'],
          values: { companyId, sellerUniqueQuoteIdentifier: quote.sellerUniqueQuoteIdentifier, requestId: input.requestId, actAsAccount: input.actAsAccount ?? null, submission: input.submission },
          callTimeoutMs: deps.timeoutMs,
          // A second submission may make a second quote: a call that may have been acted on is held.
          ifUnknown: 'hold',
          resendUnknown: input.resendUnknown,
          name: `quote ${quote.sellerUniqueQuoteIdentifier}`,
          send: async (r) => {
            // The act-as header is the company profile's (marketplace/connection.ts).
            const actAsAccount = r.actAsAccount ?? undefined;
            const answer = await deps.marketplace.call<QuoteSubmitted>(conn, 'POST', submitQuotePath(r.requestId), { body: r.submission, actAsAccount, operation: 'quotes.submit' });
            const ids = { tripMessageId: idOf(answer?.tripmsgs), sellerQuoteId: idOf(answer?.sellerQuote), liftId: idOf(answer?.lift) };
            if (!ids.tripMessageId || !ids.sellerQuoteId || !ids.liftId) {
              // Submitted, but the ids the seed requires us to keep are missing: keep the row, say so.
              await db.update(quotes).set({ status: 'created', response: answer ?? null, error: null, ...ids, updatedAt: new Date() }).where(eq(quotes.id, r.id));
              throw new Problem(502, 'Bad Gateway', 'The marketplace accepted the quote, but its answer lacks tripmsgs.id, sellerQuote.id or lift.id.', {
                code: 'marketplace_invalid_response',
              });
            }
            const [done] = await db.update(quotes).set({ status: 'created', response: answer, error: null, ...ids, updatedAt: new Date() }).where(eq(quotes.id, r.id)).returning();
            return done!;
          },
        }),
      );
      return { quote: view(row), created };
    },

    /**
     * Sends again a quote held `unknown`, exactly as stored, once an operator has checked that the
     * marketplace does not have it (the console's resend action; the API and CLI repeat the request with
     * resendUnknown). Its price was checked when it was first submitted.
     */
    async resendUnknown(companyId: string, quoteId: string): Promise<{ quote: QuoteView; created: boolean }> {
      const [row] = await db.select().from(quotes).where(and(eq(quotes.companyId, companyId), eq(quotes.id, quoteId))).limit(1);
      if (!row) throw notFound(`Quote ${quoteId}`);
      if (row.status !== 'unknown') throw new Problem(409, 'Conflict', `Quote ${row.sellerUniqueQuoteIdentifier} is ${row.status}, not unknown: there is nothing to resend.`, { code: 'not_unknown' });
      return service.submit(companyId, {
        requestId: row.requestId,
        ...(row.actAsAccount ? { actAsAccount: row.actAsAccount } : {}),
        allowPriceMismatch: true,
        resendUnknown: true,
        submission: row.submission as QuoteSubmission,
      });
    },

    /** Newest first; `liftId` finds the quote for an availability upload's activity.tripId. */
    async list(companyId: string, opts: { liftId?: string; status?: QuoteRow['status']; limit: number; cursor?: string }): Promise<{ items: QuoteView[]; nextCursor: string | null }> {
      const keyset = newestFirst(quotes, opts.cursor);
      await deps.companies.get(companyId);
      const rows = await db
        .select({ ...getTableColumns(quotes), position: keyset.position })
        .from(quotes)
        .where(and(eq(quotes.companyId, companyId), opts.liftId ? eq(quotes.liftId, opts.liftId) : undefined, opts.status ? eq(quotes.status, opts.status) : undefined, keyset.where))
        .orderBy(...keyset.orderBy)
        .limit(opts.limit + 1);
      return keyset.page(rows, opts.limit, view);
    },
  };
  return service;
}

export type QuotesService = ReturnType<typeof createQuotesService>;
