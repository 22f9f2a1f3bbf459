/**
 * The notification lifecycle in memory: the same transitions as src/notifications/postgres.ts, guarded by
 * the same table (transitions.ts), over plain maps. For the fast test tier, so it lives with the tests and
 * ships in no build; lifecycle-contract.ts beside it holds it to what the PostgreSQL implementation does.
 * It keeps only what the contract and the tests read: no fetch attempts, replays or timestamps other than
 * receivedAt.
 */
import { isDeepStrictEqual } from 'node:util';
import type { NotificationStatus } from '../../src/db/schema/index.js';
import {
  CLAIM_LIMIT,
  type Claimed,
  type FetchAttempt,
  type NewNotification,
  type NotificationLifecycle,
  type PendingKey,
  type ResourceRef,
  type Verdict,
  statusOnAccept,
} from '../../src/notifications/lifecycle.js';
import { allowed, NOT_REPLAYABLE_OUTCOME, PENDING, TRANSITIONS } from '../../src/notifications/transitions.js';

interface Row extends NewNotification {
  id: number;
  status: NotificationStatus;
  attempts: number;
  lastError: string | null;
  outcome: 'stored' | 'gone' | 'not_fetched' | null;
  snapshotVersion: number | null;
  receivedAt: Date;
}

interface Resource {
  type: string;
  resourceId: string;
  version: number;
  fetchedAt: Date;
  gone: boolean;
  body: unknown;
}

const keyOf = (r: ResourceRef) => `${r.companyId} ${r.href}`;
const isPending = (s: NotificationStatus) => (PENDING as readonly NotificationStatus[]).includes(s);

/** Over 80 lines on purpose: its body is the interface's methods, each short, over the maps they share. */
export function createMemoryLifecycle(opts: { /** Whether a company is paused (its state is src/companies/'s). */ paused?: (companyId: string) => boolean; now?: () => Date } = {}) {
  const now = opts.now ?? (() => new Date());
  const rows = new Map<number, Row>();
  const resources = new Map<string, Resource>();
  const events: { id: number; companyId: string; href: string; version: number; changes: unknown[] | null }[] = [];
  const paused = opts.paused ?? (() => false);
  let nextId = 1;

  const recordAttempt = async (attempt: FetchAttempt, verdict: Verdict): Promise<void> => {
    for (const id of attempt.ids) {
      const row = rows.get(id);
      if (!row || !isPending(row.status)) continue;
      row.attempts++;
      row.lastError = verdict.status === 'failed' ? verdict.error : attempt.error;
      if (verdict.status === 'pending') continue;
      row.status = verdict.status;
      if (verdict.status === 'processed') row.outcome = verdict.outcome;
    }
  };

  const requeue = async (ids: number[], transition: 'queue' | 'unqueue'): Promise<void> => {
    const [to] = TRANSITIONS[transition].to;
    for (const id of ids) {
      const row = rows.get(id);
      if (row && allowed(transition, row.status, to)) row.status = to;
    }
  };

  const lifecycle: NotificationLifecycle = {
    async accept(batch, opts) {
      const at = now();
      return batch.map((n) => {
        const id = nextId++;
        const status = statusOnAccept(n, opts.queueing);
        rows.set(id, {
          ...n,
          id,
          status,
          attempts: 0,
          lastError: null,
          outcome: status === 'processed' ? NOT_REPLAYABLE_OUTCOME : null,
          snapshotVersion: null,
          receivedAt: at,
        });
        return { id, status };
      });
    },
    queue: (ids) => requeue(ids, 'queue'),
    unqueue: (ids) => requeue(ids, 'unqueue'),
    async queueUnqueued(graceMs, limit, add) {
      const before = now().getTime() - graceMs;
      const unqueued = [...rows.values()]
        .filter((r) => allowed('queue', r.status, 'queued') && r.receivedAt.getTime() < before)
        .sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime() || a.id - b.id)
        .slice(0, limit)
        .map((r) => ({ id: r.id, companyId: r.companyId, href: r.href }));
      if (unqueued.length > 0) {
        await add(unqueued);
        await requeue(unqueued.map((r) => r.id), 'queue');
      }
      return unqueued;
    },
    async staleQueuedKeys(olderThanMs, after, limit) {
      const before = now().getTime() - olderThanMs;
      const keys = new Map<string, ResourceRef>();
      for (const r of rows.values()) {
        if (r.status !== 'queued' || r.receivedAt.getTime() >= before || paused(r.companyId)) continue;
        if (after && keyOf(r) <= keyOf(after)) continue;
        keys.set(keyOf(r), { companyId: r.companyId, href: r.href });
      }
      return [...keys.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .slice(0, limit)
        .map(([, k]) => k);
    },
    async pendingResources(companyId) {
      const hrefs = new Set([...rows.values()].filter((r) => r.companyId === companyId && isPending(r.status)).map((r) => r.href));
      return [...hrefs].map((href) => ({ companyId, href }));
    },
    async claimPending(keys) {
      return keys.map((k): Claimed | undefined => {
        const pending = [...rows.values()]
          .filter((r) => r.companyId === k.companyId && r.href === k.href && isPending(r.status))
          .sort((a, b) => a.id - b.id)
          .slice(0, CLAIM_LIMIT);
        const latest = pending.at(-1);
        if (!latest) return undefined;
        const stored = resources.get(keyOf(k));
        return {
          ids: pending.map((r) => r.id),
          receivedAt: pending.map((r) => r.receivedAt.getTime()),
          type: latest.type,
          resourceId: latest.resourceId,
          previous: stored ? { version: stored.version, body: stored.body } : null,
        };
      });
    },
    retry: (attempt) => recordAttempt(attempt, { status: 'pending' }),
    fail: (attempt, error) => recordAttempt(attempt, { status: 'failed', error }),
    async storeFetched(items) {
      return items.map((item) => {
        const key = keyOf(item);
        const existing = resources.get(key);
        let stored: number | null = null;
        if (!existing || existing.fetchedAt <= item.fetchStartedAt) {
          // The same body as stored (not gone): no new version, only fetched later.
          const same = existing !== undefined && !existing.gone && isDeepStrictEqual(existing.body, item.resource);
          if (!same) stored = (existing?.version ?? 0) + 1;
          resources.set(key, { type: item.claimed.type, resourceId: item.claimed.resourceId, version: stored ?? existing!.version, fetchedAt: item.fetchStartedAt, gone: false, body: item.resource });
        }
        const version = stored ?? existing!.version;
        let eventId: number | null = null;
        if (stored !== null) {
          eventId = nextId++;
          const follows = stored === (item.claimed.previous?.version ?? 0) + 1;
          events.push({ id: eventId, companyId: item.companyId, href: item.href, version: stored, changes: follows ? item.changes : null });
        }
        for (const id of item.claimed.ids) {
          const row = rows.get(id);
          if (!row || !allowed('finish', row.status, 'processed')) continue;
          Object.assign(row, { status: 'processed', outcome: 'stored', snapshotVersion: version, lastError: null });
          row.attempts++;
        }
        return { version, stored, eventId, destinations: [] };
      });
    },
    async markGone(attempt) {
      const resource = resources.get(keyOf(attempt));
      if (resource && resource.fetchedAt <= attempt.startedAt) Object.assign(resource, { gone: true, fetchedAt: attempt.startedAt });
      await recordAttempt(attempt, { status: 'processed', outcome: 'gone' });
    },
    async replay(ids) {
      const replayed: PendingKey[] = [];
      for (const id of [...ids].sort((a, b) => a - b)) {
        const row = rows.get(id);
        if (!row || !allowed('replay', row.status, 'received') || row.outcome === NOT_REPLAYABLE_OUTCOME) continue;
        Object.assign(row, { status: 'received', lastError: null, outcome: null, snapshotVersion: null });
        replayed.push({ id, companyId: row.companyId, href: row.href });
      }
      return replayed;
    },
    async summaries(ids) {
      return ids.flatMap((id) => {
        const r = rows.get(id);
        return r ? [{ id, companyId: r.companyId, webhookId: r.webhookId, type: r.type, resourceId: r.resourceId }] : [];
      });
    },
    async deleteWebhook(webhookId) {
      for (const [id, r] of rows) if (r.webhookId === webhookId) rows.delete(id);
    },
  };
  return {
    ...lifecycle,
    /** For tests: what PostgreSQL's tables would show. */
    inspect: {
      row: (id: number) => rows.get(id),
      resource: (ref: ResourceRef) => resources.get(keyOf(ref)),
      events: () => events,
    },
  };
}
