/**
 * The console's form helpers: form and query values read through a request schema (the admin API's own,
 * mostly), a value the schema refuses answered as a 400 page naming each field it got wrong, and the
 * fields of the lists' filter forms.
 */
import type { z } from 'zod';
import { badRequest } from '../lib/problem.js';
import { html, type Html } from './html.js';

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

/** A select's options, `chosen` selected. */
export const options = (values: readonly (string | number)[], chosen: string | number | undefined): Html[] =>
  values.map((v) => html`<option${v === chosen ? html` selected` : ''}>${v}</option>`);

/** A text field of a list's filter form (`class="filters"`); `prefix` keeps the ids of the page's forms apart. */
export const filterField = (prefix: string, name: string, label: string, value: string | undefined, attrs: Html | '' = ''): Html =>
  html`<div class="field"><label for="${prefix}-${name}">${label}</label><input id="${prefix}-${name}" name="${name}" value="${value ?? ''}"${attrs}></div>`;

/** A filter form's Status (any, or one of `statuses`), its Per page, and its buttons (Clear: the list unfiltered). */
export const statusFilter = (statuses: readonly string[], chosen: string | undefined): Html => html`<div class="field"><label for="f-status">Status</label>
    <select id="f-status" name="status"><option value="">Any status</option>${options(statuses, chosen)}</select></div>`;
export const perPageFilter = (limit: number | undefined): Html => html`<div class="field"><label for="f-limit">Per page</label>
    <select id="f-limit" name="limit">${options([25, 50, 100, 200], limit)}</select></div>`;
export const filterButtons = (clear: string): Html => html`<div class="buttons"><button type="submit">Filter</button> <a class="button secondary" href="${clear}">Clear</a></div>`;
