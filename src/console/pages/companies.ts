/**
 * Companies and webhooks (SPEC §13): create, replace the token, activate or deactivate, rotate the secret,
 * delete. Each form is checked by the admin API's schema and handled by the same service; a refusal (the
 * marketplace's 502 included) is shown on the page the form came from.
 */
import { auditOf } from '../../access/audit.js';
import { ownCompany } from '../../access/guard.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Permission } from '../../access/roles.js';
import { z } from 'zod';
import { companyIdParams, createCompanyBody, createWebhookBody, fetchConcurrency, patchCompanyBody, webhookParams } from '../../services/schemas.js';
import { badRequest, type Problem } from '../../lib/problem.js';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES } from '../../marketplace/contract.js';
import type { Deleted } from '../../services/deletions.service.js';
import { asRequest, formList, parseForm } from '../forms.js';
import { html, type Html } from '../html.js';
import { ago, allowed, companyCrumbs, csrfField, doneNotice, page, problemBox, query, table, time, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../kit.js';
import { createRequest, destinationsSection, DESTINATIONS_PER_PAGE, secretShown } from './destinations.js';
import { activityCharts, companyTable, count, failuresTable, stateBadge, stateDetail, stateNotice, stateWhen, tableForm, tablePager, tableParams, tableQuery } from './company-parts.js';

const form = (req: FastifyRequest) => (req.body ?? {}) as Record<string, string | string[] | undefined>;
/** The limit form: a number, or `default` (COMPANY_FETCH_CONCURRENCY); checked by the admin API's own rule. */
const limitForm = z.object({
  fetchConcurrency: z.preprocess((v) => (v === 'default' ? null : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v), fetchConcurrency.nullable()),
});

const NOTICES: Record<string, string> = {
  created: 'The company was added.',
  updated: 'The company was changed.',
  tokenReplaced: 'The API token was replaced; paused fetches resume by themselves.',
  webhookCreated: 'The webhook was registered on the marketplace.',
  activated: 'The webhook was activated.',
  deactivated: 'The webhook was deactivated: its notifications are now stored as discarded.',
  rotated: 'The secret was rotated; the previous one is accepted during the grace period.',
  webhookDeleted: 'The webhook was deleted.',
  deleted: 'The company was deleted.',
  limitChanged: 'The fetch limit was changed; it applies at once.',
  destinationDeleted: 'The destination was deleted; its pending deliveries ended skipped.',
};
/** The company page's own query: which page of its destinations. */
const companyPageQuery = z.object({ destinationsCursor: z.string().max(200).optional() });

// Over 80 lines on purpose: a registrar, one page or form after another, each a few lines; the helpers it shares sit above it.
export function companyPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { companies, webhooks, deletions, overview, destinations } = kit.deps.services;

  const companiesPage = async (req: FastifyRequest, reply: FastifyReply, problem?: Problem) => {
    // A company key's list of companies is its own company.
    const own = ownCompany(req);
    if (own !== undefined) return kit.redirect(reply, `/companies/${own}`);
    const ctx = kit.ctx(req);
    const p = tableParams(req);
    const all = await overview.companies(tableQuery(p));
    const action = `${ctx.base}/companies`;
    const pager = tablePager(all, p, (q) => `${action}${query(q)}`, 'Pages of companies');
    const body = html`<h1>Companies</h1>
${problem ? problemBox(problem) : ''}
${
  all.companies === 0
    ? html`<p>No company yet.</p>`
    : html`${tableForm(action, p, { label: 'Find a company', id: 'find' })}
<p class="list-state">${p.q ? html`${count(all.total)} of ${count(all.companies)} companies match “${p.q}”.` : html`${count(all.companies)} companies.`} Received, processed and failed count the last hour.</p>
${all.total === 0 ? html`<p class="muted">No company matches.</p>` : html`${pager}${companyTable(ctx.base, action, all.items, p, 'Companies: state, backlog, and the last hour')}${pager}`}`
}
${allowed(ctx, 'companies', html`<section aria-labelledby="add-company">
<h2 id="add-company">Add a company</h2>
<form method="post" action="${ctx.base}/companies" class="stack">${csrfField(ctx)}
  <label for="c-name">Name</label><input id="c-name" name="name" required maxlength="200">
  <label for="c-url">API base URL</label><input id="c-url" name="apiBaseUrl" type="url" required placeholder="https://sandbox.example.com/api">
  <label for="c-token">API token</label><input id="c-token" name="apiToken" type="password" required autocomplete="off">
  <p class="hint">Stored encrypted; never shown again.</p>
  <button type="submit">Add the company</button>
</form>
</section>`)}`;
    return kit.send(reply, page(ctx, { title: 'Companies', section: '/companies', body, notice: doneNotice(req.query, NOTICES) }), problem?.status ?? 200);
  };

  const webhookForms = (ctx: PageContext, companyId: string, w: Awaited<ReturnType<typeof webhooks.get>>) => {
    const action = `${ctx.base}/companies/${companyId}/webhooks/${w.id}`;
    return allowed(ctx, 'companies', html`<div class="row-actions">
  <form method="post" action="${action}">${csrfField(ctx)}<input type="hidden" name="action" value="${w.active ? 'deactivate' : 'activate'}"><button type="submit" class="small secondary" aria-label="${w.active ? 'Deactivate' : 'Activate'} ${w.displayName}">${w.active ? 'Deactivate' : 'Activate'}</button></form>
  <form method="post" action="${action}" data-confirm="Rotate the secret of ${w.displayName}? The previous secret stays valid for the grace period.">${csrfField(ctx)}<input type="hidden" name="action" value="rotate"><button type="submit" class="small secondary" aria-label="Rotate the secret of ${w.displayName}">Rotate secret</button></form>
  <form method="post" action="${action}/delete" data-confirm="Delete the webhook ${w.displayName}, with its notifications and their history? It is deactivated on the marketplace first.">${csrfField(ctx)}<button type="submit" class="small danger" aria-label="Delete ${w.displayName}">Delete</button></form>
</div>`);
  };

  /** What the credentials check found (SPEC §14): accepted, refused, unreachable, or never checked. */
  const credentialsBadge = (status: string) =>
    html`<span class="badge ${status === 'accepted' ? 's-processed' : status === 'refused' ? 's-failed' : 's-queued'}">${status}</span>`;

  /** The company's fetch limit (SPEC §5.1 F2), what runs and waits, and the form that changes the limit. */
  const fetchesSection = (ctx: PageContext, company: Awaited<ReturnType<typeof companies.get>>, limitError: { message: string; given: string } | undefined) => {
    const f = company.fetches;
    const action = `${ctx.base}/companies/${company.id}/limit`;
    return html`<section aria-labelledby="fetches">
<h2 id="fetches">Fetches</h2>
<dl class="facts">
  <div><dt>Limit</dt><dd>${f.limit} at once ${f.ownLimit === null ? html`<span class="muted">(the default)</span>` : html`<span class="muted">(its own)</span>`}</dd></div>
  <div><dt>Runs at now</dt><dd>${f.limitNow === null ? html`<span class="muted">not known yet</span>` : f.limitNow < f.limit ? html`${f.limitNow} <span class="muted">(it starts low and grows as answers come; it halves when the marketplace asks to slow down)</span>` : f.limitNow}</dd></div>
  <div><dt>Queued or running</dt><dd>${count(f.running)}</dd></div>
  <div><dt>Parked</dt><dd>${count(f.parked)} <span class="muted">resources waiting for a free place${company.state.status === 'paused' ? ' or new credentials' : ''}</span></dd></div>
</dl>
${allowed(ctx, 'companies', html`<form method="post" action="${action}" class="stack limit-form">${csrfField(ctx)}
  <label for="limit">Fetch limit (fetchConcurrency)</label>
  <input id="limit" name="fetchConcurrency" type="number" inputmode="numeric" min="1" max="10000" step="1" required value="${limitError ? limitError.given : (f.ownLimit ?? f.limit)}" aria-describedby="limit-hint${limitError ? ' limit-error' : ''}"${
    limitError ? html` aria-invalid="true" autofocus` : ''
  }>
  ${limitError ? html`<p class="field-error" id="limit-error"><code>fetchConcurrency</code> ${limitError.message}${limitError.given ? html` (given: ${limitError.given})` : ''}.</p>` : ''}
  <p class="hint" id="limit-hint">At most this many of its fetches at once, across every worker: a whole number from 1 to 10000. It applies at once.</p>
  <button type="submit">Set the limit</button>
</form>
${f.ownLimit === null ? '' : html`<form method="post" action="${action}" class="inline">${csrfField(ctx)}<input type="hidden" name="fetchConcurrency" value="default"><button type="submit" class="secondary">Use the default instead</button></form>`}`)}
</section>`;
  };

  // Over 80 lines on purpose: one page, its sections in the order they show.
  const companyPage = async (req: FastifyRequest, reply: FastifyReply, companyId: string, problem?: Problem, extra?: Html) => {
    const ctx = kit.ctx(req);
    const { destinationsCursor } = req.method === 'GET' ? parseForm(companyPageQuery, req.query) : {};
    const [company, hooks, last, dests] = await Promise.all([
      companies.get(companyId),
      webhooks.list(companyId),
      overview.company(companyId),
      destinations.list(companyId, { limit: DESTINATIONS_PER_PAGE, cursor: destinationsCursor }),
    ]);
    const a = last.activity;
    // A refused limit is shown at its field, a refused new destination at its form; any other refusal at the top of the page.
    const limitProblem = problem?.extra.errors?.find((e) => e.field === 'fetchConcurrency');
    const destinationProblem = problem && req.routeOptions.url === '/console/companies/:companyId/destinations' ? problem : undefined;
    const given = form(req).fetchConcurrency;
    const limitError = limitProblem ? { message: limitProblem.message, given: typeof given === 'string' ? given : '' } : undefined;
    const notifications = (q: Record<string, string>) => `${ctx.base}/notifications${query({ companyId, ...q })}`;
    const webhookRows = hooks.items.map(
      (w) => html`<tr>
      <td data-label="Name">${w.displayName}<br><span class="muted small">client identifier <code>${w.clientIdentifier}</code></span></td>
      <td data-label="Auth">${w.authType}</td>
      <td data-label="targetURI" class="wrap"><code>${w.targetURI}</code></td>
      <td data-label="Event types" class="wrap">${w.eventTypes.join(', ')}</td>
      <td data-label="State">${w.active ? html`<span class="badge s-processed">active</span>` : html`<span class="badge s-discarded">inactive</span>`}${
        w.previousSecretExpiresAt && Date.parse(w.previousSecretExpiresAt) > Date.now() ? html`<br><span class="muted small">previous secret valid until ${time(w.previousSecretExpiresAt)}</span>` : ''
      }</td>
      <td data-label="Actions">${webhookForms(ctx, companyId, w)}</td>
    </tr>`,
    );
    const body = html`<p class="crumbs">${companyCrumbs(ctx, company, { here: true })}</p>
<h1>${company.name}</h1>
${problem && !limitProblem && !destinationProblem ? problemBox(problem) : ''}${extra ?? ''}
${stateNotice(company.state)}
${company.connectionWarnings.map((w) => html`<p class="notice warn" role="status">${w.message}</p>`)}
<dl class="facts">
  <div><dt>State</dt><dd>${stateBadge(company.state)} ${stateNotice(company.state) ? stateWhen(company.state) : stateDetail(company.state)}</dd></div>
  <div><dt>Backlog</dt><dd><a href="${notifications({ status: 'queued' })}">${count(a.backlog.pending)} pending</a></dd></div>
  <div><dt>Oldest pending</dt><dd>${a.backlog.pending ? ago(a.backlog.oldestPendingAgeS) : '–'}</dd></div>
  <div><dt>Last hour</dt><dd>${count(a.lastHour.received)} received, ${count(a.lastHour.processed)} processed, <a href="${notifications({ status: 'failed' })}">${count(a.lastHour.failed)} failed</a></dd></div>
  <div><dt>API base URL</dt><dd class="wrap"><code>${company.apiBaseUrl}</code>${company.connection.baseUrls.map((u) => html`<br><code>${u}</code> <span class="muted small">(also allowed)</span>`)}</dd></div>
  <div><dt>Connection last used</dt><dd>${company.connectionLastUsedAt ? time(company.connectionLastUsedAt) : html`<span class="muted">never</span>`}${
    company.connection.clientSecretExpiresAt ? html`<br><span class="muted small">client secret expires ${time(company.connection.clientSecretExpiresAt)}</span>` : ''
  }</dd></div>
  <div><dt>Credentials</dt><dd>${credentialsBadge(company.credentials.status)} ${company.connection.profile} profile${company.connection.tokenUrl ? ', OAuth client credentials' : ''}${
    company.credentials.error ? html`<br>${company.credentials.error}` : ''
  }</dd></div>
  <div><dt>Added</dt><dd>${time(company.createdAt)}</dd></div>
  <div><dt>See</dt><dd><a href="${notifications({})}">Notifications</a> · <a href="${ctx.base}/outbound${query({ companyId })}">Leads &amp; quotes</a> · <a href="#destinations">Destinations (${dests.items.length}${dests.nextCursor ? '+' : ''})</a></dd></div>
</dl>

${fetchesSection(ctx, company, limitError)}

<section aria-labelledby="activity">
<h2 id="activity">Last hour</h2>
${activityCharts(last.minutes, a.series, company.name)}
<h3>Top failure reasons, last 24 hours</h3>
${failuresTable(a.topFailures)}
</section>

<section aria-labelledby="wh">
<h2 id="wh">Webhooks</h2>
${
  hooks.items.length === 0
    ? html`<p>No webhook yet.</p>`
    : table(['Name', 'Auth', 'targetURI', 'Event types', 'State', 'Actions'], webhookRows, { class: 'cards' })
}
${allowed(ctx, 'companies', html`<h3>Register a webhook</h3>
<form method="post" action="${ctx.base}/companies/${companyId}/webhooks" class="stack">${csrfField(ctx)}
  <fieldset><legend>Event types</legend>
    <div class="checks">${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="eventTypes" value="${t}"${t === 'TripRequest' ? html` checked` : ''}> ${t}</label>`)}</div>
  </fieldset>
  <fieldset><legend>Authentication</legend>
    <div class="checks">${CLIENT_AUTHENTICATION_TYPES.map((a, i) => html`<label><input type="radio" name="authType" value="${a}"${i === 0 ? html` checked` : ''}> ${a === 'BASIC' ? 'Basic' : 'OAuth 1.0a'}</label>`)}</div>
  </fieldset>
  <label for="w-name">Display name (optional)</label><input id="w-name" name="displayName" maxlength="200">
  <label class="check"><input type="checkbox" name="sharedTarget" value="on"> Use the shared targetURI <code>/hooks</code> (found by client identifier)</label>
  <button type="submit">Register the webhook</button>
</form>`)}
</section>

${destinationsSection(ctx, companyId, dests, { cursor: destinationsCursor, problem: destinationProblem, given: destinationProblem ? form(req) : undefined })}

${allowed(ctx, 'companies', html`<section aria-labelledby="edit">
<h2 id="edit">Rename, or replace the API token</h2>
<form method="post" action="${ctx.base}/companies/${companyId}" class="stack">${csrfField(ctx)}
  <label for="e-name">Name</label><input id="e-name" name="name" value="${company.name}" maxlength="200">
  <label for="e-token">New API token (leave empty to keep the current one)</label><input id="e-token" name="apiToken" type="password" autocomplete="off">
  <p class="hint">A new token lifts a pause: the paused fetches resume by themselves.</p>
  <button type="submit">Save</button>
</form>
</section>`)}

${allowed(ctx, 'companies', html`<section aria-labelledby="danger" class="danger-zone">
<h2 id="danger">Delete the company</h2>
<form method="post" action="${ctx.base}/companies/${companyId}/delete" class="stack" data-confirm="Delete ${company.name} with everything of it (webhooks, notifications, resources, events, leads, quotes)?">${csrfField(ctx)}
  <p>Its active webhook settings are deactivated on the marketplace first; if the marketplace refuses, nothing is deleted unless you force it.</p>
  <label class="check"><input type="checkbox" name="force" value="true"> Delete here even if the marketplace refuses to deactivate its webhooks</label>
  <button type="submit" class="danger">Delete ${company.name}</button>
</form>
</section>`)}`;
    return kit.send(reply, page(ctx, { title: company.name, section: '/companies', charts: true, body, notice: doneNotice(req.query, NOTICES) }), problem?.status ?? 200);
  };

  /** A form of a company's page: its action runs; a refusal (4xx, or the marketplace's 502) is shown on that page, with the form's fields named. */
  const companyForm = <P extends z.ZodType<{ companyId: string }>>(access: Permission, path: string, params: P, act: (params: z.infer<P>, req: FastifyRequest) => Promise<string | Html>) =>
    scope.post(`/companies/:companyId${path}`, { config: { access } }, async (req, reply) => {
      const p = parseForm(params, req.params);
      return kit.act(reply, () => act(p, req), (done) => `/companies/${p.companyId}${query({ done })}`, (problem, shown) => companyPage(req, reply, p.companyId, problem, shown));
    });

  const remaining = (d: Deleted) =>
    html`<div class="notice warn" role="alert"><p>Deleted here; these webhook settings stay active on the marketplace (deactivate them there):</p><ul>${d.remainingRemoteSettings.map(
      (r) => html`<li><code>${r.remoteId}</code>: ${r.error}</li>`,
    )}</ul></div>`;

  scope.get('/companies', async (req, reply) => companiesPage(req, reply));

  scope.post('/companies', { config: { access: 'companies' } }, async (req, reply) => {
    try {
      const created = await companies.create(parseForm(createCompanyBody, req.body), auditOf(req));
      return kit.redirect(reply, `/companies/${created.id}?done=created`);
    } catch (err) {
      const problem = kit.problem(err);
      if (problem.status >= 500) throw err;
      return companiesPage(req, reply, problem);
    }
  });

  scope.get('/companies/:companyId', async (req, reply) => companyPage(req, reply, parseForm(companyIdParams, req.params).companyId));

  companyForm('companies', '', companyIdParams, async ({ companyId }, req) => {
    const patch = parseForm(patchCompanyBody, req.body);
    await companies.update(companyId, patch, auditOf(req));
    return patch.apiToken !== undefined ? 'tokenReplaced' : 'updated';
  });

  companyForm('companies', '/limit', companyIdParams, async ({ companyId }, req) => {
    // The same update as PATCH /admin/companies/:id { fetchConcurrency }: it applies at the gate at once.
    await companies.update(companyId, parseForm(limitForm, req.body), auditOf(req));
    return 'limitChanged';
  });

  scope.post('/companies/:companyId/delete', { config: { access: 'companies' } }, async (req, reply) => {
    const { companyId } = parseForm(companyIdParams, req.params);
    try {
      const deleted = await deletions.deleteCompany(companyId, { force: form(req).force === 'true' }, auditOf(req));
      if (deleted.remainingRemoteSettings.length === 0) return kit.redirect(reply, '/companies?done=deleted');
      const ctx = kit.ctx(req);
      return kit.send(reply, page(ctx, { title: 'Deleted', section: '/companies', body: html`<h1>Company deleted</h1>${remaining(deleted)}<p><a href="${ctx.base}/companies">Companies</a></p>` }));
    } catch (err) {
      const problem = kit.refusal(err);
      if (problem.status === 404) throw err;
      return companyPage(req, reply, companyId, problem);
    }
  });

  companyForm('companies', '/webhooks', companyIdParams, async ({ companyId }, req) => {
    const f = form(req);
    const body = asRequest(createWebhookBody, {
      eventTypes: formList(f.eventTypes),
      authType: f.authType,
      ...(typeof f.displayName === 'string' && f.displayName.trim() ? { displayName: f.displayName } : {}),
      sharedTarget: f.sharedTarget === 'on',
    });
    await webhooks.create(companyId, body, auditOf(req));
    return 'webhookCreated';
  });

  companyForm('companies', '/webhooks/:webhookId', webhookParams, async ({ companyId, webhookId }, req) => {
    const action = form(req).action;
    if (action === 'activate' || action === 'deactivate') {
      await webhooks.update(companyId, webhookId, { active: action === 'activate' }, auditOf(req));
      return action === 'activate' ? 'activated' : 'deactivated';
    }
    if (action === 'rotate') {
      await webhooks.update(companyId, webhookId, { rotateSecret: true }, auditOf(req));
      return 'rotated';
    }
    throw badRequest('Unknown action: activate, deactivate or rotate.', [{ field: 'action', message: 'must be activate, deactivate or rotate' }]);
  });

  // The new destination's secret is shown on the page that answers this form, once.
  companyForm('destinations', '/destinations', companyIdParams, async ({ companyId }, req) => {
    const created = await destinations.create(companyId, createRequest(form(req)), auditOf(req));
    return secretShown(kit.ctx(req), created, 'created');
  });

  companyForm('companies', '/webhooks/:webhookId/delete', webhookParams, async ({ companyId, webhookId }, req) => {
    const deleted = await deletions.deleteWebhook(companyId, webhookId, { force: false }, auditOf(req));
    return deleted.remainingRemoteSettings.length === 0 ? 'webhookDeleted' : remaining(deleted);
  });
}
