/**
 * Idempotent outbound calls (leads by clientIdentifier, quotes by sellerUniqueQuoteIdentifier): the
 * request that inserts the `sending` row is the only one that calls the marketplace; concurrent
 * repeats wait for its result and answer with the stored row. A failed call removes its row, so a
 * later request may try again; a row left `sending` by a crashed process is taken over once stale.
 */
import { and, eq, getTableColumns, lt } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Database } from '../db/client.js';
import type { leads, quotes } from '../db/schema/index.js';
import { Problem } from '../lib/problem.js';

/** The tables of outbound calls: a row is `sending` until its call is answered, then `created`. */
type OutboundTable = typeof leads | typeof quotes;

export interface OutboundCall<T extends OutboundTable> {
  table: T;
  /** The columns of the table's unique key, e.g. ['companyId', 'clientIdentifier']; their values are in `values`. */
  key: readonly (keyof T['$inferInsert'] & keyof T['_']['columns'])[];
  /** The new `sending` row. */
  values: T['$inferInsert'];
  /** Calls the marketplace for the claimed row and stores its answer; returns the finished row. */
  send(row: T['$inferSelect']): Promise<T['$inferSelect']>;
  /** The marketplace call timeout: a `sending` row older than twice this was left by a crashed process. */
  callTimeoutMs: number;
}

const POLL_MS = 50;

/**
 * One INSERT claims the call. Otherwise each turn is one SELECT of the row (an UPDATE only when it
 * looks stale, another INSERT only when it was removed), until it is `created`.
 */
export async function sendOnce<T extends OutboundTable>(db: Database, call: OutboundCall<T>): Promise<{ row: T['$inferSelect']; created: boolean }> {
  type Row = T['$inferSelect'];
  // Drizzle's builders do not narrow over a union of tables; these statements are valid for each of them.
  const table = call.table as typeof leads;
  const columns: Record<string, PgColumn> = getTableColumns(table);
  const values = call.values as Record<string, unknown>;
  const key = and(...call.key.map((name) => eq(columns[name as string]!, values[name as string])));
  const staleMs = 2 * call.callTimeoutMs;

  const claim = async (): Promise<Row | undefined> => (await db.insert(table).values(call.values as typeof table.$inferInsert).onConflictDoNothing().returning())[0];
  const load = async (): Promise<Row | undefined> => (await db.select().from(table).where(key).limit(1))[0];
  const takeOver = async (row: Row): Promise<Row | undefined> =>
    (
      await db
        .update(table)
        .set({ updatedAt: new Date() })
        .where(and(eq(table.id, row.id), eq(table.status, 'sending'), lt(table.updatedAt, new Date(Date.now() - staleMs))))
        .returning()
    )[0];
  const sendMine = async (row: Row): Promise<{ row: Row; created: boolean }> => {
    try {
      return { row: await call.send(row), created: true };
    } catch (err) {
      await db
        .delete(table)
        .where(and(eq(table.id, row.id), eq(table.status, 'sending')))
        .catch(() => {});
      throw err;
    }
  };

  const mine = await claim();
  if (mine) return sendMine(mine);
  const deadline = Date.now() + call.callTimeoutMs + 5000;
  while (Date.now() < deadline) {
    const existing = await load();
    if (!existing) {
      // Its call failed and the row was removed: try to claim it again.
      const claimed = await claim();
      if (claimed) return sendMine(claimed);
      continue;
    }
    if (existing.status === 'created') return { row: existing, created: false };
    if (existing.updatedAt.getTime() < Date.now() - staleMs) {
      const taken = await takeOver(existing);
      if (taken) return sendMine(taken);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Problem(409, 'Conflict', 'An identical request is still being sent to the marketplace; retry shortly.', { code: 'in_progress' });
}
