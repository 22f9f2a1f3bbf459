/**
 * Sign-in with the admin token, exchanged for a server-side session; sign-out ends it. A refused token
 * counts in the failed-authentication limiter, like any other refusal (SPEC §10).
 */
import type { FastifyInstance } from 'fastify';
import type { AuthFailureLimiter } from '../../lib/auth-failure-limiter.js';
import { constantTimeEqual, sha256 } from '../../lib/crypto.js';
import { Problem } from '../../lib/problem.js';
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
    <label for="token">Admin token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <p class="hint">The <code>ADMIN_TOKEN</code> Skyhook runs with. The session lasts 12 hours, or until you sign out.</p>
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
  const expected = sha256(kit.deps.adminToken);

  scope.get('/sign-in', async (req, reply) => {
    const q = req.query as { next?: string; signedOut?: string };
    const message = q.signedOut ? notice('You are signed out.') : undefined;
    return kit.send(reply, signInPage(kit.ctx(req), { next: safeNext(q.next), message }));
  });

  scope.post('/sign-in', async (req, reply) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const token = typeof form.token === 'string' ? form.token : '';
    const next = safeNext(form.next);
    if (!constantTimeEqual(sha256(token), expected)) {
      const refused = opts.limiter.refusal(req.ip, new Problem(401, 'Unauthorized', 'That is not the admin token.', { code: 'unauthorized' }));
      for (const [name, value] of Object.entries(refused.extra.headers ?? {})) reply.header(name, value);
      return kit.send(reply, signInPage(kit.ctx(req), { next, message: problemBox(refused) }), refused.status);
    }
    const session = await kit.deps.sessions.create();
    reply.header('set-cookie', opts.sessionCookie(session.id));
    return kit.redirect(reply, next === '/' ? '' : next);
  });

  scope.post('/sign-out', async (req, reply) => {
    if (req.consoleSession) await kit.deps.sessions.end(req.consoleSession.id);
    reply.header('set-cookie', opts.clearCookie());
    return kit.redirect(reply, '/sign-in?signedOut=1');
  });
}
