/** Keys (SPEC §10.1), for the `admin` role: the list (never a secret), a form that makes one and shows it once, and revoking. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { auditOf } from '../../access/audit.js';
import { ROLES } from '../../access/roles.js';
import type { Problem } from '../../lib/problem.js';
import { createKeyBody, keyParams } from '../../services/schemas.js';
import { parseForm } from '../forms.js';
import { html, type Html } from '../html.js';
import { csrfField, doneNotice, page, problemBox, table, time } from '../layout.js';
import type { ConsoleKit } from '../kit.js';

const DONE = { revoked: 'The key was revoked: it is refused from now on, and its console sessions ended.' };

export function keyPages(scope: FastifyInstance, kit: ConsoleKit): void {
  const { keys } = kit.deps.services;

  const keysPage = async (req: FastifyRequest, reply: FastifyReply, opts: { made?: Html; problem?: Problem } = {}) => {
    const ctx = kit.ctx(req);
    const list = await keys.list({ limit: 500 });
    const rows = list.items.map(
      (k) => html`<tr>
  <td data-label="Name">${k.name}</td>
  <td data-label="Role">${k.role}${k.companyId ? html`<br><a class="small" href="${ctx.base}/companies/${k.companyId}">${k.companyId}</a>` : ''}</td>
  <td data-label="Key"><code>${k.hint}…</code></td>
  <td data-label="State">${k.state}${k.expiresAt && k.state === 'active' ? html`<br><span class="muted small">until ${time(k.expiresAt)}</span>` : ''}</td>
  <td data-label="Last used">${time(k.lastUsedAt)}</td>
  <td data-label="Created">${time(k.createdAt)}</td>
  <td data-label="Action">${
    k.state === 'revoked'
      ? html`<span class="muted">–</span>`
      : html`<form method="post" action="${ctx.base}/keys/${k.id}/revoke" data-confirm="Revoke ${k.name}? It is refused at once.">${csrfField(ctx)}<button type="submit" class="small danger" aria-label="Revoke ${k.name}">Revoke</button></form>`
  }</td>
</tr>`,
    );
    const body = html`<h1>Keys</h1>
${opts.made ?? ''}
${list.items.length === 0 ? html`<p>No key yet: the console and the admin API take only ADMIN_TOKEN.</p>` : table(['Name', 'Role', 'Key', 'State', 'Last used', 'Created', 'Action'], rows, { class: 'cards', caption: 'Keys, newest first' })}
<section aria-labelledby="new-key">
<h2 id="new-key">Make a key</h2>
${opts.problem ? problemBox(opts.problem) : ''}
<form method="post" action="${ctx.base}/keys" class="stack">${csrfField(ctx)}
  <label for="k-name">Name (who or what holds it)</label><input id="k-name" name="name" required maxlength="200">
  <label for="k-role">Role</label><select id="k-role" name="role">${ROLES.map((r) => html`<option>${r}</option>`)}</select>
  <p class="hint">admin: everything; operator: every company, no keys; viewer: read only, never a secret; company: one company's own (give its id).</p>
  <label for="k-company">Company id (a company key only)</label><input id="k-company" name="companyId">
  <label for="k-expires">Expires (UTC, optional)</label><input id="k-expires" name="expiresAt" type="datetime-local">
  <button type="submit">Make the key</button>
</form>
</section>`;
    return kit.send(reply, page(ctx, { title: 'Keys', section: '/keys', body, notice: doneNotice(req.query, DONE) }), opts.problem?.status ?? 200);
  };

  scope.get('/keys', { config: { access: 'keys' } }, async (req, reply) => keysPage(req, reply));

  scope.post('/keys', { config: { access: 'keys' } }, async (req, reply) => {
    try {
      const input = parseForm(createKeyBody, req.body);
      const made = await keys.create({ ...input, expiresAt: input.expiresAt ? new Date(input.expiresAt) : null }, auditOf(req));
      const shown = html`<div class="notice ok secret-box" role="alert">
  <p><strong>The key ${made.name} (${made.role}) was made.</strong> It is shown only this once: give it to its holder now.</p>
  <p><code class="secret" tabindex="0" aria-label="Key">${made.key}</code></p>
  <p class="small">Send it as <code>Authorization: Bearer &lt;key&gt;</code>, or sign in to this console with it. If it is lost, revoke it and make another.</p>
</div>`;
      return keysPage(req, reply, { made: shown });
    } catch (err) {
      return keysPage(req, reply, { problem: kit.refusal(err) });
    }
  });

  scope.post('/keys/:keyId/revoke', { config: { access: 'keys' } }, async (req, reply) => {
    const { keyId } = parseForm(keyParams, req.params);
    await keys.revoke(keyId, auditOf(req));
    return kit.redirect(reply, '/keys?done=revoked');
  });
}

