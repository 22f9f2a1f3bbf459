/**
 * Storing notifications. First the body (seed §2.4) and the href rule (SPEC §4): extra properties are
 * kept, never refused; anything PostgreSQL's jsonb would refuse (a NUL character, a number numeric cannot
 * hold, absurd nesting) is refused here with a 400 (lib/json-body.ts), so one bad request can never fail a
 * group commit shared with good ones.
 *
 * Then group commit. Concurrent requests' rows are written by one INSERT in one
 * transaction (synchronous_commit stays on; notifications/postgres.ts), so many requests share one
 * WAL flush. There is no timer: while a flush is in flight the next rows gather, so a lone request is
 * written at once and a busy receiver writes in batches (lib/batcher.ts). Every request is answered only
 * after its own row is committed.
 *
 * An accepted row is written `queued` when its fetch job will be added right after the commit (Redis is
 * up): one write per row instead of an INSERT and a later UPDATE. If that add fails, the follow-up sets
 * the rows back to `received` for the relay; if the process dies in between, the relay's scan of rows
 * left `queued` adds their jobs (relay.ts). A speed mechanism, kept for its measured gain:
 * docs/decisions.md, "Speed mechanisms".
 */
import { isDatabaseUnavailable } from '../lib/database-unavailable.js';
import type { NewNotification as NotificationRow, NotificationLifecycle } from '../notifications/lifecycle.js';
import { Batcher, splitOnFailure } from '../lib/batcher.js';
import { decodeJson } from '../lib/json-body.js';
import { Problem, badRequest, type FieldError } from '../lib/problem.js';
import { endsWith, type SpanRef, type Tracing } from '../lib/tracing.js';
import type { NotificationBody } from '../marketplace/contract.js';

export interface NewNotification extends NotificationRow {
  /** The request's wait for the commit, when traces are exported: the batch's span links to it. */
  trace?: SpanRef;
}

interface StoredNotification extends Omit<NotificationRow, 'disposition'> {
  id: number;
  /** `processed`: its href is outside the company's base URLs (outcome not_fetched). */
  status: 'received' | 'queued' | 'discarded' | 'processed';
  /** As given: the fetch job added for the row continues its trace (processing/enqueue.ts). */
  trace?: SpanRef;
}

type Accepted = StoredNotification & { status: 'received' | 'queued' };

/** What follows a commit: the accepted rows' fetch jobs are added (processing/enqueue.ts). */
interface CommitFollowUp {
  /** Whether accepted rows are stored `queued`: false while Redis is known to be down. */
  readonly queueing: boolean;
  /** Called with each committed batch's accepted rows; never awaited by a request. */
  afterCommit(rows: Accepted[]): void;
}

export class NotificationWriter {
  private readonly batcher: Batcher<NewNotification, StoredNotification>;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'accept'>,
    private readonly followUp: CommitFollowUp,
    /** A follow-up that threw (a bug): reported, never turned into the batch's failure. */
    private readonly onFollowUpError: (err: unknown) => void,
    /** Set when traces are exported: each commit is a span (lib/tracing.ts). */
    private readonly tracing?: Pick<Tracing, 'commitBatch'>,
  ) {
    // One flush at a time: everything that arrives meanwhile goes in the next one (fewer, larger commits).
    this.batcher = new Batcher(splitOnFailure((rows) => this.write(rows), isDatabaseUnavailable), { maxBatch: 1000 });
  }

  /** Resolves once the row is committed; rejects when it is not (the caller answers 503). */
  insert(row: NewNotification): Promise<StoredNotification> {
    return this.batcher.add(row);
  }

  private async write(rows: NewNotification[]): Promise<StoredNotification[]> {
    const batch = this.tracing?.commitBatch(rows.map((r) => r.trace));
    const inserted = await endsWith(batch, this.notifications.accept(rows, { queueing: this.followUp.queueing }));
    // Field by field: V8 copies an object rest (`{ disposition, ...row }`) through a slow generic path.
    const stored = rows.map(
      (r, i): StoredNotification => ({
        companyId: r.companyId,
        webhookId: r.webhookId,
        resourceId: r.resourceId,
        type: r.type,
        href: r.href,
        bodyJson: r.bodyJson,
        authenticatedBy: r.authenticatedBy,
        id: inserted[i]!.id,
        status: inserted[i]!.status,
        trace: r.trace,
      }),
    );
    try {
      this.followUp.afterCommit(stored.filter((r): r is Accepted => r.status === 'received' || r.status === 'queued'));
    } catch (err) {
      // Committed is committed: a failure here must not make the batch be written again. The relay
      // queues rows that were never queued.
      this.onFollowUpError(err);
    }
    return stored;
  }
}

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

/** Whether `url` is under `base`: same scheme, host and port, and a path inside the base path. */
function isUnder(url: URL, base: URL): boolean {
  const path = base.pathname.replace(/\/+$/, '');
  return url.protocol === base.protocol && url.host === base.host && (url.pathname === path || url.pathname.startsWith(`${path}/`));
}

/**
 * A notification's href (SPEC §4 and §14, docs/decisions.md): one that could never be fetched (not http(s),
 * credentials in it, or not https where https is required) is a 422; one under the company's API base URL or one of its
 * further base URLs is `fetch`ed with the company's token; any other is `not_fetched`: stored and shown,
 * processed at once, never sent the token.
 */
export function hrefDisposition(url: URL, bases: readonly URL[], requireHttps: boolean): 'fetch' | 'not_fetched' {
  const reasons: string[] = [];
  if (url.protocol !== 'http:' && url.protocol !== 'https:') reasons.push('must be an http(s) URL');
  else if (requireHttps && url.protocol !== 'https:') reasons.push('must use https');
  if (url.username || url.password) reasons.push('must not carry credentials');
  if (reasons.length > 0) throw hrefOutOfScope('href', reasons);
  return bases.some((base) => isUnder(url, base)) ? 'fetch' : 'not_fetched';
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
  if (reasons.length > 0) throw hrefOutOfScope(field, reasons);
}

/** The 422 for an href that must not be fetched: `field` named, with every reason. */
const hrefOutOfScope = (field: string, reasons: string[]) =>
  new Problem(422, 'Unprocessable Content', `${field} ${reasons.join(', ')}.`, { code: 'href_out_of_scope', errors: [{ field, message: reasons.join(', ') }] });

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
