/**
 * A company's state in PostgreSQL, with its gate in Redis as the mirror (SPEC §5.1): every statement that
 * changes a company's pause, its credentials' verdict and revision, or its limit, each guarded by the
 * transition table (companies/transitions.ts), and what each change tells the gate after it commits.
 *
 * PostgreSQL is the truth. A gate that could not be told (Redis down) is mended from it by repair(), which
 * every worker runs every few seconds (companies/mirror.ts): paused companies paused at the gate, the
 * others resumed, their waiting notifications queued again from PostgreSQL. Each change is said once in
 * the log, naming the company and its state.
 */
import { and, count, eq, inArray, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { inChange, type Change, type Database } from '../db/client.js';
import { connectionFromRow, findCompany } from '../db/company-connection.js';
import { companies, type CompanyRow } from '../db/schema/index.js';
import type { Gate, GateView } from '../gate/gate.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { withTimeout } from '../lib/timeout.js';
import { MarketplaceError } from '../marketplace/client.js';
import type { WebhookSettingsApi } from '../marketplace/webhook-settings.js';
import type { CheckVerdict, CompanyStates, CredentialColumns, Refusal } from './states.js';
import { COMPANY_STATES, PAUSED_SQL, pauseGuard, stateOf, type CompanyStateName } from './transitions.js';
import { purgeDeletedCompanies, removeCompanies } from './purge.js';
import { CONNECTION_KEEP_ALIVE_DAYS } from './usage.js';

/** What a worker says when the marketplace asks a company to slow down (gate/gate.ts GateFinishes: once per hold per process). */
export const sayThrottled =
  (log: Pick<Logger, 'warn'>) =>
  (companyId: string, untilMs: number, why: string): void =>
    log.warn({ companyId, state: 'throttled', until: new Date(untilMs).toISOString(), reason: why }, 'the marketplace asked the company to slow down: its fetches are held, then paced');

/** A paused company's hrefs are parked under their fetch key (processing/fetch.queue.ts fetchKey). */
type FetchKeyOf = (ref: { companyId: string; href: string }) => string;

export interface CompanyStatesDeps {
  db: Database;
  gate: Pick<Gate, 'pause' | 'resume' | 'paused' | 'setMax' | 'hold' | 'heldUntil' | 'views' | 'troubled' | 'forget'>;
  /** The Redis of the gate, for the probe schedule: one probe per company per interval across every process. */
  redis: RedisClient;
  prefix: string;
  secretKey: Buffer;
  /** The harmless call that checks credentials (SPEC §14). */
  settings: Pick<WebhookSettingsApi, 'list'>;
  /** Queues every resource the company has pending again (from PostgreSQL); answers how many. */
  queueWaiting: (companyId: string) => Promise<number>;
  fetchKey: FetchKeyOf;
  /** COMPANY_FETCH_CONCURRENCY: the limit of a company without its own. */
  defaultMaxFetches: number;
  /** PAUSED_PROBE_INTERVAL_MS. */
  probeIntervalMs: number;
  /** A gate out of reach must not hold an admin answer: each call to it is bounded. */
  gateTimeoutMs: number;
  log: Pick<Logger, 'info' | 'warn'>;
  /** A gate that could not be read or told (Redis out of reach): the change stands in PostgreSQL and is mended. */
  onGateError: (err: unknown) => void;
}

/** A keep-alive call that found no answer is tried again this much later. */
const KEEP_ALIVE_RETRY_MS = 3_600_000;

const STATE_COLUMNS = {
  id: companies.id,
  name: companies.name,
  connectionStatus: companies.connectionStatus,
  connectionError: companies.connectionError,
  pausedAt: companies.pausedAt,
  credentialsStatus: companies.credentialsStatus,
  credentialsCheckedAt: companies.credentialsCheckedAt,
  credentialsError: companies.credentialsError,
};

// Over 80 lines on purpose: its body is the interface's methods, each short, over the dependencies they share.
export function createCompanyStates(deps: CompanyStatesDeps) {
  const { db, gate, log } = deps;
  const probeKey = (companyId: string) => `${deps.prefix}:probe:${companyId}`;
  const keepAliveKey = (companyId: string) => `${deps.prefix}:keep-alive:${companyId}`;
  const bounded = <T>(work: Promise<T>, what: string) => withTimeout(work, deps.gateTimeoutMs, what);
  /** Tells the gate; if it cannot be told, the error is reported and repair() mends it from PostgreSQL. */
  const tell = (work: Promise<unknown>, what: string) => bounded(work, what).then(() => undefined, deps.onGateError);
  /** Reads the gate; if it cannot be read, the error is reported and `unread` answered instead. */
  const read = <T>(work: Promise<T>, what: string, unread: T): Promise<T> =>
    bounded(work, what).catch((err: unknown) => {
      deps.onGateError(err);
      return unread;
    });

  /** One harmless call with `row`'s credentials, asked once: accepted, refused (the marketplace said no), or no answer (try later). */
  async function checkWith(row: CompanyRow): Promise<CheckVerdict> {
    try {
      await deps.settings.list(connectionFromRow(row, deps.secretKey), { retry: false });
      return { status: 'accepted', error: null };
    } catch (err) {
      if (!(err instanceof MarketplaceError)) throw err;
      return { status: err.transient ? 'unreachable' : 'refused', error: err.message };
    }
  }

  /** At the gate: paused, these hrefs parked, its first probe one interval away. */
  async function pauseAtGate(companyId: string, hrefs: string[]): Promise<void> {
    await tell(gate.pause(companyId, hrefs.map((href) => ({ item: deps.fetchKey({ companyId, href }), payload: href }))), 'pausing at the company gate');
    await tell(deps.redis.set(probeKey(companyId), '1', 'PX', deps.probeIntervalMs, 'NX'), 'scheduling the probe');
  }

  /** The pause lifted at the gate and what waits queued again, from PostgreSQL (a Redis that lost the parked hrefs loses nothing). */
  async function resume(companyId: string): Promise<void> {
    await bounded(gate.resume(companyId), 'resuming at the company gate');
    const resources = await deps.queueWaiting(companyId);
    log.info({ companyId, state: 'ok', resources }, 'company resumed: its waiting notifications are queued again');
  }

  /** recordCheck, of the credentials of `row` (their revision). */
  async function recordCheck(row: CompanyRow): Promise<CompanyRow | undefined> {
    const verdict = await checkWith(row);
    const pausing = sql`${verdict.status === 'refused'} AND ${sql.raw(pauseGuard('recordCheck'))}`;
    const [checked] = await db
      .update(companies)
      .set({
        credentialsStatus: verdict.status,
        credentialsCheckedAt: new Date(),
        credentialsError: verdict.error,
        // An accepted check is a use of the connection (SPEC §14), recorded with its verdict, whatever the once-a-minute writes did.
        ...(verdict.status === 'accepted' ? { connectionLastUsedAt: new Date() } : {}),
        connectionStatus: sql`CASE WHEN ${pausing} THEN 'unauthorized'::connection_status ELSE ${companies.connectionStatus} END`,
        connectionError: sql`CASE WHEN ${pausing} THEN ${`credentials check: ${verdict.error}`} ELSE ${companies.connectionError} END`,
        pausedAt: sql`CASE WHEN ${pausing} THEN now() ELSE ${companies.pausedAt} END`,
      })
      .where(and(eq(companies.id, row.id), eq(companies.credentialsRevision, row.credentialsRevision)))
      .returning();
    if (checked?.connectionStatus === 'unauthorized' && row.connectionStatus !== 'unauthorized') {
      log.warn({ companyId: row.id, state: 'paused' }, 'the marketplace refused the company credentials when they were checked; the company is paused and its notifications wait for new credentials');
      await pauseAtGate(row.id, []);
    }
    // A check that lost a race with newer credentials says nothing of them.
    return checked ?? findCompany(db, row.id);
  }

  const views = (ids: string[]) => read<(GateView | undefined)[]>(gate.views(ids), 'reading the company gates', []);

  /**
   * SPEC §14: the marketplace deactivates a connection unused for 60 days, so a company otherwise quiet for
   * CONNECTION_KEEP_ALIVE_DAYS gets one harmless call (the credentials check), made by one process, not while
   * the marketplace holds the company's calls (F3), tried again an hour later if it found no answer. A success
   * records the use (companies/usage.ts); a refusal pauses the company, as any check's does.
   */
  async function keepAlive(): Promise<void> {
    const { rows } = await db.execute<{ id: string }>(sql`
      SELECT id FROM companies WHERE NOT (${sql.raw(PAUSED_SQL)})
        AND coalesce(connection_last_used_at, created_at) < now() - make_interval(days => ${CONNECTION_KEEP_ALIVE_DAYS})`);
    for (const { id } of rows) {
      if ((await states.heldUntil(id)) !== null) continue;
      const due = await deps.redis.set(keepAliveKey(id), '1', 'PX', KEEP_ALIVE_RETRY_MS, 'NX');
      if (due === 'OK') await states.check(id);
    }
  }

  const states: CompanyStates = {
    async change(companyId, change, within) {
      const credentials: CredentialColumns | undefined = change.credentials;
      // New credentials are checked with a call to the marketplace, which no transaction may wait on.
      if (within && credentials) throw new Error('new credentials are checked by a marketplace call: they are changed outside a larger transaction');
      const q = within?.tx ?? db;
      const current = await findCompany(q, companyId);
      if (!current) return undefined;
      const [row] = await q
        .update(companies)
        .set({
          ...(change.name !== undefined ? { name: change.name } : {}),
          ...(change.fetchConcurrency !== undefined ? { fetchConcurrency: change.fetchConcurrency } : {}),
          ...(credentials !== undefined
            ? {
                ...credentials,
                credentialsRevision: sql`${companies.credentialsRevision} + 1`,
                credentialsStatus: 'unchecked' as const,
                credentialsCheckedAt: null,
                credentialsError: null,
                // replaceCredentials: from any state (pauseGuard: TRUE), the pause lifted.
                connectionStatus: 'ok' as const,
                connectionError: null,
                pausedAt: null,
              }
            : {}),
          updatedAt: new Date(),
        })
        .where(eq(companies.id, companyId))
        .returning();
      if (!row) return undefined;
      if (change.fetchConcurrency !== undefined) {
        const setMax = () => tell(gate.setMax(companyId, row.fetchConcurrency ?? deps.defaultMaxFetches), 'setting the company limit');
        if (within) within.afterCommit(setMax);
        else await setMax();
      }
      if (credentials === undefined) return row;
      const checked = await recordCheck(row);
      if (current.connectionStatus === 'unauthorized' && checked?.connectionStatus !== 'unauthorized') await resume(companyId).catch(deps.onGateError);
      return checked;
    },

    async check(companyId) {
      const row = await findCompany(db, companyId);
      return row && recordCheck(row);
    },

    async pause(companyId, refusal: Refusal) {
      // `newly`: paused by this statement (a company already paused keeps its first refusal's time, from an earlier transaction).
      const { rows } = await db.execute<{ newly: boolean }>(sql`
        UPDATE companies SET connection_status = 'unauthorized', connection_error = ${refusal.reason}, updated_at = now(),
          paused_at = CASE WHEN connection_status = 'unauthorized' THEN coalesce(paused_at, now()) ELSE now() END
        WHERE id = ${companyId} AND credentials_revision = ${refusal.revision} AND ${sql.raw(pauseGuard('pause'))}
        RETURNING paused_at = now() AS newly`);
      if (rows.length === 0) return false;
      if (rows[0]!.newly) log.warn({ companyId, state: 'paused', reason: refusal.reason }, 'the marketplace refused the company credentials; the company is paused and its notifications wait for new credentials');
      await pauseAtGate(companyId, refusal.hrefs);
      return true;
    },

    async probe(companyId) {
      const row = await findCompany(db, companyId);
      if (!row || row.connectionStatus !== 'unauthorized') return false;
      const verdict = await checkWith(row);
      const accepted = verdict.status === 'accepted';
      const [probed] = await db
        .update(companies)
        .set({
          credentialsStatus: verdict.status,
          credentialsCheckedAt: new Date(),
          credentialsError: verdict.error,
          ...(accepted ? { connectionStatus: 'ok' as const, connectionError: null, pausedAt: null } : {}),
        })
        .where(and(eq(companies.id, companyId), eq(companies.credentialsRevision, row.credentialsRevision), sql.raw(pauseGuard('recordProbe'))))
        .returning({ id: companies.id });
      if (!accepted || !probed) {
        log.info({ companyId, state: 'paused', probe: verdict.status }, 'paused company: the marketplace still does not accept its credentials; it stays paused');
        return false;
      }
      log.info({ companyId }, 'paused company: the marketplace accepts its credentials again');
      await resume(companyId);
      return true;
    },

    hold: (companyId, retryAfterMs, why) => tell(gate.hold(companyId, retryAfterMs, why), 'holding the company'),

    heldUntil: (companyId) => read(gate.heldUntil(companyId), 'reading the company gate', null),

    async states(rows) {
      const gates = await views(rows.map((r) => r.id));
      return rows.map((r, i) => ({ state: stateOf(r, gates[i]), gate: gates[i] }));
    },

    async troubled() {
      // Paused, or a check's verdict that stands until a fetch is answered (stateOf): the rows PostgreSQL says may not be ok; beside them, the gate's trouble set.
      const [trouble, rows, [total]] = await Promise.all([
        read(gate.troubled(), 'reading the company gates', []),
        db.select(STATE_COLUMNS).from(companies).where(or(sql.raw(PAUSED_SQL), inArray(companies.credentialsStatus, ['unchecked', 'unreachable']))),
        db.select({ n: count() }).from(companies),
      ]);
      const gates = new Map(trouble.map((t) => [t.id, t.view]));
      const named = new Set(rows.map((r) => r.id));
      // The held or unanswered ones PostgreSQL did not name, and the gate's view of those it named (an answer ends an unchecked verdict).
      const others = [...gates.keys()].filter((id) => !named.has(id));
      const unseen = rows.filter((r) => !gates.has(r.id) && r.connectionStatus !== 'unauthorized').map((r) => r.id);
      const [more, seen] = await Promise.all([others.length > 0 ? db.select(STATE_COLUMNS).from(companies).where(inArray(companies.id, others)) : Promise.resolve([]), views(unseen)]);
      seen.forEach((v, i) => v && gates.set(unseen[i]!, v));
      const stated = [...rows, ...more].map((r) => ({ id: r.id, name: r.name, state: stateOf(r, gates.get(r.id)), gate: gates.get(r.id) }));
      const notOk = stated.filter((c) => c.state.status !== 'ok').sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const counts = Object.fromEntries(COMPANY_STATES.map((s) => [s, 0])) as Record<CompanyStateName, number>;
      for (const c of notOk) counts[c.state.status] += 1;
      counts.ok = (total?.n ?? 0) - notOk.length;
      return { counts, companies: notOk };
    },

    delete: (companyId, within) => {
      const remove = async ({ client, afterCommit }: Change) => {
        // Its key cascades to what is small (webhooks, destinations, keys, resources, leads, quotes, declines); what
        // grows with traffic is purged in batches once this commits (companies/purge.ts), left out by readers meanwhile.
        if ((await removeCompanies(client, 'id = $1', companyId)).length === 0) return false;
        // Nothing of it stays in Redis; a gate out of reach keeps a few keys that nothing reads (repair() skips unknown ids).
        afterCommit(() => tell(Promise.all([gate.forget(companyId), deps.redis.del(probeKey(companyId), keepAliveKey(companyId))]), 'forgetting the company gate'));
        // Not waited for: the deletion is answered at once.
        afterCommit(async () => void purgeDeletedCompanies(db.$client, { only: companyId }).catch((err: unknown) => deps.log.warn({ err, companyId }, "purging a deleted company's rows stopped: the next retention pass goes on")));
        return true;
      };
      return within ? remove(within) : inChange(db, remove);
    },
  };

  return {
    ...states,

    /**
     * The gate mended from PostgreSQL, and the probes that are due: a pause the gate missed is made there,
     * a resume it missed is made (what waits queued again); one process probes a paused company per
     * PAUSED_PROBE_INTERVAL_MS (the schedule's key is set at the pause: the first probe comes an interval later).
     */
    async repair(): Promise<void> {
      const { rows } = await db.execute<{ id: string }>(sql`SELECT id FROM companies WHERE ${sql.raw(PAUSED_SQL)}`);
      const paused = new Set(rows.map((r) => r.id));
      const mirrored = new Set(await gate.paused());
      for (const id of paused) if (!mirrored.has(id)) await pauseAtGate(id, []);
      for (const id of mirrored) {
        if (paused.has(id)) continue;
        // Deleted meanwhile: forgotten; else new credentials whose resume did not reach Redis.
        if (!(await findCompany(db, id))) await gate.forget(id);
        else await resume(id);
      }
      for (const id of paused) {
        const due = await deps.redis.set(probeKey(id), '1', 'PX', deps.probeIntervalMs, 'NX');
        if (due === 'OK') await states.probe(id);
      }
      await keepAlive();
    },

    /** Companies not paused with notifications waiting: their parked resources may have places that freed unseen. */
    async waiting(): Promise<string[]> {
      const { rows } = await db.execute<{ company_id: string }>(
        sql`SELECT company_id FROM backlog WHERE pending > 0 AND company_id NOT IN (SELECT id FROM companies WHERE ${sql.raw(PAUSED_SQL)})`,
      );
      return rows.map((r) => r.company_id);
    },
  };
}

export type CompanyStatesRepository = ReturnType<typeof createCompanyStates>;
