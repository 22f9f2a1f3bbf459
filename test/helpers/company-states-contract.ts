/**
 * A company's state's contract (src/companies/states.ts), run against each implementation: PostgreSQL's
 * with its gate in Redis and the simulator as the marketplace (test/integration/company-states-postgres.test.ts)
 * and the in-memory one of the fast tier (test/unit/company-states-memory.test.ts). Every change moves a
 * company only where the transition table (companies/transitions.ts) allows; checks, pauses, probes,
 * holds, limits and deletion behave the same.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { CompanyStates, CredentialColumns } from '../../src/companies/states.js';
import { allowed, type CompanyIntent, type CompanyStateName } from '../../src/companies/transitions.js';

export interface CompanyStatesHarness {
  states: CompanyStates;
  /**
   * A new company of its own, as POST /admin/companies stores it (unchecked): with credentials the
   * marketplace accepts, or refuses, or at an address where nothing answers.
   */
  newCompany(credentials: 'accepted' | 'refused' | 'no answer'): Promise<{ id: string; revision: number }>;
  /** Its credentials replaced by new ones the marketplace accepts or refuses. */
  credentials(companyId: string, kind: 'accepted' | 'refused'): CredentialColumns;
  /** The marketplace takes back its refusal of the company's refused credentials. */
  acceptRefused(companyId: string): Promise<void>;
  /** How many times resuming the company queued its waiting notifications again. */
  requeued(companyId: string): number;
  /** Whether the company is stored. */
  exists(companyId: string): Promise<boolean>;
}

export function companyStatesContract(implementation: string, setup: () => Promise<CompanyStatesHarness>): void {
  let h: CompanyStatesHarness;
  beforeAll(async () => {
    h = await setup();
  });

  /** Its state as troubled() tells it: named there when not ok, else ok if it exists. */
  const stateOf = async (companyId: string) => {
    const named = (await h.states.troubled()).companies.find((c) => c.id === companyId)?.state;
    return named ?? ((await h.exists(companyId)) ? { status: 'ok' as const, since: null, until: null, reason: null } : undefined);
  };
  const status = async (companyId: string): Promise<CompanyStateName> => (await stateOf(companyId))!.status;
  /** Runs `change` and holds what it did to the company's state to the table. */
  const through = async <T>(intent: CompanyIntent, companyId: string, change: () => Promise<T>): Promise<T> => {
    const before = await status(companyId);
    const result = await change();
    const after = (await stateOf(companyId))?.status ?? null;
    if (after !== before || intent === 'delete') expect(allowed(intent, before, after), `${intent}: ${before} -> ${after}`).toBe(true);
    return result;
  };

  describe(`a company's state (${implementation})`, () => {
    it('recordCheck: accepted is ok, refused pauses with the reason and since when, no answer is unreachable', async () => {
      const ok = await h.newCompany('accepted');
      const refused = await h.newCompany('refused');
      const silent = await h.newCompany('no answer');
      for (const c of [ok, refused, silent]) expect(await status(c.id)).toBe('unchecked');
      await through('recordCheck', ok.id, () => h.states.check(ok.id));
      expect(await status(ok.id)).toBe('ok');
      const checked = await through('recordCheck', refused.id, () => h.states.check(refused.id));
      expect(checked).toMatchObject({ credentialsStatus: 'refused', connectionStatus: 'unauthorized' });
      expect(await stateOf(refused.id)).toMatchObject({ status: 'paused', since: expect.any(String), reason: expect.stringMatching(/^credentials check: /) });
      await through('recordCheck', silent.id, () => h.states.check(silent.id));
      expect(await stateOf(silent.id)).toMatchObject({ status: 'unreachable', since: expect.any(String), reason: expect.any(String) });
      expect(await h.states.check('00000000-0000-4000-8000-000000000000')).toBeUndefined();
    });

    it('pause: only for the stored credentials, since the first refusal; the notifications are not queued again for it', async () => {
      const c = await h.newCompany('accepted');
      await h.states.check(c.id);
      const refusal = (revision: number) => ({ revision, reason: `GET https://api.example.com/api/rfqs/1: marketplace answered 401 (revision ${revision})`, hrefs: ['https://api.example.com/api/rfqs/1'] });
      expect(await through('pause', c.id, () => h.states.pause(c.id, refusal(c.revision + 1)))).toBe(false);
      expect(await status(c.id)).toBe('ok');
      expect(await through('pause', c.id, () => h.states.pause(c.id, refusal(c.revision)))).toBe(true);
      const first = await stateOf(c.id);
      expect(first).toMatchObject({ status: 'paused', reason: refusal(c.revision).reason });
      // Paused again by a later refusal: still paused since the first.
      expect(await h.states.pause(c.id, refusal(c.revision))).toBe(true);
      expect((await stateOf(c.id))!.since).toBe(first!.since);
      expect(h.requeued(c.id)).toBe(0);
    });

    it('replaceCredentials: lifts a pause and queues what waits once; refused new credentials pause it again, queueing nothing', async () => {
      const c = await h.newCompany('refused');
      await h.states.check(c.id);
      expect(await status(c.id)).toBe('paused');
      const refusedAgain = await through('replaceCredentials', c.id, () => h.states.change(c.id, { credentials: h.credentials(c.id, 'refused') }));
      expect(refusedAgain).toMatchObject({ credentialsRevision: c.revision + 1, credentialsStatus: 'refused', connectionStatus: 'unauthorized' });
      expect(h.requeued(c.id)).toBe(0);
      const accepted = await h.states.change(c.id, { credentials: h.credentials(c.id, 'accepted') });
      expect(accepted).toMatchObject({ credentialsRevision: c.revision + 2, credentialsStatus: 'accepted', connectionStatus: 'ok', pausedAt: null });
      expect(await status(c.id)).toBe('ok');
      expect(h.requeued(c.id)).toBe(1);
      // A pause earned by the credentials before is not this revision's.
      expect(await h.states.pause(c.id, { revision: c.revision + 1, reason: 'GET: 401', hrefs: [] })).toBe(false);
    });

    it('recordProbe: a refusal the marketplace keeps leaves it paused; one it takes back resumes it and queues what waits', async () => {
      const c = await h.newCompany('refused');
      expect(await h.states.probe(c.id)).toBe(false); // not paused yet: nothing to probe
      await h.states.check(c.id);
      expect(await through('recordProbe', c.id, () => h.states.probe(c.id))).toBe(false);
      expect(await status(c.id)).toBe('paused');
      await h.acceptRefused(c.id);
      expect(await through('recordProbe', c.id, () => h.states.probe(c.id))).toBe(true);
      expect(await status(c.id)).toBe('ok');
      expect(h.requeued(c.id)).toBe(1);
    });

    it('hold: throttled until the time asked; a paused company shows paused', async () => {
      const c = await h.newCompany('accepted');
      await h.states.check(c.id);
      const before = Date.now();
      await h.states.hold(c.id, 60_000, 'marketplace answered 429');
      expect(await stateOf(c.id)).toMatchObject({ status: 'throttled', reason: 'marketplace answered 429' });
      expect(Date.parse((await stateOf(c.id))!.until!)).toBeGreaterThanOrEqual(before + 60_000);
      expect(await h.states.heldUntil(c.id)).toBeGreaterThanOrEqual(before + 60_000);
      await h.states.pause(c.id, { revision: c.revision, reason: 'GET: 401', hrefs: [] });
      expect(await status(c.id)).toBe('paused');
    });

    it('rename and set its limit in one change, its state untouched; states() reads rows in order', async () => {
      const c = await h.newCompany('accepted');
      const changed = await h.states.change(c.id, { name: 'Renamed', fetchConcurrency: 7 });
      expect(changed).toMatchObject({ name: 'Renamed', fetchConcurrency: 7, credentialsRevision: c.revision, credentialsStatus: 'unchecked' });
      expect(await h.states.change(c.id, { fetchConcurrency: null })).toMatchObject({ fetchConcurrency: null, name: 'Renamed' });
      const [only] = await h.states.states([changed!]);
      expect(only!.state.status).toBe('unchecked');
      expect(await h.states.change('00000000-0000-4000-8000-000000000000', { name: 'x' })).toBeUndefined();
    });

    it('troubled: names every company not ok, in id order, and counts every company in its state', async () => {
      const ok = await h.newCompany('accepted');
      const refused = await h.newCompany('refused');
      const held = await h.newCompany('accepted');
      const unchecked = await h.newCompany('accepted');
      for (const c of [ok, refused, held]) await h.states.check(c.id);
      await h.states.hold(held.id, 60_000, 'marketplace answered 429');
      const before = await h.states.troubled();
      const named = new Map(before.companies.map((c) => [c.id, c.state.status]));
      expect(named.has(ok.id)).toBe(false);
      expect([named.get(refused.id), named.get(held.id), named.get(unchecked.id)]).toEqual(['paused', 'throttled', 'unchecked']);
      expect(before.companies.map((c) => c.id)).toEqual(before.companies.map((c) => c.id).sort());
      expect(before.companies.every((c) => c.state.status !== 'ok')).toBe(true);
      for (const s of ['paused', 'throttled', 'unchecked'] as const) expect(before.counts[s]).toBe(before.companies.filter((c) => c.state.status === s).length);
      // A check's verdict: the unchecked one becomes ok, counted among the ok ones, no longer named.
      await h.states.check(unchecked.id);
      const after = await h.states.troubled();
      expect(after.companies.some((c) => c.id === unchecked.id)).toBe(false);
      expect(after.counts.ok).toBe(before.counts.ok + 1);
      expect(after.counts.unchecked).toBe(before.counts.unchecked - 1);
    });

    it('delete: gone from every view, whatever its state; a second delete finds nothing', async () => {
      const c = await h.newCompany('refused');
      await h.states.check(c.id);
      expect(await through('delete', c.id, () => h.states.delete(c.id))).toBe(true);
      expect(await stateOf(c.id)).toBeUndefined();
      expect(await h.states.delete(c.id)).toBe(false);
      expect(await h.states.probe(c.id)).toBe(false);
    });
  });
}
