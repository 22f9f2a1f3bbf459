/**
 * Deleting a company or a webhook (SPEC §7): every active webhook setting is deactivated on the
 * marketplace first, so it stops sending; if the marketplace refuses, nothing is deleted (502), unless
 * `force`, which deletes locally all the same and says which settings stay active there. Deleting a webhook
 * takes its notifications with it, and their history; a company goes at once with everything it owns, its
 * rows in the growing tables purged in batches after (src/companies/), its destinations' gates included
 * (src/destinations/).
 */
import { eq } from 'drizzle-orm';
import type { z } from 'zod';
import type { deletedSchema } from './schemas.js';
import type { Audit } from '../access/audit.js';
import { inChange, type Change, type Database } from '../db/client.js';
import { companies, destinations, webhooks, type WebhookRow } from '../db/schema/index.js';
import type { CompanyStates } from '../companies/states.js';
import type { DestinationStatesRepository } from '../destinations/postgres.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import { Problem, notFound } from '../lib/problem.js';
import type { WebhooksService } from './webhooks.service.js';

/** Settings still active on the marketplace (a forced delete whose deactivation was refused). */
export type Deleted = z.infer<typeof deletedSchema>;

export function createDeletionsService(deps: {
  db: Database;
  webhooks: Pick<WebhooksService, 'row' | 'updateRow' | 'changed'>;
  notifications: Pick<NotificationLifecycle, 'deleteWebhook'>;
  states: Pick<CompanyStates, 'delete'>;
  destinations: Pick<DestinationStatesRepository, 'forgetGates'>;
}) {
  const { db } = deps;

  /**
   * Deletes (`remove`, one change) after deactivating each active setting of `rows` on the marketplace, unless
   * one was refused and not `force`. With a setting to deactivate it is a call (in the audit log, before and
   * after); without, a change of the database alone (its entry in the deletion's transaction).
   */
  async function deleteAfter(what: string, rows: WebhookRow[], force: boolean | undefined, audit: Pick<Audit, 'change' | 'call'>, remove: (change: Change) => Promise<unknown>): Promise<Deleted> {
    const active = rows.filter((w) => w.active);
    const removed = async (change: Change) => {
      await remove(change);
      change.afterCommit(() => deps.webhooks.changed());
    };
    if (active.length === 0) {
      return audit.change(async (change) => {
        await removed(change);
        return { value: { remainingRemoteSettings: [] } };
      });
    }
    const deactivateThenRemove = async (): Promise<Deleted> => {
      const refused: Deleted['remainingRemoteSettings'] = [];
      for (const row of active) {
        try {
          await deps.webhooks.updateRow(row, { active: false });
        } catch (err) {
          // Asked to wait (the company is held after a 429): without force the caller waits too (503 with
          // Retry-After); with it, as for a refusal, the setting stays active there and is named.
          const held = err instanceof Problem && err.extra.code === 'company_throttled';
          if (!(err instanceof Problem) || (err.status !== 502 && !held) || (held && !force)) throw err;
          refused.push({ webhookId: row.id, remoteId: row.remoteId, error: err.detail ?? err.title });
        }
      }
      if (refused.length > 0 && !force) {
        throw new Problem(
          502,
          'Bad Gateway',
          `${what} was not deleted: the marketplace refused to deactivate ${refused.length === 1 ? 'its webhook setting' : `${refused.length} of its webhook settings`} (${refused.map((r) => `${r.remoteId}: ${r.error}`).join('; ')}). Retry, or delete with force=true to delete it here anyway.`,
          { code: 'marketplace_refused', errors: refused.map((r) => ({ field: `webhooks.${r.webhookId}`, message: r.error })) },
        );
      }
      await inChange(db, removed);
      return { remainingRemoteSettings: refused };
    };
    // A forced deletion that left settings active says which, by their ids on the marketplace.
    return audit.call({}, deactivateThenRemove, (d) => (d.remainingRemoteSettings.length > 0 ? { details: { remainingRemoteSettings: d.remainingRemoteSettings.map((r) => r.remoteId) } } : {}));
  }

  return {
    async deleteWebhook(companyId: string, webhookId: string, opts: { force?: boolean }, audit: Pick<Audit, 'change' | 'call'>): Promise<Deleted> {
      const row = await deps.webhooks.row(companyId, webhookId);
      return deleteAfter(`Webhook ${webhookId}`, [row], opts.force, audit, (change) => deps.notifications.deleteWebhook(webhookId, change));
    },

    async deleteCompany(companyId: string, opts: { force?: boolean }, audit: Pick<Audit, 'change' | 'call'>): Promise<Deleted> {
      const [company] = await db.select({ id: companies.id, name: companies.name }).from(companies).where(eq(companies.id, companyId));
      if (!company) throw notFound(`Company ${companyId}`);
      const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId));
      const destinationIds = (await db.select({ id: destinations.id }).from(destinations).where(eq(destinations.companyId, companyId))).map((d) => d.id);
      return deleteAfter(`Company ${company.name}`, rows, opts.force, audit, async (change) => {
        await deps.states.delete(companyId, change);
        // Its destinations went with it: their gates too (src/destinations/ owns them).
        change.afterCommit(() => deps.destinations.forgetGates(destinationIds));
      });
    },
  };
}
