/** The audit log (SPEC §10.1): who changed what, from where, with what outcome, newest first, filtered as the admin API filters it. */
import type { FastifyInstance } from 'fastify';
import { companyInReach } from '../../access/guard.js';
import { auditQuery } from '../../services/schemas.js';
import { asLocalField, filterButtons, filterField, parseForm } from '../forms.js';
import { html } from '../html.js';
import { page, pager, query, table, time } from '../layout.js';
import type { ConsoleKit } from '../kit.js';

export function auditPage(scope: FastifyInstance, kit: ConsoleKit): void {
  scope.get('/audit', async (req, reply) => {
    const ctx = kit.ctx(req);
    const q = parseForm(auditQuery, { limit: '50', ...(req.query as object) });
    const companyId = companyInReach(req, q.companyId);
    const found = await kit.deps.services.audit.list({ ...q, companyId }, req.principal!);
    const names = await kit.deps.services.companies.names(found.items.map((e) => e.companyId ?? ''));
    const filters = { actor: q.actor, companyId: q.companyId, action: q.action, after: q.after, before: q.before };
    const rows = found.items.map(
      (e) => html`<tr>
  <td data-label="At">${time(e.at)}</td>
  <td data-label="Who">${e.actor.name}${e.actor.kind === 'key' ? '' : html` <span class="muted small">(${e.actor.kind})</span>`}</td>
  <td data-label="From">${e.address ?? html`<span class="muted">–</span>`}</td>
  <td data-label="Action" class="wrap"><code>${e.action}</code></td>
  <td data-label="Company">${e.companyId ? (names.get(e.companyId) ?? e.companyId) : html`<span class="muted">–</span>`}</td>
  <td data-label="Targets" class="wrap small">${Object.entries(e.targets).map(([k, v]) => `${k} ${v}`).join(', ') || '–'}</td>
  <td data-label="Fields" class="wrap small">${e.fields.join(', ') || '–'}</td>
  <td data-label="Outcome">${e.outcome}${e.details && typeof e.details.replayed === 'number' ? html` <span class="muted small">(${String(e.details.replayed)} of ${String(e.details.matched)})</span>` : ''}</td>
</tr>`,
    );
    const body = html`<h1>Audit log</h1>
<p class="hint">Every change made through the admin API, this console or the CLI: who, from where, what, the fields it changed, and how it ended (<code>started</code>: a call to the marketplace under way, or the process stopped during it). Field values are never kept.</p>
<form method="get" action="${ctx.base}/audit" class="filters" aria-label="Filter the audit log">
  ${filterField('a', 'actor', 'Who (key id or name)', q.actor)}
  ${ctx.principal?.companyId ? '' : filterField('a', 'companyId', 'Company id', q.companyId)}
  ${filterField('a', 'action', 'Action contains', q.action)}
  ${filterField('a', 'after', 'From (UTC)', asLocalField(q.after), html` type="datetime-local"`)}
  ${filterField('a', 'before', 'Before (UTC)', asLocalField(q.before), html` type="datetime-local"`)}
  ${filterButtons(`${ctx.base}/audit`)}
</form>
${found.items.length === 0 ? html`<p>No change matches.</p>` : table(['At', 'Who', 'From', 'Action', 'Company', 'Targets', 'Fields', 'Outcome'], rows, { class: 'cards', caption: 'Changes, newest first' })}
${pager('Audit log pages', (cursor) => `${ctx.base}/audit${query({ ...filters, cursor })}`, q.cursor, found.nextCursor)}`;
    return kit.send(reply, page(ctx, { title: 'Audit log', section: '/audit', body }));
  });
}
