/**
 * The notification body (seed §2.4) and the href rule (SPEC §4). Extra properties are kept, never
 * refused. Anything PostgreSQL's jsonb would refuse (a NUL character, a number numeric cannot hold, absurd
 * nesting) is refused here with a 400 (lib/json-body.ts), so one bad request can never fail a group commit
 * shared with good ones.
 */
import { decodeJson } from '../lib/json-body.js';
import { Problem, badRequest, type FieldError } from '../lib/problem.js';
import type { NotificationBody } from '../marketplace/contract.js';

const MAX_DEPTH = 64;
const LIMITS = { id: 512, type: 128, href: 2048 } as const;

/**
 * The notification, its text as received (stored as is: no second serialisation, numbers kept exact),
 * and its href parsed (once: the scope check reads it).
 */
export function parseNotification(raw: Buffer): { body: NotificationBody; text: string; href: URL } {
  const { value: body, text } = decodeJson(raw);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('The body must be a JSON object with string id, type and href.');
  }
  if (tooDeep(body, MAX_DEPTH)) throw badRequest(`The body is nested deeper than ${MAX_DEPTH} levels.`);

  const record = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const field of ['id', 'type', 'href'] as const) {
    const value = record[field];
    if (typeof value !== 'string' || value.length === 0) errors.push({ field, message: 'must be a non-empty string' });
    else if (value.length > LIMITS[field]) errors.push({ field, message: `must be at most ${LIMITS[field]} characters` });
  }
  if (errors.length > 0) throw badRequest('The notification is not valid.', errors);
  const href = URL.parse(record.href as string);
  if (!href) throw badRequest('The notification is not valid.', [{ field: 'href', message: 'must be an absolute URL' }]);
  return { body: record as NotificationBody, text, href };
}

/**
 * The worker sends the company's token to href, so href must be under the company's API base URL:
 * same scheme, host and port, and a path inside the base path. Anything else is an attack (422).
 * `field` names the href in the problem (a quote's or a decline's action href names its place in the RFQ).
 */
export function checkHrefScope(url: URL, apiBaseUrl: URL, requireHttps: boolean, field = 'href'): void {
  const reasons: string[] = [];
  if (requireHttps && url.protocol !== 'https:') reasons.push('must use https');
  if (url.username || url.password) reasons.push('must not carry credentials');
  if (url.protocol !== apiBaseUrl.protocol || url.host !== apiBaseUrl.host) reasons.push("must be on the company's API host");
  const base = apiBaseUrl.pathname.replace(/\/+$/, '');
  if (url.pathname !== base && !url.pathname.startsWith(`${base}/`)) reasons.push("must be under the company's API base path");
  if (reasons.length > 0) {
    throw new Problem(422, 'Unprocessable Content', `${field} ${reasons.join(', ')}.`, {
      code: 'href_out_of_scope',
      errors: [{ field, message: reasons.join(', ') }],
    });
  }
}

function tooDeep(root: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
