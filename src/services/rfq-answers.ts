/**
 * What a quote and a decline share: each answers a requested lift (its lift id) or an RFQ (its id); each is
 * sent once (send-once.ts), held `unknown` when the marketplace may have acted without a success read; and
 * each goes to the action href of the RFQ snapshot Skyhook stored when it has one (seed §6.5: use the href
 * the marketplace gives), else to the assumed path under the company's API base URL (contract.ts).
 */
import { and, desc, eq, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { resources, type declines, type quotes } from '../db/schema/index.js';
import { Problem, notFound } from '../lib/problem.js';
import type { ApiConnection, MarketplaceClient } from '../marketplace/client.js';
import { NOTIFICATION_TYPE_BY_EVENT, rfqActionPath, type RfqAction } from '../marketplace/contract.js';
import { checkHrefScope } from '../receiver/ingest.js';
import type { CompaniesService } from './companies.service.js';
import { createdBefore, sendOnce, type OutboundCall } from './send-once.js';

type AnswerTable = typeof quotes | typeof declines;
type Row<T extends AnswerTable> = T['$inferSelect'];

export interface RfqAnswerDeps {
  db: Database;
  companies: Pick<CompaniesService, 'connection' | 'get'>;
  marketplace: Pick<MarketplaceClient, 'call'>;
  timeoutMs: number;
  /** Outside development an action href must be https, as a notification's href must (SPEC §4). */
  requireHttpsHrefs: boolean;
  /** A failed call's row that could not be settled (send-once.ts). */
  onCleanupError: (err: unknown) => void;
}

/** Where an answer is sent, as its row records it. */
interface ActionTarget {
  target: 'snapshot_href' | 'assumed_path';
  targetUrl: string;
}

const RFQ_TYPE = NOTIFICATION_TYPE_BY_EVENT.TripRequest;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The action's href in a stored RFQ for `requestId`, and where it sits (to name it in an error): the RFQ's own
 * `actions` when `requestId` is the RFQ's id, else the `actions` of its `sellerLift` with that id. Null when
 * the RFQ carries none for it.
 */
export function actionHrefIn(rfq: { resourceId: string; body: unknown }, requestId: string, action: RfqAction): { href: unknown; field: string } | null {
  const hrefOf = (holder: unknown): unknown => {
    const actions = isObject(holder) ? holder.actions : undefined;
    const named = isObject(actions) ? actions[action] : undefined;
    return isObject(named) ? named.href : undefined;
  };
  if (requestId === rfq.resourceId) {
    const href = hrefOf(rfq.body);
    return href === undefined ? null : { href, field: `rfq.actions.${action}.href` };
  }
  const lifts = isObject(rfq.body) ? rfq.body.sellerLift : undefined;
  const list = Array.isArray(lifts) ? lifts : [lifts];
  const at = list.findIndex((lift) => isObject(lift) && lift.id === requestId);
  const href = at === -1 ? undefined : hrefOf(list[at]);
  return href === undefined ? null : { href, field: `rfq.sellerLift${Array.isArray(lifts) ? `.${at}` : ''}.actions.${action}.href` };
}

/** An RFQ whose sellerLift (a list, or one object) has a lift of this id: the form resources_lifts_idx answers. */
const liftMatch = (liftId: string): SQL | undefined =>
  or(
    sql`${resources.body} -> 'sellerLift' @> ${JSON.stringify([{ id: liftId }])}::jsonb`,
    sql`${resources.body} -> 'sellerLift' @> ${JSON.stringify({ id: liftId })}::jsonb`,
  );

/**
 * The URL an answer to `requestId` goes to. An href from the stored RFQ must be on the company's API base
 * URL, as a notification's href must, since the company's credentials go with the call: otherwise a 422
 * naming where it was found, and nothing is sent.
 */
async function resolveActionTarget(
  db: Database,
  conn: Pick<ApiConnection, 'baseUrl'>,
  key: { companyId: string; requestId: string; action: RfqAction },
  requireHttps: boolean,
): Promise<ActionTarget> {
  const { companyId, requestId, action } = key;
  // The RFQ itself (resources_company_type_id_idx), else the RFQ one of whose requested lifts it is, sellerLift
  // as a list or as one object (resources_lifts_idx, a GIN index of sellerLift: no scan of the company's RFQs).
  const rfqOf = (match: SQL | undefined) =>
    db
      .select({ resourceId: resources.resourceId, body: resources.body })
      .from(resources)
      .where(and(eq(resources.companyId, companyId), eq(resources.type, RFQ_TYPE), eq(resources.gone, false), match))
      .orderBy(desc(resources.fetchedAt))
      .limit(1);
  const [byId] = await rfqOf(eq(resources.resourceId, requestId));
  const rfq = byId ?? (await rfqOf(liftMatch(requestId)))[0];
  const found = rfq ? actionHrefIn(rfq, requestId, action) : null;
  if (!found) return { target: 'assumed_path', targetUrl: `${conn.baseUrl.replace(/\/+$/, '')}${rfqActionPath(action, requestId)}` };
  const url = typeof found.href === 'string' ? URL.parse(found.href) : null;
  if (!url) {
    throw new Problem(422, 'Unprocessable Content', `The stored RFQ's ${found.field} is not an absolute URL; nothing was sent.`, {
      code: 'href_out_of_scope',
      errors: [{ field: found.field, message: 'must be an absolute URL' }],
    });
  }
  checkHrefScope(url, new URL(conn.baseUrl), requireHttps, found.field);
  return { target: 'snapshot_href', targetUrl: url.href };
}

/** One answer to send: what differs between a quote and a decline (the table, its idempotency key, its name in answers: send-once.ts). */
interface RfqAnswer<T extends AnswerTable> extends Pick<OutboundCall<T>, 'table' | 'key' | 'name'> {
  action: RfqAction;
  /** What the caller asked: the lift or RFQ answered, the act-as login, and whether to send again one held `unknown` (send-once.ts). */
  request: { requestId: string; actAsAccount?: string; resendUnknown?: boolean };
  /** The new row's columns of its own (the company, request, act-as and target are added). */
  values: Omit<T['$inferInsert'], 'companyId' | 'requestId' | 'actAsAccount' | 'target' | 'targetUrl'>;
  /** The body to send, from the claimed row: a resend sends what was stored. */
  body(row: Row<T>): unknown;
  /** The marketplace call's metric name. */
  operation: string;
  /**
   * The columns read from the marketplace's answer; `incomplete` when the answer lacks what must be kept:
   * the row is stored all the same, and the caller gets that problem.
   */
  read(answer: unknown): { columns: Partial<T['$inferInsert']>; incomplete?: Problem };
}

/** Sends the answer once and stores the marketplace's; `created` is false for a repeat that sent nothing. */
export async function sendRfqAnswer<T extends AnswerTable>(deps: RfqAnswerDeps, companyId: string, a: RfqAnswer<T>): Promise<{ row: Row<T>; created: boolean }> {
  const { requestId, actAsAccount, resendUnknown } = a.request;
  const done = await createdBefore(deps.db, { table: a.table, key: a.key, values: { ...a.values, companyId, requestId } as T['$inferInsert'] });
  if (done) return { row: done, created: false };
  const { conn, call } = await deps.companies.connection(companyId);
  const sent = await resolveActionTarget(deps.db, conn, { companyId, requestId, action: a.action }, deps.requireHttpsHrefs);
  // Drizzle's builders do not narrow over a union of tables; the update is valid for each of them.
  const table = a.table as typeof quotes;
  // Outside sendOnce, which tells a refused call from one that may have been acted on by its MarketplaceError.
  return call(() =>
    sendOnce<T>(deps.db, {
      table: a.table,
      key: a.key,
      values: { ...a.values, companyId, requestId, actAsAccount: actAsAccount ?? null, ...sent } as T['$inferInsert'],
      callTimeoutMs: deps.timeoutMs,
      // A second call may make a second quote or decline: a call that may have been acted on is held.
      ifUnknown: 'hold' as OutboundCall<T>['ifUnknown'],
      resendUnknown,
      name: a.name,
      send: async (r) => {
        // A resend goes where the RFQ points now: the row says so before the call, whatever its outcome.
        if (r.target !== sent.target || r.targetUrl !== sent.targetUrl) await deps.db.update(table).set(sent).where(eq(table.id, r.id));
        // The act-as header is the company profile's (marketplace/connection.ts).
        const answer = await deps.marketplace.call<unknown>(conn, 'POST', new URL(sent.targetUrl), { body: a.body(r), actAsAccount: r.actAsAccount ?? undefined, operation: a.operation });
        const { columns, incomplete } = a.read(answer);
        const [done] = await deps.db
          .update(table)
          .set({ status: 'created', response: answer ?? null, error: null, ...sent, ...(columns as Partial<typeof quotes.$inferInsert>), updatedAt: new Date() })
          .where(eq(table.id, r.id))
          .returning();
        if (incomplete) throw incomplete;
        return done as Row<T>;
      },
    }, deps.onCleanupError),
  );
}

/** One of the company's stored answers, or a 404 naming it. */
export async function findAnswer<T extends AnswerTable>(db: Database, t: T, companyId: string, id: string, noun: string): Promise<Row<T>> {
  const table = t as typeof quotes;
  const [row] = await db.select().from(table).where(and(eq(table.companyId, companyId), eq(table.id, id))).limit(1);
  if (!row) throw notFound(`${noun} ${id}`);
  return row as Row<T>;
}

/** A stored answer an operator asks to send again (only one held `unknown`, 409 otherwise), and the request that sends it as stored. */
export async function heldUnknown<T extends AnswerTable>(db: Database, t: T, companyId: string, id: string, noun: string, name: (row: Row<T>) => string) {
  const row = await findAnswer(db, t, companyId, id, noun);
  if (row.status !== 'unknown') throw new Problem(409, 'Conflict', `${name(row)} is ${row.status}, not unknown: there is nothing to resend.`, { code: 'not_unknown' });
  return { row, again: { requestId: row.requestId, ...(row.actAsAccount ? { actAsAccount: row.actAsAccount } : {}), resendUnknown: true } };
}
