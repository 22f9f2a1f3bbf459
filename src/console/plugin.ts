/**
 * The operator console (SPEC §13) under /console: server-rendered pages over the same services as the
 * admin API and the CLI. This file is the frame: the session (cookie -> console_sessions), the CSRF check
 * of every state-changing request, the security headers (a strict Content-Security-Policy), the static
 * files, form bodies, and errors shown as pages. Everything here is scoped to the console's routes: the
 * receiver's requests pay for none of it.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../access/roles.js';
import type { AuthFailureLimiter } from '../lib/auth-failure-limiter.js';
import { constantTimeEqual, sha256 } from '../lib/crypto.js';
import { Problem } from '../lib/problem.js';
import { loadAssets } from './assets.js';
import { companyPickerRoutes } from './company-picker.js';
import { auditPage } from './pages/audit.js';
import { keyPages } from './pages/keys.js';
import { html, Html } from './html.js';
import type { ConsoleDeps, ConsoleKit } from './kit.js';
import { page, problemBox, type PageContext } from './layout.js';
import { companyPages } from './pages/companies.js';
import { destinationPages } from './pages/destinations.js';
import { notificationPages } from './pages/notifications.js';
import { outboundPages } from './pages/outbound.js';
import { overviewPage } from './pages/overview.js';
import { signInPages } from './pages/sign-in.js';
import { SESSION_TTL_MS, type ConsoleSession } from '../access/sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession?: ConsoleSession & { id: string };
  }
}

const SESSION_COOKIE = 'skyhook_console';

/** The largest form the console takes (a company's token is the longest field). */
const FORM_BODY_LIMIT = 64 * 1024;

/**
 * default-src 'self' and nothing inline: no inline script, no style attribute, no eval. uPlot sizes its
 * elements through the CSSOM (element.style), which CSP allows; markup never carries a style attribute.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** A refusal the operator can act on: a 4xx, or the marketplace's 502 or 503. Any other 5xx is Skyhook's own failure. */
const actionable = (p: Problem): boolean => p.status < 500 || p.status === 502 || p.status === 503;

const isHtmx = (req: FastifyRequest) => req.headers['hx-request'] === 'true';

function readCookie(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

// Over 80 lines on purpose: a registrar, one hook or route after another, each a few lines; the helpers it shares sit above it.
export async function consoleRoutes(
  scope: FastifyInstance,
  deps: ConsoleDeps,
  opts: { limiter: AuthFailureLimiter; toProblem: (err: FastifyError | Error) => Problem; audited: (scope: FastifyInstance) => void },
): Promise<void> {
  const publicUrl = new URL(deps.publicBaseUrl);
  const base = `${publicUrl.pathname.replace(/\/+$/, '')}/console`;
  const secure = publicUrl.protocol === 'https:';
  const assets = loadAssets();
  const assetUrl = (name: string) => `${base}/assets/${assets.get(name)?.hash ?? 'missing'}/${name}`;

  const cookie = (value: string, maxAgeS: number) =>
    `${SESSION_COOKIE}=${value}; Path=${base}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

  const kit: ConsoleKit = {
    deps,
    ctx: (req) => ({ base, csrfToken: req.consoleSession?.csrfToken, asset: assetUrl, principal: req.principal }),
    send: (reply, markup, status = 200) => reply.code(status).type('text/html; charset=utf-8').send(markup.text),
    redirect: (reply, path) => reply.code(303).header('location', `${base}${path}`).send(),
    problem: (err) => opts.toProblem(err instanceof Error ? err : new Error(String(err))),
    refusal: (err) => {
      const problem = kit.problem(err);
      if (!actionable(problem)) throw err;
      return problem;
    },
    act: async (reply, work, then, page) => {
      try {
        const done = await work();
        return done instanceof Html ? page(undefined, done) : kit.redirect(reply, then(done));
      } catch (err) {
        return page(kit.refusal(err));
      }
    },
  };

  // Forms arrive urlencoded; only here (the receiver and admin API take JSON only).
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => {
    const form: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(body as string)) {
      const had = form[k];
      form[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
    }
    done(null, form);
  });

  // Pages, not an API: kept out of the OpenAPI document. Who may open each page or send each form (SPEC §10.1): a
  // page (GET) needs `read` unless it says more, a form declares its permission, and the guard (access/guard.ts)
  // finds the signed-in key from the session cookie.
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    const methods = [route.method].flat();
    const page = methods.every((m) => m === 'GET' || m === 'HEAD');
    route.config = { ...route.config, access: route.config?.access ?? (page ? 'read' : undefined), principal: signedIn, refuse };
  });

  /** The session of the request's cookie, kept on the request (its CSRF token), and who it is. */
  async function signedIn(req: FastifyRequest): Promise<Principal | undefined> {
    const id = readCookie(req, SESSION_COOKIE);
    const session = id && /^[A-Za-z0-9_-]{1,100}$/.test(id) ? await deps.sessions.find(id) : undefined;
    if (!session) return undefined;
    req.consoleSession = { ...session, id: id! };
    return session.principal;
  }

  /** A refusal as the console shows it: not signed in (or the session ended), to the sign-in page; any other, a page. */
  function refuse(req: FastifyRequest, reply: FastifyReply, problem: Problem): FastifyReply {
    reply.headers(SECURITY_HEADERS);
    if (problem.status !== 401) return kit.send(reply, isHtmx(req) ? problemBox(problem) : errorPage(kit.ctx(req), problem), problem.status);
    if (readCookie(req, SESSION_COOKIE)) reply.header('set-cookie', cookie('', 0));
    const next = req.method === 'GET' && !isHtmx(req) ? req.url.slice('/console'.length) || '/' : '/';
    const signIn = `${base}/sign-in${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`;
    if (isHtmx(req)) return reply.code(401).header('hx-redirect', signIn).send();
    if (req.routeOptions.url === '/console/stream') return reply.code(401).type('text/plain').send('Sign in first.');
    return reply.code(303).header('location', signIn).send();
  }

  scope.addHook('onRequest', async (req, reply) => {
    reply.headers(SECURITY_HEADERS);
    // Pages hold the operator's data: never kept by the browser or a proxy.
    if (!(req.routeOptions.url ?? '').startsWith('/console/assets/')) reply.header('cache-control', 'no-store');
  });

  // CSRF (SPEC §13): every state-changing request carries the session's token, from the form's hidden
  // field or (htmx) the X-CSRF-Token header; and none comes from another site. SameSite=Strict already
  // keeps the cookie off cross-site requests; this holds even where a browser ignores SameSite.
  scope.addHook('preHandler', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD') return;
    const site = req.headers['sec-fetch-site'];
    const crossSite = site !== undefined && site !== 'same-origin' && site !== 'none';
    if (req.routeOptions.url === '/console/sign-in' && !crossSite) return;
    const form = (req.body ?? {}) as Record<string, unknown>;
    const given = typeof form._csrf === 'string' ? form._csrf : typeof req.headers['x-csrf-token'] === 'string' ? req.headers['x-csrf-token'] : '';
    const expected = req.consoleSession?.csrfToken ?? '';
    if (crossSite || !expected || !constantTimeEqual(sha256(given), sha256(expected))) {
      req.log.warn({ url: req.url.split('?')[0], crossSite }, 'console: a state-changing request without a valid CSRF token was refused');
      const refused = new Problem(403, 'Forbidden', 'This form could not be accepted: it came from another site, or it was opened before a sign-out or sign-in. Open the page again and repeat.');
      return kit.send(reply, errorPage(kit.ctx(req), refused), refused.status);
    }
  });

  // After the CSRF check: a refused form changed nothing.
  opts.audited(scope);

  // Errors as pages (or, for htmx, as a fragment shown in the page's notice area).
  scope.setErrorHandler((err: FastifyError, req, reply) => {
    const problem = opts.toProblem(err);
    if (!actionable(problem)) req.log.error({ err }, 'console request failed');
    reply.headers(problem.extra.headers ?? {});
    return kit.send(reply, isHtmx(req) ? problemBox(problem) : errorPage(kit.ctx(req), problem), problem.status);
  });
  scope.setNotFoundHandler((req, reply) => kit.send(reply, errorPage(kit.ctx(req), new Problem(404, 'Not Found', `There is no console page ${req.url.split('?')[0]}.`)), 404));

  scope.get('/assets/:hash/:name', { config: { access: 'public' } }, async (req, reply) => {
    const { hash, name } = req.params as { hash: string; name: string };
    const asset = assets.get(name);
    if (!asset) return reply.code(404).type('text/plain').send('no such file');
    // A URL of an older version still answers (the newest file), but is not cached for long.
    const current = asset.hash === hash;
    return reply
      .header('cache-control', current ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('etag', `"${asset.hash}"`)
      .type(asset.type)
      .send(asset.body);
  });

  signInPages(scope, kit, {
    limiter: opts.limiter,
    sessionCookie: (id) => cookie(id, Math.floor(SESSION_TTL_MS / 1000)),
    clearCookie: () => cookie('', 0),
  });
  overviewPage(scope, kit);
  notificationPages(scope, kit);
  companyPages(scope, kit);
  destinationPages(scope, kit);
  outboundPages(scope, kit);
  companyPickerRoutes(scope, kit);
  auditPage(scope, kit);
  keyPages(scope, kit);
  // Live streams are ended at close by the admin API's preClose hook: the stream is the same.
}

function errorPage(ctx: PageContext, p: Problem): Html {
  return page(ctx, {
    title: p.title,
    body: html`<h1>${p.title}</h1>${problemBox(p)}<p><a href="${ctx.base}">Back to the overview</a></p>`,
  });
}
