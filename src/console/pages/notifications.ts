/**
 * Notifications (SPEC §13): the list with every §7 filter, updated live from the §7 stream; one
 * notification with its body, authentication, timeline (§7.1), snapshot and Replay; bulk replay of a
 * filter after a count; a resource's versions with what changed. Filters are validated by the admin
 * API's own schemas, and every read and action is a call of the notifications service.
 */
import { auditOf } from '../../access/audit.js';
import { companyInReach, ownCompany } from '../../access/guard.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { NOTIFICATION_FILTER_KEYS as FILTER_KEYS, notificationsQuery, replayableStatus, resourceHistoryQuery } from '../../services/schemas.js';
import { streamToClient } from '../../admin/stream.js';
import { notificationStatus } from '../../db/schema/index.js';
import { NOTIFICATION_TYPE_BY_EVENT } from '../../marketplace/contract.js';
import { notFound, Problem } from '../../lib/problem.js';
import type { NotificationFilter } from '../../services/notifications.service.js';
import type { NotificationView, TimelineEntry } from '../../services/views.js';
import { asLocalField, filterButtons, filterField, parseForm, perPageFilter, statusFilter } from '../forms.js';
import { companyPicker, pickCompany, type Picked } from '../company-picker.js';
import { html, type Html } from '../html.js';
import { allowed, can, problemBox, jsonBlock, notice, numHeading, page, pager, query, statusBadge, table, time, csrfField, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../kit.js';
import { count, plural } from './company-parts.js';
import { rfqAnswerForms } from './rfq-forms.js';

type ListQuery = z.infer<typeof notificationsQuery>;

const filterOf = (q: Partial<ListQuery>): NotificationFilter & { status?: NotificationView['status'] } =>
  Object.fromEntries(FILTER_KEYS.filter((k) => q[k] !== undefined).map((k) => [k, q[k]]));

function filterForm(ctx: PageContext, q: ListQuery, company: Picked): Html {
  return html`<form method="get" action="${ctx.base}/notifications" class="filters" aria-label="Filter notifications">
  ${companyPicker(ctx, { id: 'f-company', label: 'Company', picked: company, placeholder: 'All companies: type a name or paste an id' })}
  ${statusFilter(notificationStatus.enumValues, q.status)}
  ${filterField('f', 'type', 'Type', q.type, html` placeholder="rfqs, tripmsgs…"`)}
  ${filterField('f', 'resourceId', 'Resource id', q.resourceId)}
  ${filterField('f', 'href', 'Href', q.href, html` type="url"`)}
  ${filterField('f', 'webhookId', 'Webhook id', q.webhookId)}
  ${filterField('f', 'receivedAfter', 'Received from (UTC)', asLocalField(q.receivedAfter), html` type="datetime-local"`)}
  ${filterField('f', 'receivedBefore', 'Received before (UTC)', asLocalField(q.receivedBefore), html` type="datetime-local"`)}
  ${perPageFilter(q.limit)}
  ${filterButtons(`${ctx.base}/notifications`)}
</form>`;
}

function listQueryString(q: Partial<ListQuery>, extra: Record<string, string | number | undefined> = {}): string {
  return query({ ...filterOf(q), limit: q.limit === 50 ? undefined : q.limit, ...extra });
}

/**
 * The list: on the first page a stable element that refreshes its content when the stream says
 * something changed. The element itself is never swapped, so the timers of its triggers survive a refresh.
 */
function listPart(ctx: PageContext, q: ListQuery, result: { items: NotificationView[]; nextCursor: string | null }, names: Map<string, string>): Html {
  if (q.cursor !== undefined) return html`<div id="list">${listContent(ctx, q, result, names)}</div>`;
  const rows = `${ctx.base}/notifications/rows${listQueryString(q)}`;
  // At most one refresh a second while changes stream in (htmx's throttle drops the events of its
  // window), and one more a second after the last (delay), so the list always ends showing the last
  // state. Two elements: htmx hands an event to one trigger of an element only. The second waits for
  // the first's request (hx-sync), so an older answer never lands after a newer one. When the stream
  // (re)connects, the list is read again: what changed before it was listening is shown too.
  return html`<span hidden hx-get="${rows}" hx-trigger="sse:notification delay:1s" hx-target="#list" hx-swap="innerHTML" hx-sync="#list:queue last"></span>
<div id="list" hx-get="${rows}" hx-trigger="sse:notification throttle:1s, sse:resync, htmx:sseOpen from:closest [sse-connect]" hx-swap="innerHTML">${listContent(ctx, q, result, names)}</div>`;
}

function listContent(ctx: PageContext, q: ListQuery, result: { items: NotificationView[]; nextCursor: string | null }, names: Map<string, string>): Html {
  const live = q.cursor === undefined;
  const rows = result.items.map(
    (n) => html`<tr>
      <td data-label="Id"><a id="n-${n.id}" href="${ctx.base}/notifications/${n.id}">${n.id}</a></td>
      <td data-label="Received">${time(n.receivedAt)}</td>
      <td data-label="Company">${names.get(n.companyId) ?? n.companyId}</td>
      <td data-label="Type">${n.type}</td>
      <td data-label="Resource" class="wrap">${n.resourceId}</td>
      <td data-label="Status">${statusBadge(n.status)}</td>
      <td data-label="Attempts" class="num">${n.attempts}</td>
      <td data-label="Last error" class="wrap error-text">${n.lastError ? n.lastError.slice(0, 140) : ''}</td>
    </tr>`,
  );
  return html`<p class="muted list-state">${live ? html`<span class="live-dot" aria-hidden="true"></span> Live: the newest ${q.limit}, updated as notifications arrive and change.` : 'An older page: live updates show on the first page.'}</p>
  ${
    result.items.length === 0
      ? html`<p>No notification matches.</p>`
      : table(['Id', 'Received', 'Company', 'Type', 'Resource', 'Status', numHeading('Attempts'), 'Last error'], rows, { class: 'notifications cards', caption: 'Notifications, newest first' })
  }
  ${pager('Pages', (cursor) => `${ctx.base}/notifications${listQueryString(q, { cursor })}`, q.cursor, result.nextCursor)}`;
}

/** A timeline entry's kind, as its row names it: `fetch` is Fetch. */
const kindLabel = (kind: TimelineEntry['kind']) => kind.charAt(0).toUpperCase() + kind.slice(1);

function timelineRows(entries: TimelineEntry[]): Html {
  const rows = entries.map((e) => {
    let details: Html | string = '';
    if (e.kind === 'fetch') {
      details = html`HTTP ${e.httpStatus ?? 'none (network error or timeout)'} · ${e.outcome} · ${e.durationMs} ms${e.snapshotVersion !== null ? html` · stored version ${e.snapshotVersion}` : ''}${
        e.error ? html`<br><span class="error-text">${e.error}</span>` : ''
      }`;
    } else if (e.kind === 'failed' && e.error) details = html`<span class="error-text">${e.error}</span>`;
    return html`<tr class="k-${e.kind}"><td data-label="At">${time(e.at, { ms: true })}</td><td data-label="What">${kindLabel(e.kind)}</td><td data-label="Details" class="wrap">${details}</td></tr>`;
  });
  return table(['At', 'What', 'Details'], rows, { class: 'timeline cards', caption: 'Timeline, oldest first' });
}

const idParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
const streamQuery = z.object({ companyId: z.uuid().optional(), notificationId: z.string().regex(/^\d{1,19}$/).optional() });
const bulkForm = z.object({
  ...notificationsQuery.pick({ companyId: true, webhookId: true, type: true, resourceId: true, href: true, receivedAfter: true, receivedBefore: true }).shape,
  status: replayableStatus.default('failed'),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
});

// Over 80 lines on purpose: a registrar, one page or form after another, each a few lines; the helpers it shares sit above it.
export function notificationPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { notifications, companies, webhooks } = kit.deps.services;

  /** A company key's lists, streams and replays are its own company's (SPEC §10.1). */
  const loadList = async (raw: unknown, req: FastifyRequest) => {
    const q = parseForm(notificationsQuery, raw);
    q.companyId = companyInReach(req, q.companyId);
    const result = await notifications.list(q);
    const names = await companies.names(result.items.map((n) => n.companyId));
    return { q, result, names };
  };

  /** A notification in the signed-in key's reach: another company's is as if it did not exist. */
  const notificationInReach = async (req: FastifyRequest, id: number) => {
    const n = await notifications.get(id);
    const own = ownCompany(req);
    if (own !== undefined && n.companyId !== own) throw notFound(`Notification ${id}`);
    return n;
  };

  scope.get('/notifications', async (req, reply) => {
    const ctx = kit.ctx(req);
    // The company field's text, read into the companyId filter (company-picker.ts).
    const pick = await pickCompany(companies, req.query, ownCompany(req));
    let body: Html;
    try {
      if (pick.problem) throw pick.problem;
      const { q, result, names } = await loadList(pick.query, req);
      const replayable = q.status !== 'discarded';
      body = html`<h1>Notifications</h1>
${filterForm(ctx, q, pick.picked)}
<p class="actions">${replayable && can(ctx, 'replay') ? html`<a class="button secondary" href="${ctx.base}/notifications/replay${query(filterOf(q))}">Replay the matching ones…</a>` : ''}</p>
<div hx-ext="sse" sse-connect="${ctx.base}/stream${query({ companyId: q.companyId })}">${listPart(ctx, q, result, names)}</div>`;
    } catch (err) {
      // A bad filter: the form as sent, with what is wrong, rather than a bare error page.
      const p = kit.problem(err);
      if (p.status >= 500) throw err;
      const q = { limit: 50, ...filterOf(pick.query as Partial<ListQuery>) } as ListQuery;
      reply.code(p.status);
      body = html`<h1>Notifications</h1>${filterForm(ctx, q, pick.picked)}${problemBox(p)}`;
    }
    return kit.send(reply, page(ctx, { title: 'Notifications', section: '/notifications', body }), reply.statusCode);
  });

  scope.get('/notifications/rows', async (req, reply) => {
    const { q, result, names } = await loadList(req.query, req);
    return kit.send(reply, listContent(kit.ctx(req), q, result, names));
  });

  scope.get('/stream', async (req, reply) => {
    const q = parseForm(streamQuery, req.query);
    return streamToClient(kit.deps.stream, req, reply, { ...q, companyId: companyInReach(req, q.companyId) });
  });

  /** The live part of a notification's page: status, timeline and the snapshot it led to (its content; the element stays). */
  const liveContent = async (ctx: PageContext, n: NotificationView & { timeline?: TimelineEntry[] }) => {
    const snapshot = await notifications.resource(n.companyId, n.href, n.snapshotVersion ?? undefined);
    const pending = n.status === 'received' || n.status === 'queued';
    return html`<p class="status-line">Status ${statusBadge(n.status)} after ${n.attempts} fetch attempt${n.attempts === 1 ? '' : 's'}${n.outcome ? html`, outcome <strong>${n.outcome}</strong>` : ''}${
    pending ? html` <span class="muted">(updates live)</span>` : ''
  }</p>
  ${n.lastError ? html`<p class="notice error">Last error: ${n.lastError}</p>` : ''}
  ${
    n.outcome === 'not_fetched'
      ? html`<p class="notice warn">Its href is under none of the company's base URLs: it was kept, never fetched, and the company's token was not sent there. To fetch this host's notifications from now on, list it in the company's connection (<code>connection.baseUrls</code>).</p>`
      : ''
  }
  <h2>Timeline</h2>
  ${timelineRows(n.timeline ?? [])}
  <h2>The snapshot it led to</h2>
  ${
    snapshot
      ? html`<p>Version ${snapshot.version} of <code class="wrap">${snapshot.href}</code>, fetched ${time(snapshot.fetchedAt)}${snapshot.gone ? ' (gone: the marketplace answered 404 or 410)' : ''}.
      ${
        n.snapshotVersion !== null && n.snapshotVersion !== snapshot.version
          ? html`This notification was covered by version ${n.snapshotVersion}, which is no longer kept; this is the latest.`
          : ''
      }
      <a href="${ctx.base}/resources${query({ companyId: n.companyId, href: n.href })}">Its versions and what changed</a></p>
    ${snapshot.body === null ? '' : html`<details><summary>The resource as stored</summary>${jsonBlock(snapshot.body, 'Stored resource')}</details>`}`
      : html`<p class="muted">No snapshot of this resource is stored yet.</p>`
  }`;
  };

  scope.get('/notifications/:id', async (req, reply) => {
    const ctx = kit.ctx(req);
    const { id } = parseForm(idParams, req.params);
    const n = await notificationInReach(req, id);
    // A webhook deleted since the page's first read is shown by its id; any other error is the page's.
    const webhookOrGone = webhooks.get(n.companyId, n.webhookId).catch((err: unknown) => {
      if (err instanceof Problem && err.status === 404) return undefined;
      throw err;
    });
    const [company, webhook] = await Promise.all([companies.get(n.companyId), webhookOrGone]);
    const flags = req.query as { replayed?: string };
    const paused = company.connectionStatus === 'unauthorized';
    const auth =
      n.authenticatedBy === 'resync'
        ? 'none: made by Skyhook itself, a resync of a resource it knows (skyhook resync)'
        : n.authenticatedBy === 'oauth'
          ? 'OAuth 1.0a signature (HMAC, timestamp and nonce checked)'
          : 'HTTP Basic (the webhook’s client identifier and secret)';
    const body = html`<p class="crumbs"><a href="${ctx.base}/notifications">Notifications</a> › ${n.id}</p>
<h1>Notification ${n.id}</h1>
<dl class="facts">
  <div><dt>Company</dt><dd><a href="${ctx.base}/companies/${company.id}">${company.name}</a>${paused ? html` ${statusBadge('failed')} paused` : ''}</dd></div>
  <div><dt>Type</dt><dd>${n.type}</dd></div>
  <div><dt>Resource id</dt><dd class="wrap">${n.resourceId}</dd></div>
  <div><dt>Href</dt><dd class="wrap"><code>${n.href}</code></dd></div>
  <div><dt>Received</dt><dd>${time(n.receivedAt)}</dd></div>
  <div><dt>Finished</dt><dd>${time(n.finishedAt)}</dd></div>
  <div><dt>Authenticated by</dt><dd>${auth}</dd></div>
  <div><dt>Webhook</dt><dd>${
    webhook
      ? html`${webhook.displayName} (${webhook.authType}, client identifier <code>${webhook.clientIdentifier}</code>, ${webhook.targetURI.endsWith('/hooks') ? 'shared targetURI' : 'its own targetURI'}${webhook.active ? '' : ', deactivated'})`
      : n.webhookId
  }</dd></div>
</dl>
${
  n.status === 'discarded'
    ? html`<p class="muted">Discarded (its webhook was deactivated): it cannot be replayed.</p>`
    : n.outcome === 'not_fetched'
      ? html`<p class="muted">Not fetched (its href is outside the company's base URLs): it cannot be replayed.</p>`
      : allowed(ctx, 'replay', html`<form method="post" action="${ctx.base}/notifications/${n.id}/replay" class="inline">${csrfField(ctx)}<button type="submit">Replay</button> <span class="hint">Fetches its resource again; the earlier attempts stay in the timeline.</span></form>`)
}
<div hx-ext="sse" sse-connect="${ctx.base}/stream${query({ companyId: n.companyId, notificationId: n.id })}">
  <div id="live-part" hx-get="${ctx.base}/notifications/${n.id}/live" hx-trigger="sse:notification, sse:resync, htmx:sseOpen from:closest [sse-connect]" hx-swap="innerHTML">${await liveContent(ctx, n)}</div>
</div>
<h2>Body, as received</h2>
${jsonBlock(n.body, 'Notification body')}`;
    const message = flags.replayed
      ? paused
        ? notice(`Replayed, but ${company.name} is paused (the marketplace refused its API token): the fetch waits until the token is replaced.`, 'warn')
        : notice('Replayed: its resource is fetched again, and the new fetch appears in the timeline.')
      : undefined;
    return kit.send(reply, page(ctx, { title: `Notification ${n.id}`, section: '/notifications', body, notice: message }));
  });

  scope.get('/notifications/:id/live', async (req, reply) => {
    const { id } = parseForm(idParams, req.params);
    return kit.send(reply, await liveContent(kit.ctx(req), await notificationInReach(req, id)));
  });

  scope.post('/notifications/:id/replay', { config: { access: 'replay' } }, async (req, reply) => {
    const { id } = parseForm(idParams, req.params);
    await notificationInReach(req, id);
    await notifications.replay(id, auditOf(req));
    return kit.redirect(reply, `/notifications/${id}?replayed=1`);
  });

  // Bulk replay: first the count (a dry run) and a confirmation, then the replay.
  scope.get('/notifications/replay', async (req, reply) => {
    const ctx = kit.ctx(req);
    const f = parseForm(bulkForm, req.query);
    f.companyId = companyInReach(req, f.companyId);
    const matched = await notifications.countReplayable(f);
    const names = await companies.names(f.companyId ? [f.companyId] : []);
    const described = [
      `status ${f.status}${(req.query as { status?: string }).status ? '' : ' (the default: a bulk replay without a status takes the failed ones)'}`,
      f.companyId ? `company ${names.get(f.companyId) ?? f.companyId}` : 'every company',
      ...(['webhookId', 'type', 'resourceId', 'href', 'receivedAfter', 'receivedBefore'] as const).filter((k) => f[k]).map((k) => `${k} ${f[k]}`),
    ];
    const hidden = Object.entries({ ...filterOf(f), limit: f.limit }).map(([k, v]) => html`<input type="hidden" name="${k}" value="${String(v)}">`);
    const body = html`<p class="crumbs"><a href="${ctx.base}/notifications${query(filterOf(f))}">Notifications</a> › Replay</p>
<h1>Replay the matching notifications</h1>
<p>Filter: ${described.join('; ')}. Discarded notifications are never replayed.</p>
<p class="count"><strong>${count(matched)}</strong> notification${matched === 1 ? '' : 's'} match.</p>
${
  matched === 0
    ? html`<p><a href="${ctx.base}/notifications${query(filterOf(f))}">Back to the list</a></p>`
    : html`<form method="post" action="${ctx.base}/notifications/replay">${csrfField(ctx)}${hidden}
  <p>${matched > f.limit ? `Only the oldest ${count(f.limit)} of them will be replayed (at most 10,000 at a time); repeat for the rest.` : 'Each one’s resource is fetched again; earlier attempts stay in its timeline.'}</p>
  <button type="submit">Replay ${plural(Math.min(matched, f.limit), 'notification')}</button>
  <a class="button secondary" href="${ctx.base}/notifications${query(filterOf(f))}">Cancel</a>
</form>`
}`;
    return kit.send(reply, page(ctx, { title: 'Replay', section: '/notifications', body }));
  });

  scope.post('/notifications/replay', { config: { access: 'replay' } }, async (req, reply) => {
    const ctx = kit.ctx(req);
    const f = parseForm(bulkForm, req.body);
    f.companyId = companyInReach(req, f.companyId);
    const { matched, replayed } = await notifications.replayMatching(f, auditOf(req));
    const body = html`<h1>Replayed</h1>
<p>${replayed} of the ${matched} matching notifications were replayed.</p>
<p><a href="${ctx.base}/notifications${listQueryString({ ...filterOf(f), status: undefined })}">See them in the list</a></p>`;
    return kit.send(reply, page(ctx, { title: 'Replayed', section: '/notifications', body, notice: notice(`${replayed} notifications replayed.`) }));
  });

  scope.get('/resources', async (req, reply) => {
    const q = parseForm(resourceHistoryQuery, req.query);
    return resourcePage(kit, req, reply, { ...q, companyId: companyInReach(req, q.companyId)! });
  });
}

/** A resource's versions with what changed; an RFQ's with its Quote… and Decline… forms (`problem`: one was refused). */
export async function resourcePage(kit: ConsoleKit, req: FastifyRequest, reply: FastifyReply, q: z.infer<typeof resourceHistoryQuery>, problem?: Problem): Promise<FastifyReply> {
  const { notifications, companies } = kit.deps.services;
  const ctx = kit.ctx(req);
  const [company, snapshot, history] = await Promise.all([companies.get(q.companyId), notifications.resource(q.companyId, q.href), notifications.resourceHistory(q)]);
  const body = html`<p class="crumbs"><a href="${ctx.base}/notifications${query({ companyId: q.companyId, href: q.href })}">Its notifications</a> › Resource</p>
<h1>Resource ${snapshot?.resourceId ?? ''}</h1>
${problem ? problemBox(problem) : ''}
<dl class="facts">
  <div><dt>Company</dt><dd><a href="${ctx.base}/companies/${company.id}">${company.name}</a></dd></div>
  <div><dt>Href</dt><dd class="wrap"><code>${q.href}</code></dd></div>
  <div><dt>Type</dt><dd>${snapshot?.type ?? '–'}</dd></div>
  <div><dt>Latest version</dt><dd>${snapshot ? html`${snapshot.version}, fetched ${time(snapshot.fetchedAt)}${snapshot.gone ? ' (gone)' : ''}` : '–'}</dd></div>
</dl>
${snapshot?.body ? html`<details><summary>The resource as stored now</summary>${jsonBlock(snapshot.body, 'Stored resource')}</details>` : ''}
${snapshot?.type === NOTIFICATION_TYPE_BY_EVENT.TripRequest && !snapshot.gone ? rfqAnswerForms(ctx, q.companyId, q.href, snapshot.body) : ''}
<h2>Versions, newest first</h2>
${history.items.map(
  (v) => html`<section class="version" aria-labelledby="v-${v.eventId}">
  <h3 id="v-${v.eventId}">Version ${v.version} <span class="muted">· ${time(v.fetchedAt)}</span></h3>
  ${changesList(v.changes)}
</section>`,
)}
${pager('Pages', (cursor) => `${ctx.base}/resources${query({ companyId: q.companyId, href: q.href, cursor })}`, q.cursor, history.nextCursor)}`;
  return kit.send(reply, page(ctx, { title: 'Resource', section: '/notifications', body }), problem?.status ?? 200);
}

/** An RFC 6902 patch as a readable list: what was added, removed or replaced, at which path. */
function changesList(changes: unknown): Html {
  if (changes === null || changes === undefined) return html`<p class="muted">The first version stored: nothing to compare with.</p>`;
  if (!Array.isArray(changes)) return jsonBlock(changes, 'Changes');
  if (changes.length === 0) return html`<p class="muted">Nothing changed.</p>`;
  const rows = changes.map((c: { op?: unknown; path?: unknown; value?: unknown; from?: unknown }) => {
    const value = c.op === 'remove' ? html`<span class="muted">–</span>` : c.op === 'move' || c.op === 'copy' ? html`from <code>${String(c.from)}</code>` : html`<code class="wrap">${JSON.stringify(c.value)}</code>`;
    return html`<tr class="op-${String(c.op)}"><td>${String(c.op)}</td><td><code class="wrap">${String(c.path)}</code></td><td class="wrap">${value}</td></tr>`;
  });
  return table(['Change', 'Path', 'Value'], rows, { class: 'changes' });
}
