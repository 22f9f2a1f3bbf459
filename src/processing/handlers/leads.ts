import { and, eq, or } from 'drizzle-orm';
import { leads } from '../../db/schema/index.js';
import type { NotificationHandler } from './registry.js';

/**
 * `leads`: a fetched lead is linked to the lead Skyhook created, matched by the marketplace's id or
 * by the clientIdentifier Skyhook sent (the resource carries it back).
 */
export const leadsHandler: NotificationHandler = {
  type: 'leads',
  async handle({ tx, companyId, href, resourceId, snapshot }) {
    const clientIdentifier = (snapshot.body as { clientIdentifier?: unknown } | null)?.clientIdentifier;
    const match = typeof clientIdentifier === 'string' ? or(eq(leads.remoteId, resourceId), eq(leads.clientIdentifier, clientIdentifier)) : eq(leads.remoteId, resourceId);
    await tx.update(leads).set({ resourceHref: href, snapshotVersion: snapshot.version }).where(and(eq(leads.companyId, companyId), match));
  },
};
