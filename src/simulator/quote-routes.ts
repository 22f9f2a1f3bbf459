/**
 * Quote submission (seed §2.2, §4.2): POST /tripmsgs/{requestId}/submitQuote, and the RFQ's submitQuote
 * action hrefs (rfq-actions.ts), validate with the shared schema and answer new tripmsgs, sellerQuote and
 * lift ids. That totalPrice equals the sum of the line items is not enforced here: the seed does not say
 * the marketplace does, so only Skyhook checks it.
 */
import { envelope } from '../marketplace/contract.js';
import { quoteSubmissionSchema, type QuoteSubmitted } from '../marketplace/quotes.js';
import { rfqActionRoutes } from './rfq-actions.js';
import { newId } from './state.js';

export const quoteRoutes = rfqActionRoutes(
  'submitQuote',
  quoteSubmissionSchema,
  (ledger) => ledger.calls.quotes++,
  (simulation) => ({ requestId, body: submission, company, actAsAccount, shownAs, via }) => {
    const { state, ledger } = simulation;
    const { sellerUniqueQuoteIdentifier } = submission.quote;
    // (assumed) The seed leaves idempotency to the caller (SPEC §6: Skyhook's sellerUniqueQuoteIdentifier).
    // A repeat of a company's identifier answers the stored ids and fires nothing, as if the marketplace
    // kept it too; otherwise the quote a retried submission ends in would depend on the simulator, not on
    // Skyhook. `calls` still counts every submission, so a repeat Skyhook should not have sent shows there.
    const stored = state.quotes.get(company.id, sellerUniqueQuoteIdentifier);
    if (stored) return envelope(stored);

    const submitted: QuoteSubmitted = {
      tripmsgs: { id: newId('tm') },
      sellerQuote: { id: newId('sq') },
      lift: { id: newId('lift') },
    };
    state.quotes.set(company.id, sellerUniqueQuoteIdentifier, submitted);
    const { sellerQuote, lift } = submitted;
    const fields = { requestId, sellerQuote, lift, actAsAccount, shownAs, ...submission };
    simulation.emit(company.id, 'TripRequestSellerResponse', submitted.tripmsgs.id, { fields });
    ledger.logs.quotes.push({
      companyId: company.id,
      requestId,
      tripMessageId: submitted.tripmsgs.id,
      sellerQuoteId: submitted.sellerQuote.id,
      liftId: submitted.lift.id,
      actAsAccount,
      sellerUniqueQuoteIdentifier,
      via,
    });
    return envelope(submitted);
  },
);
