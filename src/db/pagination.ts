/**
 * Keyset pagination. A cursor is opaque to clients (base64url of the last key seen); one this API did not
 * return is a 400 naming `cursor`, never a query error.
 */
import { desc, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import { unstorableTextAt } from '../lib/json-body.js';
import { badRequest } from '../lib/problem.js';

export interface Page<V> {
  items: V[];
  nextCursor: string | null;
}

/**
 * `rows` as fetched with `limit + 1`: the page (each row through `view`) and the cursor of the next one,
 * made of the last row's key. The one place a page is cut.
 */
export function pageOf<R, V>(rows: R[], limit: number, key: (last: R) => unknown, view: (row: R) => V): Page<V> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const nextCursor = rows.length > limit && last !== undefined ? Buffer.from(JSON.stringify(key(last))).toString('base64url') : null;
  return { items: items.map(view), nextCursor };
}

export function decodeCursor<T>(cursor: string, valid: (v: unknown) => v is T): T {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    // Text PostgreSQL cannot take (NUL, a lone surrogate) would fail the query, not name the cursor.
    if (valid(value) && unstorableTextAt(value) === undefined) return value;
  } catch {
    /* below */
  }
  throw badRequest('The cursor is not valid.', [{ field: 'cursor', message: 'is not a cursor this API returned' }]);
}

export const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
export const isUuid = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);

/** A UTC timestamp to the microsecond, as `position` writes it, that is a real date. */
export const isMicrosecondTime = (v: unknown): v is string => {
  const ms = typeof v === 'string' ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})\d{3}Z$/.exec(v)?.[1] : undefined;
  return ms !== undefined && new Date(`${ms}Z`).toISOString() === `${ms}Z`;
};
const isCreatedAtKey = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2 && isMicrosecondTime(v[0]) && isUuid(v[1]);

/** A timestamp column as `position` text: to the microsecond, as PostgreSQL keeps it, for a cursor. */
export const microsecondText = (column: PgColumn) => sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Pages newest first on (created_at, id). created_at goes into the cursor as text to the microsecond,
 * as PostgreSQL keeps it: a JS Date keeps milliseconds only, and rows of the same millisecond would be skipped.
 */
export function newestFirst(table: { id: PgColumn; createdAt: PgColumn }, cursor: string | undefined) {
  const after = cursor === undefined ? undefined : decodeCursor(cursor, isCreatedAtKey);
  return {
    /** Select it with the row (`position`), so `page` can write the next cursor. */
    position: microsecondText(table.createdAt),
    where: after ? sql`(${table.createdAt}, ${table.id}) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : undefined,
    orderBy: [desc(table.createdAt), desc(table.id)],
    page: <R extends { id: string; position: string }, V>(rows: R[], limit: number, view: (row: R) => V): Page<V> => pageOf(rows, limit, (last) => [last.position, last.id], view),
  };
}
