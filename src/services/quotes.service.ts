/**
 * Quote submission (SPEC §6): validated (the total equals the line items' sum unless allowed),
 * idempotent by sellerUniqueQuoteIdentifier per company, the three ids of the answer stored.
 */
import { and, desc, eq, lt } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { quotes, type QuoteRow } from '../db/schema/index.js';
import { Problem, badRequest } from '../lib/problem.js';
import type { MarketplaceClient } from '../marketplace/client.js';
import { ACT_AS_ACCOUNT_HEADER, priceMismatch, submitQuotePath, type QuoteSubmission, type QuoteSubmitted } from '../marketplace/quotes.js';
import type { CompaniesService } from './companies.service.js';
import { marketplaceCall } from './marketplace-call.js';
import { sendOnce } from './send-once.js';

export interface QuoteRequest {
  requestId: string;
  actAsAccount?: string;
  allowPriceMismatch?: boolean;
  submission: QuoteSubmission;
}

export interface QuoteView {
  id: string;
  companyId: string;
  requestId: string;
  sellerUniqueQuoteIdentifier: string;
  actAsAccount: string | null;
  status: 'sending' | 'created';
  tripMessageId: string | null;
  sellerQuoteId: string | null;
  liftId: string | null;
  resourceHref: string | null;
  snapshotVersion: number | null;
  createdAt: string;
}

const view = (q: QuoteRow): QuoteView => ({
  id: q.id,
  companyId: q.companyId,
  requestId: q.requestId,
  sellerUniqueQuoteIdentifier: q.sellerUniqueQuoteIdentifier,
  actAsAccount: q.actAsAccount,
  status: q.status,
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
  const staleBefore = () => new Date(Date.now() - 2 * deps.timeoutMs);

  return {
    async submit(companyId: string, input: QuoteRequest): Promise<{ quote: QuoteView; created: boolean }> {
      const { quote } = input.submission;
      const mismatch = input.allowPriceMismatch ? null : priceMismatch(quote);
      if (mismatch) {
        throw badRequest(`totalPrice ${mismatch.total} is not the sum of the line items' prices (${mismatch.sum}); send allowPriceMismatch: true to submit it anyway.`, [
          { field: 'submission.quote.totalPrice', message: `must equal the sum of lineItems[].price (${mismatch.sum})` },
        ]);
      }
      const { conn } = await deps.companies.connection(companyId);
      const key = and(eq(quotes.companyId, companyId), eq(quotes.sellerUniqueQuoteIdentifier, quote.sellerUniqueQuoteIdentifier));
      const { row, created } = await sendOnce<QuoteRow>(
        {
          claim: async () =>
            (
              await db
                .insert(quotes)
                .values({
                  companyId,
                  sellerUniqueQuoteIdentifier: quote.sellerUniqueQuoteIdentifier,
                  requestId: input.requestId,
                  actAsAccount: input.actAsAccount ?? null,
                  submission: input.submission,
                })
                .onConflictDoNothing()
                .returning()
            )[0] ?? null,
          load: async () => (await db.select().from(quotes).where(key).limit(1))[0],
          isDone: (r) => r.status === 'created',
          takeOverIfStale: async (r) =>
            (await db.update(quotes).set({ updatedAt: new Date() }).where(and(eq(quotes.id, r.id), eq(quotes.status, 'sending'), lt(quotes.updatedAt, staleBefore()))).returning())[0] ?? null,
          send: async (r) => {
            const headers = r.actAsAccount ? { [ACT_AS_ACCOUNT_HEADER]: r.actAsAccount } : undefined;
            const answer = await marketplaceCall(() => deps.marketplace.call<QuoteSubmitted>(conn, 'POST', submitQuotePath(r.requestId), { body: r.submission, headers, operation: 'quotes.submit' }));
            const ids = { tripMessageId: idOf(answer?.tripmsgs), sellerQuoteId: idOf(answer?.sellerQuote), liftId: idOf(answer?.lift) };
            if (!ids.tripMessageId || !ids.sellerQuoteId || !ids.liftId) {
              // Submitted, but the ids the seed requires us to keep are missing: keep the row, say so.
              await db.update(quotes).set({ status: 'created', response: answer ?? null, ...ids, updatedAt: new Date() }).where(eq(quotes.id, r.id));
              throw new Problem(502, 'Bad Gateway', 'The marketplace accepted the quote, but its answer lacks tripmsgs.id, sellerQuote.id or lift.id.', {
                code: 'marketplace_invalid_response',
              });
            }
            const [done] = await db.update(quotes).set({ status: 'created', response: answer, ...ids, updatedAt: new Date() }).where(eq(quotes.id, r.id)).returning();
            return done!;
          },
          release: async (r) => {
            await db.delete(quotes).where(and(eq(quotes.id, r.id), eq(quotes.status, 'sending')));
          },
        },
        deps.timeoutMs + 5000,
      );
      return { quote: view(row), created };
    },

    /** Newest first; `liftId` finds the quote for an availability upload's activity.tripId. */
    async list(companyId: string, opts: { liftId?: string; limit: number; cursor?: string }): Promise<{ items: QuoteView[]; nextCursor: string | null }> {
      await deps.companies.get(companyId);
      const rows = await db
        .select()
        .from(quotes)
        .where(and(eq(quotes.companyId, companyId), opts.liftId ? eq(quotes.liftId, opts.liftId) : undefined, opts.cursor ? lt(quotes.createdAt, new Date(opts.cursor)) : undefined))
        .orderBy(desc(quotes.createdAt))
        .limit(opts.limit + 1);
      const items = rows.slice(0, opts.limit).map(view);
      return { items, nextCursor: rows.length > opts.limit ? items.at(-1)!.createdAt : null };
    },
  };
}

export type QuotesService = ReturnType<typeof createQuotesService>;
