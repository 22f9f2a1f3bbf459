/**
 * The pull feed (SPEC §5.2): a company's events in order, for an application that cannot take requests,
 * as pages (`GET /admin/companies/{companyId}/events?after=&limit=`) and as a Server-Sent Events stream
 * resumable with Last-Event-ID. The order is each event's `seq`: taken from the company's row of
 * event_sequences, whose lock the storing statement holds to its commit, so a company's events commit in
 * `seq` order and a reader "after" a position never misses an event that commits later with a lower one
 * (notifications/postgres.ts STORE_SQL; test/integration/events-feed.test.ts proves it under concurrent
 * stores). Cursors are opaque: one older than what is kept answers 410 with the oldest valid cursor.
 */
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import type { Listener } from '../db/listen.js';
import { events } from '../db/schema/index.js';
import { eventPayload } from '../delivery/body.js';
import { badRequest, notFound, Problem } from '../lib/problem.js';
import { EVENTS_CHANNEL } from '../notifications/postgres.js';
import type { CompaniesService } from './companies.service.js';
import type { EventView } from './views.js';

/** A follower with nothing new looks again this often all the same (a NOTIFY lost with a connection). */
const FOLLOW_POLL_MS = 5000;
const FOLLOW_PAGE = 100;

const CURSOR_PREFIX = 'e1.';
const cursorOf = (seq: number): string => `${CURSOR_PREFIX}${Buffer.from(String(seq)).toString('base64url')}`;
function seqOf(cursor: string): number {
  const seq = cursor.startsWith(CURSOR_PREFIX) ? Number(Buffer.from(cursor.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8')) : NaN;
  // Only a cursor as written: base64 decoding skips what it cannot read and Number('') is 0, so a mangled cursor read from the start again.
  if (!Number.isSafeInteger(seq) || seq < 0 || cursorOf(seq) !== cursor) throw badRequest('The cursor is not valid.', [{ field: 'after', message: 'is not a cursor this API returned' }]);
  return seq;
}

type EventRow = typeof events.$inferSelect;
const viewOfEvent = (e: EventRow): EventView => ({
  cursor: cursorOf(e.seq),
  ...eventPayload(e.companyId, { id: e.id, type: e.type, resourceId: e.resourceId, href: e.href, version: e.snapshotVersion, eventTypes: e.eventTypes, changes: e.changes as unknown[] | null, snapshot: e.snapshot, occurredAt: e.createdAt }),
});

export function createEventsService(deps: {
  db: Database;
  companies: Pick<CompaniesService, 'get'>;
  /** Opens the LISTEN connection of skyhook_events (db/listen.ts, bound to DATABASE_URL). */
  listen: (channels: string[], listener: Listener) => { stop: () => Promise<void> };
  onError: (err: unknown) => void;
}) {
  const { db } = deps;
  /** Followers waiting for a company's next event: woken by its NOTIFY. */
  const waiting = new Map<string, Set<() => void>>();
  let connection: { stop: () => Promise<void> } | undefined;

  const wake = (companyId: string) => {
    for (const go of waiting.get(companyId) ?? []) go();
  };

  /** Waits for the company's next event (or FOLLOW_POLL_MS, or the end of `signal`). */
  function nextEvent(companyId: string, signal: AbortSignal): Promise<void> {
    connection ??= deps.listen([EVENTS_CHANNEL], {
      onNotification: (_channel, payload) => {
        try {
          const { companyId: id } = JSON.parse(payload ?? '{}') as { companyId?: string };
          if (id) wake(id);
        } catch (err) {
          deps.onError(err);
        }
      },
      // Events stored while it was not listening were not announced: every follower looks again now.
      onConnected: () => {
        for (const id of [...waiting.keys()]) wake(id);
      },
      onError: deps.onError,
    });
    return new Promise((resolve) => {
      const set = waiting.get(companyId) ?? new Set();
      waiting.set(companyId, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) waiting.delete(companyId);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, FOLLOW_POLL_MS);
      set.add(done);
      signal.addEventListener('abort', done);
    });
  }

  /** 410 for a cursor older than what is kept, naming the oldest valid one (the seq before the oldest kept event's). */
  const cursorGone = (oldestValidSeq: number) =>
    new Problem(410, 'Gone', `The events after this cursor are no longer kept; read from the oldest kept: after=${cursorOf(oldestValidSeq)}`, {
      code: 'cursor_expired',
      errors: [{ field: 'after', message: `is older than what is kept; the oldest valid cursor is ${cursorOf(oldestValidSeq)}` }],
    });

  async function page(companyId: string, after: string | undefined, limit: number): Promise<{ items: EventView[]; nextCursor: string | null }> {
    await deps.companies.get(companyId);
    const seq = after === undefined ? 0 : seqOf(after);
    const rows = await db.select().from(events).where(and(eq(events.companyId, companyId), gt(events.seq, seq))).orderBy(asc(events.seq)).limit(limit);
    // A page that does not start right after the cursor may have lost what it asked for: the oldest valid
    // cursor is the one before the oldest kept event, or the company's last when none is kept. One statement
    // (one snapshot), so an event committing meanwhile is never taken for a gap.
    if (seq > 0 && (rows[0] === undefined || rows[0].seq > seq + 1)) {
      const { rows: kept } = await db.execute<{ last: string; oldest: string | null }>(sql`
        SELECT s.last, (SELECT min(e.seq) FROM events e WHERE e.company_id = s.company_id) AS oldest FROM event_sequences s WHERE s.company_id = ${companyId}`);
      const k = kept[0];
      const oldestValid = k === undefined ? 0 : k.oldest === null ? Number(k.last) : Number(k.oldest) - 1;
      if (oldestValid > seq) throw cursorGone(oldestValid);
    }
    const items = rows.map(viewOfEvent);
    return { items, nextCursor: items.at(-1)?.cursor ?? after ?? null };
  }

  return {
    page,

    async get(companyId: string, eventId: number): Promise<EventView> {
      await deps.companies.get(companyId);
      const [e] = await db.select().from(events).where(and(eq(events.id, eventId), eq(events.companyId, companyId))).limit(1);
      if (!e) throw notFound(`Event ${eventId}`);
      return viewOfEvent(e);
    },

    /** Sends every event after `after`, in order, then each new one as it commits, until `signal` ends. */
    async follow(companyId: string, after: string | undefined, send: (e: EventView) => void, signal: AbortSignal): Promise<void> {
      let cursor = after;
      while (!signal.aborted) {
        const { items } = await page(companyId, cursor, FOLLOW_PAGE);
        for (const e of items) send(e);
        cursor = items.at(-1)?.cursor ?? cursor;
        if (items.length < FOLLOW_PAGE) await nextEvent(companyId, signal);
      }
    },

    async close(): Promise<void> {
      for (const set of waiting.values()) for (const go of set) go();
      await connection?.stop();
    },
  };
}
