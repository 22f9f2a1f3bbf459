import { and, eq, or } from 'drizzle-orm';
import { declines, quotes } from '../../db/schema/index.js';
import type { NotificationHandler } from './registry.js';

/**
 * `tripmsgs`: a trip message that is the reply to one of Skyhook's quotes is linked to it, matched by
 * the tripmsgs id the submission answered, or by the sellerQuote id it carries; one a decline was sent as
 * (the tripmsgs id its answer named) is linked to that decline.
 */
export const tripmsgsHandler: NotificationHandler = {
  type: 'tripmsgs',
  async handle({ tx, companyId, href, resourceId, snapshot }) {
    const sellerQuoteId = (snapshot.body as { sellerQuote?: { id?: unknown } } | null)?.sellerQuote?.id;
    const match = typeof sellerQuoteId === 'string' ? or(eq(quotes.tripMessageId, resourceId), eq(quotes.sellerQuoteId, sellerQuoteId)) : eq(quotes.tripMessageId, resourceId);
    await tx.update(quotes).set({ resourceHref: href, snapshotVersion: snapshot.version }).where(and(eq(quotes.companyId, companyId), match));
    await tx
      .update(declines)
      .set({ resourceHref: href, snapshotVersion: snapshot.version })
      .where(and(eq(declines.companyId, companyId), eq(declines.tripMessageId, resourceId)));
  },
};
