/** Client leads (SPEC §6): validated, idempotent by clientIdentifier per company, sent once. */
import { eq } from 'drizzle-orm';
import type { Audit } from '../access/audit.js';
import { leads, type LeadRow } from '../db/schema/index.js';
import { LEADS_PATH, leadKind, type ClientLead, type LeadCreated } from '../marketplace/leads.js';
import type { RfqAnswerDeps } from './rfq-answers.js';
import { createdBefore, listOutbound, sendOnce } from './send-once.js';
import { leadViewSchema, viewOf, type LeadView } from './views.js';

// A lead is never held `unknown`: it is safe to send again (services/send-once.ts).
const view = (l: LeadRow): LeadView => viewOf(leadViewSchema, l, { status: l.status as LeadView['status'] });

export function createLeadsService(deps: Omit<RfqAnswerDeps, 'requireHttpsHrefs'>) {
  const { db } = deps;

  return {
    /** 201 semantics when `created`, else the stored lead unchanged (nothing is sent twice). A call: in the audit log, before and after. */
    create: (companyId: string, lead: ClientLead, audit: Pick<Audit, 'call'>): Promise<{ lead: LeadView; created: boolean }> =>
      audit.call({ fields: Object.keys(lead) }, () => send(companyId, lead), (sent) => ({ targets: { leadId: sent.lead.id }, details: { created: sent.created } })),

    async list(companyId: string, opts: { limit: number; cursor?: string }): Promise<{ items: LeadView[]; nextCursor: string | null }> {
      return listOutbound(deps, leads, companyId, [], opts, view);
    },
  };

  async function send(companyId: string, lead: ClientLead): Promise<{ lead: LeadView; created: boolean }> {
    const once = { table: leads, key: ['companyId', 'clientIdentifier'] as const, values: { companyId, clientIdentifier: lead.clientIdentifier, kind: leadKind(lead), request: lead } };
    const done = await createdBefore(db, once);
    if (done) return { lead: view(done), created: false };
    const { conn, call } = await deps.companies.connection(companyId);
    // Outside sendOnce, which tells a refused call from one that may have been acted on by its MarketplaceError.
    const { row, created } = await call(() =>
      sendOnce(db, {
        ...once,
        callTimeoutMs: deps.timeoutMs,
        // Safe to repeat after a timeout or a crash: the marketplace itself keeps one lead per clientIdentifier.
        ifUnknown: 'resend',
        name: `lead ${lead.clientIdentifier}`,
        send: async (r) => {
          const answer = await deps.marketplace.call<LeadCreated>(conn, 'POST', LEADS_PATH, { body: r.request, operation: 'leads.create' });
          const [done] = await db
            .update(leads)
            .set({ status: 'created', remoteId: typeof answer?.id === 'string' ? answer.id : null, response: answer ?? null, updatedAt: new Date() })
            .where(eq(leads.id, r.id))
            .returning();
          return done!;
        },
      }, deps.onCleanupError),
    );
    return { lead: view(row), created };
  }
}
