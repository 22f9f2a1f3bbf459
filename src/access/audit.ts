/**
 * The audit log (SPEC §10.1): who changed what, when, from where, with what outcome.
 *
 * A change is recorded as two appended rows: `started`, written before the change is made, and its outcome,
 * written after (`settles` names the first). The admin API's and the console's changes are recorded by one
 * pair of hooks (audited), the CLI's by its command runner: no change can be added without its entry. The
 * entry holds the names of the fields sent, never their values; a bulk action is one entry with its filter
 * and its count.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { and, desc, eq, gte, isNull, lt, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Database } from '../db/client.js';
import { decodeCursor, pageOf, type Page } from '../db/pagination.js';
import { auditLog } from '../db/schema/index.js';
import type { Actor, Principal } from './roles.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `started` entry of this request's change. */
    auditId?: number;
    /** What a bulk action adds to its entry: its filter and its count (set by its handler). */
    auditDetails?: Record<string, unknown>;
  }
}

export interface AuditEntry {
  /** What was done: the route (`PATCH /admin/companies/:companyId`) or the command (`skyhook companies update`). */
  action: string;
  companyId?: string | null;
  /** The ids acted on, by name. */
  targets?: Record<string, string | number>;
  /** The names of the fields sent (never their values). */
  fields?: string[];
  details?: Record<string, unknown> | null;
}

export type AuditOutcome = 'ok' | 'refused' | 'failed';

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
  /** `started` while the change is under way, or when the process stopped during it. */
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

const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What both rows of a change say: who, from where, what, on what. */
const rowOf = (actor: Actor, entry: AuditEntry) => ({
  actorKind: actor.principal.kind,
  actorId: actor.principal.id,
  actorName: actor.principal.name,
  address: actor.address,
  action: entry.action,
  companyId: entry.companyId ?? null,
  targets: entry.targets ?? {},
});

export function createAuditLog(db: Database) {
  const outcomes = alias(auditLog, 'outcome');
  return {
    /** Appends the `started` entry of a change about to be made; answers its id. */
    async begin(actor: Actor, entry: AuditEntry): Promise<number> {
      const [row] = await db
        .insert(auditLog)
        .values({ ...rowOf(actor, entry), outcome: 'started', fields: entry.fields ?? [], details: entry.details ?? null })
        .returning({ id: auditLog.id });
      return row!.id;
    },

    /** Appends the outcome of the change `id` began. */
    async settle(actor: Actor, id: number, begun: AuditEntry, outcome: AuditOutcome, details?: Record<string, unknown> | null): Promise<void> {
      await db.insert(auditLog).values({ ...rowOf(actor, begun), outcome, settles: id, details: details ?? null });
    },

    /** Newest first, each change once with its outcome. A company key's `viewer` sees its company's, without other actors' addresses. */
    async list(filter: AuditFilter, viewer: Principal): Promise<Page<AuditView>> {
      const below = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor, isId);
      const companyId = viewer.companyId ?? filter.companyId;
      const rows = await db
        .select({ entry: auditLog, outcome: outcomes.outcome, settledAt: outcomes.at, outcomeDetails: outcomes.details })
        .from(auditLog)
        .leftJoin(outcomes, eq(outcomes.settles, auditLog.id))
        .where(
          and(
            isNull(auditLog.settles),
            companyId ? eq(auditLog.companyId, companyId) : undefined,
            filter.actor ? (UUID.test(filter.actor) ? eq(auditLog.actorId, filter.actor) : eq(auditLog.actorName, filter.actor)) : undefined,
            filter.action ? sql`${auditLog.action} LIKE ${`%${filter.action.replace(/[\\%_]/g, '\\$&')}%`}` : undefined,
            filter.after ? gte(auditLog.at, new Date(filter.after)) : undefined,
            filter.before ? lt(auditLog.at, new Date(filter.before)) : undefined,
            below ? lt(auditLog.id, below) : undefined,
          ),
        )
        .orderBy(desc(auditLog.id))
        .limit(filter.limit + 1);
      return pageOf(rows, filter.limit, (last) => last.entry.id, ({ entry, outcome, settledAt, outcomeDetails }) => ({
        id: entry.id,
        at: entry.at.toISOString(),
        actor: { kind: entry.actorKind, id: entry.actorId, name: entry.actorName },
        address: viewer.companyId !== null && (entry.actorId === null || entry.actorId !== viewer.id) ? null : entry.address,
        action: entry.action,
        companyId: entry.companyId,
        targets: entry.targets,
        fields: entry.fields,
        outcome: outcome ?? 'started',
        settledAt: settledAt?.toISOString() ?? null,
        details: entry.details || outcomeDetails ? { ...entry.details, ...outcomeDetails } : null,
      }));
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;

/** A request's status as an outcome: 2xx and 3xx `ok`, 4xx `refused` (the marketplace's 502 too: it said no), other 5xx `failed`. */
export const outcomeOf = (status: number): AuditOutcome => (status < 400 ? 'ok' : status < 500 || status === 502 ? 'refused' : 'failed');

/** Field names a form or a body carries that are not the change's own (the console's CSRF token). */
const NOT_FIELDS = new Set(['_csrf']);

/**
 * Records every change made through this scope's routes (anything but GET and HEAD by a signed-in key or
 * token): `started` before the handler runs, the outcome as the answer is sent. Register it after the scope's
 * other preHandlers (the console's CSRF check): a refused request changes nothing and is not an entry.
 * `onError` is told when an entry could not be written; a change whose `started` entry cannot be written
 * is not made (the request fails).
 */
export function audited(scope: FastifyInstance, audit: Pick<AuditLog, 'begin' | 'settle'>, onError: (err: unknown) => void): void {
  const actorOf = (req: FastifyRequest): Actor => ({ principal: req.principal!, address: req.ip });
  const entryOf = (req: FastifyRequest): AuditEntry => {
    const params = (req.params ?? {}) as Record<string, string>;
    const body = req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
    const { companyId, ...targets } = params;
    return {
      action: `${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`,
      companyId: companyId ?? req.principal?.companyId ?? (typeof body.companyId === 'string' && UUID.test(body.companyId) ? body.companyId : null),
      targets,
      // A form sends its empty fields too: only the ones given are named.
      fields: Object.entries(body)
        .filter(([k, v]) => !NOT_FIELDS.has(k) && v !== '' && v !== undefined)
        .map(([k]) => k),
    };
  };
  scope.addHook('preHandler', async (req) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.principal === undefined) return;
    req.auditId = await audit.begin(actorOf(req), entryOf(req));
  });
  // Before the answer goes out: whoever reads the log after an answer finds its outcome there.
  scope.addHook('onSend', async (req, reply, payload) => {
    const id = req.auditId;
    if (id === undefined) return payload;
    req.auditId = undefined;
    await audit.settle(actorOf(req), id, entryOf(req), outcomeOf(reply.statusCode), req.auditDetails).catch(onError);
    return payload;
  });
}
