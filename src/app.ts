/**
 * buildApp(deps): the HTTP surface (receiver, admin API, operator console, health, OpenAPI). It never listens, so
 * tests inject requests; main.ts decides whether and where to listen.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Queue } from 'bullmq';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type pg from 'pg';
import type { Logger } from 'pino';
import { audited } from './access/audit.js';
import { declareAccess, installGuard, type GuardDeps } from './access/guard.js';
import { queueDashboard } from './admin/dashboard.js';
import { adminRoutes, type AdminDeps } from './admin/routes.js';
import type { ConsoleDeps } from './console/kit.js';
import { consoleRoutes } from './console/plugin.js';
import { defaultPartitionRows } from './db/partitions.js';
import { isDatabaseUnavailable } from './lib/database-unavailable.js';
import { AuthFailureLimiter } from './lib/auth-failure-limiter.js';
import type { Metrics } from './lib/metrics.js';
import { redisAnswers, type RedisClient } from './lib/redis/connection.js';
import { withTimeout } from './lib/timeout.js';
import type { ErrorReporter } from './lib/error-reporter.js';
import { Problem, badRequest, databaseUnavailable, sendProblem, serviceUnavailable } from './lib/problem.js';
import { receiverRoutes, type ReceiverDeps } from './receiver/routes.js';

interface AppDeps {
  logger: Logger;
  trustProxy: string[];
  /** REQUEST_TIMEOUT_MS: a request whose headers and body have not all arrived by then is answered 408 and closed. */
  requestTimeoutMs: number;
  /** False until the runtime has prepared the database: until then only the probes and metrics are served. */
  started: () => boolean;
  pool: pg.Pool;
  redis: RedisClient;
  receiver: ReceiverDeps;
  admin: AdminDeps;
  /** The operator console under /console (SPEC §13). */
  console: ConsoleDeps;
  /** Shown on the dashboard. */
  queues: Queue[];
  /** The companies not ok in their one state (SPEC §5.1 F5), and the count in each state: the skyhook_company_state and skyhook_companies gauges. */
  companyStates: () => Promise<{ counts: Record<string, number>; companies: { id: string; state: { status: string } }[] }>;
  /** Each company's connection warnings (companies/usage.ts), for `skyhook_connection_warning`. */
  connectionWarnings: () => Promise<{ id: string; warnings: { kind: string }[] }[]>;
  /**
   * The destinations with deliveries pending, failing or disabled, each in its one state (SPEC §5.2), with
   * its pending count and its oldest pending delivery's age: the skyhook_destination_state, skyhook_deliveries_pending
   * and skyhook_oldest_pending_delivery_age_seconds gauges (an ok destination with nothing pending has no series).
   */
  destinationStates: () => Promise<{ id: string; companyId: string; state: { status: string }; pending: number; oldestPendingAgeS: number }[]>;
  authFailures: { limit: number; windowMs: number };
  /** Who may call what (SPEC §10.1): ADMIN_TOKEN, METRICS_TOKEN, and the keys. */
  access: Omit<GuardDeps, 'limiter'>;
  metrics: Metrics;
  reporter: ErrorReporter;
}

/** Fastify's own errors, router errors included (`frameworkErrors`), as problems; anything else a route throws is a Problem or a 500. */
const FASTIFY_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'The Content-Type is not accepted here; send application/json.'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'The body is larger than this route accepts.'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'The body is empty.'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'The body is not valid JSON.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'The Content-Length does not match the body.'],
  FST_BASIC_AUTH_MISSING_OR_BAD_AUTHORIZATION_HEADER: [401, 'The credentials were not accepted.'],
  FST_ERR_BAD_URL: [400, 'The URL is malformed (a bad percent-encoding, say).'],
  FST_ERR_MAX_PARAM_LENGTH: [414, 'A part of the URL is longer than any this server accepts.'],
  FST_ERR_ASYNC_CONSTRAINT: [400, 'The request matches no route.'],
};

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
};

/**
 * A SQLSTATE of class 22 (data exception: a NUL character in text, a value out of range) means the input
 * cannot be stored: the caller's 400, not a 500. The inputs are checked before they reach the database;
 * this is the net under those checks.
 */
function isDataException(err: unknown, depth = 0): boolean {
  const e = err as { code?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== 'object' || depth > 3) return false;
  return (typeof e.code === 'string' && /^22[0-9A-Z]{3}$/.test(e.code)) || isDataException(e.cause, depth + 1);
}

/** A request whose client went away before its body had all arrived (Node's 'aborted' error). */
const clientGone = (req: FastifyRequest, err: Error): boolean =>
  req.raw.readableAborted || ((err as { code?: string }).code === 'ECONNRESET' && err.message === 'aborted');

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
  if (isDataException(err)) return badRequest('The request holds a value the database cannot store (a NUL character, say).', undefined, 'unstorable_input');
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new Problem(fe.statusCode, TITLES[fe.statusCode] ?? 'Error', fe.message);
  return new Problem(500, 'Internal Server Error', 'Something went wrong; it has been logged.', { code: 'internal' });
}

const OPS_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * What both apps share. They log through the process's logger, without Fastify's two lines per request
 * (noise at this rate). Router errors (a bad percent-encoding, a path parameter over its length) are problems too.
 * No request may hold a connection open by trickling (SPEC §4): its headers and body must all arrive within
 * REQUEST_TIMEOUT_MS (Node checks once a second; the default check every 30 s would let it run up to twice
 * as long). An idle keep-alive connection closes after Fastify's 72 s, longer than the usual load balancer's
 * 60 s idle timeout. A request that arrives on a kept-alive connection during shutdown is served, and its
 * connection closed (Fastify's return503OnClosing answers a bare 503 without Retry-After instead).
 */
const sharedOptions = (logger: Logger, requestTimeoutMs: number) => ({
  loggerInstance: logger as FastifyBaseLogger,
  logController: new LogController({ disableRequestLogging: true }),
  frameworkErrors: (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => sendProblem(req, reply, toProblem(err)),
  requestTimeout: requestTimeoutMs,
  http: { headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, requestTimeoutMs) },
  return503OnClosing: false,
});

const noRoute = (req: FastifyRequest, reply: FastifyReply) => sendProblem(req, reply, new Problem(404, 'Not Found', `No route ${req.method} ${req.url.split('?')[0]}.`, { code: 'no_route' }));

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // One line per notification is logged by the receiver itself.
    ...sharedOptions(deps.logger, deps.requestTimeoutMs),
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

  // Failed authentication (any 401, receiver or admin) is rate-limited per client address: past the limit a
  // refusal is a 429, while valid credentials are always served (lib/auth-failure-limiter.ts).
  const limiter = new AuthFailureLimiter(deps.authFailures);
  // Before any route: every route declares who may call it, and the guard holds each request to it.
  installGuard(app, { ...deps.access, limiter });
  app.setErrorHandler((err: FastifyError, req, reply) => {
    // A notification's lines name its company once it is known (no per-request child logger on the hot path).
    const companyId = req.notificationAuth?.webhook.companyId;
    if (clientGone(req, err)) {
      // Nothing to answer, and nothing was stored: not a database outage, whatever the socket's error says.
      deps.reporter.report('client_disconnected', err, 'a client disconnected before its request had arrived; nothing was stored', { url: req.url.split('?')[0], companyId });
      return reply.code(400).send();
    }
    let problem = toProblem(err);
    if (problem.status === 401) problem = limiter.refusal(req.ip, problem);
    // An outage is one warning line per request, not a stack trace; a real bug keeps its stack.
    if (problem.status === 503) req.log.warn({ code: problem.extra.code, companyId }, problem.detail ?? problem.title);
    else if (problem.extra.code === 'unstorable_input') req.log.warn({ err: String(err), companyId }, 'a request held a value the database refused');
    else if (problem.status >= 500) req.log.error({ err, companyId }, 'request failed');
    return sendProblem(req, reply, problem);
  });
  // Callback hook, not an async one: it runs for every request, and a callback costs no promise.
  app.addHook('onRequest', (req, reply, done) => {
    if (deps.started()) return done();
    // Until the database is prepared: the probes and metrics answer, everything else is asked to retry.
    if (OPS_ROUTES.has(req.routeOptions.url ?? '')) return done();
    sendProblem(req, reply, serviceUnavailable('Skyhook is starting: it waits for PostgreSQL (DATABASE_URL) to be reachable and migrated.', 'starting'));
  });

  app.setNotFoundHandler(noRoute);

  await app.register(swagger, {
    openapi: {
      info: { title: 'Skyhook', version: '0.1.0', description: 'Admin API and notification receiver of Skyhook.' },
      components: { securitySchemes: { key: { type: 'http', scheme: 'bearer', description: 'A key (skh_...) or ADMIN_TOKEN (SPEC §10.1).' } } },
    },
    transform: jsonSchemaTransform,
  });
  // Public on purpose: the API's shape only, no data and no secret.
  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
  await app.register(async (scope) => {
    declareAccess(scope, 'public');
    await scope.register(swaggerUi, { routePrefix: '/docs' });
  });

  await app.register((scope) => opsRoutes(scope, deps));

  await app.register((scope) => {
    // The marketplace's notifications: each is authenticated by its webhook's own credentials (receiver/authenticate.ts).
    declareAccess(scope, 'public');
    return receiverRoutes(scope, deps.receiver);
  });
  // Every change through the admin API, the queue dashboard and the console is in the audit log (access/audit.ts).
  const auditError = (err: unknown) => deps.reporter.report('audit', err, 'an audit entry could not be written after its change, or a change wrote none of its own');
  await app.register(
    (scope) => {
      audited(scope, deps.admin.audit, auditError);
      return adminRoutes(scope, deps.admin);
    },
    { prefix: '/admin' },
  );
  await app.register((scope) => {
    // The dashboard's changes are its jobs in Redis: the edge writes their entries, before and after.
    audited(scope, deps.admin.audit, auditError, { calls: true });
    return queueDashboard(scope, { queues: deps.queues });
  });
  // Its hooks (session, CSRF, headers) and form parser are scoped to /console: no cost to the receiver.
  await app.register((scope) => consoleRoutes(scope, deps.console, { limiter, toProblem, audited: (s) => audited(s, deps.admin.audit, auditError) }), { prefix: '/console' });
  return app;
}

export type OpsDeps = Pick<AppDeps, 'pool' | 'redis' | 'metrics' | 'queues' | 'started' | 'reporter' | 'companyStates' | 'connectionWarnings' | 'destinationStates' | 'access' | 'authFailures'>;

/** A worker's own ops server (OPS_PORT): the probes and metrics alone, as quiet as the main app's. */
export async function buildOpsApp(logger: Logger, deps: OpsDeps): Promise<FastifyInstance> {
  const app = Fastify(sharedOptions(logger, 30_000));
  installGuard(app, { ...deps.access, limiter: new AuthFailureLimiter(deps.authFailures) });
  app.setNotFoundHandler(noRoute);
  await app.register((scope) => opsRoutes(scope, deps));
  return app;
}

/** /healthz, /readyz and /metrics: served by every role (a worker-only process serves only these). */
async function opsRoutes(scope: FastifyInstance, deps: OpsDeps): Promise<void> {
  const gauges = cachedGauges(deps);
  scope.get('/healthz', { schema: { hide: true }, config: { access: 'public' } }, async () => ({ status: 'ok' }));
  scope.get('/metrics', { schema: { hide: true }, config: { access: 'metrics' } }, async (_req, reply) => {
    await Promise.all([gauges(), readiness(deps)]);
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  scope.get('/readyz', { schema: { hide: true }, config: { access: 'public' } }, async (_req, reply) => {
    const { started, database, redis, ready } = await readiness(deps);
    // Not a problem document: this is the probe's own answer, read by orchestrators and people alike.
    if (!ready) reply.code(503).header('retry-after', '5');
    return reply.send({ status: ready ? 'ready' : started ? 'unavailable' : 'starting', database, redis });
  });
}

/**
 * How long the readiness check waits for PostgreSQL's `SELECT 1` (Redis commands have their own 2 s timeout):
 * a scrape must answer within Prometheus's scrape timeout (10 s by default) even when PostgreSQL is a black
 * hole, or the alert would say "process down" where it should say "PostgreSQL unreachable".
 */
const READY_CHECK_TIMEOUT_MS = 2000;

/**
 * What /readyz answers, also kept as skyhook_ready and skyhook_dependency_up{dependency}: each scrape asks
 * again (one `SELECT 1`, one PING), so an alert sees every process's readiness without probing it.
 */
async function readiness(deps: OpsDeps): Promise<{ started: boolean; database: boolean; redis: boolean; ready: boolean }> {
  const started = deps.started();
  const [database, redis] = await Promise.all([
    withTimeout(deps.pool.query('SELECT 1'), READY_CHECK_TIMEOUT_MS, 'readiness').then(() => true, () => false),
    redisAnswers(deps.redis),
  ]);
  const ready = started && database && redis;
  deps.metrics.ready.set(ready ? 1 : 0);
  deps.metrics.dependencyUp.set({ dependency: 'postgres' }, database ? 1 : 0);
  deps.metrics.dependencyUp.set({ dependency: 'redis' }, redis ? 1 : 0);
  return { started, database, redis, ready };
}

/** How long the gauges that need a query (queue depth, oldest pending ages, company and destination states) are reused: scrapes must not each cost a query. */
export const GAUGES_MAX_AGE_MS = 5000;

/** Gauges that need a look at Redis or PostgreSQL, read when scraped (bounded in time), at most every GAUGES_MAX_AGE_MS. */
function cachedGauges(deps: OpsDeps): () => Promise<void> {
  let readAt = -Infinity;
  let reading: Promise<void> | undefined;
  const read = async () => {
    const [counts, backlog, states, destinations, warned, defaults] = await Promise.all([
      withTimeout(Promise.all(deps.queues.map((q) => q.getJobCounts('wait', 'prioritized', 'active', 'delayed', 'failed'))), 1000, 'queue depth'),
      withTimeout(deps.pool.query<{ company_id: string; pending: number; oldest_pending_age_s: number }>('SELECT company_id, pending, oldest_pending_age_s FROM backlog WHERE pending > 0'), 1000, 'backlog'),
      withTimeout(deps.companyStates(), 1000, 'company states'),
      withTimeout(deps.destinationStates(), 1000, 'destination states'),
      withTimeout(deps.connectionWarnings(), 1000, 'connection warnings'),
      withTimeout(defaultPartitionRows(deps.pool), 1000, 'default partitions'),
    ]);
    const m = deps.metrics;
    // The gauges whose series come and go with what they count: only this reading's series are left.
    for (const gauge of [m.connectionWarning, m.queueDepth, m.oldestPendingAge, m.notificationsPending, m.companyState, m.destinationState, m.deliveriesPending, m.oldestPendingDeliveryAge]) {
      gauge.reset();
    }
    for (const c of warned) for (const w of c.warnings) m.connectionWarning.set({ company: c.id, kind: w.kind }, 1);
    for (const [table, rows] of defaults) m.partitionDefaultRows.set({ table }, rows);
    // Fetch jobs carry their company's priority, so BullMQ keeps the waiting ones in its `prioritized` set: they are `wait` all the same.
    for (const c of counts) for (const [state, n] of Object.entries(c)) m.queueDepth.inc({ state: state === 'prioritized' ? 'wait' : state }, n);
    // Only the companies with a backlog, and the companies not ok: the series stay as few as the companies in trouble.
    for (const r of backlog.rows) {
      m.oldestPendingAge.set({ company: r.company_id }, r.oldest_pending_age_s);
      m.notificationsPending.set({ company: r.company_id }, Number(r.pending));
    }
    // One series per company not ok, its current state's (1): a company that changes state changes series at the next reading.
    for (const c of states.companies) m.companyState.set({ company: c.id, state: c.state.status }, 1);
    for (const [state, n] of Object.entries(states.counts)) m.companies.set({ state }, n);
    // Only the destinations with deliveries pending, failing or disabled: the series stay as few as the destinations at work or in trouble.
    for (const d of destinations) {
      const labels = { destination: d.id, company: d.companyId };
      m.destinationState.set({ ...labels, state: d.state.status }, 1);
      m.deliveriesPending.set(labels, d.pending);
      m.oldestPendingDeliveryAge.set(labels, d.oldestPendingAgeS);
    }
  };
  return () => {
    if (!deps.started() || performance.now() - readAt < GAUGES_MAX_AGE_MS) return Promise.resolve();
    // Concurrent scrapes share one reading; a failed one keeps the last values (and is tried again next scrape).
    reading ??= read()
      .then(
        () => void (readAt = performance.now()),
        (err: unknown) => deps.reporter.report('metrics_gauges', err, 'the queue depth, backlog, company-, destination-state and default-partition gauges could not be read; they keep their last values'),
      )
      .finally(() => (reading = undefined));
    return reading;
  };
}
