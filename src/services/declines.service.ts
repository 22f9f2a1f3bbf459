/**
 * Declining a requested lift or an RFQ: validated (marketplace/declines.ts), idempotent by (company,
 * requestId), since a lift or an RFQ is declined once (docs/decisions.md); sent as a quote is (rfq-answers.ts).
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { z } from 'zod';
import type { createDeclineBody } from './schemas.js';
import type { Audit } from '../access/audit.js';
import { declines, resources, type DeclineRow } from '../db/schema/index.js';
import type { Decline, DeclineAnswered } from '../marketplace/declines.js';
import { findAnswer, heldUnknown, sendRfqAnswer, type RfqAnswerDeps } from './rfq-answers.js';
import { listOutbound } from './send-once.js';
import { declineViewSchema, viewOf, type DeclineView } from './views.js';

type DeclineRequest = z.infer<typeof createDeclineBody>;

const TRIP_MESSAGE_TYPE = 'tripmsgs';

const view = (d: DeclineRow): DeclineView => viewOf(declineViewSchema, d, { error: d.status === 'unknown' ? d.error : null, decline: d.body as Decline });

/**
 * The decline linked to its trip message when Skyhook stored that message before the decline's answer named it
 * (the notification came first); the tripmsgs handler links it when the message comes after.
 */
async function linkStoredTripMessage(db: RfqAnswerDeps['db'], row: DeclineRow): Promise<DeclineRow> {
  if (row.tripMessageId === null || row.resourceHref !== null) return row;
  const [message] = await db
    .select({ href: resources.href, version: resources.version })
    .from(resources)
    .where(and(eq(resources.companyId, row.companyId), eq(resources.type, TRIP_MESSAGE_TYPE), eq(resources.resourceId, row.tripMessageId)))
    .limit(1);
  if (!message) return row;
  const [linked] = await db
    .update(declines)
    .set({ resourceHref: message.href, snapshotVersion: message.version })
    .where(and(eq(declines.id, row.id), isNull(declines.resourceHref)))
    .returning();
  return linked ?? row;
}

export function createDeclinesService(deps: RfqAnswerDeps) {
  const { db } = deps;

  const service = {
    /** A repeat for a lift or RFQ already declined answers the stored decline (created: false) and sends nothing. A call: in the audit log, before and after. */
    async decline(companyId: string, input: DeclineRequest, audit: Pick<Audit, 'call'>): Promise<{ decline: DeclineView; created: boolean }> {
      const send = () => sendRfqAnswer(deps, companyId, {
        table: declines,
        action: 'decline',
        key: ['companyId', 'requestId'],
        request: input,
        values: { declineReason: input.decline.declineReason, body: input.decline },
        body: (r) => r.body,
        name: `the decline of ${input.requestId}`,
        operation: 'declines.send',
        read: (answer) => {
          const id = (answer as DeclineAnswered | undefined)?.tripmsgs?.id;
          return { columns: { tripMessageId: typeof id === 'string' ? id : null } };
        },
      });
      const { row, created } = await audit.call({ fields: Object.keys(input) }, send, (sent) => ({ targets: { declineId: sent.row.id }, details: { created: sent.created } }));
      return { decline: view(await linkStoredTripMessage(db, row)), created };
    },

    /** Sends again a decline held `unknown`, as stored, once an operator has checked the marketplace does not have it. */
    async resendUnknown(companyId: string, declineId: string, audit: Pick<Audit, 'call'>): Promise<{ decline: DeclineView; created: boolean }> {
      const { row, again } = await heldUnknown(db, declines, companyId, declineId, 'Decline', (d) => `The decline of ${d.requestId}`);
      return service.decline(companyId, { ...again, decline: row.body as Decline }, audit);
    },

    async get(companyId: string, declineId: string): Promise<DeclineView> {
      return view(await findAnswer(db, declines, companyId, declineId, 'Decline'));
    },

    /** Newest first; `requestId` finds the decline of a lift or an RFQ. */
    async list(companyId: string, opts: { requestId?: string; status?: DeclineRow['status']; limit: number; cursor?: string }): Promise<{ items: DeclineView[]; nextCursor: string | null }> {
      return listOutbound(deps, declines, companyId, [opts.requestId ? eq(declines.requestId, opts.requestId) : undefined, opts.status ? eq(declines.status, opts.status) : undefined], opts, view);
    },
  };
  return service;
}
