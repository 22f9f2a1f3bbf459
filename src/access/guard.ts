/**
 * Deny by default (SPEC §10.1), in one place for every route of a Fastify app: each route declares its
 * `access` (a permission, `public` or `metrics`) in its config, and the app refuses to become ready when
 * one does not, plugin routes included (a plugin's scope declares for its routes with declareAccess).
 *
 * For each request the guard finds who is asking (a key or ADMIN_TOKEN as `Authorization: Bearer`, Basic
 * where a scope allows it for browsers, or the scope's own way: the console's session cookie), then answers
 * 401 (nobody, or a key unknown, expired or revoked), 403 (the role lacks the permission) or 404 (a company
 * key naming another company's id), or lets the request on with `req.principal` set.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { AuthFailureLimiter } from '../lib/auth-failure-limiter.js';
import { constantTimeEqual, sha256 } from '../lib/crypto.js';
import { notFound, Problem, sendProblem } from '../lib/problem.js';
import type { Keys } from './keys.js';
import { BOOTSTRAP, may, PERMISSIONS, type Access, type Principal } from './roles.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (SPEC §10.1): required of every route. */
    access?: Access;
    /** A read that is audited as a change is (a destination's secret, SPEC §5.2): its scope's `audited` opens an entry for it too. */
    auditRead?: boolean;
    /** Basic credentials are taken too (the password is the key): a browser opening the queue dashboard. */
    basic?: boolean;
    /** The scope's own way to find who is asking (the console's session), instead of the Authorization header. */
    principal?: (req: FastifyRequest) => Promise<Principal | undefined>;
    /** The scope's own way to answer a refusal (the console: a page, or the sign-in page); sendProblem otherwise. */
    refuse?: (req: FastifyRequest, reply: FastifyReply, problem: Problem) => FastifyReply;
  }
  interface FastifyRequest {
    /** Who is asking: set by the guard on every route that is not public. */
    principal?: Principal;
  }
  interface FastifyInstance {
    /** Every route with who may call it: what the guard holds requests to (the access test walks it). */
    accessTable(): { method: string; url: string; access: Access }[];
  }
}

export interface GuardDeps {
  adminToken: string;
  /** When set, /metrics needs it as a bearer token. */
  metricsToken?: string;
  keys: Pick<Keys, 'authenticate'>;
  limiter: AuthFailureLimiter;
}

/** The routes this scope (and the plugins it registers) adds get `access`, unless a route declares its own. */
export function declareAccess(scope: FastifyInstance, access: Access, more: Omit<NonNullable<RouteOptions['config']>, 'access'> = {}): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...more, ...route.config, access: (route.config as { access?: Access } | undefined)?.access ?? access };
  });
}

const bearerOf = (header: string): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
const basicPasswordOf = (header: string): string | undefined => {
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1];
  return basic === undefined ? undefined : Buffer.from(basic, 'base64').toString('utf8').split(':').slice(1).join(':');
};

/** Installs the guard on `app`: call before any route is registered. */
export function installGuard(app: FastifyInstance, deps: GuardDeps): void {
  const bootstrap = sha256(deps.adminToken);
  const metricsToken = deps.metricsToken === undefined ? undefined : sha256(deps.metricsToken);
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  app.decorate('accessTable', () =>
    routes.flatMap((r) => [r.method].flat().map((method) => ({ method: String(method), url: r.url, access: (r.config as { access: Access }).access }))),
  );
  app.addHook('onReady', async () => {
    const undeclared = routes.filter((r) => (r.config as { access?: Access } | undefined)?.access === undefined).map((r) => `${String(r.method)} ${r.url}`);
    if (undeclared.length > 0) throw new Error(`Routes that declare no access (SPEC §10.1: deny by default): ${undeclared.join(', ')}. Give each config.access.`);
  });

  const unauthorized = (req: FastifyRequest, detail: string, basic: boolean) =>
    deps.limiter.refusal(req.ip, new Problem(401, 'Unauthorized', detail, { code: 'unauthorized', headers: { 'www-authenticate': basic ? 'Basic realm="skyhook"' : 'Bearer realm="skyhook"' } }));

  /** The principal of the Authorization header, or why there is none. */
  async function fromHeader(req: FastifyRequest, basic: boolean): Promise<Principal | string> {
    const header = req.headers.authorization ?? '';
    const given = bearerOf(header) ?? (basic ? basicPasswordOf(header) : undefined);
    if (given === undefined) return 'This needs a key: Authorization: Bearer <key> (or ADMIN_TOKEN).';
    if (constantTimeEqual(sha256(given), bootstrap)) return BOOTSTRAP;
    const found = await deps.keys.authenticate(given);
    if (typeof found !== 'string') return found;
    return found === 'unknown' ? 'That key is not known.' : `That key is ${found}.`;
  }

  async function check(req: FastifyRequest, access: Exclude<Access, 'public'>): Promise<Problem | undefined> {
    const config = req.routeOptions.config;
    if (access === 'metrics') {
      if (metricsToken === undefined) return undefined;
      return constantTimeEqual(sha256(bearerOf(req.headers.authorization ?? '') ?? ''), metricsToken) ? undefined : unauthorized(req, 'This needs METRICS_TOKEN: Authorization: Bearer <METRICS_TOKEN>.', false);
    }
    // No session (or one that ended) is not a guess at a credential: not counted by the limiter.
    const principal = config.principal ? ((await config.principal(req)) ?? new Problem(401, 'Unauthorized', 'Sign in first.', { code: 'unauthorized' })) : await fromHeader(req, config.basic === true);
    if (principal instanceof Problem) return principal;
    if (typeof principal === 'string') return unauthorized(req, principal, config.basic === true);
    // A company key's reach is its company: another's ids are as if they did not exist, whatever the route
    // would need (a 403 there would say the company exists).
    const named = (req.params as { companyId?: string } | undefined)?.companyId;
    if (principal.companyId !== null && named !== undefined && named !== principal.companyId) return notFound(`Company ${named}`);
    if (!may(principal.role, access)) {
      return new Problem(403, 'Forbidden', `The ${principal.role} role may not ${PERMISSIONS[access]}.`, { code: 'forbidden' });
    }
    req.principal = principal;
    return undefined;
  }

  // A callback hook: the receiver's requests (public) pay one property read and no promise.
  app.addHook('onRequest', (req, reply, done) => {
    const access = req.routeOptions.config.access;
    // No route matched (the not-found handler answers), or anyone may call it.
    if (access === undefined || access === 'public') return done();
    check(req, access).then(
      (problem) => {
        if (problem === undefined) return done();
        const refuse = req.routeOptions.config.refuse;
        if (refuse) refuse(req, reply, problem);
        else sendProblem(req, reply, problem);
      },
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  });
}

/** The company a request is confined to: a company key's own, or undefined (every company). */
export const ownCompany = (req: FastifyRequest): string | undefined => req.principal?.companyId ?? undefined;

/**
 * `asked`, the company a request names outside its path (a query or a body), held to the principal's
 * reach: a company key gets its own company when it names none, and 404 when it names another.
 */
export function companyInReach(req: FastifyRequest, asked: string | undefined): string | undefined {
  const own = ownCompany(req);
  if (own === undefined) return asked;
  if (asked !== undefined && asked !== own) throw notFound(`Company ${asked}`);
  return own;
}
