/** Stored notifications and fetched resources, as the admin surfaces show them; replay. */
import { and, asc, desc, eq, inArray, lt, ne, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { notifications, resources, type NotificationRow, type NotificationStatus, type ResourceRow } from '../db/schema/index.js';
import { decodeCursor, encodeCursor, isUuid } from '../lib/cursor.js';
import { Problem, notFound } from '../lib/problem.js';
import type { FetchEnqueuer } from '../processing/fetch-queue.js';

export interface NotificationView {
  id: string;
  companyId: string;
  webhookId: string;
  type: string;
  resourceId: string;
  href: string;
  status: NotificationStatus;
  attempts: number;
  lastError: string | null;
  outcome: 'stored' | 'gone' | null;
  snapshotVersion: number | null;
  authenticatedBy: 'basic' | 'oauth';
  receivedAt: string;
  processedAt: string | null;
  body?: unknown;
}

export const notificationView = (n: NotificationRow, withBody = false): NotificationView => ({
  id: String(n.id),
  companyId: n.companyId,
  webhookId: n.webhookId,
  type: n.type,
  resourceId: n.resourceId,
  href: n.href,
  status: n.status,
  attempts: n.attempts,
  lastError: n.lastError,
  outcome: n.outcome,
  snapshotVersion: n.snapshotVersion,
  authenticatedBy: n.authenticatedBy,
  receivedAt: n.receivedAt.toISOString(),
  processedAt: n.processedAt?.toISOString() ?? null,
  ...(withBody ? { body: n.body } : {}),
});

export interface ResourceView {
  companyId: string;
  href: string;
  type: string;
  resourceId: string;
  version: number;
  fetchedAt: string;
  gone: boolean;
  body: unknown;
}

const resourceView = (r: ResourceRow): ResourceView => ({
  companyId: r.companyId,
  href: r.href,
  type: r.type,
  resourceId: r.resourceId,
  version: r.version,
  fetchedAt: r.fetchedAt.toISOString(),
  gone: r.gone,
  body: r.body,
});

export interface NotificationFilter {
  companyId?: string;
  status?: NotificationStatus;
  type?: string;
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isResourceKey = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && isUuid(v[0]) && typeof v[1] === 'string';

export function createNotificationsService(deps: { db: Database; enqueuer: FetchEnqueuer }) {
  const { db } = deps;

  const filterSql = (f: NotificationFilter): SQL[] => [
    ...(f.companyId ? [eq(notifications.companyId, f.companyId)] : []),
    ...(f.status ? [eq(notifications.status, f.status)] : []),
    ...(f.type ? [eq(notifications.type, f.type)] : []),
  ];

  async function requeue(rows: Pick<NotificationRow, 'id' | 'companyId' | 'href'>[]): Promise<void> {
    // Back to `received` first (committed): if Redis is down the relay queues them later.
    await db
      .update(notifications)
      .set({ status: 'received', lastError: null, outcome: null, processedAt: null })
      .where(inArray(notifications.id, rows.map((r) => r.id)));
    await deps.enqueuer.enqueue(rows);
    await deps.enqueuer.markQueued(rows.map((r) => r.id));
  }

  return {
    /** Newest first. */
    async list(filter: NotificationFilter & { limit: number; cursor?: string }): Promise<{ items: NotificationView[]; nextCursor: string | null }> {
      const before = filter.cursor ? decodeCursor(filter.cursor, isId) : undefined;
      const rows = await db
        .select()
        .from(notifications)
        .where(and(...filterSql(filter), ...(before ? [lt(notifications.id, before)] : [])))
        .orderBy(desc(notifications.id))
        .limit(filter.limit + 1);
      const items = rows.slice(0, filter.limit);
      return { items: items.map((n) => notificationView(n)), nextCursor: rows.length > filter.limit ? encodeCursor(items.at(-1)!.id) : null };
    },

    async get(id: number): Promise<NotificationView> {
      const [row] = await db.select().from(notifications).where(eq(notifications.id, id)).limit(1);
      if (!row) throw notFound(`Notification ${id}`);
      return notificationView(row, true);
    },

    /** Fetches the resource again for this notification; a discarded one stays discarded. */
    async replay(id: number): Promise<NotificationView> {
      const [row] = await db.select().from(notifications).where(eq(notifications.id, id)).limit(1);
      if (!row) throw notFound(`Notification ${id}`);
      if (row.status === 'discarded') throw new Problem(409, 'Conflict', 'A discarded notification (its webhook was deactivated) cannot be replayed.', { code: 'not_replayable' });
      await requeue([row]);
      return this.get(id);
    },

    /** Replays every notification matching the filter (at most `limit`, oldest first); `discarded` ones never. */
    async replayMatching(filter: NotificationFilter & { limit: number }): Promise<{ replayed: number }> {
      const conditions = [...filterSql(filter), ne(notifications.status, 'discarded')];
      const rows = await db
        .select({ id: notifications.id, companyId: notifications.companyId, href: notifications.href })
        .from(notifications)
        .where(and(...conditions))
        .orderBy(asc(notifications.id))
        .limit(filter.limit);
      for (let i = 0; i < rows.length; i += 1000) await requeue(rows.slice(i, i + 1000));
      return { replayed: rows.length };
    },

    async listResources(filter: { companyId?: string; type?: string; limit: number; cursor?: string }): Promise<{ items: ResourceView[]; nextCursor: string | null }> {
      const after = filter.cursor ? decodeCursor(filter.cursor, isResourceKey) : undefined;
      const conditions: SQL[] = [
        ...(filter.companyId ? [eq(resources.companyId, filter.companyId)] : []),
        ...(filter.type ? [eq(resources.type, filter.type)] : []),
      ];
      if (after) {
        const [companyId, href] = after;
        conditions.push(sql`(${resources.companyId}, ${resources.href}) > (${companyId}::uuid, ${href})`);
      }
      const rows = await db
        .select()
        .from(resources)
        .where(and(...conditions))
        .orderBy(asc(resources.companyId), asc(resources.href))
        .limit(filter.limit + 1);
      const items = rows.slice(0, filter.limit);
      const last = items.at(-1);
      return { items: items.map(resourceView), nextCursor: rows.length > filter.limit && last ? encodeCursor([last.companyId, last.href]) : null };
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
