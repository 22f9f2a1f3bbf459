/**
 * Companies and webhooks (SPEC §13): create, replace the token, activate or deactivate, rotate the secret,
 * delete. Each form is checked by the admin API's schema and handled by the same service; a refusal (the
 * marketplace's 502 included) is shown on the page the form came from.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { createCompanyBody, createWebhookBody, patchCompanyBody } from '../../admin/schemas.js';
import { badRequest, type Problem } from '../../lib/problem.js';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES, type EventType } from '../../marketplace/contract.js';
import type { Deleted } from '../../services/deletions.service.js';
import { html, type Html } from '../html.js';
import { csrfField, notice, page, problemBox, query, time, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../plugin.js';
import { invalidForm, parseForm } from './notifications.js';

const companyParams = z.object({ companyId: z.uuid() });
const webhookParams = z.object({ companyId: z.uuid(), webhookId: z.uuid() });
const form = (req: FastifyRequest) => (req.body ?? {}) as Record<string, string | string[] | undefined>;
const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

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
};
const flash = (req: FastifyRequest) => {
  const done = (req.query as { done?: string }).done;
  return done && NOTICES[done] ? notice(NOTICES[done]) : undefined;
};

export function companyPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { companies, webhooks, deletions } = kit.deps.services;

  const companiesPage = async (req: FastifyRequest, reply: FastifyReply, problem?: Problem) => {
    const ctx = kit.ctx(req);
    const all = await companies.list({ limit: 500 });
    const body = html`<h1>Companies</h1>
${problem ? problemBox(problem) : ''}
${
  all.items.length === 0
    ? html`<p>No company yet.</p>`
    : html`<div class="table-wrap"><table>
  <thead><tr><th scope="col">Name</th><th scope="col">API base URL</th><th scope="col">Connection</th><th scope="col">Added</th></tr></thead>
  <tbody>${all.items.map(
    (c) => html`<tr><td><a href="${ctx.base}/companies/${c.id}">${c.name}</a></td><td class="wrap"><code>${c.apiBaseUrl}</code></td><td>${
      c.connectionStatus === 'ok' ? html`<span class="badge s-processed">ok</span>` : html`<span class="badge s-failed">paused</span>`
    }</td><td>${time(c.createdAt)}</td></tr>`,
  )}</tbody>
</table></div>`
}
<section aria-labelledby="add-company">
<h2 id="add-company">Add a company</h2>
<form method="post" action="${ctx.base}/companies" class="stack">${csrfField(ctx)}
  <label for="c-name">Name</label><input id="c-name" name="name" required maxlength="200">
  <label for="c-url">API base URL</label><input id="c-url" name="apiBaseUrl" type="url" required placeholder="https://sandbox.example.com/api">
  <label for="c-token">API token</label><input id="c-token" name="apiToken" type="password" required autocomplete="off">
  <p class="hint">Stored encrypted; never shown again.</p>
  <button type="submit">Add the company</button>
</form>
</section>`;
    return kit.send(reply, page(ctx, { title: 'Companies', section: '/companies', body, notice: flash(req) }), problem?.status ?? 200);
  };

  const webhookForms = (ctx: PageContext, companyId: string, w: Awaited<ReturnType<typeof webhooks.get>>) => {
    const action = `${ctx.base}/companies/${companyId}/webhooks/${w.id}`;
    return html`<div class="row-actions">
  <form method="post" action="${action}">${csrfField(ctx)}<input type="hidden" name="action" value="${w.active ? 'deactivate' : 'activate'}"><button type="submit" class="small secondary" aria-label="${w.active ? 'Deactivate' : 'Activate'} ${w.displayName}">${w.active ? 'Deactivate' : 'Activate'}</button></form>
  <form method="post" action="${action}" data-confirm="Rotate the secret of ${w.displayName}? The previous secret stays valid for the grace period.">${csrfField(ctx)}<input type="hidden" name="action" value="rotate"><button type="submit" class="small secondary" aria-label="Rotate the secret of ${w.displayName}">Rotate secret</button></form>
  <form method="post" action="${action}/delete" data-confirm="Delete the webhook ${w.displayName}, with its notifications and their history? It is deactivated on the marketplace first.">${csrfField(ctx)}<button type="submit" class="small danger" aria-label="Delete ${w.displayName}">Delete</button></form>
</div>`;
  };

  /** What the credentials check found (SPEC §14): accepted, refused, unreachable, or never checked. */
  const credentialsBadge = (status: string) =>
    html`<span class="badge ${status === 'accepted' ? 's-processed' : status === 'refused' ? 's-failed' : 's-queued'}">${status}</span>`;

  const companyPage = async (req: FastifyRequest, reply: FastifyReply, companyId: string, problem?: Problem, extra?: Html) => {
    const ctx = kit.ctx(req);
    const [company, hooks] = await Promise.all([companies.get(companyId), webhooks.list(companyId)]);
    const paused = company.connectionStatus === 'unauthorized';
    const body = html`<p class="crumbs"><a href="${ctx.base}/companies">Companies</a> › ${company.name}</p>
<h1>${company.name}</h1>
${problem ? problemBox(problem) : ''}${extra ?? ''}
<dl class="facts">
  <div><dt>API base URL</dt><dd class="wrap"><code>${company.apiBaseUrl}</code></dd></div>
  <div><dt>Connection</dt><dd>${paused ? html`<span class="badge s-failed">paused</span> ${company.connectionError ?? ''}` : html`<span class="badge s-processed">ok</span>`}</dd></div>
  <div><dt>Credentials</dt><dd>${credentialsBadge(company.credentials.status)} ${company.connection.profile} profile${company.connection.tokenUrl ? ', OAuth client credentials' : ''}${
    company.credentials.error ? html`<br>${company.credentials.error}` : ''
  }</dd></div>
  <div><dt>Added</dt><dd>${time(company.createdAt)}</dd></div>
  <div><dt>See</dt><dd><a href="${ctx.base}/notifications${query({ companyId })}">Notifications</a> · <a href="${ctx.base}/outbound${query({ companyId })}">Leads &amp; quotes</a></dd></div>
</dl>

<section aria-labelledby="wh">
<h2 id="wh">Webhooks</h2>
${
  hooks.items.length === 0
    ? html`<p>No webhook yet.</p>`
    : html`<div class="table-wrap"><table class="cards">
  <thead><tr><th scope="col">Name</th><th scope="col">Auth</th><th scope="col">targetURI</th><th scope="col">Event types</th><th scope="col">State</th><th scope="col">Actions</th></tr></thead>
  <tbody>${hooks.items.map(
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
  )}</tbody>
</table></div>`
}
<h3>Register a webhook</h3>
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
</form>
</section>

<section aria-labelledby="edit">
<h2 id="edit">Rename, or replace the API token</h2>
<form method="post" action="${ctx.base}/companies/${companyId}" class="stack">${csrfField(ctx)}
  <label for="e-name">Name</label><input id="e-name" name="name" value="${company.name}" maxlength="200">
  <label for="e-token">New API token (leave empty to keep the current one)</label><input id="e-token" name="apiToken" type="password" autocomplete="off">
  <p class="hint">A new token lifts a pause: the paused fetches resume by themselves.</p>
  <button type="submit">Save</button>
</form>
</section>

<section aria-labelledby="danger" class="danger-zone">
<h2 id="danger">Delete the company</h2>
<form method="post" action="${ctx.base}/companies/${companyId}/delete" class="stack" data-confirm="Delete ${company.name} with everything of it (webhooks, notifications, resources, events, leads, quotes)?">${csrfField(ctx)}
  <p>Its active webhook settings are deactivated on the marketplace first; if the marketplace refuses, nothing is deleted unless you force it.</p>
  <label class="check"><input type="checkbox" name="force" value="true"> Delete here even if the marketplace refuses to deactivate its webhooks</label>
  <button type="submit" class="danger">Delete ${company.name}</button>
</form>
</section>`;
    return kit.send(reply, page(ctx, { title: company.name, section: '/companies', body, notice: flash(req) }), problem?.status ?? 200);
  };

  /** Runs a form's action; a refusal (4xx, or the marketplace's 502) is shown on the company's page, with the form's fields named. */
  const onCompanyPage = async (req: FastifyRequest, reply: FastifyReply, companyId: string, act: () => Promise<string | Html>) => {
    try {
      const done = await act();
      if (typeof done === 'string') return kit.redirect(reply, `/companies/${companyId}${query({ done })}`);
      return companyPage(req, reply, companyId, undefined, done);
    } catch (err) {
      const problem = kit.problem(err);
      if (problem.status >= 500 && problem.status !== 502 && problem.status !== 503) throw err;
      return companyPage(req, reply, companyId, problem);
    }
  };

  const remaining = (d: Deleted) =>
    html`<div class="notice warn" role="alert"><p>Deleted here; these webhook settings stay active on the marketplace (deactivate them there):</p><ul>${d.remainingRemoteSettings.map(
      (r) => html`<li><code>${r.remoteId}</code>: ${r.error}</li>`,
    )}</ul></div>`;

  scope.get('/companies', async (req, reply) => companiesPage(req, reply));

  scope.post('/companies', async (req, reply) => {
    try {
      const created = await companies.create(parseForm(createCompanyBody, req.body));
      return kit.redirect(reply, `/companies/${created.id}?done=created`);
    } catch (err) {
      const problem = kit.problem(err);
      if (problem.status >= 500) throw err;
      return companiesPage(req, reply, problem);
    }
  });

  scope.get('/companies/:companyId', async (req, reply) => companyPage(req, reply, parseForm(companyParams, req.params).companyId));

  scope.post('/companies/:companyId', async (req, reply) => {
    const { companyId } = parseForm(companyParams, req.params);
    return onCompanyPage(req, reply, companyId, async () => {
      const patch = parseForm(patchCompanyBody, req.body);
      await companies.update(companyId, patch);
      return patch.apiToken !== undefined ? 'tokenReplaced' : 'updated';
    });
  });

  scope.post('/companies/:companyId/delete', async (req, reply) => {
    const { companyId } = parseForm(companyParams, req.params);
    try {
      const deleted = await deletions.deleteCompany(companyId, { force: form(req).force === 'true' });
      if (deleted.remainingRemoteSettings.length === 0) return kit.redirect(reply, '/companies?done=deleted');
      const ctx = kit.ctx(req);
      return kit.send(reply, page(ctx, { title: 'Deleted', section: '/companies', body: html`<h1>Company deleted</h1>${remaining(deleted)}<p><a href="${ctx.base}/companies">Companies</a></p>` }));
    } catch (err) {
      const problem = kit.problem(err);
      if (problem.status === 404 || (problem.status >= 500 && problem.status !== 502 && problem.status !== 503)) throw err;
      return companyPage(req, reply, companyId, problem);
    }
  });

  scope.post('/companies/:companyId/webhooks', async (req, reply) => {
    const { companyId } = parseForm(companyParams, req.params);
    return onCompanyPage(req, reply, companyId, async () => {
      const f = form(req);
      const input = createWebhookBody.safeParse({
        eventTypes: list(f.eventTypes),
        authType: f.authType,
        ...(typeof f.displayName === 'string' && f.displayName.trim() ? { displayName: f.displayName } : {}),
        sharedTarget: f.sharedTarget === 'on',
      });
      if (!input.success) throw invalidForm(input.error);
      await webhooks.create(companyId, { ...input.data, eventTypes: input.data.eventTypes as EventType[] });
      return 'webhookCreated';
    });
  });

  scope.post('/companies/:companyId/webhooks/:webhookId', async (req, reply) => {
    const { companyId, webhookId } = parseForm(webhookParams, req.params);
    return onCompanyPage(req, reply, companyId, async () => {
      const action = form(req).action;
      if (action === 'activate' || action === 'deactivate') {
        await webhooks.update(companyId, webhookId, { active: action === 'activate' });
        return action === 'activate' ? 'activated' : 'deactivated';
      }
      if (action === 'rotate') {
        await webhooks.update(companyId, webhookId, { rotateSecret: true });
        return 'rotated';
      }
      throw badRequest('Unknown action: activate, deactivate or rotate.', [{ field: 'action', message: 'must be activate, deactivate or rotate' }]);
    });
  });

  scope.post('/companies/:companyId/webhooks/:webhookId/delete', async (req, reply) => {
    const { companyId, webhookId } = parseForm(webhookParams, req.params);
    return onCompanyPage(req, reply, companyId, async () => {
      const deleted = await deletions.deleteWebhook(companyId, webhookId, { force: false });
      return deleted.remainingRemoteSettings.length === 0 ? 'webhookDeleted' : remaining(deleted);
    });
  });
}
