/**
 * buildApp(deps): the HTTP surface (receiver, admin API, health, OpenAPI). It never listens, so
 * tests inject requests; main.ts decides whether and where to listen.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Queue } from 'bullmq';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors, jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type pg from 'pg';
import type { Logger } from 'pino';
import { queueDashboard } from './admin/dashboard.js';
import { adminRoutes, type AdminDeps } from './admin/routes.js';
import { isDatabaseUnavailable } from './db/client.js';
import { AuthFailureLimiter } from './lib/auth-failure-limiter.js';
import type { Metrics } from './lib/metrics.js';
import { redisAnswers, withTimeout, type RedisClient } from './lib/redis.js';
import { Problem, databaseUnavailable, sendProblem } from './lib/problem.js';
import { receiverRoutes, type ReceiverDeps } from './receiver/routes.js';

export interface AppDeps {
  logger: Logger;
  trustProxy: string[];
  pool: pg.Pool;
  redis: RedisClient;
  receiver: ReceiverDeps;
  admin: AdminDeps;
  /** Shown on the dashboard. */
  queues: Queue[];
  authFailures: { limit: number; windowMs: number };
  metrics: Metrics;
}

/** Fastify's own errors, as problems (everything else a route throws is a Problem or a 500). */
const FASTIFY_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'The Content-Type is not accepted here; send application/json.'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'The body is larger than this route accepts.'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'The body is empty.'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'The body is not valid JSON.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'The Content-Length does not match the body.'],
  FST_BASIC_AUTH_MISSING_OR_BAD_AUTHORIZATION_HEADER: [401, 'The credentials were not accepted.'],
};

const TITLES: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 413: 'Content Too Large', 415: 'Unsupported Media Type', 429: 'Too Many Requests', 503: 'Service Unavailable' };

export function toProblem(err: FastifyError | Error): Problem {
  if (err instanceof Problem) return err;
  const fe = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fe)) {
    const where = fe.validationContext ?? 'body';
    const errors = fe.validation.map((v) => ({ field: [where, ...v.instancePath.split('/').filter(Boolean)].join('.'), message: v.message ?? 'is invalid' }));
    return new Problem(400, 'Bad Request', `The request ${where} is not valid: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, { code: 'invalid_input', errors });
  }
  const known = fe.code ? FASTIFY_ERRORS[fe.code] : undefined;
  if (known) return new Problem(known[0], TITLES[known[0]] ?? 'Error', known[1], { code: fe.code!.toLowerCase() });
  if (isDatabaseUnavailable(err)) return databaseUnavailable();
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new Problem(fe.statusCode, TITLES[fe.statusCode] ?? 'Error', fe.message);
  return new Problem(500, 'Internal Server Error', 'Something went wrong; it has been logged.', { code: 'internal' });
}

const OPS_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** Both apps log through the process's logger, without Fastify's two lines per request (noise at this rate). */
const quietLogging = (logger: Logger) => ({ loggerInstance: logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // One line per notification is logged by the receiver itself.
    ...quietLogging(deps.logger),
    trustProxy: deps.trustProxy.length > 0 ? deps.trustProxy : false,
    requestIdHeader: 'x-request-id',
    // Malformed HTTP (bad request line, oversized headers) gets a problem too, not Fastify's JSON.
    // As Fastify's own handler: nothing to answer on a reset or destroyed socket, 408 for a request too slow to arrive.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const [status, title, detail, code] =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'The request did not arrive in time.', 'request_timeout']
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? [431, 'Request Header Fields Too Large', 'The HTTP request is malformed.', 'malformed_http']
            : [400, 'Bad Request', 'The HTTP request is malformed.', 'malformed_http'];
      const body = JSON.stringify(new Problem(status, title, detail, { code }).body());
      if (socket.writable) socket.end(`HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      else socket.destroy();
    },
    bodyLimit: 1024 * 1024,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const problem = toProblem(err);
    // An outage is one warning line per request, not a stack trace; a real bug keeps its stack.
    // A notification's lines name its company once it is known (no per-request child logger on the hot path).
    const companyId = req.notificationAuth?.webhook.companyId;
    if (problem.status === 503) req.log.warn({ code: problem.extra.code, companyId }, problem.detail ?? problem.title);
    else if (problem.status >= 500) req.log.error({ err, companyId }, 'request failed');
    return sendProblem(req, reply, problem);
  });
  // Failed authentication (any 401, receiver or admin) is rate-limited per client address.
  const limiter = new AuthFailureLimiter(deps.authFailures);
  // Callback hooks, not async ones: these run for every request, and a callback costs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    // Probes and scrapes need no credentials and must keep answering whoever else failed from their address.
    // Asked only of a blocked address: Fastify builds req.routeOptions anew on every read.
    const wait = limiter.blockedFor(req.ip);
    if (wait <= 0 || OPS_ROUTES.has(req.routeOptions.url ?? '')) return done();
    // Answered, not thrown: this also guards the queue dashboard (see sendProblem). No done(): the reply is sent.
    sendProblem(
      req,
      reply,
      new Problem(429, 'Too Many Requests', 'Too many failed authentications from this address; retry later.', {
        code: 'too_many_auth_failures',
        headers: { 'retry-after': String(wait) },
      }),
    );
  });
  app.addHook('onResponse', (req, reply, done) => {
    if (reply.statusCode === 401) limiter.recordFailure(req.ip);
    done();
  });

  app.setNotFoundHandler((req, reply) => sendProblem(req, reply, new Problem(404, 'Not Found', `No route ${req.method} ${req.url.split('?')[0]}.`, { code: 'no_route' })));

  await app.register(swagger, {
    openapi: {
      info: { title: 'Skyhook', version: '0.1.0', description: 'Admin API and notification receiver of Skyhook.' },
      components: { securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // Public on purpose: the API's shape only, no data and no secret.
  await app.register(swaggerUi, { routePrefix: '/docs' });

  await app.register((scope) => opsRoutes(scope, deps));

  await app.register((scope) => receiverRoutes(scope, deps.receiver));
  await app.register((scope) => adminRoutes(scope, deps.admin), { prefix: '/admin' });
  await app.register((scope) => queueDashboard(scope, { adminToken: deps.admin.adminToken, queues: deps.queues }));
  return app;
}


export type OpsDeps = Pick<AppDeps, 'pool' | 'redis' | 'metrics' | 'queues'>;

/** A worker's own ops server (OPS_PORT): the probes and metrics alone, as quiet as the main app's. */
export async function buildOpsApp(logger: Logger, deps: OpsDeps): Promise<FastifyInstance> {
  const app = Fastify(quietLogging(logger));
  await app.register((scope) => opsRoutes(scope, deps));
  return app;
}

/** /healthz, /readyz and /metrics: served by every role (a worker-only process serves only these). */
async function opsRoutes(scope: FastifyInstance, deps: OpsDeps): Promise<void> {
  scope.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  scope.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    await collectGauges(deps).catch((err) => scope.log.debug({ err: String(err) }, 'metrics gauges not collected'));
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  scope.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const [database, redis] = await Promise.all([
      deps.pool.query('SELECT 1').then(() => true, () => false),
      redisAnswers(deps.redis),
    ]);
    return reply.code(database && redis ? 200 : 503).send({ status: database && redis ? 'ready' : 'unavailable', database, redis });
  });
}

/** Gauges that need a look at Redis or PostgreSQL are read when scraped, bounded in time. */
async function collectGauges(deps: OpsDeps): Promise<void> {
  const [counts, backlog] = await Promise.all([
    withTimeout(Promise.all(deps.queues.map((q) => q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'failed'))), 1000, 'queue depth'),
    withTimeout(deps.pool.query<{ company_id: string; oldest_pending_age_s: number }>('SELECT company_id, oldest_pending_age_s FROM backlog'), 1000, 'backlog'),
  ]);
  deps.metrics.queueDepth.reset();
  for (const c of counts) for (const [state, n] of Object.entries(c)) deps.metrics.queueDepth.inc({ state }, n);
  deps.metrics.oldestPendingAge.reset();
  for (const r of backlog.rows) deps.metrics.oldestPendingAge.set({ company: r.company_id }, r.oldest_pending_age_s);
}
