/** Where, in a stored RFQ, the href of a quote or a decline is found (services/rfq-answers.ts actionHrefIn). */
import { describe, expect, it } from 'vitest';
import { actionHrefIn } from '../../src/services/rfq-answers.js';

const rfq = {
  resourceId: 'rfq-1',
  body: {
    id: 'rfq-1',
    actions: { submitQuote: { href: 'https://m.example/api/rfqs/rfq-1/submitQuote' }, decline: { href: 'https://m.example/api/rfqs/rfq-1/decline' } },
    sellerLift: [
      { id: 'lift-a', actions: { decline: { href: 'https://m.example/api/lifts/lift-a/decline' } } },
      { id: 'lift-b', actions: {} },
    ],
  },
};

describe('actionHrefIn', () => {
  it("takes the RFQ's own action for the RFQ id", () => {
    expect(actionHrefIn(rfq, 'rfq-1', 'decline')).toEqual({ href: 'https://m.example/api/rfqs/rfq-1/decline', field: 'rfq.actions.decline.href' });
  });

  it("takes the lift's action for a lift id, naming its place in sellerLift", () => {
    expect(actionHrefIn(rfq, 'lift-a', 'decline')).toEqual({ href: 'https://m.example/api/lifts/lift-a/decline', field: 'rfq.sellerLift.0.actions.decline.href' });
  });

  it("does not take the RFQ's action for a lift that has none of its own", () => {
    expect(actionHrefIn(rfq, 'lift-a', 'submitQuote')).toBeNull();
    expect(actionHrefIn(rfq, 'lift-b', 'decline')).toBeNull();
  });

  it('answers null for an id the RFQ does not have, or a body without actions', () => {
    expect(actionHrefIn(rfq, 'lift-z', 'decline')).toBeNull();
    expect(actionHrefIn({ resourceId: 'rfq-2', body: null }, 'rfq-2', 'decline')).toBeNull();
    expect(actionHrefIn({ resourceId: 'rfq-2', body: { actions: 'none' } }, 'rfq-2', 'decline')).toBeNull();
  });

  it('reads a sellerLift given as one object, and passes on an href that is not text for the caller to refuse', () => {
    const single = { resourceId: 'rfq-3', body: { sellerLift: { id: 'lift-c', actions: { submitQuote: { href: 42 } } } } };
    expect(actionHrefIn(single, 'lift-c', 'submitQuote')).toEqual({ href: 42, field: 'rfq.sellerLift.actions.submitQuote.href' });
  });
});
