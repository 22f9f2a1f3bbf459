/**
 * Destinations and deliveries (SPEC §5.2, §13): a company's destinations on its page (state, last 24 hours,
 * pending; the create form), a destination's page (details and state; edit, rotate, test, disable or enable,
 * delete; its deliveries with filters, and replay of those that match after a count), and a delivery's page
 * with every attempt and Replay. Each form is checked by the admin API's schema and handled by the
 * destinations service. A signing secret is shown once, on the page that answers its creation or rotation.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { auditOf } from '../../access/audit.js';
import { Problem } from '../../lib/problem.js';
import { EVENT_TYPES, NOTIFICATION_TYPE_BY_EVENT } from '../../marketplace/contract.js';
import { createDestinationBody, deliveriesQuery, deliveryParams, destinationParams, destinationReplayBody, patchDestinationBody } from '../../services/schemas.js';
import type { DeliveryView, DestinationView } from '../../services/views.js';
import { asLocalField, asRequest, filterButtons, filterField, formList, formValues, options, parseForm, perPageFilter, statusFilter } from '../forms.js';
import { html, type Html } from '../html.js';
import { ago, allowed, can, companyCrumbs, csrfField, doneNotice, numHeading, page, pager, problemBox, query, statusBadge, table, time, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../kit.js';
import { count, plural, secondsSince, stateWhen } from './company-parts.js';

type FormBody = Record<string, string | string[] | undefined>;
type DeliveriesQuery = z.infer<typeof deliveriesQuery>;
type Params = z.infer<typeof destinationParams>;

/** The company page lists this many destinations at a time. */
export const DESTINATIONS_PER_PAGE = 50;

const RESOURCE_TYPES = [...new Set(Object.values(NOTIFICATION_TYPE_BY_EVENT))];
const DELIVERY_STATUSES = deliveriesQuery.shape.status.unwrap().options;
const REPLAYABLE = ['failed', 'delivered', 'skipped', 'expired'] as const;
/** A bulk replay's statuses: `all` is every final one and, with a time after, the events the destination's filter left out (created). */
const REPLAY_STATUSES = [...REPLAYABLE, 'all'] as const;

const bodyOf = (req: FastifyRequest) => (req.body ?? {}) as FormBody;
const one = (v: string | string[] | undefined) => (typeof v === 'string' ? v : '');

export const destinationPath = (ctx: PageContext, companyId: string, destinationId: string) => `${ctx.base}/companies/${companyId}/destinations/${destinationId}`;
const deliveryPath = (ctx: PageContext, d: DeliveryView) => `${ctx.base}/companies/${d.companyId}/deliveries/${d.id}`;
/** A destination's name in a page: its description, else its URL's host. */
const nameOf = (d: Pick<DestinationView, 'description' | 'url'>) => d.description || new URL(d.url).host;

// ---- The state, the figures ----

/** Since or until when, by whom, and why: "since … (3 h), by admin: set inactive". */
function stateDetail(s: DestinationView['state']): Html | '' {
  const when = stateWhen(s);
  if (!when && !s.by && !s.reason) return '';
  return html`${when}${s.by ? html` by ${s.by}` : ''}${s.reason ? html`: <span class="wrap">${s.reason}</span>` : ''}`;
}

/** What a state that holds deliveries means for the operator. */
function stateNotice(s: DestinationView['state']): Html | '' {
  const detail = stateDetail(s);
  switch (s.status) {
    case 'failing':
      return html`<div class="notice error"><p><strong>Failing</strong> ${detail}.</p><p>Five attempts in a row failed: its deliveries wait, and the oldest is sent as a probe on the retry schedule (then hourly). The first success sends everything, in order.</p></div>`;
    case 'throttled':
      return html`<div class="notice warn"><p><strong>Throttled</strong> ${detail}.</p><p>It asked to slow down (a 429 or 503 with Retry-After): its deliveries wait until then.</p></div>`;
    case 'disabled':
      return html`<div class="notice warn"><p><strong>Disabled</strong> ${detail}.</p><p>New deliveries are still created and wait. Enable it to send them, or to skip those created before a time.</p></div>`;
    default:
      return '';
  }
}

const rate = (r: number | null) => (r === null ? html`<span class="muted">–</span>` : `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)} %`);
const latency = (ms: number | null) => (ms === null ? html`<span class="muted">–</span>` : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

// ---- The create and edit forms ----

const FIELD_NAMES: readonly string[] = ['url', 'description', 'resourceTypes', 'eventTypes', 'maxConcurrency', 'ratePerSecond', 'timeoutMs'];

/** A destination as its edit form's fields (a refused form shows the fields it sent). */
const fieldsOf = (d: DestinationView): FormBody => ({
  url: d.url,
  description: d.description,
  resourceTypes: d.filter.resourceTypes ?? [],
  eventTypes: d.filter.eventTypes ?? [],
  maxConcurrency: d.limits.maxConcurrency?.toString(),
  ratePerSecond: d.limits.ratePerSecond?.toString(),
  timeoutMs: d.limits.timeoutMs?.toString(),
});

/** A number field's value: empty is null; not a whole number, kept as text for the schema to refuse, naming the field. */
const whole = (v: string | string[] | undefined) => (one(v).trim() === '' ? null : /^\d{1,9}$/.test(one(v).trim()) ? Number(one(v).trim()) : one(v));

/** The form as the admin API's body: the boxes ticked as lists (none ticked: all), an empty limit as the default. */
function destinationRequest(f: FormBody) {
  const types = (v: string | string[] | undefined) => (formList(v).length > 0 ? formList(v) : null);
  return {
    url: one(f.url).trim(),
    description: one(f.description).trim(),
    filter: { resourceTypes: types(f.resourceTypes), eventTypes: types(f.eventTypes) },
    maxConcurrency: whole(f.maxConcurrency),
    ratePerSecond: whole(f.ratePerSecond),
    timeoutMs: whole(f.timeoutMs),
  };
}
/** A schema's path as the form names the field: `filter.resourceTypes.0` is resourceTypes. */
const fieldName = (path: PropertyKey[]) => String(path.find((p) => typeof p === 'string' && p !== 'filter') ?? '');

/** The create form's body for the destinations service (a 400 naming the fields it got wrong). */
export const createRequest = (f: FormBody) => asRequest(createDestinationBody, destinationRequest(f), fieldName);

/** A refusal at the top of its form: "correct the fields marked" when each is one of the form's, else the whole problem. */
function formProblem(problem: Problem | undefined): Html | '' {
  if (!problem) return '';
  const errors = problem.extra.errors ?? [];
  if (errors.length > 0 && errors.every((e) => FIELD_NAMES.includes(e.field)))
    return html`<p class="notice error" role="alert"><strong>Not saved</strong>: please correct the field${errors.length === 1 ? '' : 's'} marked below.</p>`;
  return problemBox(problem);
}

/** The fields of the create and edit forms (`prefix` keeps their ids apart); a refusal's fields marked, the first focused. */
function destinationFields(prefix: string, v: FormBody, problem: Problem | undefined): Html {
  const errorOf = (name: string) => problem?.extra.errors?.find((e) => e.field === name)?.message;
  const first = FIELD_NAMES.find((n) => errorOf(n) !== undefined);
  const invalid = (name: string, id: string) => (errorOf(name) === undefined ? '' : html` aria-invalid="true"${first === name ? html` autofocus` : ''} aria-errormessage="${id}-error"`);
  const errorLine = (name: string, id: string) => {
    const error = errorOf(name);
    return error === undefined ? '' : html`<p class="field-error" id="${id}-error"><code>${name}</code> ${error}</p>`;
  };
  const input = (name: string, label: string, attrs: Html, hint?: string) => {
    const id = `${prefix}-${name}`;
    return html`<div class="field"><label for="${id}">${label}</label>
    <input id="${id}" name="${name}" value="${one(v[name])}"${attrs}${hint ? html` aria-describedby="${id}-hint"` : ''}${invalid(name, id)}>
    ${errorLine(name, id)}${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}</div>`;
  };
  const checks = (name: 'resourceTypes' | 'eventTypes', legend: string, known: readonly string[]) => {
    const id = `${prefix}-${name}`;
    const ticked = formList(v[name]);
    // A type set through the API that the console does not know stays in the list, ticked.
    const all = [...known, ...ticked.filter((t) => !known.includes(t))];
    return html`<fieldset id="${id}"${errorOf(name) === undefined ? '' : html` aria-describedby="${id}-error"`}><legend>${legend}</legend>
    <div class="checks">${all.map((t) => html`<label><input type="checkbox" name="${name}" value="${t}"${ticked.includes(t) ? html` checked` : ''}> ${t}</label>`)}</div>
    ${errorLine(name, id)}</fieldset>`;
  };
  const number = (min: number, max: number, placeholder: string) => html` type="number" inputmode="numeric" min="${min}" max="${max}" step="1" placeholder="${placeholder}"`;
  return html`${formProblem(problem)}
  ${input('url', 'URL', html` type="url" required maxlength="2048" spellcheck="false" placeholder="https://crm.example.com/hooks/skyhook"`, 'Deliveries are POSTed here: https at a public address outside development (DESTINATION_ALLOW admits others).')}
  ${input('description', 'Description (optional)', html` maxlength="500"`)}
  ${checks('resourceTypes', 'Resource types (none ticked: all)', RESOURCE_TYPES)}
  ${checks('eventTypes', 'Marketplace event types behind a change (none ticked: all)', EVENT_TYPES)}
  <p class="hint">Both lists must match an event; within a list any type does.</p>
  <fieldset class="limits"><legend>Limits of its own (empty: the deployment's default, DESTINATION_CONCURRENCY and DESTINATION_TIMEOUT_MS)</legend>
    ${input('maxConcurrency', 'Requests at once', number(1, 1000, 'default'))}
    ${input('ratePerSecond', 'Requests per second', number(1, 10_000, 'no limit'))}
    ${input('timeoutMs', 'Timeout (ms)', number(100, 60_000, 'default'))}
  </fieldset>`;
}

// ---- The company page's section ----

/** A signing secret, shown once: on the page that answers its creation or its rotation, never again. */
export function secretShown(ctx: PageContext, d: DestinationView & { secret: string }, what: 'created' | 'rotated'): Html {
  const previous = d.previousSecretExpiresAt;
  return html`<div class="notice ok secret-box" role="alert">
  <p><strong>${what === 'created' ? html`The destination <a href="${destinationPath(ctx, d.companyId, d.id)}">${nameOf(d)}</a> was added.` : 'The secret was rotated.'}</strong>
  ${what === 'created' ? 'Its signing secret' : 'The new signing secret'}, shown only this once: store it now where the application that receives the deliveries verifies them.</p>
  <p><code class="secret" tabindex="0" aria-label="Signing secret">${d.secret}</code></p>
  <p class="small">No page or list shows it again. ${
    what === 'rotated' ? (previous ? html`The previous secret signs beside it until ${time(previous)}. ` : 'The previous secret no longer signs. ') : ''
  }Verify each request with it as Standard Webhooks says (any of its libraries); if it is lost, rotate it.</p>
</div>`;
}

/** A company's destinations (its page's section): each one's state and last 24 hours, and the form that adds one. */
export function destinationsSection(ctx: PageContext, companyId: string, found: { items: DestinationView[]; nextCursor: string | null }, opts: { cursor?: string; problem?: Problem; given?: FormBody }): Html {
  const rows = found.items.map(
    (d) => html`<tr>
    <td data-label="Description" class="wrap"><a href="${destinationPath(ctx, companyId, d.id)}">${nameOf(d)}</a></td>
    <td data-label="URL" class="wrap"><code class="small">${d.url}</code></td>
    <td data-label="State">${statusBadge(d.state.status)}${d.state.status === 'ok' ? '' : html`<br><span class="muted small">${stateDetail(d.state)}</span>`}</td>
    <td data-label="Success (24 h)" class="num">${rate(d.stats.successRate24h)}<br><span class="muted small">${count(d.stats.delivered24h)} delivered, ${count(d.stats.failed24h)} failed</span></td>
    <td data-label="Last attempt">${time(d.stats.lastAttemptAt)}</td>
    <td data-label="Latency p50" class="num">${latency(d.stats.latencyP50Ms24h)}</td>
    <td data-label="Pending" class="num"><a href="${destinationPath(ctx, companyId, d.id)}${query({ status: 'pending' })}#deliveries">${count(d.stats.pending)}</a>${
      d.stats.oldestPendingAt ? html`<br><span class="muted small">oldest ${ago(secondsSince(d.stats.oldestPendingAt))}</span>` : ''
    }</td>
  </tr>`,
  );
  const headings = ['Description', 'URL', 'State', numHeading('Success (24 h)'), 'Last attempt', numHeading('Stored → delivered p50'), numHeading('Pending')];
  return html`<section aria-labelledby="destinations">
<h2 id="destinations">Destinations</h2>
<p class="hint">Its own application's endpoints: each stored version of its resources is POSTed to every destination whose filter matches, signed as Standard Webhooks says.</p>
${found.items.length === 0 && !opts.cursor ? html`<p>No destination yet.</p>` : table(headings, rows, { class: 'cards destinations', caption: 'Destinations: state, the last 24 hours, pending' })}
${pager('Destinations', (cursor) => `${ctx.base}/companies/${companyId}${query({ destinationsCursor: cursor })}#destinations`, opts.cursor, found.nextCursor, 'More →')}
<h3 id="add-destination">Add a destination</h3>
${allowed(ctx, 'destinations', html`<form method="post" action="${ctx.base}/companies/${companyId}/destinations" class="stack destination-form" aria-labelledby="add-destination">${csrfField(ctx)}
  ${destinationFields('new', opts.given ?? {}, opts.problem)}
  <button type="submit">Add the destination</button>
</form>`)}
</section>`;
}

// ---- A destination's deliveries ----

function deliveriesFilter(action: string, q: Partial<DeliveriesQuery>): Html {
  return html`<form method="get" action="${action}#deliveries" class="filters" aria-label="Filter deliveries">
  ${statusFilter(DELIVERY_STATUSES, q.status)}
  ${filterField('f', 'resourceId', 'Resource id', q.resourceId)}
  ${filterField('f', 'after', 'Created after (UTC)', asLocalField(q.after), html` type="datetime-local"`)}
  ${filterField('f', 'before', 'Created before (UTC)', asLocalField(q.before), html` type="datetime-local"`)}
  ${perPageFilter(q.limit)}
  ${filterButtons(`${action}#deliveries`)}
</form>`;
}

/** The list's filter in a query string (the first page, 50 a page, left out). */
const filterQuery = (q: Partial<DeliveriesQuery>, extra: Record<string, string | undefined> = {}) =>
  query({ status: q.status, resourceId: q.resourceId, after: q.after, before: q.before, limit: q.limit === 50 ? undefined : q.limit, ...extra });

/**
 * What a delivery's last attempt got (its error names the HTTP status it had, if any); when pending, when it
 * is tried next, unless its destination holds it (failing, throttled, disabled: the page says until when).
 */
const lastAnswer = (d: DeliveryView, held: boolean) =>
  html`${d.lastError ? html`<span class="error-text">${d.lastError.slice(0, 140)}</span>` : d.lastStatus !== null ? `HTTP ${d.lastStatus}` : ''}${
    d.nextAttemptAt && d.attempts > 0 && !held ? html`<br><span class="muted small">next ${time(d.nextAttemptAt)}</span>` : ''
  }`;

function deliveriesTable(ctx: PageContext, items: DeliveryView[], held: boolean): Html {
  const rows = items.map(
    (d) => html`<tr>
    <td data-label="Delivery"><a href="${deliveryPath(ctx, d)}">${d.webhookId}</a></td>
    <td data-label="Created">${time(d.createdAt)}</td>
    <td data-label="Resource" class="wrap">${d.resource.type} ${d.resource.id} <span class="muted">v${d.resource.version}</span></td>
    <td data-label="Status">${statusBadge(d.status)}${d.replay ? html` <span class="badge tag">replayed</span>` : ''}</td>
    <td data-label="Attempts" class="num">${d.attempts}</td>
    <td data-label="Last answer" class="wrap">${lastAnswer(d, held)}</td>
    <td data-label="Delivered">${time(d.deliveredAt)}</td>
  </tr>`,
  );
  return table(['Delivery', 'Created', 'Resource', 'Status', numHeading('Attempts'), 'Last answer', 'Delivered'], rows, { class: 'deliveries', caption: 'Deliveries, newest first' });
}

// ---- A delivery's attempts ----

const httpResult = (status: number) => html`<span class="badge ${status >= 200 && status < 300 ? 's-delivered' : 's-failed'}">HTTP ${status}</span>`;

function attemptsTable(attempts: NonNullable<DeliveryView['attemptsList']>): Html {
  if (attempts.length === 0) return html`<p class="muted">No attempt yet.</p>`;
  const rows = attempts.map(
    (a, i) => html`<tr>
    <td data-label="Attempt" class="num">${i + 1}${a.probe ? html` <span class="badge tag">probe</span>` : ''}</td>
    <td data-label="At">${time(a.at, { ms: true })}</td>
    <td data-label="URL" class="wrap"><code class="small">${a.url}</code></td>
    <td data-label="Duration" class="num">${count(a.durationMs)} ms</td>
    <td data-label="Result">${a.httpStatus !== null ? httpResult(a.httpStatus) : ''}${a.error ? html`${a.httpStatus !== null ? html`<br>` : ''}<span class="error-text wrap">${a.error}</span>` : ''}</td>
    <td data-label="Answer">${
      a.response ? html`<pre class="answer" tabindex="0" aria-label="The answer to attempt ${i + 1}, its first 4 KB">${a.response}</pre>` : html`<span class="muted">–</span>`
    }</td>
  </tr>`,
  );
  return table(['Attempt', 'At', 'URL', numHeading('Duration'), 'Result', "Answer (first 4 KB, as text)"], rows, { class: 'cards attempts', caption: 'Attempts, oldest first' });
}

// ---- The test event's answer ----

type TestAttempt = { webhookId: string; httpStatus: number | null; durationMs: number; response: string | null; error: string | null; delivered: boolean; at: string };

const testShown = (t: TestAttempt): Html => html`<div class="notice ${t.delivered ? 'ok' : 'error'}" role="status">
  <p><strong>Test event ${t.delivered ? 'delivered' : 'not delivered'}</strong>: ${t.httpStatus !== null ? httpResult(t.httpStatus) : 'no answer'} after ${count(t.durationMs)} ms, sent ${time(t.at, { ms: true })} with webhook-id <code>${t.webhookId}</code>.</p>
  ${t.error ? html`<p class="error-text wrap">${t.error}</p>` : ''}
  ${t.response ? html`<p>The answer's first bytes, as text:</p><pre class="answer" tabindex="0" aria-label="The test event's answer">${t.response}</pre>` : ''}
</div>`;

// ---- The pages ----

/** The forms of a destination's page: a refusal is shown at the form it came from. */
type FormName = 'edit' | 'rotate' | 'state' | 'test' | 'delete';

const DONE: Record<string, string> = {
  updated: 'The destination was changed.',
  disabled: 'The destination was disabled: its deliveries wait until it is enabled.',
  enabled: 'The destination was enabled: what waits is sent, in order.',
  replayed: 'Replayed: it is sent again with the same webhook-id, and the new attempts appear below.',
};

/** The bulk replay's form: the deliveries list's filter; no status is the failed ones (as the notifications' bulk replay). */
const replayForm = z.object({
  status: z.enum(REPLAY_STATUSES).default('failed'),
  resourceId: deliveriesQuery.shape.resourceId,
  after: deliveriesQuery.shape.after,
  before: deliveriesQuery.shape.before,
});
type ReplayForm = z.infer<typeof replayForm>;
/** The replay's body: the list's `after` is the replay's `since`. */
const replayRequest = (f: ReplayForm, dryRun: boolean) =>
  asRequest(destinationReplayBody, { status: f.status === 'all' ? undefined : f.status, resourceId: f.resourceId, since: f.after, before: f.before, dryRun }, (path) => (path[0] === 'since' ? 'after' : path.join('.')));

// Over 80 lines on purpose: a registrar, one page or form after another, each a few lines; the helpers it shares sit above it.
export function destinationPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { companies, destinations } = kit.deps.services;

  const crumbs = (ctx: PageContext, company: { id: string; name: string }, d?: DestinationView, last?: string) =>
    html`<p class="crumbs">${companyCrumbs(ctx, company, { anchor: '#destinations' })}${
      d ? html` › <a href="${destinationPath(ctx, company.id, d.id)}">${nameOf(d)}</a> › ${last}` : ''
    }</p>`;

  /** The deliveries section: the filter, the list or what is wrong with the filter, its pages, and the bulk replay's link. */
  const deliveriesSection = async (ctx: PageContext, req: FastifyRequest, reply: FastifyReply, d: DestinationView): Promise<Html> => {
    const action = destinationPath(ctx, d.companyId, d.id);
    const raw = req.method === 'GET' ? (req.query as Record<string, unknown>) : {};
    let content: Html;
    try {
      const q = parseForm(deliveriesQuery, { ...raw, destinationId: d.id });
      const found = await destinations.deliveries(d.companyId, q);
      const replayable = q.status !== 'pending';
      content = html`${deliveriesFilter(action, q)}
<p class="list-state">${found.items.length === 0 ? 'No delivery matches.' : html`Newest first${q.cursor ? ' (an older page)' : ''}.`}${
        replayable && found.items.length > 0 && can(ctx, 'replay') ? html` <a class="button secondary small" href="${action}/replay${filterQuery(q, { limit: undefined })}">Replay the matching ones…</a>` : ''
      }</p>
${found.items.length === 0 ? '' : deliveriesTable(ctx, found.items, d.state.status !== 'ok')}
${pager('Deliveries: pages', (cursor) => `${action}${filterQuery(q, { cursor })}#deliveries`, q.cursor, found.nextCursor)}`;
    } catch (err) {
      // A bad filter: the form as sent, with what is wrong, rather than a bare error page.
      const p = kit.refusal(err);
      reply.code(p.status);
      content = html`${deliveriesFilter(action, formValues(raw) as Partial<DeliveriesQuery>)}${problemBox(p)}`;
    }
    return html`<section aria-labelledby="deliveries"><h2 id="deliveries">Deliveries</h2>${content}</section>`;
  };

  // Over 80 lines on purpose: one page, its sections in the order they show.
  const destinationPage = async (req: FastifyRequest, reply: FastifyReply, p: Params, opts: { failed?: { form: FormName; problem: Problem }; extra?: Html } = {}) => {
    const ctx = kit.ctx(req);
    const [company, d] = await Promise.all([companies.get(p.companyId), destinations.get(p.companyId, p.destinationId)]);
    const action = destinationPath(ctx, d.companyId, d.id);
    const failedAt = (form: FormName) => (opts.failed?.form === form ? opts.failed.problem : undefined);
    const shownAt = (form: FormName) => (failedAt(form) ? problemBox(failedAt(form)!) : '');
    const editFields = failedAt('edit') ? bodyOf(req) : fieldsOf(d);
    const f = d.filter;
    const limits = d.limits;
    const deliveries = await deliveriesSection(ctx, req, reply, d);
    const body = html`${crumbs(ctx, company)}
<h1>${nameOf(d)}</h1>
${opts.extra ?? ''}${shownAt('test')}
${stateNotice(d.state)}
<dl class="facts">
  <div><dt>State</dt><dd>${statusBadge(d.state.status)}</dd></div>
  <div><dt>URL</dt><dd class="wrap"><code>${d.url}</code></dd></div>
  <div><dt>Description</dt><dd>${d.description || html`<span class="muted">none</span>`}</dd></div>
  <div><dt>Filter</dt><dd>${f.resourceTypes ? f.resourceTypes.join(', ') : 'every resource type'}; ${f.eventTypes ? html`event types ${f.eventTypes.join(', ')}` : 'any event type'}</dd></div>
  <div><dt>Success, last 24 h</dt><dd>${rate(d.stats.successRate24h)} of attempts; ${count(d.stats.delivered24h)} delivered, ${count(d.stats.failed24h)} failed</dd></div>
  <div><dt>Stored → delivered p50, 24 h</dt><dd>${latency(d.stats.latencyP50Ms24h)}</dd></div>
  <div><dt>Pending</dt><dd><a href="${action}${query({ status: 'pending' })}#deliveries">${count(d.stats.pending)}</a>${d.stats.oldestPendingAt ? html`, the oldest created ${time(d.stats.oldestPendingAt)}` : ''}</dd></div>
  <div><dt>Last attempt</dt><dd>${time(d.stats.lastAttemptAt)}</dd></div>
  <div><dt>Last success</dt><dd>${time(d.stats.lastSuccessAt)}</dd></div>
  <div><dt>Limits</dt><dd>${limits.maxConcurrency ? `${count(limits.maxConcurrency)} requests at once` : 'the default requests at once'}; ${limits.ratePerSecond ? `${count(limits.ratePerSecond)} a second` : 'no rate of its own'}; timeout ${limits.timeoutMs ? `${count(limits.timeoutMs)} ms` : 'the default'}</dd></div>
  <div><dt>Signing secret</dt><dd>${d.previousSecretExpiresAt ? html`rotated: the previous one signs beside it until ${time(d.previousSecretExpiresAt)}` : 'one'} <span class="muted">(shown only when it is made)</span></dd></div>
  <div><dt>Added</dt><dd>${time(d.createdAt)}</dd></div>
</dl>
${allowed(ctx, 'destinations', html`<form method="post" action="${action}/test" class="inline">${csrfField(ctx)}<button type="submit">Send a test event</button> <span class="hint">A <code>test</code> event, signed as deliveries are, sent now; nothing is stored.</span></form>`)}

${deliveries}

<section aria-labelledby="edit">
<h2 id="edit">Change it</h2>
${allowed(ctx, 'destinations', html`<form method="post" action="${action}" class="stack destination-form">${csrfField(ctx)}
  ${destinationFields('edit', editFields, failedAt('edit'))}
  <p class="hint">A new URL applies to pending deliveries too; a new filter to later events (a replay of status <code>all</code> created after a time fills what the old one left out).</p>
  <button type="submit">Save</button>
</form>`)}
</section>

<section aria-labelledby="secret">
<h2 id="secret">Rotate the signing secret</h2>
${shownAt('rotate')}
${allowed(ctx, 'destinations', html`<form method="post" action="${action}/rotate" class="stack" data-confirm="Rotate the signing secret of ${nameOf(d)}? The new one is shown once.">${csrfField(ctx)}
  <label for="grace">Grace period (seconds)</label>
  <input id="grace" name="graceSeconds" type="number" inputmode="numeric" min="0" max="2592000" step="1" value="86400" required aria-describedby="grace-hint">
  <p class="hint" id="grace-hint">The previous secret keeps signing beside the new one this long (86400: a day), so the application can switch over. 0 after a leak: it stops at once.</p>
  <button type="submit">Rotate the secret</button>
</form>`)}
</section>

<section aria-labelledby="state">
<h2 id="state">${d.active ? 'Disable it' : 'Enable it'}</h2>
${shownAt('state')}
${
  d.active
    ? allowed(ctx, 'destinations', html`<form method="post" action="${action}/disable" class="stack" data-confirm="Disable ${nameOf(d)}? Its deliveries wait until it is enabled.">${csrfField(ctx)}
  <p>Nothing is sent to it while it is disabled; new deliveries are still created and wait.</p>
  <button type="submit" class="secondary">Disable</button>
</form>`)
    : allowed(ctx, 'destinations', html`<form method="post" action="${action}/enable" class="stack">${csrfField(ctx)}
  <p>What waits (${plural(d.stats.pending, 'pending delivery', 'pending deliveries')}) is sent, in order.</p>
  <label for="skip-before">Skip the deliveries created before (UTC, optional)</label>
  <input id="skip-before" name="skipBefore" type="datetime-local" aria-describedby="skip-hint">
  <p class="hint" id="skip-hint">Those end <code>skipped</code> instead of being sent (the application reads what it missed from the pull feed, or a replay sends them later).</p>
  <button type="submit">Enable</button>
</form>`)
}
</section>

<section aria-labelledby="danger" class="danger-zone">
<h2 id="danger">Delete the destination</h2>
${shownAt('delete')}
${allowed(ctx, 'destinations', html`<form method="post" action="${action}/delete" class="stack" data-confirm="Delete the destination ${nameOf(d)}? Its pending deliveries end skipped.">${csrfField(ctx)}
  <p>Its pending deliveries end <code>skipped</code>; its deliveries stay listed until retention.</p>
  <button type="submit" class="danger">Delete ${nameOf(d)}</button>
</form>`)}
</section>`;
    const status = opts.failed?.problem.status ?? reply.statusCode;
    return kit.send(reply, page(ctx, { title: nameOf(d), section: '/companies', body, notice: doneNotice(req.query, DONE) }), status);
  };

  /** A form of a destination's page: its action runs and the page comes back (a done key: by a redirect); a refusal is shown at the form. */
  const destinationForm = (path: string, form: FormName, act: (p: Params, req: FastifyRequest) => Promise<string | Html>) =>
    scope.post(`/companies/:companyId/destinations/:destinationId${path}`, { config: { access: 'destinations' } }, async (req, reply) => {
      const p = parseForm(destinationParams, req.params);
      return kit.act(reply, () => act(p, req), (done) => `/companies/${p.companyId}/destinations/${p.destinationId}${query({ done })}`, (problem, extra) =>
        destinationPage(req, reply, p, { failed: problem && { form, problem }, extra }),
      );
    });

  scope.get('/companies/:companyId/destinations/:destinationId', async (req, reply) => destinationPage(req, reply, parseForm(destinationParams, req.params)));

  destinationForm('', 'edit', async ({ companyId, destinationId }, req) => {
    await destinations.update(companyId, destinationId, asRequest(patchDestinationBody, destinationRequest(bodyOf(req)), fieldName), auditOf(req));
    return 'updated';
  });

  destinationForm('/rotate', 'rotate', async ({ companyId, destinationId }, req) => {
    const patch = asRequest(patchDestinationBody, { rotateSecret: { graceSeconds: whole(bodyOf(req).graceSeconds) ?? undefined } }, (path) => String(path.at(-1) ?? ''));
    const rotated = await destinations.update(companyId, destinationId, patch, auditOf(req));
    return secretShown(kit.ctx(req), { ...rotated, secret: rotated.secret! }, 'rotated');
  });

  destinationForm('/test', 'test', async ({ companyId, destinationId }, req) => {
    const at = new Date().toISOString();
    return testShown({ ...(await destinations.test(companyId, destinationId, auditOf(req))), at });
  });

  destinationForm('/disable', 'state', async ({ companyId, destinationId }, req) => {
    await destinations.update(companyId, destinationId, { active: false }, auditOf(req));
    return 'disabled';
  });

  destinationForm('/enable', 'state', async ({ companyId, destinationId }, req) => {
    await destinations.update(companyId, destinationId, asRequest(patchDestinationBody, { active: true, skipBefore: formValues(req.body).skipBefore }), auditOf(req));
    return 'enabled';
  });

  scope.post('/companies/:companyId/destinations/:destinationId/delete', { config: { access: 'destinations' } }, async (req, reply) => {
    const p = parseForm(destinationParams, req.params);
    return kit.act(reply, () => destinations.delete(p.companyId, p.destinationId, auditOf(req)), () => `/companies/${p.companyId}?done=destinationDeleted#destinations`, (problem) =>
      destinationPage(req, reply, p, { failed: problem && { form: 'delete', problem } }),
    );
  });

  // Bulk replay: first the count (a dry run) and a confirmation, then the replay.
  scope.get('/companies/:companyId/destinations/:destinationId/replay', async (req, reply) => {
    const ctx = kit.ctx(req);
    const p = parseForm(destinationParams, req.params);
    const f = parseForm(replayForm, req.query);
    const [company, d, { matched, created }] = await Promise.all([companies.get(p.companyId), destinations.get(p.companyId, p.destinationId), destinations.countReplayable(p.companyId, p.destinationId, replayRequest(f, true))]);
    const action = destinationPath(ctx, d.companyId, d.id);
    const statusGiven = formValues(req.query).status !== undefined;
    const back = `${action}${filterQuery({ ...f, status: statusGiven && f.status !== 'all' ? f.status : undefined })}#deliveries`;
    const described = [
      `status ${f.status}${statusGiven ? '' : ' (the default: a replay without a status takes the failed ones)'}${f.status === 'all' ? (f.after ? ", and the events since then that the destination's filter left out" : ' (with a time after, also the events since then that its filter left out)') : ''}`,
      ...(f.resourceId ? [`resource id ${f.resourceId}`] : []),
      ...(f.after ? [`created after ${f.after}`] : []),
      ...(f.before ? [`created before ${f.before}`] : []),
    ];
    const hidden = (keys: (keyof ReplayForm)[]) => keys.filter((k) => f[k] !== undefined).map((k) => html`<input type="hidden" name="${k}" value="${String(f[k])}">`);
    const body = html`${crumbs(ctx, company, d, 'Replay')}
<h1>Replay the matching deliveries</h1>
<p>Filter: ${described.join('; ')}. Pending deliveries are never replayed: they are sent anyway.</p>
<form method="get" action="${action}/replay" class="inline" aria-label="Another status">${hidden(['resourceId', 'after', 'before'])}
  <label for="r-status">Status</label>
  <select id="r-status" name="status">${options(REPLAY_STATUSES, f.status)}</select>
  <button type="submit" class="secondary">Count again</button>
</form>
<p class="count"><strong>${count(matched)}</strong> ${matched === 1 ? 'delivery matches' : 'deliveries match'}${created > 0 ? html`, <strong>${count(created)}</strong> of them to be created (events the destination's filter left out when they were stored)` : ''}.</p>
${
  matched === 0
    ? html`<p><a href="${back}">Back to the deliveries</a></p>`
    : html`<form method="post" action="${action}/replay">${csrfField(ctx)}${hidden(['status', 'resourceId', 'after', 'before'])}
  <p>Each one is sent again with its own webhook-id, outside its resource's order (receivers keep the highest version); its earlier attempts stay listed.</p>
  <button type="submit">Replay ${plural(matched, 'delivery', 'deliveries')}</button>
  <a class="button secondary" href="${back}">Cancel</a>
</form>`
}`;
    return kit.send(reply, page(ctx, { title: 'Replay', section: '/companies', body }));
  });

  scope.post('/companies/:companyId/destinations/:destinationId/replay', { config: { access: 'replay' } }, async (req, reply) => {
    const ctx = kit.ctx(req);
    const p = parseForm(destinationParams, req.params);
    const f = parseForm(replayForm, req.body);
    const filter = replayRequest(f, false);
    const { matched, replayed, created } = await destinations.replay(p.companyId, p.destinationId, filter, auditOf(req));
    const [company, d] = await Promise.all([companies.get(p.companyId), destinations.get(p.companyId, p.destinationId)]);
    const body = html`${crumbs(ctx, company, d, 'Replayed')}
<h1>Replayed</h1>
<p>${count(replayed)} of the ${count(matched)} matching deliveries are sent again${created > 0 ? html` (${count(created)} of them created: events the destination's filter left out)` : ''}.</p>
<p><a href="${destinationPath(ctx, d.companyId, d.id)}${filterQuery({ ...f, status: undefined })}#deliveries">See them in the list</a></p>`;
    return kit.send(reply, page(ctx, { title: 'Replayed', section: '/companies', body }));
  });

  const deliveryPage = async (req: FastifyRequest, reply: FastifyReply, p: z.infer<typeof deliveryParams>, problem?: Problem) => {
    const ctx = kit.ctx(req);
    const d = await destinations.delivery(p.companyId, p.deliveryId);
    // A destination deleted since is named by its id; any other error is the page's.
    const destinationOrGone = destinations.get(p.companyId, d.destinationId).catch((err: unknown) => {
      if (err instanceof Problem && err.status === 404) return undefined;
      throw err;
    });
    const [company, destination] = await Promise.all([companies.get(p.companyId), destinationOrGone]);
    const r = d.resource;
    const attempts = d.attemptsList ?? [];
    const body = html`<p class="crumbs">${companyCrumbs(ctx, company, { anchor: '#destinations' })} › ${
      destination ? html`<a href="${destinationPath(ctx, company.id, destination.id)}#deliveries">${nameOf(destination)}</a>` : html`destination ${d.destinationId} (deleted)`
    } › ${d.webhookId}</p>
<h1>Delivery ${d.webhookId}</h1>
${problem ? problemBox(problem) : ''}
<dl class="facts">
  <div><dt>Status</dt><dd>${statusBadge(d.status)}${d.replay ? html` <span class="badge tag">replayed</span>` : ''}</dd></div>
  <div><dt>Attempts</dt><dd>${count(attempts.length)}${attempts.length === d.attempts ? '' : html` <span class="muted">(${count(d.attempts)} since it was last replayed)</span>`}</dd></div>
  <div><dt>webhook-id</dt><dd><code>${d.webhookId}</code> <span class="muted">(the same on every attempt and replay)</span></dd></div>
  <div><dt>Resource</dt><dd class="wrap">${r.type} ${r.id}, version ${r.version} · <a href="${ctx.base}/resources${query({ companyId: d.companyId, href: r.href })}">its versions</a></dd></div>
  <div><dt>Href</dt><dd class="wrap"><code>${r.href}</code></dd></div>
  <div><dt>Event</dt><dd>${d.eventId}</dd></div>
  <div><dt>Destination</dt><dd class="wrap">${destination ? html`<a href="${destinationPath(ctx, company.id, destination.id)}">${nameOf(destination)}</a> ${statusBadge(destination.state.status)}` : html`${d.destinationId} (deleted)`}</dd></div>
  <div><dt>Created</dt><dd>${time(d.createdAt)}</dd></div>
  <div><dt>Delivered</dt><dd>${time(d.deliveredAt)}</dd></div>
  <div><dt>Finished</dt><dd>${time(d.finishedAt)}</dd></div>
  ${
    d.nextAttemptAt
      ? html`<div><dt>Next attempt</dt><dd>${destination && destination.state.status !== 'ok' ? html`when its destination is no longer ${destination.state.status}` : time(d.nextAttemptAt)}</dd></div>`
      : ''
  }
</dl>
${d.lastError ? html`<p class="notice error">Last error: <span class="wrap">${d.lastError}</span></p>` : ''}
${
  d.status === 'pending'
    ? html`<p class="muted">Pending: it is sent when its turn comes, so it cannot be replayed.</p>`
    : !destination
      ? html`<p class="muted">Its destination was deleted: there is nowhere to replay it to.</p>`
      : allowed(ctx, 'replay', html`<form method="post" action="${ctx.base}/companies/${d.companyId}/deliveries/${d.id}/replay" class="inline">${csrfField(ctx)}<button type="submit">Replay</button> <span class="hint">Sent again with the same webhook-id, outside its resource's order; its earlier attempts stay below.</span></form>`)
}
<h2>Attempts, oldest first</h2>
${attemptsTable(attempts)}`;
    return kit.send(reply, page(ctx, { title: `Delivery ${d.webhookId}`, section: '/companies', body, notice: doneNotice(req.query, DONE) }), problem?.status ?? 200);
  };

  scope.get('/companies/:companyId/deliveries/:deliveryId', async (req, reply) => deliveryPage(req, reply, parseForm(deliveryParams, req.params)));

  scope.post('/companies/:companyId/deliveries/:deliveryId/replay', { config: { access: 'replay' } }, async (req, reply) => {
    const p = parseForm(deliveryParams, req.params);
    return kit.act(reply, () => destinations.replayDelivery(p.companyId, p.deliveryId, auditOf(req)), () => `/companies/${p.companyId}/deliveries/${p.deliveryId}?done=replayed`, (problem) =>
      deliveryPage(req, reply, p, problem),
    );
  });
}
