/**
 * The console's form helpers: form and query values read through a request schema (the admin API's own,
 * mostly), and a value the schema refuses answered as a 400 page naming each field it got wrong.
 */
import type { z } from 'zod';
import { badRequest } from '../lib/problem.js';

/** The fields a datetime-local input fills (the notifications', deliveries' and audit log's filters, a destination's enabling, a key's expiry). */
const INSTANT_FIELDS = new Set(['receivedAfter', 'receivedBefore', 'after', 'before', 'skipBefore', 'expiresAt']);

/** A datetime-local field's value (no offset) is read as UTC, as the page says; ISO values pass as they are. */
const asInstant = (v: string) => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? `${v.length === 16 ? `${v}:00` : v}Z` : v);

/** What a datetime-local field shows for an ISO instant (its value is read back as UTC). */
export const asLocalField = (v: string | undefined): string => {
  const t = v ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? '' : new Date(t).toISOString().slice(0, 16);
};

/** A form's or query's one-value fields, trimmed, blanks and the CSRF token dropped, datetime-local values as UTC instants. */
export function formValues(raw: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries((raw ?? {}) as Record<string, unknown>)
      .filter((e): e is [string, string] => e[0] !== '_csrf' && typeof e[1] === 'string' && e[1].trim() !== '')
      .map(([k, v]) => [k, INSTANT_FIELDS.has(k) ? asInstant(v.trim()) : v.trim()]),
  );
}

/** A form field that may come once or repeated (ticked boxes), as a list. */
export const formList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Form and query values, blanks dropped, through a schema; a bad one is a 400 page naming the field. */
export function parseForm<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  return asRequest(schema, formValues(raw));
}

/** A request schema's answer for a form, or a 400 naming each field it got wrong as `field` names it (by default, its path). */
export function asRequest<S extends z.ZodType>(schema: S, request: unknown, field = (path: PropertyKey[]) => path.join('.')): z.output<S> {
  const parsed = schema.safeParse(request);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((i) => ({ field: field(i.path) || 'form', message: i.message }));
  throw badRequest(`Please correct: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, errors);
}
