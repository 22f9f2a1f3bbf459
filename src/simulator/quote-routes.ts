/**
 * Quote submission (seed §2.2, §4.2): POST /tripmsgs/{requestId}/submitQuote validates with the shared
 * schema and answers new tripmsgs, sellerQuote and lift ids. That totalPrice equals the sum of the line
 * items is not enforced here: the seed does not say the marketplace does, so only Skyhook checks it.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { envelope, marketplaceId } from '../marketplace/contract.js';
import { actAsAccountHeader } from '../marketplace/connection.js';
import {
  quoteSubmissionSchema,
  submitQuotePath,
  type QuoteSubmitted,
} from '../marketplace/quotes.js';
import { issueErrors, softError } from './answers.js';
import { lateAnswer } from './faults.js';
import { countCall } from './ledger.js';
import { callerOf } from './auth.js';
import type { Simulation } from './simulation.js';
import { newId, type Company } from './state.js';

/** The route form of `submitQuotePath`, which percent-encodes the id it is given. */
const SUBMIT_QUOTE_ROUTE = submitQuotePath('REQUEST_ID').replace('REQUEST_ID', ':requestId');
/** The id Skyhook validates before sending it, checked again here as the marketplace would (a decoded `a%2Fb` is refused). */
const submitQuoteParams = z.object({ requestId: marketplaceId });

/** The user login a quote is sent as, in the header of the company's profile; a blank header counts as not sent, as no login is blank. */
function actAsAccountOf(request: FastifyRequest, company: Company): string | null {
  const value = request.headers[actAsAccountHeader(company.profile).toLowerCase()];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

export const quoteRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  const { state, ledger } = simulation;

  api.addHook('onSend', countCall(() => ledger.calls.quotes++));
  api.addHook('onSend', lateAnswer(state));

  api.post<{ Params: { requestId: string } }>(SUBMIT_QUOTE_ROUTE, async (request) => {
    const params = submitQuoteParams.safeParse(request.params);
    const parsed = quoteSubmissionSchema.safeParse(request.body);
    if (!params.success || !parsed.success) return softError(issueErrors([...(params.error?.issues ?? []), ...(parsed.error?.issues ?? [])]));
    const submission = parsed.data;
    const { sellerUniqueQuoteIdentifier } = submission.quote;
    const company = callerOf(request);
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
    const { requestId } = params.data;
    const actAsAccount = actAsAccountOf(request, company);
    // Seed §4.2: the broker sees the acting user when the header is sent, else the company name.
    const shownAs = actAsAccount ?? company.name;
    const { sellerQuote, lift } = submitted;
    const fields = { requestId, sellerQuote, lift, actAsAccount, shownAs, ...submission };
    simulation.emit(company.id, 'TripRequestSellerResponse', submitted.tripmsgs.id, { fields });
    ledger.quoteSubmitted({
      companyId: company.id,
      requestId,
      tripMessageId: submitted.tripmsgs.id,
      sellerQuoteId: submitted.sellerQuote.id,
      liftId: submitted.lift.id,
      actAsAccount,
      sellerUniqueQuoteIdentifier,
    });
    return envelope(submitted);
  });
};
