/**
 * A new RFQ resource's actions, as the marketplace gives them: an href for each action on the RFQ and on each
 * of its requested lifts, other paths than the assumed one, which rfq-actions.ts answers at.
 */
import { RFQ_ACTIONS, type RfqAction } from '../marketplace/contract.js';
import { newId, resourcePath } from './state.js';

/** The requested lifts of a new RFQ resource: two, so one can be quoted and the other declined. */
const LIFTS_PER_RFQ = 2;

const actionPath = (rfqId: string, liftId: string | null, action: RfqAction): string =>
  `${resourcePath('rfqs', rfqId)}${liftId === null ? '' : `/lifts/${encodeURIComponent(liftId)}`}/${action}`;

/** `{submitQuote: {href}, decline: {href}}` for the RFQ, or for one of its lifts. */
function actionsOf(hrefOf: (path: string) => string, rfqId: string, liftId: string | null): Record<RfqAction, { href: string }> {
  return Object.fromEntries(RFQ_ACTIONS.map((action) => [action, { href: hrefOf(actionPath(rfqId, liftId, action)) }])) as Record<RfqAction, { href: string }>;
}

/**
 * The fields an RFQ resource gets when it is created: its actions, and its requested lifts (`sellerLift`)
 * each with its id and actions. A later event keeps them (the resource's fields are merged).
 */
export function newRfqFields(hrefOf: (path: string) => string, rfqId: string): Record<string, unknown> {
  const sellerLift = Array.from({ length: LIFTS_PER_RFQ }, () => {
    const id = newId('lift');
    return { id, actions: actionsOf(hrefOf, rfqId, id) };
  });
  return { actions: actionsOf(hrefOf, rfqId, null), sellerLift };
}
