/**
 * The composition root: config -> connections -> services -> roles. main.ts runs it for real; tests
 * run the very same wiring against their own database and queue prefix.
 *
 * Two steps, so that a process serves what it can while a dependency is down at start-up (SPEC §5):
 * createRuntime builds everything without waiting for PostgreSQL or Redis (the caller may listen at
 * once: /healthz answers, /readyz and everything else answer 503 until started); start() waits for
 * PostgreSQL and migrates it, then starts the parts that use it. Redis is never waited for: its
 * connections reconnect by themselves, and the relay queues what was stored meanwhile.
 */
import type { Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp, buildOpsApp } from './app.js';
import type { Config } from './config.js';
import { withoutPassword } from './lib/redact.js';
import { connectDatabase, isDatabaseUnavailable, type DbHandle } from './db/client.js';
import { waitForDatabase } from './db/migrate.js';
import { createNotificationsRepository } from './notifications/postgres.js';
import { BatchSummary } from './lib/batch-summary.js';
import { describeError, ErrorReporter } from './lib/error-reporter.js';
import { loadTracing, type Tracing } from './lib/tracing.js';
import { createMetrics } from './lib/metrics.js';
import { connectRedis, isRedisUnavailable, type RedisClient } from './lib/redis/connection.js';
import { TimeoutError, withTimeout } from './lib/timeout.js';
import { drizzle } from 'drizzle-orm/node-postgres';
import { CachedPlans } from './db/cached-plans.js';
import type { Tx } from './db/client.js';
import { CLAIM_STATEMENT, STORE_STATEMENT, type NotificationsRepository } from './notifications/postgres.js';
import * as schema from './db/schema/index.js';
import type { Metrics } from './lib/metrics.js';
import { MarketplaceClient } from './marketplace/client.js';
import { AccessTokens } from './marketplace/oauth2.js';
import { CompanyConnections } from './processing/company-connections.js';
import { CompanyGate, GateFinishes, gateOptions } from './processing/company-gate.js';
import { companyControls, PausedCompanies, settingsProbe } from './processing/paused-companies.js';
import { allCompanyStates } from './services/company-state.js';
import { webhookSettingsApi } from './marketplace/webhook-settings.js';
import { companies as companiesTable } from './db/schema/index.js';
import { eq } from 'drizzle-orm';
import { FetchEnqueuer } from './processing/enqueue.js';
import type { FetchJobDeps } from './processing/fetch-job.js';
import { fetchResource } from './processing/fetch-resource.js';
import { FetchStarts } from './processing/fetch-start.js';
import { createFetchWorker } from './processing/fetch-worker.js';
import { createFetchQueue, fetchKey, type ResourceKey } from './processing/fetch.queue.js';
import { SnapshotStore } from './processing/snapshots.js';
import { IngestFirst } from './processing/ingest-first.js';
import { builtInHandlers, type HandlerRegistry } from './processing/handlers/index.js';
import { Relay } from './processing/relay.js';
import { createRetention } from './processing/retention.js';
import { listen } from './db/listen.js';
import { listenForWebhookChanges, loadWebhookFrom, WebhookDirectory } from './receiver/attribution.js';
import { NotificationWriter } from './receiver/ingest.js';
import { NonceStore } from './receiver/nonces.js';
import { createSessionStore } from './console/sessions.js';
import { createServices } from './services/index.js';
import { NotificationStream } from './services/notification-stream.js';

const WORKER_DB_CONNECTIONS = 8;
/** Live stream clients (SSE, `notifications tail`) one process serves at once; each costs a socket and a filter. */
const STREAM_MAX_SUBSCRIBERS = 100;
/** A producer never waits longer than this for Redis: the relay covers what it could not queue. */
const ENQUEUE_TIMEOUT_MS = 1000;
/** No part's close may hold the shutdown longer than this (a Redis that is down, say). */
const CLOSE_STEP_TIMEOUT_MS = 5000;

/** Error kinds of the outages a process waits out; each is one line when it starts and one when it ends. */
export const REDIS_DOWN = 'redis_unreachable';
export const POSTGRES_DOWN = 'postgres_unreachable';

export interface Runtime {
  /** The HTTP app (roles api and all; a worker's ops routes when OPS_PORT is set); not listening yet. */
  app?: FastifyInstance;
  /** The fetch worker (roles worker and all): one BullMQ Worker running WORKER_CONCURRENCY jobs. */
  worker?: Worker;
  /** Role all: holds processing while the receiver is flooded (processing/ingest-first.ts). */
  ingestFirst?: IngestFirst;
  api: DbHandle;
  relay: Relay;
  enqueuer: FetchEnqueuer;
  reporter: ErrorReporter;
  /** Whether start() has finished: the database is migrated and every part runs. */
  readonly started: boolean;
  /** Waits for PostgreSQL (saying so while it waits), migrates it, then starts the relay, workers and retention. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function createRuntime(config: Config, log: Logger, opts: { handlers?: HandlerRegistry } = {}): Promise<Runtime> {
  const runsApi = config.role !== 'worker';
  const runsWorker = config.role !== 'api';
  const metrics = createMetrics();
  // One OAuth token cache per process, shared by the admin calls and the fetches (marketplace/oauth2.ts).
  const tokens = new AccessTokens();
  const reporter = new ErrorReporter(log, metrics.errors);
  const outages = outageReports(config, reporter);
  /**
   * Errors of parts that carry on. A part that uses one dependency (`on`) reports its loss as that outage;
   * an error an outage already reported explains is counted under its kind without a line of its own;
   * anything else is logged under its kind.
   */
  const report =
    (kind: string, message: string, on?: 'redis' | 'postgres') =>
    (err: unknown): void => {
      const redis = isRedisUnavailable(err);
      const postgres = isDatabaseUnavailable(err);
      if (on === 'redis' && redis) outages.redisDown(err);
      else if (on === 'postgres' && postgres) outages.postgresDown(err);
      else if ((redis && reporter.active(REDIS_DOWN)) || (postgres && reporter.active(POSTGRES_DOWN))) reporter.count(kind);
      else reporter.report(kind, err, message);
    };

  // Unset, nothing of OpenTelemetry is loaded: the import happens here or not at all.
  const tracing: Tracing | undefined = config.tracing ? await loadTracing(config.tracing, { role: config.role, log, reporter, registry: metrics.registry }) : undefined;
  const plural = (n: number) => `${n} notification${n === 1 ? '' : 's'}`;
  // One info line per finished batch, by company and outcome (lib/batch-summary.ts); a line per notification is debug.
  const received = new BatchSummary(log, (n) => `received ${plural(n)}`);
  const finished = new BatchSummary(log, (n) => `finished ${plural(n)}`);

  // A worker-only process uses this pool for the relay alone; the worker has its own, sized to its concurrency.
  const api = connectDatabase(config.databaseUrl, { max: runsApi ? config.dbPoolSize : 3, applicationName: `skyhook-${config.role}`, ...outages.postgresEvents });
  const notifications = createNotificationsRepository(api.pool);
  const producer = connectRedis(config, 'producer', 'skyhook-producer', outages.redisDown);
  producer.on('ready', outages.redisBack);

  const queue = createFetchQueue(producer, config.queuePrefix);
  queue.on('error', report('fetch_queue', 'the fetch queue met an error', 'redis'));
  const gate = new CompanyGate(producer, config.queuePrefix, gateOptions(config.fetch));
  const enqueuer = new FetchEnqueuer(queue, producer, notifications, gate, { attempts: config.fetch.attempts, timeoutMs: ENQUEUE_TIMEOUT_MS }, log, tracing);
  const gateError = report('company_gate', 'the company gate could not be read or told in Redis; states show what PostgreSQL knows', 'redis');
  const controls = companyControls(gate, { pendingResources: notifications.pendingResources, enqueue: (r) => enqueuer.enqueue(r) }, { timeoutMs: ENQUEUE_TIMEOUT_MS, log });
  const relay = new Relay(notifications, enqueuer, { intervalMs: config.relayIntervalMs, graceMs: config.relayGraceMs }, log, producer, report('relay', 'the relay could not queue committed notifications; it tries again shortly'));

  const companyStates = () => allCompanyStates(api.db, controls, gateError);
  let started = false;
  const startSteps: (() => void)[] = [() => relay.start()];
  const closers: [string, () => Promise<unknown>][] = [];
  let app: FastifyInstance | undefined;
  let worker: Worker | undefined;
  // One event loop for both: the workers yield to a flooded receiver (processing/ingest-first.ts).
  const ingestFirst = runsApi && runsWorker ? new IngestFirst((n) => metrics.jobsHeld.set(n)) : undefined;

  if (runsApi) {
    const directory = new WebhookDirectory(loadWebhookFrom(api.db, config.secretKey));
    let listener: { stop: () => Promise<void> } | undefined;
    startSteps.push(() => {
      listener = listenForWebhookChanges(config.databaseUrl, directory, report('webhook_listener', 'the webhook change listener met an error; it reconnects', 'postgres'));
    });
    const writer = new NotificationWriter(notifications, enqueuer, report('enqueue', 'queueing committed notifications failed; the relay queues them'), tracing);
    const services = createServices({
      db: api.db,
      notifications,
      enqueuer,
      config,
      metrics,
      tokens,
      controls,
      onGateError: gateError,
      onWebhookChange: () => directory.invalidate(),
    });
    const stream = new NotificationStream({
      listen: (channels, listener) => listen(config.databaseUrl, channels, listener),
      notifications,
      maxSubscribers: STREAM_MAX_SUBSCRIBERS,
      onError: report('notification_stream', 'the live stream met an error; it carries on', 'postgres'),
    });
    app = await buildApp({
      logger: log,
      trustProxy: config.trustProxy,
      requestTimeoutMs: config.requestTimeoutMs,
      started: () => started,
      pool: api.pool,
      redis: producer,
      receiver: {
        directory,
        writer,
        // Twice the accepted skew: a nonce is remembered for both sides of the timestamp window.
        nonces: new NonceStore(producer, config.queuePrefix, config.oauthTimestampSkewS),
        publicBaseUrl: config.publicBaseUrl,
        requireHttpsHrefs: config.requireHttpsHrefs,
        oauthTimestampSkewS: config.oauthTimestampSkewS,
        metrics,
        answered: ingestFirst && ((ms) => ingestFirst.answer(ms)),
        summary: received,
        tracing,
        reporter,
      },
      admin: { adminToken: config.adminToken, ...services, stream },
      console: { adminToken: config.adminToken, services, stream, sessions: createSessionStore(api.db), publicBaseUrl: config.publicBaseUrl },
      queues: [queue],
      companyStates,
      authFailures: { limit: config.authFailureLimit, windowMs: 60_000 },
      metrics,
      reporter,
    });
    closers.push(['http', () => app!.close()], ['webhook listener', async () => listener?.stop()]);
  }

  if (runsWorker) {
    // The jobs share their statements (fetch-start.ts, snapshots.ts), so a few connections serve any
    // concurrency; the rest wait for rare per-job writes (a failure, a gone resource).
    const workerDb = connectDatabase(config.databaseUrl, {
      max: Math.min(config.fetch.concurrency, WORKER_DB_CONNECTIONS),
      applicationName: 'skyhook-worker',
      ...outages.postgresEvents,
    });
    const connection = connectRedis(config, 'worker', 'skyhook-worker', outages.redisDown);
    connection.on('ready', outages.redisBack);
    const workerNotifications = createNotificationsRepository(workerDb.pool);
    const workerGate = new CompanyGate(connection, config.queuePrefix, gateOptions(config.fetch));
    // The parked resources a finished fetch frees get their jobs at once.
    const finishes = new GateFinishes(workerGate, (admitted) => enqueuer.addAdmitted(admitted), log);
    const fetchWorker = createFetchWorker({
      job: fetchJobDeps({
        db: workerDb,
        notifications: workerNotifications,
        connection,
        gate: workerGate,
        finishes,
        config,
        handlers: opts.handlers ?? builtInHandlers(),
        log,
        metrics,
        tokens,
        enqueue: (resources) => enqueuer.enqueue(resources),
        admit: ingestFirst && (() => ingestFirst.admit()),
        onError: report('fetch_slots', 'a fetch slot could not be settled in Redis; it lapses by itself', 'redis'),
        finished,
        tracing,
      }),
      connection,
      prefix: config.queuePrefix,
      concurrency: config.fetch.concurrency,
      backoff: config.fetch,
      tracing,
    });
    const workerError = report('fetch_worker', 'a fetch worker met an error; it carries on', 'redis');
    worker = fetchWorker;
    // Listened to from the start: BullMQ prints an unheard 'error' to stderr, a stack trace per retry.
    fetchWorker.on('error', workerError);
    fetchWorker.on('failed', (job, err) => log.debug({ jobId: job?.id, companyId: job?.data.companyId, err: err.message }, 'fetch attempt failed'));
    const pausedCompanies = new PausedCompanies({
      pool: workerDb.pool,
      redis: connection,
      prefix: config.queuePrefix,
      gate: workerGate,
      company: async (companyId) => (await workerDb.db.select().from(companiesTable).where(eq(companiesTable.id, companyId)).limit(1))[0],
      resume: controls.resume,
      kick: async (companyIds) => {
        const admitted = await workerGate.kick(companyIds);
        if (admitted.length > 0) await enqueuer.addAdmitted(admitted);
      },
      probe: settingsProbe(webhookSettingsApi(new MarketplaceClient({ timeoutMs: config.marketplaceTimeoutMs, tokens })), config.secretKey),
      probeIntervalMs: config.fetch.pausedProbeIntervalMs,
      log,
      onError: report('paused_companies', 'the paused-company loop met an error; it runs again shortly'),
    });
    const retention = createRetention({
      connection,
      prefix: config.queuePrefix,
      notifications: workerNotifications,
      retentionDays: config.retentionDays,
      log,
      onError: report('retention', 'the retention job met an error; it runs again within the hour'),
    });
    startSteps.push(() => {
      void fetchWorker.run().catch(workerError);
      ingestFirst?.start();
      retention.start();
      pausedCompanies.start();
    });
    closers.push(['ingest-first', async () => ingestFirst?.stop()]);
    // Running jobs finish (bounded); a job still running at the deadline is left to stalled-job recovery:
    // its lock lapses and another worker takes it (worker.close(true) would still wait for it). While Redis
    // is unreachable nothing can finish, and a graceful close would wait for Redis: the close is forced.
    const redisGone = () => connection.status !== 'ready';
    closers.push(
      [
        'fetch workers',
        () =>
          withTimeout(fetchWorker.close(redisGone()), config.shutdownTimeoutMs, 'worker close').catch((err: unknown) => {
            if (err instanceof TimeoutError) log.warn('running fetch jobs did not finish in time; they return to the queue when their lock lapses');
            else log.warn({ err: describeError(err) }, 'the fetch workers did not close cleanly; their running jobs return to the queue when their lock lapses');
            connection.disconnect();
          }),
      ],
      // Their places at the gate are given back before the connections close (else they lapse with their lease).
      ['gate finishes', () => finishes.drain()],
      ['retention', () => retention.close(redisGone())],
      ['paused companies', () => pausedCompanies.stop()],
      [
        'worker connections',
        async () => {
          await workerDb.pool.end();
          connection.disconnect();
        },
      ],
    );
  }

  if (!runsApi && config.opsPort !== undefined) {
    app = await buildOpsApp(log, { pool: api.pool, redis: producer, metrics, queues: [queue], started: () => started, reporter, companyStates });
    closers.unshift(['ops http', () => app!.close()]);
  }

  closers.push(
    ['relay', () => relay.stop()],
    ['fetch queue', () => queue.close()],
    ['producer connection', async () => producer.disconnect()],
    ['database pool', () => api.pool.end()],
    [
      'log summaries',
      async () => {
        received.flush();
        finished.flush();
      },
    ],
    // Last: the spans of everything above are exported before the process exits.
    ['tracing', async () => tracing?.shutdown()],
  );

  const stopping = new AbortController();
  return {
    app,
    worker,
    ingestFirst,
    api,
    relay,
    enqueuer,
    reporter,
    get started() {
      return started;
    },
    async start() {
      await waitForDatabase(config.databaseUrl, { onWait: outages.postgresDown, signal: stopping.signal });
      outages.postgresBack();
      for (const step of startSteps) step();
      started = true;
    },
    async close() {
      stopping.abort();
      for (const [name, close] of closers) {
        await withTimeout(close(), CLOSE_STEP_TIMEOUT_MS + (name === 'fetch workers' ? config.shutdownTimeoutMs : 0), `closing ${name}`).catch((err: unknown) =>
          log.warn({ err: describeError(err) }, err instanceof TimeoutError ? `closing ${name} did not finish in time` : `error while closing ${name}`),
        );
      }
    },
  };
}

/**
 * What a fetch job runs on (processing/fetch-job.ts): the caches and batchers one process's jobs share,
 * the marketplace client, and every write through the notifications repository.
 */
function fetchJobDeps(deps: {
  db: DbHandle;
  notifications: NotificationsRepository;
  connection: RedisClient;
  gate: CompanyGate;
  finishes: GateFinishes;
  config: Config;
  handlers: HandlerRegistry;
  log: Logger;
  metrics: Metrics;
  tokens: AccessTokens;
  enqueue: (resources: ResourceKey[]) => Promise<void>;
  admit?: () => Promise<void>;
  onError: (err: unknown) => void;
  finished: BatchSummary;
  tracing?: Tracing;
}): FetchJobDeps {
  const { notifications, config } = deps;
  const plans = new CachedPlans(deps.db.pool, [CLAIM_STATEMENT, STORE_STATEMENT], deps.log);
  const connections = new CompanyConnections(deps.db.db, config.secretKey, config.fetch.companyConcurrency);
  const starts = new FetchStarts(notifications, plans, deps.gate, deps.connection, config.queuePrefix, config.fetch.minIntervalMs, deps.onError);
  // Handlers write through drizzle, on the connection of the transaction that stores their snapshot. A
  // stored batch's jobs all complete in one turn, each with a BullMQ script: sent in one write.
  const snapshots = new SnapshotStore(notifications, plans, deps.handlers, (client) => drizzle({ client, schema }) as unknown as Tx, deps.tracing);
  const marketplace = new MarketplaceClient({
    timeoutMs: config.fetch.timeoutMs,
    connections: config.fetch.concurrency,
    tokens: deps.tokens,
    onCall: (operation, outcome) => {
      // The fetches themselves are counted as fetch outcomes; only their token requests here.
      if (operation === 'oauth.token') deps.metrics.marketplaceCalls.inc({ operation, outcome });
    },
  });
  return {
    admit: deps.admit,
    company: (companyId) => connections.get(companyId),
    begin: (request) => starts.begin(request),
    finish: (resource, max, answer) => void deps.finishes.finish({ ...resource, fetchKey: fetchKey(resource), max, answer }).catch(deps.onError),
    get: (href, connection) => fetchResource(marketplace, href, connection),
    store: (snapshot) => snapshots.store(snapshot),
    recordAttempt: notifications.recordAttempt,
    markGone: notifications.markGone,
    pause: async (attempt, revision, why) => {
      const paused = await notifications.park(attempt, revision, `GET ${attempt.href}: ${why}`);
      // If Redis cannot be told, the paused-company loop tells it from PostgreSQL within seconds.
      if (paused) await deps.gate.pause(attempt.companyId, [attempt]).catch(deps.onError);
      return paused;
    },
    forgetCompany: (companyId) => connections.forget(companyId),
    requeue: (resource) => deps.enqueue([resource]),
    now: () => new Date(),
    metrics: deps.metrics,
    finished: deps.finished,
    log: deps.log,
  };
}

/**
 * The one line said when Redis or PostgreSQL becomes unreachable, what Skyhook does meanwhile (by role),
 * rate-limited reminders while it lasts, and one line when it is back.
 */
function outageReports(config: Config, reporter: ErrorReporter) {
  const runsApi = config.role !== 'worker';
  const runsWorker = config.role !== 'api';
  const redisAt = config.redisClusterNodes
    ? `the Redis Cluster at ${config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')} (REDIS_CLUSTER_NODES)`
    : `Redis at ${withoutPassword(config.redisUrl)} (REDIS_URL)`;
  const postgresAt = `PostgreSQL at ${withoutPassword(config.databaseUrl)} (DATABASE_URL)`;
  const meanwhile = (parts: [boolean, string][]) =>
    parts
      .filter(([applies]) => applies)
      .map(([, text]) => text)
      .join('; ');
  const redisMeanwhile = meanwhile([
    [runsApi, 'Basic notifications are still stored and answered 200, and queued when it is back; OAuth ones are answered 503 (their nonce cannot be checked)'],
    [runsWorker, 'fetches wait for it'],
    [true, '/readyz answers 503'],
  ]);
  const postgresMeanwhile = meanwhile([
    [runsApi, 'notifications are answered 503 with Retry-After (nothing can be stored)'],
    [runsWorker, 'fetches wait for it'],
    [true, '/readyz answers 503'],
  ]);
  const postgresDown = (err: unknown) => reporter.report(POSTGRES_DOWN, err, `${postgresAt} is not reachable: ${postgresMeanwhile}`);
  const postgresBack = () => reporter.recovered(POSTGRES_DOWN, `${postgresAt} is reachable again`);
  return {
    redisDown: (err: unknown) => reporter.report(REDIS_DOWN, err, `${redisAt} is not reachable: ${redisMeanwhile}`),
    redisBack: () => reporter.recovered(REDIS_DOWN, `${redisAt} is reachable again`),
    postgresDown,
    postgresBack,
    /** For connectDatabase: a lost connection is an outage until a new one connects. */
    postgresEvents: { onError: postgresDown, onConnect: postgresBack },
  };
}
