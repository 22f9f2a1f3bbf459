/**
 * Stored notifications and fetched resources as the admin surfaces show them (SPEC §7, §7.1): lists with
 * filters, one notification with its timeline, replays (one, or all matching a filter), and a resource's
 * versions with what changed. Every status it changes goes through the repository.
 */
import { and, asc, count, desc, eq, getTableColumns, gte, inArray, lt, lte, sql, type SQL } from 'drizzle-orm';
import type { z } from 'zod';
import type { notificationsQuery } from './schemas.js';
import type { Audit } from '../access/audit.js';
import type { Change, Database } from '../db/client.js';
import type { NotificationLifecycle, PendingKey } from '../notifications/lifecycle.js';
import { hrefDisposition } from '../receiver/ingest.js';
import { allowed, NOT_REPLAYABLE_OUTCOME, TRANSITIONS } from '../notifications/transitions.js';
import {
  companies,
  events,
  fetchAttempts,
  notificationReplays,
  notifications,
  notPurging,
  resources,
  webhooks,
  type FetchAttemptRow,
  type NotificationReplayRow,
  type NotificationRow,
  type NotificationStatus,
  type ResourceRow,
} from '../db/schema/index.js';
import { decodeCursor, isId, isMicrosecondTime, isUuid, microsecondText, pageOf } from '../db/pagination.js';
import { Problem, notFound } from '../lib/problem.js';
import type { FetchEnqueuer } from '../processing/enqueue.js';
import { notificationViewSchema, resourceViewSchema, viewOf, type NotificationView, type ReplayedView, type ResourceVersionView, type ResourceView, type ResyncView, type TimelineEntry } from './views.js';

/** A notification as lists show it: without its body and timeline, which only `get` reads. */
const listedSchema = notificationViewSchema.omit({ body: true, timeline: true });
const notificationView = (n: NotificationRow): NotificationView => viewOf(listedSchema, n, { id: String(n.id) });

/** Resync rows per INSERT: one statement shape (unnest), bounded arrays. */
const RESYNC_CHUNK = 1000;

/** Same-instant entries in the order they happen (a row inserted `queued`, or discarded, at its receipt). */
const KIND_ORDER: Record<TimelineEntry['kind'], number> = { received: 0, queued: 1, fetch: 2, processed: 3, failed: 3, discarded: 3, replayed: 4 };

const finalEntry = (status: NotificationStatus, at: Date | null, error: string | null): TimelineEntry | undefined => {
  if (!at) return undefined;
  if (status === 'failed') return { at: at.toISOString(), kind: 'failed', error };
  if (status === 'processed' || status === 'discarded') return { at: at.toISOString(), kind: status };
  return undefined;
};

/**
 * The timeline from what the row keeps of its current round (received, queued, its final status), the
 * replays (each keeping the round it ended), and the fetch attempts of every round.
 */
export function buildTimeline(n: NotificationRow, attempts: FetchAttemptRow[], replays: NotificationReplayRow[]): TimelineEntry[] {
  const entries: (TimelineEntry | undefined)[] = [{ at: n.receivedAt.toISOString(), kind: 'received' }];
  for (const r of replays) {
    if (r.previousQueuedAt) entries.push({ at: r.previousQueuedAt.toISOString(), kind: 'queued' });
    entries.push(finalEntry(r.previousStatus, r.previousFinishedAt, r.previousError));
    entries.push({ at: r.replayedAt.toISOString(), kind: 'replayed' });
  }
  if (n.queuedAt) entries.push({ at: n.queuedAt.toISOString(), kind: 'queued' });
  entries.push(finalEntry(n.status, n.finishedAt, n.lastError));
  for (const a of attempts) {
    entries.push({
      at: a.startedAt.toISOString(),
      kind: 'fetch',
      startedAt: a.startedAt.toISOString(),
      finishedAt: a.finishedAt.toISOString(),
      durationMs: a.finishedAt.getTime() - a.startedAt.getTime(),
      httpStatus: a.httpStatus,
      outcome: a.outcome,
      error: a.error,
      snapshotVersion: a.snapshotVersion,
    });
  }
  return entries
    .filter((e): e is TimelineEntry => e !== undefined)
    .sort((a, b) => a.at.localeCompare(b.at) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

const resourceView = (r: ResourceRow): ResourceView => viewOf(resourceViewSchema, r);

/** Every filter of the list and of a bulk replay (SPEC §7). */
export type NotificationFilter = Omit<z.infer<typeof notificationsQuery>, 'limit' | 'cursor'>;

const isTimeKey = (v: unknown): v is [string, number] => Array.isArray(v) && v.length === 2 && isMicrosecondTime(v[0]) && isId(v[1]);
const isResourceKey = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && isUuid(v[0]) && typeof v[1] === 'string';

const REPLAY_CHUNK = 1000;
/** The filters that select by equality with their column of the same name. */
const EQUAL_FILTERS = ['companyId', 'webhookId', 'status', 'type', 'resourceId', 'href'] as const;

/** A deleted company's notifications, purged in batches (companies/purge.ts), are gone from here at once. */
const NOT_PURGING = notPurging('notifications.company_id');

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createNotificationsService(deps: {
  db: Database;
  notifications: Pick<NotificationLifecycle, 'replay' | 'queue' | 'accept'>;
  enqueuer: Pick<FetchEnqueuer, 'enqueue'>;
  /** Outside development an href must be https (SPEC §4): a resync never fetches one the receiver would refuse. */
  requireHttpsHrefs: boolean;
}) {
  const { db } = deps;

  const filterSql = (f: NotificationFilter): SQL[] => [
    sql.raw(NOT_PURGING),
    ...EQUAL_FILTERS.flatMap((k) => (f[k] ? [eq(notifications[k], f[k])] : [])),
    ...(f.receivedAfter ? [gte(notifications.receivedAt, new Date(f.receivedAfter))] : []),
    ...(f.receivedBefore ? [lt(notifications.receivedAt, new Date(f.receivedBefore))] : []),
  ];

  /**
   * Back to `received` with the replay recorded, in `change`; once it committed, queued. Without Redis they
   * stay `received` and the relay queues them later (an outbox, not an error).
   */
  async function replayRows(change: Change, ids: number[]): Promise<number> {
    const rows = await deps.notifications.replay(ids, change);
    if (rows.length > 0) queueAfterCommit(change, rows);
    return rows.length;
  }

  /** After the change commits: the pending rows' jobs added, through the company's gate (SPEC §5.1), then marked queued. */
  function queueAfterCommit(change: Change, rows: PendingKey[]): void {
    change.afterCommit(async () => {
      const queued = await deps.enqueuer.enqueue(rows).then(
        () => true,
        () => false,
      );
      // Left `received` when Redis could not take them: the relay queues them (processing/relay.ts).
      if (queued) await deps.notifications.queue(rows.map((r) => r.id));
    });
  }

  const replayable = (filter: NotificationFilter) =>
    and(...filterSql(filter), inArray(notifications.status, [...TRANSITIONS.replay.from]), sql`${notifications.outcome} IS DISTINCT FROM ${NOT_REPLAYABLE_OUTCOME}`);

  async function getRow(id: number): Promise<NotificationRow> {
    const [row] = await db.select().from(notifications).where(and(eq(notifications.id, id), sql.raw(NOT_PURGING))).limit(1);
    if (!row) throw notFound(`Notification ${id}`);
    return row;
  }

  return {
    /**
     * Newest first: by id, or, when the filter bounds the time received, by (received_at, id). Ids follow
     * arrival, but PostgreSQL cannot know it: for a window days back it would walk the primary key through
     * every later notification, where the received_at index finds the window at once (docs/performance.md,
     * "The console"). The cursor says which order it continues.
     */
    async list(filter: NotificationFilter & { limit: number; cursor?: string }): Promise<{ items: NotificationView[]; nextCursor: string | null }> {
      if (filter.receivedAfter !== undefined || filter.receivedBefore !== undefined) {
        const after = filter.cursor ? decodeCursor(filter.cursor, isTimeKey) : undefined;
        const rows = await db
          .select({ ...getTableColumns(notifications), position: microsecondText(notifications.receivedAt) })
          .from(notifications)
          .where(
            and(
              ...filterSql(filter),
              // The first condition is the one its index can take; the second is exact.
              ...(after ? [lte(notifications.receivedAt, sql`${after[0]}::timestamptz`), sql`(${notifications.receivedAt}, ${notifications.id}) < (${after[0]}::timestamptz, ${after[1]}::bigint)`] : []),
            ),
          )
          .orderBy(desc(notifications.receivedAt), desc(notifications.id))
          .limit(filter.limit + 1);
        return pageOf(rows, filter.limit, (last) => [last.position, last.id], notificationView);
      }
      const before = filter.cursor ? decodeCursor(filter.cursor, isId) : undefined;
      const rows = await db
        .select()
        .from(notifications)
        .where(and(...filterSql(filter), ...(before ? [lt(notifications.id, before)] : [])))
        .orderBy(desc(notifications.id))
        .limit(filter.limit + 1);
      return pageOf(rows, filter.limit, (last) => last.id, notificationView);
    },

    /** One notification with its body and its timeline. */
    async get(id: number): Promise<NotificationView> {
      const row = await getRow(id);
      const [attempts, replays] = await Promise.all([
        row.fetchAttemptIds?.length ? db.select().from(fetchAttempts).where(inArray(fetchAttempts.id, row.fetchAttemptIds)).orderBy(asc(fetchAttempts.id)) : [],
        db.select().from(notificationReplays).where(eq(notificationReplays.notificationId, id)).orderBy(asc(notificationReplays.id)),
      ]);
      return { ...notificationView(row), body: row.body, timeline: buildTimeline(row, attempts, replays) };
    },

    /** Fetches the resource again for this notification; a discarded one stays discarded. */
    async replay(id: number, audit: Pick<Audit, 'change'>): Promise<ReplayedView> {
      const row = await getRow(id);
      if (!allowed('replay', row.status, 'received')) throw new Problem(409, 'Conflict', `A ${row.status} notification (its webhook was deactivated) cannot be replayed.`, { code: 'not_replayable' });
      if (row.outcome === NOT_REPLAYABLE_OUTCOME) {
        throw new Problem(409, 'Conflict', "This notification's href is under none of its company's base URLs: it was never fetched, and a replay would send the company's token there.", { code: 'not_replayable' });
      }
      await audit.change(async (change) => ({ value: await replayRows(change, [id]), companyId: row.companyId }));
      const [company] = await db.select({ name: companies.name, status: companies.connectionStatus, error: companies.connectionError }).from(companies).where(eq(companies.id, row.companyId));
      const note =
        company?.status === 'unauthorized'
          ? `Company ${company.name} is paused: the marketplace refused its API token (${company.error ?? 'no reason kept'}). The notification waits, queued, until the token is replaced (PATCH /admin/companies/${row.companyId}).`
          : null;
      return { ...notificationView(await getRow(id)), note };
    },

    /**
     * Replays every notification matching the filter (at most `limit`, oldest first); `discarded` ones
     * never. With `dryRun` it only counts what would be replayed. One change (at most 10,000 rows), one
     * audit entry with the filter and the counts.
     */
    async replayMatching(filter: NotificationFilter & { limit: number; dryRun?: boolean }, audit: Pick<Audit, 'change'>): Promise<{ matched: number; replayed: number }> {
      return audit.change(async (change) => {
        const [{ matched } = { matched: 0 }] = await change.tx.select({ matched: count() }).from(notifications).where(replayable(filter));
        let replayed = 0;
        if (!filter.dryRun) {
          const rows = await change.tx.select({ id: notifications.id }).from(notifications).where(replayable(filter)).orderBy(asc(notifications.id)).limit(filter.limit);
          for (let i = 0; i < rows.length; i += REPLAY_CHUNK) replayed += await replayRows(change, rows.slice(i, i + REPLAY_CHUNK).map((r) => r.id));
        }
        const counts = { matched, replayed };
        return { value: counts, companyId: filter.companyId, details: { filter, ...counts } };
      });
    },

    /**
     * Fetches again every resource Skyhook stored for the company (SPEC §14: what changed while the
     * marketplace's notifications were lost after its 48 hours): one notification of Skyhook's own per
     * resource (`authenticatedBy: resync`, on the company's oldest webhook, body `{id, type, href, resync:
     * true}`), committed in one change with its audit entry, then queued like the receiver's rows, so each
     * fetch goes through the company's gate and limits, coalesced with any notification of the same resource.
     * A resource whose href is now under none of the company's base URLs is left out (counted), never fetched.
     */
    async resync(companyId: string, audit: Pick<Audit, 'change'>): Promise<ResyncView> {
      const [company] = await db.select({ apiBaseUrl: companies.apiBaseUrl, extraBaseUrls: companies.extraBaseUrls }).from(companies).where(eq(companies.id, companyId));
      if (!company) throw notFound(`Company ${companyId}`);
      const [webhook] = await db.select({ id: webhooks.id }).from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.createdAt)).limit(1);
      if (!webhook) throw new Problem(409, 'Conflict', 'The company has no webhook, so nothing of it is notified or fetched: register one first.', { code: 'no_webhook' });
      const bases = [company.apiBaseUrl, ...company.extraBaseUrls].map((u) => new URL(u));
      const known = await db.select({ href: resources.href, type: resources.type, resourceId: resources.resourceId }).from(resources).where(eq(resources.companyId, companyId)).orderBy(asc(resources.href));
      const inScope = known.filter((r) => {
        const url = URL.parse(r.href);
        try {
          return url !== null && hrefDisposition(url, bases, deps.requireHttpsHrefs) === 'fetch';
        } catch {
          return false; // an href the receiver would refuse now (422): left out like one off the base URLs
        }
      });
      const counts = { resources: known.length, queued: inScope.length, outOfScope: known.length - inScope.length };
      return audit.change(async (change) => {
        for (let i = 0; i < inScope.length; i += RESYNC_CHUNK) {
          const chunk = inScope.slice(i, i + RESYNC_CHUNK);
          const rows = chunk.map((r) => ({
            companyId,
            webhookId: webhook.id,
            resourceId: r.resourceId,
            type: r.type,
            href: r.href,
            bodyJson: JSON.stringify({ id: r.resourceId, type: r.type, href: r.href, resync: true }),
            authenticatedBy: 'resync' as const,
            disposition: 'accepted' as const,
          }));
          const inserted = await deps.notifications.accept(rows, { queueing: false }, change);
          queueAfterCommit(change, inserted.map((n, k) => ({ id: n.id, companyId, href: chunk[k]!.href })));
        }
        return { value: { companyId, ...counts }, companyId, details: counts };
      });
    },

    /** How many notifications a replay with this filter would take (a page's confirmation). */
    async countReplayable(filter: NotificationFilter): Promise<number> {
      const [{ matched } = { matched: 0 }] = await db.select({ matched: count() }).from(notifications).where(replayable(filter));
      return matched;
    },

    async listResources(filter: { companyId?: string; type?: string; limit: number; cursor?: string }): Promise<{ items: ResourceView[]; nextCursor: string | null }> {
      const after = filter.cursor ? decodeCursor(filter.cursor, isResourceKey) : undefined;
      const rows = await db
        .select()
        .from(resources)
        .where(
          and(
            filter.companyId ? eq(resources.companyId, filter.companyId) : undefined,
            filter.type ? eq(resources.type, filter.type) : undefined,
            after ? sql`(${resources.companyId}, ${resources.href}) > (${after[0]}::uuid, ${after[1]})` : undefined,
          ),
        )
        .orderBy(asc(resources.companyId), asc(resources.href))
        .limit(filter.limit + 1);
      return pageOf(rows, filter.limit, (last) => [last.companyId, last.href], resourceView);
    },

    /**
     * The stored snapshot of one resource, or null; with `version`, that version's as its event keeps it (a
     * notification's page shows the one it led to), else the latest (as when that event is no longer kept).
     */
    async resource(companyId: string, href: string, version?: number): Promise<ResourceView | null> {
      const [row] = await db.select().from(resources).where(and(eq(resources.companyId, companyId), eq(resources.href, href))).limit(1);
      if (!row || version === undefined || version === row.version) return row ? resourceView(row) : null;
      const [e] = await db
        .select({ snapshot: events.snapshot, createdAt: events.createdAt })
        .from(events)
        .where(and(eq(events.companyId, companyId), eq(events.href, href), eq(events.snapshotVersion, version)))
        .limit(1);
      return e && e.snapshot !== null ? { ...resourceView(row), version, fetchedAt: e.createdAt.toISOString(), gone: false, body: e.snapshot } : resourceView(row);
    },

    /** A resource's stored versions, newest first, each with what changed from the one before. */
    async resourceHistory(filter: { companyId: string; href: string; limit: number; cursor?: string }): Promise<{ items: ResourceVersionView[]; nextCursor: string | null }> {
      const below = filter.cursor ? decodeCursor(filter.cursor, isId) : undefined;
      const [resource] = await db
        .select({ version: resources.version })
        .from(resources)
        .where(and(eq(resources.companyId, filter.companyId), eq(resources.href, filter.href)));
      if (!resource) throw notFound(`Resource ${filter.href} of company ${filter.companyId}`);
      // fetchedAt: when the version was stored (its event written), moments after its GET.
      const rows = await db
        .select({ id: events.id, version: events.snapshotVersion, fetchedAt: events.createdAt, changes: events.changes })
        .from(events)
        .where(and(eq(events.companyId, filter.companyId), eq(events.href, filter.href), ...(below ? [lt(events.id, below)] : [])))
        .orderBy(desc(events.id))
        .limit(filter.limit + 1);
      return pageOf(rows, filter.limit, (last) => last.id, (r) => ({ version: r.version, fetchedAt: r.fetchedAt.toISOString(), eventId: String(r.id), changes: r.changes }));
    },
  };
}
