/**
 * Idempotent outbound calls (leads by clientIdentifier, quotes by sellerUniqueQuoteIdentifier, declines by
 * the lift or RFQ they decline): the request that inserts the `sending` row is the only one that calls the
 * marketplace; concurrent repeats wait for its result and answer with the stored row.
 *
 * A call that fails leaves one of two things. Refused (a 4xx, a 503, a soft error, no connection): its row
 * is removed, so a later request may try again. Possibly acted on (a timeout, a dropped connection, another
 * 5xx, or a process that stopped mid-call): a lead is sent again by the next request, as the marketplace
 * keeps one lead per clientIdentifier; a quote or a decline is kept `unknown`, and a repeat is refused until
 * the caller, having looked on the marketplace, asks to resend it (nothing documents that the marketplace
 * would drop a second submission of the same sellerUniqueQuoteIdentifier).
 */
import { and, eq, getTableColumns, lt, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Database } from '../db/client.js';
import { newestFirst, type Page } from '../db/pagination.js';
import { quotes, type declines, type leads } from '../db/schema/index.js';
import { Problem } from '../lib/problem.js';
import { MarketplaceError } from '../marketplace/client.js';
import type { CompaniesService } from './companies.service.js';

/** The tables of outbound calls: a row is `sending` until its call is answered, then `created`. */
type OutboundTable = typeof leads | typeof quotes | typeof declines;

export interface OutboundCall<T extends OutboundTable> {
  table: T;
  /** The columns of the table's unique key, e.g. ['companyId', 'clientIdentifier']; their values are in `values`. */
  key: readonly (keyof T['$inferInsert'] & keyof T['_']['columns'])[];
  /** The new `sending` row. */
  values: T['$inferInsert'];
  /** Calls the marketplace for the claimed row and stores its answer; returns the finished row. Throws MarketplaceError. */
  send(row: T['$inferSelect']): Promise<T['$inferSelect']>;
  /** The marketplace call timeout: a `sending` row older than twice this was left by a crashed process. */
  callTimeoutMs: number;
  /**
   * A call that may have been acted on: `resend` on the next request (the marketplace drops repeats),
   * or `hold` it as `unknown` (quotes and declines: their tables keep the reason).
   */
  ifUnknown: T extends typeof leads ? 'resend' : 'resend' | 'hold';
  /** With `hold`: this request sends again a call left `unknown`. */
  resendUnknown?: boolean;
  /** How the answers name the row, e.g. `quote q-1`. */
  name: string;
}

const POLL_MS = 50;

/** The call's row by its unique key (its columns' values are in `values`). */
function keyOf<T extends OutboundTable>(call: Pick<OutboundCall<T>, 'table' | 'key' | 'values'>): SQL | undefined {
  const columns: Record<string, PgColumn> = getTableColumns(call.table as typeof leads);
  const values = call.values as Record<string, unknown>;
  return and(...call.key.map((name) => eq(columns[name as string]!, values[name as string])));
}

/**
 * The row a repeat finds `created` already: answered as stored before anything else is asked (the company's
 * connection, a hold after a 429), since nothing is to be sent (SPEC §6: a repeat returns the stored result).
 */
export async function createdBefore<T extends OutboundTable>(db: Database, call: Pick<OutboundCall<T>, 'table' | 'key' | 'values'>): Promise<T['$inferSelect'] | undefined> {
  const table = call.table as typeof leads;
  return (await db.select().from(table).where(and(keyOf(call), eq(table.status, 'created'))).limit(1))[0];
}

/**
 * One INSERT claims the call. Otherwise each turn is one SELECT of the row (an UPDATE only when it
 * looks stale or is taken over, another INSERT only when it was removed), until it is `created`.
 */
// Over 80 lines on purpose: the claim, the call and every way a row can be found, in one loop; split, the
// guarantee (sent once, never twice) would have to be read across functions.
export async function sendOnce<T extends OutboundTable>(
  db: Database,
  call: OutboundCall<T>,
  /** A failed call's row that could not be settled (the database is down): reported; a repeat takes it over once stale. */
  onCleanupError: (err: unknown) => void,
): Promise<{ row: T['$inferSelect']; created: boolean }> {
  type Row = T['$inferSelect'];
  // Drizzle's builders do not narrow over a union of tables; these statements are valid for each of them.
  const table = call.table as typeof leads;
  // `hold` is typed to quotes and declines, whose tables have the `error` column.
  const held = call.table as typeof quotes;
  const hold = call.ifUnknown === 'hold';
  const key = keyOf(call);
  const staleMs = 2 * call.callTimeoutMs;

  const claim = async (): Promise<Row | undefined> => (await db.insert(table).values(call.values as typeof table.$inferInsert).onConflictDoNothing().returning())[0];
  const load = async (): Promise<Row | undefined> => (await db.select().from(table).where(key).limit(1))[0];
  /** Moves the row to `sending` again, when it is still as seen (a `sending` one only when stale). */
  const takeOver = async (row: Row): Promise<Row | undefined> =>
    (
      await db
        .update(table)
        .set({ status: 'sending', updatedAt: new Date() })
        .where(
          and(
            eq(table.id, row.id),
            eq(table.status, row.status),
            row.status === 'sending' ? lt(table.updatedAt, new Date(Date.now() - staleMs)) : undefined,
          ),
        )
        .returning()
    )[0];
  /** Keeps a `sending` row as `unknown`; false when it had already moved on. */
  const markUnknown = async (id: string, why: string): Promise<boolean> =>
    (
      await db
        .update(held)
        .set({ status: 'unknown', error: why, updatedAt: new Date() })
        .where(and(eq(held.id, id), eq(held.status, 'sending')))
        .returning({ id: held.id })
    ).length > 0;
  const sendMine = async (row: Row): Promise<{ row: Row; created: boolean }> => {
    try {
      return { row: await call.send(row), created: true };
    } catch (err) {
      const refused = err instanceof MarketplaceError && !err.mayHaveActed;
      if (hold && !refused) {
        const why = err instanceof Error ? err.message : String(err);
        // If the row cannot be marked now (the database is down), it stays `sending`: a repeat finds it stale
        // after twice the call timeout and holds it `unknown` then. The caller gets the marketplace's error.
        const marked = await markUnknown(row.id, why).catch((cleanup: unknown) => (onCleanupError(cleanup), false));
        if (marked) throw outcomeUnknown(502, 'Bad Gateway', call.name, why);
        throw err;
      }
      // If the refused row cannot be removed now, it stays `sending` and a repeat takes it over once stale (a
      // quote is then held `unknown`: the cautious side). The caller gets the marketplace's error.
      await db
        .delete(table)
        .where(and(eq(table.id, row.id), eq(table.status, 'sending')))
        .catch(onCleanupError);
      throw err;
    }
  };

  const mine = await claim();
  if (mine) return sendMine(mine);
  const deadline = Date.now() + call.callTimeoutMs + 5000;
  while (Date.now() < deadline) {
    const existing = await load();
    if (!existing) {
      // Its call was refused and the row was removed: try to claim it again.
      const claimed = await claim();
      if (claimed) return sendMine(claimed);
      continue;
    }
    if (existing.status === 'created') return { row: existing, created: false };
    if (existing.status === 'unknown') {
      if (!call.resendUnknown) throw outcomeUnknown(409, 'Conflict', call.name, (existing as { error?: string | null }).error ?? 'no answer was read');
      const taken = await takeOver(existing);
      if (taken) return sendMine(taken);
      continue;
    }
    if (existing.updatedAt.getTime() < Date.now() - staleMs) {
      // The process sending it stopped before an answer was stored.
      if (hold) {
        await markUnknown(existing.id, `the process sending it stopped before the marketplace's answer was stored (found ${Math.round((Date.now() - existing.updatedAt.getTime()) / 1000)} s later)`);
        continue;
      }
      const taken = await takeOver(existing);
      if (taken) return sendMine(taken);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Problem(409, 'Conflict', 'An identical request is still being sent to the marketplace; retry shortly.', { code: 'in_progress' });
}

/** The answer for a call held `unknown`: to the request whose call it was (502), and to each repeat (409). */
function outcomeUnknown(status: 502 | 409, title: string, name: string, why: string): Problem {
  return new Problem(
    status,
    title,
    `The marketplace may have received ${name}, but no success was read (${why}). It is kept with status unknown and not sent again: ` +
      'check on the marketplace, then repeat the request with resendUnknown: true (CLI: --resend-unknown) to send it again.',
    { code: 'outcome_unknown' },
  );
}

/** The company's calls of one table, newest first, with the given filters; a 404 for an unknown company. */
export async function listOutbound<T extends OutboundTable, V>(
  deps: { db: Database; companies: Pick<CompaniesService, 'get'> },
  t: T,
  companyId: string,
  filters: (SQL | undefined)[],
  opts: { limit: number; cursor?: string },
  view: (row: T['$inferSelect']) => V,
): Promise<Page<V>> {
  // Drizzle's builders do not narrow over a union of tables; this query is valid for each of them.
  const table = t as typeof quotes;
  const keyset = newestFirst(table, opts.cursor);
  await deps.companies.get(companyId);
  const rows = await deps.db
    .select({ ...getTableColumns(table), position: keyset.position })
    .from(table)
    .where(and(eq(table.companyId, companyId), ...filters, keyset.where))
    .orderBy(...keyset.orderBy)
    .limit(opts.limit + 1);
  return keyset.page(rows, opts.limit, (row) => view(row as T['$inferSelect']));
}
