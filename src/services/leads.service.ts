/** Client leads (SPEC §6): validated, idempotent by clientIdentifier per company, sent once. */
import { and, desc, eq, lt } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { leads, type LeadRow } from '../db/schema/index.js';
import type { MarketplaceClient } from '../marketplace/client.js';
import { LEADS_PATH, leadKind, type ClientLead, type LeadCreated } from '../marketplace/leads.js';
import type { CompaniesService } from './companies.service.js';
import { marketplaceCall } from './marketplace-call.js';
import { sendOnce } from './send-once.js';

export interface LeadView {
  id: string;
  companyId: string;
  clientIdentifier: string;
  kind: string;
  remoteId: string | null;
  status: 'sending' | 'created';
  request: unknown;
  response: unknown;
  resourceHref: string | null;
  snapshotVersion: number | null;
  createdAt: string;
}

const view = (l: LeadRow): LeadView => ({
  id: l.id,
  companyId: l.companyId,
  clientIdentifier: l.clientIdentifier,
  kind: l.kind,
  remoteId: l.remoteId,
  status: l.status,
  request: l.request,
  response: l.response,
  resourceHref: l.resourceHref,
  snapshotVersion: l.snapshotVersion,
  createdAt: l.createdAt.toISOString(),
});

export function createLeadsService(deps: { db: Database; companies: CompaniesService; marketplace: MarketplaceClient; timeoutMs: number }) {
  const { db } = deps;
  const staleBefore = () => new Date(Date.now() - 2 * deps.timeoutMs);

  return {
    /** 201 semantics when `created`, else the stored lead unchanged (nothing is sent twice). */
    async create(companyId: string, lead: ClientLead): Promise<{ lead: LeadView; created: boolean }> {
      const { conn } = await deps.companies.connection(companyId);
      const key = and(eq(leads.companyId, companyId), eq(leads.clientIdentifier, lead.clientIdentifier));
      const { row, created } = await sendOnce<LeadRow>(
        {
          claim: async () =>
            (await db.insert(leads).values({ companyId, clientIdentifier: lead.clientIdentifier, kind: leadKind(lead), request: lead }).onConflictDoNothing().returning())[0] ?? null,
          load: async () => (await db.select().from(leads).where(key).limit(1))[0],
          isDone: (r) => r.status === 'created',
          takeOverIfStale: async (r) =>
            (await db.update(leads).set({ updatedAt: new Date() }).where(and(eq(leads.id, r.id), eq(leads.status, 'sending'), lt(leads.updatedAt, staleBefore()))).returning())[0] ?? null,
          send: async (r) => {
            // Safe to repeat after a crash: the marketplace itself keeps one lead per clientIdentifier.
            const answer = await marketplaceCall(() => deps.marketplace.call<LeadCreated>(conn, 'POST', LEADS_PATH, { body: r.request, operation: 'leads.create' }));
            const [done] = await db
              .update(leads)
              .set({ status: 'created', remoteId: typeof answer?.id === 'string' ? answer.id : null, response: answer ?? null, updatedAt: new Date() })
              .where(eq(leads.id, r.id))
              .returning();
            return done!;
          },
          release: async (r) => {
            await db.delete(leads).where(and(eq(leads.id, r.id), eq(leads.status, 'sending')));
          },
        },
        deps.timeoutMs + 5000,
      );
      return { lead: view(row), created };
    },

    async list(companyId: string, opts: { limit: number; cursor?: string }): Promise<{ items: LeadView[]; nextCursor: string | null }> {
      await deps.companies.get(companyId);
      const rows = await db
        .select()
        .from(leads)
        .where(and(eq(leads.companyId, companyId), opts.cursor ? lt(leads.createdAt, new Date(opts.cursor)) : undefined))
        .orderBy(desc(leads.createdAt))
        .limit(opts.limit + 1);
      const items = rows.slice(0, opts.limit).map(view);
      return { items, nextCursor: rows.length > opts.limit ? items.at(-1)!.createdAt : null };
    },
  };
}

export type LeadsService = ReturnType<typeof createLeadsService>;
