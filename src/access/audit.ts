/**
 * The audit log (SPEC §10.1): who changed what, when, from where, with what outcome.
 *
 * Each change asked for through the admin API, the console or the CLI has one entry. The edge that takes
 * the request opens it (`audited` for the routes, the command runner for the CLI: who, from where, the
 * action and its target ids), and whoever makes the change writes it:
 * - a change of the database alone: one row, appended inside the change's own transaction (`change`), so
 *   the change and its entry commit together or not at all;
 * - a change that calls outside the database (the marketplace, a destination's test, the queue dashboard's
 *   jobs), which no transaction can hold: `started` before the call (no row, no call) and its outcome
 *   after (`call`; the second row `settles` the first);
 * - a change refused or failed before either was written: one row, by the edge (`settle`), saying so.
 * An entry names the fields the change changed (for a create, those it set), never a value; a bulk action
 * is one entry with its filter and its count.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { and, desc, eq, gte, isNull, lt, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { inChange, type Change, type Database } from '../db/client.js';
import { decodeCursor, isId, isUuid, pageOf, type Page } from '../db/pagination.js';
import { auditLog } from '../db/schema/index.js';
import { Problem } from '../lib/problem.js';
import type { Actor, Principal } from './roles.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The entry of this request's change, opened by `audited` for every request that may change something. */
    audit?: OpenEntry;
  }
}

/** What the edge knows of a change before it is made. */
export interface AuditSubject {
  /** What is done: the route (`PATCH /admin/companies/:companyId`) or the command (`skyhook companies update`). */
  action: string;
  companyId?: string | null;
  /** The ids acted on, by name. */
  targets?: Record<string, string | number>;
}

/** What the change's maker adds to its entry. */
export interface Recorded {
  /** The names of the fields changed (for a create, those set), never their values. */
  fields?: string[];
  /** Ids the edge could not know: the one a create made. */
  targets?: Record<string, string | number>;
  companyId?: string;
  /** A bulk action's filter and count, a call's result: never a secret. */
  details?: Record<string, unknown> | null;
}

export type AuditOutcome = 'ok' | 'refused' | 'failed';

/** The entry of one change, as the services write it: each change writes it once, one way or the other. */
export interface Audit {
  /** Who makes the change, by name (a key's, `ADMIN_TOKEN`, `cli:<user>`): what a destination's `disabled_by` says. */
  readonly by: string;
  /** A change of the database alone, made by `work` in one transaction that appends the entry (with what `work` recorded). */
  change<T>(work: (change: Change) => Promise<Recorded & { value: T }>): Promise<T>;
  /** A change that calls outside the database: `started` (with `recorded`) before `work`, its outcome after (with `result`'s). */
  call<T>(recorded: Recorded, work: () => Promise<T>, result?: (value: T) => Recorded): Promise<T>;
}

/** The entry as its edge holds it: it may begin a call itself (the queue dashboard), and settles what nobody wrote. */
export interface OpenEntry extends Audit {
  /** The `started` row of a call the edge makes itself. */
  begin(recorded: Recorded): Promise<void>;
  /**
   * The change is over (`status`: its answer's, `sent`: the names of the fields it was sent): a call begun is
   * settled; a change nobody recorded gets its one row now, refused or failed (it was not made), or `ok`
   * (it was made without its entry: a defect, reported, the row flagged `outsideTransaction`).
   */
  settle(outcome: AuditOutcome, asked: { status?: number; sent: string[] }): Promise<void>;
}

export interface AuditView {
  id: number;
  at: string;
  actor: { kind: string; id: string | null; name: string };
  /** Left out of a company key's view of another actor's entries. */
  address: string | null;
  action: string;
  companyId: string | null;
  targets: Record<string, string | number>;
  fields: string[];
  /** `started` while a call is under way, or when the process stopped during it. */
  outcome: string;
  settledAt: string | null;
  details: Record<string, unknown> | null;
}

export interface AuditFilter {
  /** A key's id, or a name (`ADMIN_TOKEN`, `cli:alice`). */
  actor?: string;
  companyId?: string;
  action?: string;
  after?: string;
  before?: string;
  limit: number;
  cursor?: string;
}

/** A request's status as an outcome: 2xx and 3xx `ok`, 4xx `refused` (the marketplace's 502 too: it said no), other 5xx `failed`. */
export const outcomeOf = (status: number): AuditOutcome => (status < 400 ? 'ok' : status < 500 || status === 502 ? 'refused' : 'failed');

/**
 * What an error says of the change it stopped: its outcome, and its status and code (a Problem's; anything
 * else failed). A call the marketplace may have acted on without a success read failed: it was not refused.
 */
export function stoppedBy(err: unknown): { outcome: AuditOutcome; details: { status?: number; code?: string } } {
  if (!(err instanceof Problem)) return { outcome: 'failed', details: {} };
  const code = err.extra.code;
  return { outcome: code === 'outcome_unknown' ? 'failed' : outcomeOf(err.status), details: { status: err.status, ...(code ? { code } : {}) } };
}

/** The names of the columns of `after` whose value differs from `before`'s, as `names` calls them (columns without a name are not fields). */
export function changedFields<C extends string>(before: Partial<Record<C, unknown>>, after: Partial<Record<C, unknown>>, names: Partial<Record<C, string>>): string[] {
  return (Object.keys(after) as C[]).filter((c) => names[c] !== undefined && after[c] !== undefined && !isDeepStrictEqual(before[c], after[c])).map((c) => names[c]!);
}

/** The names of the fields an object gives (null or left out: not given), an object's one level down (`connection.authToken`): what a create sets. */
export function givenFields(input: object): string[] {
  const given = ([, v]: [string, unknown]) => v !== undefined && v !== null;
  return Object.entries(input)
    .filter(given)
    .flatMap(([k, v]) => (typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) ? Object.entries(v as object).filter(given).map(([n]) => `${k}.${n}`) : [k]));
}

/** What Skyhook changes on its own, as the audit log names it: no key, no address. */
const SKYHOOK_ACTOR = { kind: 'system', name: 'skyhook' } as const;

/**
 * Entries of changes Skyhook makes on its own (deliveries that retention ended `expired`, SPEC §5.2), one per
 * target, written in the change's own transaction as an admin change's entry is.
 */
export async function appendBySkyhook(change: Pick<Change, 'tx'>, entries: (Required<Pick<AuditSubject, 'action' | 'targets'>> & { companyId: string; details: Record<string, unknown> })[]): Promise<void> {
  if (entries.length === 0) return;
  await change.tx.insert(auditLog).values(
    entries.map((e) => ({ actorKind: SKYHOOK_ACTOR.kind, actorId: null, actorName: SKYHOOK_ACTOR.name, address: null, action: e.action, companyId: e.companyId, targets: e.targets, outcome: 'ok', fields: [], details: e.details })),
  );
}

// Over 80 lines on purpose: the entry's three ways of being written share its state, and read best together.
export function createAuditLog(db: Database) {
  const outcomes = alias(auditLog, 'outcome');

  /** The entry of one change about to be asked for, by `actor`. `onError`: a call's outcome, or the edge's row, that could not be written (the change stands). */
  function open(actor: Actor, subject: AuditSubject, onError: (err: unknown) => void): OpenEntry {
    let state: 'open' | 'writing' | 'begun' | 'settled' = 'open';
    let started: number | undefined;
    const row = (recorded: Recorded, outcome: string) => ({
      actorKind: actor.principal.kind,
      actorId: actor.principal.id,
      actorName: actor.principal.name,
      address: actor.address,
      action: subject.action,
      companyId: recorded.companyId ?? subject.companyId ?? null,
      targets: { ...subject.targets, ...recorded.targets },
      outcome,
      fields: recorded.fields ?? [],
      details: recorded.details ?? null,
    });
    /** One change, one entry: a second write is a defect of the code that makes it. */
    const claim = () => {
      if (state !== 'open') throw new Error(`${subject.action}: its audit entry is written already (one change, one entry)`);
      state = 'writing';
    };
    const begin = async (recorded: Recorded) => {
      claim();
      try {
        const [r] = await db.insert(auditLog).values(row(recorded, 'started')).returning({ id: auditLog.id });
        started = r!.id;
        state = 'begun';
      } catch (err) {
        state = 'open';
        throw err;
      }
    };
    const settleCall = async (outcome: AuditOutcome, recorded: Recorded) => {
      state = 'settled';
      await db.insert(auditLog).values({ ...row(recorded, outcome), settles: started }).catch(onError);
    };

    return {
      by: actor.principal.name,

      async change(work) {
        claim();
        let committed = false;
        try {
          return await inChange(db, async (change) => {
            // The first of the effects: whatever follows the commit, the entry is written.
            change.afterCommit(async () => (committed = true));
            const { value, ...recorded } = await work(change);
            await change.tx.insert(auditLog).values(row(recorded, 'ok'));
            return value;
          });
        } finally {
          state = committed ? 'settled' : 'open';
        }
      },

      async call(recorded, work, result) {
        await begin(recorded);
        let value: Awaited<ReturnType<typeof work>>;
        try {
          value = await work();
        } catch (err) {
          const { outcome, details } = stoppedBy(err);
          await settleCall(outcome, { details });
          throw err;
        }
        await settleCall('ok', result?.(value) ?? {});
        return value;
      },

      begin,

      async settle(outcome, { status, sent }) {
        if (state === 'settled' || state === 'writing') return;
        if (state === 'begun') return settleCall(outcome, outcome === 'ok' ? {} : { details: { status } });
        state = 'settled';
        if (outcome !== 'ok') return void (await db.insert(auditLog).values(row({ details: { status, sent } }, outcome)).catch(onError));
        // Made, and nothing recorded it: the fields sent are all that is known of it.
        onError(new Error(`${subject.action} made a change that wrote no audit entry: it is recorded after it, outside its transaction`));
        await db.insert(auditLog).values(row({ fields: sent, details: { outsideTransaction: true } }, outcome)).catch(onError);
      },
    };
  }

  return {
    open,

    /** Newest first, each change once with its outcome. A company key's `viewer` sees its company's, without other actors' addresses. */
    async list(filter: AuditFilter, viewer: Principal): Promise<Page<AuditView>> {
      const below = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor, isId);
      const companyId = viewer.companyId ?? filter.companyId;
      const rows = await db
        .select({ entry: auditLog, outcome: { outcome: outcomes.outcome, at: outcomes.at, companyId: outcomes.companyId, targets: outcomes.targets, details: outcomes.details } })
        .from(auditLog)
        // Only a call's `started` row has an outcome row.
        .leftJoin(outcomes, eq(outcomes.settles, auditLog.id))
        .where(
          and(
            isNull(auditLog.settles),
            companyId ? eq(auditLog.companyId, companyId) : undefined,
            filter.actor ? (isUuid(filter.actor) ? eq(auditLog.actorId, filter.actor) : eq(auditLog.actorName, filter.actor)) : undefined,
            filter.action ? sql`${auditLog.action} LIKE ${`%${filter.action.replace(/[\\%_]/g, '\\$&')}%`}` : undefined,
            filter.after ? gte(auditLog.at, new Date(filter.after)) : undefined,
            filter.before ? lt(auditLog.at, new Date(filter.before)) : undefined,
            below ? lt(auditLog.id, below) : undefined,
          ),
        )
        .orderBy(desc(auditLog.id))
        .limit(filter.limit + 1);
      return pageOf(rows, filter.limit, (last) => last.entry.id, ({ entry, outcome }) => {
        const settled = outcome ?? (entry.outcome === 'started' ? null : { outcome: entry.outcome, at: entry.at, companyId: null, targets: {}, details: null });
        return {
          id: entry.id,
          at: entry.at.toISOString(),
          actor: { kind: entry.actorKind, id: entry.actorId, name: entry.actorName },
          address: viewer.companyId !== null && (entry.actorId === null || entry.actorId !== viewer.id) ? null : entry.address,
          action: entry.action,
          // A company made by the call is named by its outcome (the `started` row came before it).
          companyId: entry.companyId ?? settled?.companyId ?? null,
          targets: { ...entry.targets, ...settled?.targets },
          fields: entry.fields,
          outcome: settled?.outcome ?? 'started',
          settledAt: settled?.at.toISOString() ?? null,
          details: entry.details || settled?.details ? { ...entry.details, ...settled?.details } : null,
        };
      });
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;

/** The entry the edge opened for this request's change: every route that may change something has one. */
export function auditOf(req: FastifyRequest): Audit {
  if (req.audit === undefined) throw new Error(`${req.method} ${req.routeOptions.url ?? req.url}: no audit entry was opened for it (is its scope audited?)`);
  return req.audit;
}

/** Field names a form or a body carries that are not the change's own (the console's CSRF token). */
const NOT_FIELDS = new Set(['_csrf']);

/** The names of the fields a request's body gives (a form sends its empty fields too: only the ones filled in). */
const sentFields = (body: unknown): string[] =>
  body !== null && typeof body === 'object' && !Array.isArray(body)
    ? Object.entries(body)
        .filter(([k, v]) => !NOT_FIELDS.has(k) && v !== '' && v !== undefined)
        .map(([k]) => k)
    : [];

/**
 * Opens the entry of every request of this scope that may change something (anything but GET and HEAD by a
 * signed-in key or token, and the reads marked `auditRead`), for its change to write (`auditOf`), and settles it as the answer is sent: a
 * change refused before it was made is written then. With `calls` (the queue dashboard, whose changes are
 * its jobs in Redis), the edge writes the `started` row itself before the handler runs: no row, no change.
 * Register it after the scope's other preHandlers (the console's CSRF check): a request they refuse never
 * reached a change and is not an entry. `onError`: an entry that could not be written after the change.
 */
export function audited(scope: FastifyInstance, audit: Pick<AuditLog, 'open'>, onError: (err: unknown) => void, opts: { calls?: boolean } = {}): void {
  scope.addHook('preHandler', async (req) => {
    if (((req.method === 'GET' || req.method === 'HEAD') && !req.routeOptions.config.auditRead) || req.principal === undefined) return;
    const params = (req.params ?? {}) as Record<string, string>;
    const body = req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
    const { companyId, ...targets } = params;
    req.audit = audit.open(
      { principal: req.principal, address: req.ip },
      {
        action: `${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`,
        companyId: companyId ?? req.principal.companyId ?? (typeof body.companyId === 'string' && isUuid(body.companyId) ? body.companyId : null),
        targets,
      },
      onError,
    );
    if (opts.calls) await req.audit.begin({ fields: sentFields(req.body) });
  });
  // Before the answer goes out: whoever reads the log after an answer finds its entry there.
  scope.addHook('onSend', async (req, reply, payload) => {
    await req.audit?.settle(outcomeOf(reply.statusCode), { status: reply.statusCode, sent: sentFields(req.body) });
    return payload;
  });
}
