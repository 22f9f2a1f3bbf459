/**
 * The notification lifecycle's contract (src/notifications/lifecycle.ts), run against each implementation:
 * PostgreSQL's (test/integration/lifecycle-postgres.test.ts) and the in-memory one of the fast tier
 * (test/unit/lifecycle-memory.test.ts). Every status change moves exactly what the transition table
 * (transitions.ts) allows; the claim, the store, the relay's views, and a pause behave the same (retention drops whole partitions: test/integration/partitions.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { NotificationStatus } from '../../src/db/schema/index.js';
import type { FetchAttempt, FetchedSnapshot, NotificationLifecycle } from '../../src/notifications/lifecycle.js';
import { allowed, FINAL, PENDING, type TransitionName } from '../../src/notifications/transitions.js';

export interface LifecycleHarness {
  lifecycle: NotificationLifecycle;
  company: { id: string; webhookId: string; revision: number };
  /** Moves these notifications' received time `days` into the past. */
  age(ids: number[], days: number): Promise<void>;
  read(id: number): Promise<{ status: NotificationStatus; attempts: number; lastError: string | null; snapshotVersion: number | null } | undefined>;
  /** Pauses the company where its state is kept (src/companies/ does it in Skyhook). */
  pause(companyId: string): Promise<void>;
  resource(ref: { companyId: string; href: string }): Promise<{ version: number; gone: boolean } | undefined>;
}

const STATUSES: NotificationStatus[] = [...PENDING, ...FINAL];

export function lifecycleContract(implementation: string, setup: () => Promise<LifecycleHarness>): void {
  let h: LifecycleHarness;
  beforeAll(async () => {
    h = await setup();
  });

  const newHref = () => `http://127.0.0.1:9/api/rfqs/${randomBytes(4).toString('hex')}`;
  const notification = (href: string, type = 'rfqs', disposition: 'accepted' | 'discarded' = 'accepted') => ({
    companyId: h.company.id,
    webhookId: h.company.webhookId,
    resourceId: href.split('/').pop()!,
    type,
    href,
    bodyJson: '{}',
    authenticatedBy: 'basic' as const,
    disposition,
  });
  const accept = async (href: string, status: 'received' | 'queued' | 'discarded' = 'received', type = 'rfqs') =>
    (await h.lifecycle.accept([notification(href, type, status === 'discarded' ? 'discarded' : 'accepted')], { queueing: status === 'queued' }))[0]!.id;
  const attempt = (href: string, ids: number[], over: Partial<FetchAttempt> = {}): FetchAttempt => ({
    companyId: h.company.id,
    href,
    startedAt: new Date(),
    finishedAt: new Date(),
    httpStatus: 400,
    outcome: 'failed',
    error: 'HTTP 400',
    ids,
    ...over,
  });
  /** A notification in `status`, brought there through the lifecycle itself. */
  const rowIn = async (status: NotificationStatus): Promise<{ id: number; href: string }> => {
    const href = newHref();
    const id = await accept(href, status === 'queued' || status === 'discarded' ? status : 'received');
    if (status === 'failed') await h.lifecycle.fail(attempt(href, [id]), 'HTTP 400');
    if (status === 'processed') await h.lifecycle.markGone(attempt(href, [id], { httpStatus: 404, outcome: 'gone', error: null }));
    expect((await h.read(id))?.status).toBe(status);
    return { id, href };
  };

  const statements: { name: TransitionName; to: NotificationStatus | null; what: string; apply: (id: number, href: string) => Promise<unknown> }[] = [
    { name: 'queue', to: 'queued', what: 'queue', apply: (id) => h.lifecycle.queue([id]) },
    { name: 'unqueue', to: 'received', what: 'unqueue', apply: (id) => h.lifecycle.unqueue([id]) },
    { name: 'retry', to: null, what: 'retry', apply: (id, href) => h.lifecycle.retry(attempt(href, [id], { outcome: 'retry', httpStatus: 503 })) },
    { name: 'finish', to: 'failed', what: 'fail', apply: (id, href) => h.lifecycle.fail(attempt(href, [id]), 'HTTP 400') },
    { name: 'finish', to: 'processed', what: 'markGone', apply: (id, href) => h.lifecycle.markGone(attempt(href, [id], { httpStatus: 410, outcome: 'gone', error: null })) },
    { name: 'replay', to: 'received', what: 'replay', apply: (id) => h.lifecycle.replay([id]) },
  ];

  describe(`the notification lifecycle (${implementation})`, () => {
    for (const { name, to, what, apply } of statements) {
      it(`${name}${to ? ` to ${to}` : ''} (${what}): moves exactly the statuses the table allows, and counts only the attempts it may`, async () => {
        const seen: Record<string, string> = {};
        const expected: Record<string, string> = {};
        for (const status of STATUSES) {
          const { id, href } = await rowIn(status);
          const before = (await h.read(id))!;
          await apply(id, href);
          const after = (await h.read(id))!;
          const moves = allowed(name, status, to ?? status);
          seen[status] = `${after.status}${after.attempts > before.attempts ? ' (counted)' : ''}`;
          expected[status] = `${moves ? (to ?? status) : status}${moves && (name === 'retry' || name === 'finish') ? ' (counted)' : ''}`;
        }
        expect(seen).toEqual(expected);
      });
    }

    it('accept: queued when its job follows the commit, received for the relay otherwise, discarded for a deactivated webhook', async () => {
      const rows = [notification(newHref()), notification(newHref(), 'rfqs', 'discarded')];
      const queueing = await h.lifecycle.accept(rows, { queueing: true });
      const relayed = await h.lifecycle.accept(rows, { queueing: false });
      expect([...queueing, ...relayed].map((r) => r.status)).toEqual(['queued', 'discarded', 'received', 'discarded']);
      for (const r of [...queueing, ...relayed]) expect((await h.read(r.id))?.status).toBe(r.status);
      expect(new Set([...queueing, ...relayed].map((r) => r.id)).size).toBe(4);
    });

    it('claim and store: a fetch covers what is pending, oldest first; a later version follows; an older fetch stores nothing', async () => {
      const href = newHref();
      const ids = [await accept(href, 'queued', 'rfqs'), await accept(href, 'received', 'tripmsgs')];
      const [claimed, nothing] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }, { companyId: h.company.id, href: newHref() }]);
      expect(nothing).toBeUndefined();
      expect(claimed).toMatchObject({ ids, type: 'tripmsgs', previous: null });
      const t0 = new Date();
      const fetched = (over: Partial<FetchedSnapshot>): FetchedSnapshot => ({ companyId: h.company.id, href, claimed: claimed!, fetchStartedAt: t0, fetchFinishedAt: t0, httpStatus: 200, resource: { v: 1 }, changes: null, ...over });
      const [first] = await h.lifecycle.storeFetched([fetched({})]);
      expect(first).toMatchObject({ version: 1, stored: 1 });
      for (const id of ids) expect(await h.read(id)).toMatchObject({ status: 'processed', snapshotVersion: 1, attempts: 1 });

      const third = await accept(href);
      const [again] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      expect(again).toMatchObject({ ids: [third], previous: { version: 1, body: { v: 1 } } });
      const later = new Date(t0.getTime() + 1000);
      expect((await h.lifecycle.storeFetched([fetched({ claimed: again!, fetchStartedAt: later, resource: { v: 2 } })]))[0]).toMatchObject({ version: 2, stored: 2 });
      // A fetch that started before the stored one: its notifications are covered by the newer version.
      const fourth = await accept(href);
      const [late] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      expect((await h.lifecycle.storeFetched([fetched({ claimed: late!, fetchStartedAt: t0, resource: { v: 0 } })]))[0]).toMatchObject({ version: 2, stored: null, eventId: null });
      expect(await h.read(fourth)).toMatchObject({ status: 'processed', snapshotVersion: 2 });
      expect(await h.resource({ companyId: h.company.id, href })).toMatchObject({ version: 2, gone: false });
    });

    it('a fetch whose body equals the stored version stores no version and no event, and covers its notifications with it (SPEC §5.2)', async () => {
      const href = newHref();
      await accept(href);
      const [claimed] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      const t0 = new Date();
      const fetched = (over: Partial<FetchedSnapshot>): FetchedSnapshot => ({ companyId: h.company.id, href, claimed: claimed!, fetchStartedAt: t0, fetchFinishedAt: t0, httpStatus: 200, resource: { v: 1, list: [1, 2] }, changes: null, ...over });
      expect((await h.lifecycle.storeFetched([fetched({})]))[0]).toMatchObject({ version: 1, stored: 1 });
      const same = await accept(href);
      const [again] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      const later = new Date(t0.getTime() + 1000);
      expect((await h.lifecycle.storeFetched([fetched({ claimed: again!, fetchStartedAt: later, resource: { list: [1, 2], v: 1 }, changes: [] })]))[0]).toMatchObject({ version: 1, stored: null, eventId: null });
      expect(await h.read(same)).toMatchObject({ status: 'processed', snapshotVersion: 1 });
      // It was fetched later all the same: a fetch that started between the two cannot store an older body over it.
      const between = await accept(href);
      const [slow] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      expect((await h.lifecycle.storeFetched([fetched({ claimed: slow!, fetchStartedAt: new Date(t0.getTime() + 500), resource: { v: 'stale' } })]))[0]).toMatchObject({ version: 1, stored: null });
      expect(await h.read(between)).toMatchObject({ status: 'processed', snapshotVersion: 1 });
      expect(await h.resource({ companyId: h.company.id, href })).toMatchObject({ version: 1 });
    });

    it('markGone flags the stored snapshot gone, unless a later fetch stored a newer one', async () => {
      const href = newHref();
      const id = await accept(href);
      const [claimed] = await h.lifecycle.claimPending([{ companyId: h.company.id, href }]);
      const t1 = new Date();
      await h.lifecycle.storeFetched([{ companyId: h.company.id, href, claimed: claimed!, fetchStartedAt: t1, fetchFinishedAt: t1, httpStatus: 200, resource: {}, changes: null }]);
      const gone = await accept(href);
      await h.lifecycle.markGone(attempt(href, [gone], { startedAt: new Date(t1.getTime() - 1000), httpStatus: 404, outcome: 'gone', error: null }));
      expect(await h.resource({ companyId: h.company.id, href })).toMatchObject({ gone: false });
      await h.lifecycle.markGone(attempt(href, [gone], { startedAt: new Date(t1.getTime() + 1000), httpStatus: 404, outcome: 'gone', error: null }));
      expect(await h.resource({ companyId: h.company.id, href })).toMatchObject({ gone: true });
      expect(await h.read(id)).toMatchObject({ status: 'processed' });
      expect(await h.read(gone)).toMatchObject({ status: 'processed', attempts: 1 });
    });

    it('the relay: received rows past the grace, and keys queued too long, but none of a paused company', async () => {
      const received = await rowIn('received');
      const queued = await rowIn('queued');
      await h.age([received.id, queued.id], 1);
      const added: number[] = [];
      const add = async (rows: { id: number }[]) => void added.push(...rows.map((r) => r.id));
      expect(await h.lifecycle.queueUnqueued(3 * 86_400_000, 10_000, add)).toEqual([]);
      await expect(h.lifecycle.queueUnqueued(60_000, 10_000, () => Promise.reject(new Error('Redis is down')))).rejects.toThrow('Redis is down');
      expect(await h.read(received.id)).toMatchObject({ status: 'received' });
      expect((await h.lifecycle.queueUnqueued(60_000, 10_000, add)).map((k) => k.id)).toContain(received.id);
      expect(added).toContain(received.id);
      expect(await h.read(received.id)).toMatchObject({ status: 'queued' });
      const stale = await h.lifecycle.staleQueuedKeys(60_000, undefined, 10_000);
      expect(stale).toContainEqual({ companyId: h.company.id, href: queued.href });
      expect(stale.map((k) => `${k.companyId} ${k.href}`)).toEqual(stale.map((k) => `${k.companyId} ${k.href}`).sort());
      const after = await h.lifecycle.staleQueuedKeys(60_000, { companyId: h.company.id, href: queued.href }, 10_000);
      expect(after).not.toContainEqual({ companyId: h.company.id, href: queued.href });
      expect(await h.lifecycle.pendingResources(h.company.id)).toContainEqual({ companyId: h.company.id, href: queued.href });

      // Refused credentials: the attempt recorded, the notification left pending, parked while its company is paused.
      await h.lifecycle.retry(attempt(queued.href, [queued.id], { httpStatus: 401, outcome: 'unauthorized' }));
      await h.pause(h.company.id);
      expect(await h.read(queued.id)).toMatchObject({ status: 'queued', attempts: 1 });
      expect(await h.lifecycle.staleQueuedKeys(60_000, undefined, 10_000)).not.toContainEqual({ companyId: h.company.id, href: queued.href });
    });

    it('replay keeps the attempts and clears the outcome', async () => {
      const failed = await rowIn('failed');
      const [replayed] = await h.lifecycle.replay([failed.id]);
      expect(replayed).toEqual({ id: failed.id, companyId: h.company.id, href: failed.href });
      expect(await h.read(failed.id)).toMatchObject({ status: 'received', attempts: 1, lastError: null, snapshotVersion: null });
    });
  });
}
