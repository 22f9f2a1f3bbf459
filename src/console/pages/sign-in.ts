/**
 * Sign-in with a key (or ADMIN_TOKEN), exchanged for a server-side session; sign-out ends it. A refused token
 * counts in the failed-authentication limiter, like any other refusal (SPEC §10).
 */
import type { FastifyInstance } from 'fastify';
import type { AuthFailureLimiter } from '../../lib/auth-failure-limiter.js';
import { constantTimeEqual, sha256 } from '../../lib/crypto.js';
import { Problem } from '../../lib/problem.js';
import { auditOf } from '../../access/audit.js';
import { BOOTSTRAP } from '../../access/roles.js';
import { html } from '../html.js';
import { notice, page, problemBox, type PageContext } from '../layout.js';
import type { ConsoleKit } from '../kit.js';

/** Where to go after sign-in: a console path only (never another site: no open redirect). */
const safeNext = (next: unknown): string => (typeof next === 'string' && /^\/(?![/\\])[^\s]*$/.test(next) ? next : '/');

function signInPage(ctx: PageContext, opts: { next: string; message?: ReturnType<typeof html> }) {
  return page(ctx, {
    title: 'Sign in',
    body: html`<section class="sign-in">
  <h1>Sign in to the Skyhook console</h1>
  ${opts.message ?? ''}
  <form method="post" action="${ctx.base}/sign-in">
    <input type="hidden" name="next" value="${opts.next}">
    <label for="token">Key</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <p class="hint">A key (<code>skh_…</code>) an admin made for you, or the <code>ADMIN_TOKEN</code> Skyhook runs with. The console shows what the key's role may do. The session lasts 12 hours, until you sign out, or until the key is revoked.</p>
    <button type="submit">Sign in</button>
  </form>
</section>`,
  });
}

export function signInPages(
  scope: FastifyInstance,
  kit: ConsoleKit,
  opts: { limiter: AuthFailureLimiter; sessionCookie: (id: string) => string; clearCookie: () => string },
): void {
  const bootstrap = sha256(kit.deps.adminToken);

  scope.get('/sign-in', { config: { access: 'public' } }, async (req, reply) => {
    const q = req.query as { next?: string; signedOut?: string };
    const message = q.signedOut ? notice('You are signed out.') : undefined;
    return kit.send(reply, signInPage(kit.ctx(req), { next: safeNext(q.next), message }));
  });

  scope.post('/sign-in', { config: { access: 'public' } }, async (req, reply) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    const next = safeNext(form.next);
    const found = constantTimeEqual(sha256(token), bootstrap) ? BOOTSTRAP : await kit.deps.keys.authenticate(token);
    if (typeof found === 'string') {
      const detail = found === 'unknown' ? 'That is not a key (nor the admin token).' : `That key is ${found}.`;
      const refused = opts.limiter.refusal(req.ip, new Problem(401, 'Unauthorized', detail, { code: 'unauthorized' }));
      for (const [name, value] of Object.entries(refused.extra.headers ?? {})) reply.header(name, value);
      return kit.send(reply, signInPage(kit.ctx(req), { next, message: problemBox(refused) }), refused.status);
    }
    // The guard let the form through unsigned-in, so no entry was opened for it: the key now known opens its own.
    const audit = kit.deps.services.audit.open({ principal: found, address: req.ip }, { action: 'POST /console/sign-in', companyId: found.companyId }, (err) =>
      req.log.error({ err }, "the sign-in's audit entry could not be settled"),
    );
    const session = await kit.deps.sessions.create(found, audit);
    reply.header('set-cookie', opts.sessionCookie(session.id));
    // A company key's console starts at its company.
    const landing = next === '/' && found.companyId ? `/companies/${found.companyId}` : next;
    return kit.redirect(reply, landing === '/' ? '' : landing);
  });

  // Anyone signed in may sign out.
  scope.post('/sign-out', { config: { access: 'read' } }, async (req, reply) => {
    if (req.consoleSession) await kit.deps.sessions.end(req.consoleSession.id, auditOf(req));
    reply.header('set-cookie', opts.clearCookie());
    return kit.redirect(reply, '/sign-in?signedOut=1');
  });
}
