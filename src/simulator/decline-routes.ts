/**
 * Declining (the real marketplace's "Decline request"): POST /tripmsgs/{requestId}/decline (assumed path),
 * and the RFQ's decline action hrefs (rfq-actions.ts), validate with the shared schema, answer the trip
 * message sent to the buyer, and notify it as a seller response, as a quote is.
 */
import { envelope } from '../marketplace/contract.js';
import { declineSchema, type DeclineAnswered } from '../marketplace/declines.js';
import { rfqActionRoutes } from './rfq-actions.js';
import { newId } from './state.js';

export const declineRoutes = rfqActionRoutes(
  'decline',
  declineSchema,
  (ledger) => ledger.calls.declines++,
  (simulation) => ({ requestId, body, company, actAsAccount, shownAs, via }) => {
    const { state, ledger } = simulation;
    // (assumed) A lift or an RFQ is declined once: a repeat answers the first decline and notifies nothing.
    const earlier = state.declines.get(company.id, requestId);
    if (earlier) return envelope(earlier);

    const answered: Required<DeclineAnswered> = { tripmsgs: { id: newId('tm') } };
    state.declines.set(company.id, requestId, answered);
    simulation.emit(company.id, 'TripRequestSellerResponse', answered.tripmsgs.id, {
      fields: { requestId, declined: true, actAsAccount, shownAs, ...body },
    });
    ledger.logs.declines.push({ companyId: company.id, requestId, declineReason: body.declineReason, tripMessageId: answered.tripmsgs.id, actAsAccount, via });
    return envelope(answered);
  },
);
