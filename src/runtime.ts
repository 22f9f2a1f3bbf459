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
import { allConnectionWarnings, ConnectionUsage } from './companies/usage.js';
import type { Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { Logger } from 'pino';
import { buildApp, buildOpsApp, type OpsDeps } from './app.js';
import type { Config } from './config.js';
import { connectDatabase, type DbHandle } from './db/client.js';
import { waitForDatabase } from './db/migrate.js';
import { maintainPartitions } from './db/partitions.js';
import { createNotificationsRepository, type NotificationsRepository } from './notifications/postgres.js';
import { BatchSummary } from './lib/batch-summary.js';
import { describeError, ErrorReporter } from './lib/error-reporter.js';
import type { Tracing } from './lib/tracing.js';
import { createMetrics } from './lib/metrics.js';
import { connectRedis, redisRunId, type RedisClient } from './lib/redis/connection.js';
import { errorPolicy, outageReports } from './lib/outages.js';
import { TimeoutError, withTimeout } from './lib/timeout.js';
import { drizzle } from 'drizzle-orm/node-postgres';
import * as schema from './db/schema/index.js';
import { MarketplaceClient } from './marketplace/client.js';
import { AccessTokens } from './marketplace/oauth2.js';
import { CompanyConnections } from './companies/connections.js';
import { CompanyMirror } from './companies/mirror.js';
import { createCompanyStates, sayThrottled } from './companies/postgres.js';
import { Gate, GateFinishes, type GateStart, type GateStartRequest } from './gate/gate.js';
import { destinationConnection } from './destinations/connections.js';
import { createDestinationStates, type Recorded } from './destinations/postgres.js';
import type { AttemptEffect, DeliveryKey } from './destinations/lifecycle.js';
import { destinationStateOf } from './destinations/transitions.js';
import { createDeliveryWorker, probeDestination, type DeliveryJobDeps } from './delivery/deliver-job.js';
import { createDeliveryQueue, destinationGateOptions } from './delivery/delivery.queue.js';
import { DeliveryEnqueuer } from './delivery/enqueue.js';
import { DeliveryLoop } from './delivery/loop.js';
import { DeliverySender } from './delivery/send.js';
import { Batcher, splitOnFailure } from './lib/batcher.js';
import { isDatabaseUnavailable } from './lib/database-unavailable.js';
import { webhookSettingsApi } from './marketplace/webhook-settings.js';
import { FetchEnqueuer } from './processing/enqueue.js';
import { createFetchWorker, fetchResource, FetchStarts, type FetchJobDeps } from './processing/fetch-job.js';
import { companyGateOptions, createFetchQueue, fetchKey } from './processing/fetch.queue.js';
import { SnapshotStore } from './processing/snapshots.js';
import { IngestFirst } from './processing/ingest-first.js';
import { builtInHandlers, type HandlerRegistry } from './processing/handlers/index.js';
import { Relay } from './processing/relay.js';
import { createRetention } from './processing/retention.js';
import { listen } from './db/listen.js';
import { listenForWebhookChanges, loadWebhookFrom, NonceStore, WebhookDirectory } from './receiver/authenticate.js';
import { NotificationWriter } from './receiver/ingest.js';

import { createKeys, listenForKeyChanges } from './access/keys.js';
import { createSessionStore } from './access/sessions.js';
import { createServices } from './services/index.js';
import { NotificationStream } from './services/notification-stream.js';

const WORKER_DB_CONNECTIONS = 8;
/** Live stream clients (SSE, `notifications tail`) one process serves at once; each costs a socket and a filter. */
const STREAM_MAX_SUBSCRIBERS = 100;
/** A producer never waits longer than this for Redis: the relay covers what it could not queue. */
const ENQUEUE_TIMEOUT_MS = 1000;
/** No part's close may hold the shutdown longer than this (a Redis that is down, say). */
const CLOSE_STEP_TIMEOUT_MS = 5000;

export interface Runtime {
  /** The HTTP app (roles api and all; a worker's ops routes when OPS_PORT is set); not listening yet. */
  app?: FastifyInstance;
  /** The fetch worker (roles worker and all): one BullMQ Worker running WORKER_CONCURRENCY jobs. */
  worker?: Worker;
  /** Role all: holds processing while the receiver is flooded (processing/ingest-first.ts). */
  ingestFirst?: IngestFirst;
  api: DbHandle;
  /** Whether start() has finished: the database is migrated and every part runs. */
  readonly started: boolean;
  /** Waits for PostgreSQL (saying so while it waits), migrates it, then starts the relay, workers and retention. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** What every role shares: the errors' policy, the API pool, the producer connection, the queue and the gate. */
async function createCore(config: Config, log: Logger) {
  const runsApi = config.role !== 'worker';
  const metrics = createMetrics();
  const reporter = new ErrorReporter(log, metrics.errors);
  const outages = outageReports(config, reporter);
  const report = errorPolicy(reporter, outages);
  // Unset, nothing of OpenTelemetry is loaded: the import happens here or not at all.
  const tracing: Tracing | undefined = config.tracing
    ? (await import('./lib/tracing-otel.js')).startTracing(config.tracing, { role: config.role, log, reporter, registry: metrics.registry })
    : undefined;
  const plural = (n: number) => `${n} notification${n === 1 ? '' : 's'}`;
  const deliveries = (n: number) => `${n} deliver${n === 1 ? 'y' : 'ies'}`;

  // A worker-only process uses this pool for the relay alone; the worker has its own, sized to its concurrency.
  const api = connectDatabase(config.databaseUrl, { max: runsApi ? config.dbPoolSize : 3, applicationName: `skyhook-${config.role}`, ...outages.postgresEvents });
  const notifications = createNotificationsRepository(api.pool, log);
  const producer = connectRedis(config, 'producer', 'skyhook-producer', outages.redisDown);
  producer.on('ready', outages.redisBack);
  const queue = createFetchQueue(producer, config.queuePrefix);
  queue.on('error', report('fetch_queue', 'the fetch queue met an error', 'redis'));
  const gate = new Gate(producer, config.queuePrefix, 'company', companyGateOptions(config.fetch));
  const enqueuer = new FetchEnqueuer(queue, producer, notifications, gate, { attempts: config.fetch.attempts, timeoutMs: ENQUEUE_TIMEOUT_MS }, log, tracing);
  // One OAuth token cache per process, shared by the admin calls and the fetches (marketplace/oauth2.ts).
  const tokens = new AccessTokens();
  // The companies' last successful calls, written at most once a minute each (SPEC §14; companies/usage.ts).
  const usage = new ConnectionUsage(api.db, report('connection_usage', "a company's last use of its connection could not be written; a later call writes it", 'postgres'));
  const onUsed = (companyId: string | undefined) => usage.used(companyId);
  const companies = createCompanyStates({
    db: api.db,
    gate,
    redis: producer,
    prefix: config.queuePrefix,
    secretKey: config.secretKey,
    settings: webhookSettingsApi(new MarketplaceClient({ timeoutMs: config.marketplaceTimeoutMs, tokens, onUsed, onCall: (operation, outcome) => metrics.marketplaceCalls.inc({ operation, outcome }) })),
    queueWaiting: (companyId) => enqueuer.queueWaiting(companyId),
    fetchKey,
    defaultMaxFetches: config.fetch.companyConcurrency,
    probeIntervalMs: config.fetch.pausedProbeIntervalMs,
    gateTimeoutMs: ENQUEUE_TIMEOUT_MS,
    log,
    onGateError: report('company_gate', 'the company gate could not be read or told in Redis; states show what PostgreSQL knows, and the gate is mended from it', 'redis'),
  });
  // Deliveries (SPEC §5.2): their own queue, and a gate per destination.
  const deliveryQueue = createDeliveryQueue(producer, config.queuePrefix);
  deliveryQueue.on('error', report('delivery_queue', 'the delivery queue met an error', 'redis'));
  const destinationGate = new Gate(producer, config.queuePrefix, 'destination', destinationGateOptions());
  const destinations = createDestinationStates({
    db: api.db,
    gate: destinationGate,
    wake: (key) => deliveryEnqueuer.enqueue([key]),
    schedule: config.delivery.schedule,
    log,
    onGateError: report('destination_gate', "a destination's gate could not be told in Redis; it is mended from PostgreSQL", 'redis'),
  });
  const deliveryEnqueuer = new DeliveryEnqueuer(deliveryQueue, destinationGate, ENQUEUE_TIMEOUT_MS);
  return {
    config,
    log,
    metrics,
    reporter,
    outages,
    report,
    tracing,
    tokens,
    onUsed,
    deliveryQueue,
    destinationGate,
    destinations,
    deliveryEnqueuer,
    // One info line per finished batch, by company and outcome (lib/batch-summary.ts); a line per notification is debug.
    received: new BatchSummary(log, (n) => `received ${plural(n)}`),
    finished: new BatchSummary(log, (n) => `finished ${plural(n)}`),
    // The delivery attempts answered (or not), by company and outcome (delivered, retry, failed, gone).
    sent: new BatchSummary(log, (n) => `sent ${deliveries(n)}`, { counted: 'deliveries' }),
    api,
    notifications,
    producer,
    queue,
    enqueuer,
    companies,
    relay: new Relay(notifications, enqueuer, { intervalMs: config.relayIntervalMs, graceMs: config.relayGraceMs }, log, () => redisRunId(producer), report('relay', 'the relay could not queue committed notifications; it tries again shortly')),
    companyStates: () => companies.troubled(),
    connectionWarnings: () => allConnectionWarnings(api.db),
    /** The destinations with deliveries pending, failing or disabled, each in its one state (SPEC §5.2), for the gauges. */
    destinationStates: async () => {
      const watched = await destinations.watched();
      const gates = await destinationGate.views(watched.map((d) => d.id));
      return watched.map((d, i) => ({ ...d, state: destinationStateOf(d, gates[i]) }));
    },
    /** Who may call what (SPEC §10.1): the guard of every HTTP route. */
    access: { adminToken: config.adminToken, metricsToken: config.metricsToken, keys: createKeys(api.db) },
    authFailures: { limit: config.authFailureLimit, windowMs: 60_000 },
    // Roles api and all together: the workers yield to a flooded receiver (processing/ingest-first.ts).
    ingestFirst: runsApi && config.role !== 'api' ? new IngestFirst((n) => metrics.jobsHeld.set(n)) : undefined,
    started: false,
  };
}

type Core = Awaited<ReturnType<typeof createCore>>;

/** What a role adds: its HTTP app or worker, what start() starts, and what close() closes, in order. */
interface RolePart {
  app?: FastifyInstance;
  worker?: Worker;
  start?: () => void;
  closers: [string, () => Promise<unknown>][];
}

export async function createRuntime(config: Config, log: Logger, opts: { handlers?: HandlerRegistry } = {}): Promise<Runtime> {
  const core = await createCore(config, log);
  const { api, relay, producer, queue, received, finished, sent, tracing, outages } = core;
  // What the probes and /metrics read: served by the main app, or by a worker's ops app.
  const ops: OpsDeps = { pool: api.pool, redis: producer, metrics: core.metrics, queues: [queue], started: () => core.started, reporter: core.reporter, companyStates: core.companyStates, connectionWarnings: core.connectionWarnings, destinationStates: core.destinationStates, access: core.access, authFailures: core.authFailures };
  const parts: RolePart[] = [];
  if (config.role !== 'worker') parts.push(await apiRole(core, ops));
  if (config.role !== 'api') parts.push(workerRole(core, opts.handlers ?? builtInHandlers()));
  if (config.role === 'worker' && config.opsPort !== undefined) {
    const app = await buildOpsApp(log, ops);
    parts.unshift({ app, closers: [['ops http', () => app.close()]] });
  }
  const closers: RolePart['closers'] = [
    ...parts.flatMap((p) => p.closers),
    ['relay', () => relay.stop()],
    ['fetch queue', () => queue.close()],
    ['delivery queue', () => core.deliveryQueue.close()],
    ['producer connection', async () => producer.disconnect()],
    ['database pool', () => api.pool.end()],
    ['log summaries', async () => (received.flush(), finished.flush(), sent.flush())],
    // Last: the spans of everything above are exported before the process exits.
    ['tracing', async () => tracing?.shutdown()],
  ];

  const stopping = new AbortController();
  return {
    app: parts.find((p) => p.app)?.app,
    worker: parts.find((p) => p.worker)?.worker,
    ingestFirst: core.ingestFirst,
    api,
    get started() {
      return core.started;
    },
    async start() {
      await waitForDatabase(config.databaseUrl, { onWait: outages.postgresDown, signal: stopping.signal });
      outages.postgresBack();
      await partitionsAhead(api.pool, log);
      relay.start();
      for (const part of parts) part.start?.();
      core.started = true;
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
 * At start-up, every role makes the growing tables' partitions ahead (SPEC §5.3): a process that was down for
 * days finds today's before it stores anything. A role that may not change the schema (docs/operations.md,
 * "A database role for the service") starts all the same: the owner's `skyhook partitions maintain` makes
 * them, and the log says when that falls behind.
 */
async function partitionsAhead(pool: pg.Pool, log: Logger): Promise<void> {
  try {
    const { made, owner, daysAhead } = await maintainPartitions(pool, {});
    if (made.length > 0) log.info({ made: made.length }, 'partitions made ahead');
    if (!owner && daysAhead < 2) log.warn({ daysAhead }, 'partitions run out soon, and this role may not make them: run `skyhook partitions maintain` as the database owner');
  } catch (err) {
    // A lock the service's own long reads held too long, say: the worker's hourly pass tries again, and rows meanwhile land in the default partition rather than nowhere.
    log.warn({ err: describeError(err) }, 'partitions could not be made ahead at start-up; the retention job tries again within the hour');
  }
}

/** Roles api and all: the receiver, the admin API, the console and the live stream, on one HTTP app. */
async function apiRole(core: Core, ops: OpsDeps): Promise<RolePart> {
  const { config, log, notifications, enqueuer, report, metrics, tracing, reporter, api, producer, ingestFirst } = core;
  const directory = new WebhookDirectory(loadWebhookFrom(api.db, config.secretKey));
  let listener: { stop: () => Promise<void> } | undefined;
  let keysListener: { stop: () => Promise<void> } | undefined;
  const services = createServices({
    db: api.db,
    notifications,
    enqueuer,
    config,
    metrics,
    tokens: core.tokens,
    onUsed: core.onUsed,
    states: core.companies,
    destinations: { states: core.destinations, gate: core.destinationGate, enqueue: (keys) => core.deliveryEnqueuer.enqueue(keys) },
    onBackgroundError: report('admin_background', "a destination's gate or the events' listener met an error; the answer carries on without it"),
    onOutboundCleanupError: report('outbound_cleanup', "a failed lead, quote or decline call's row could not be settled; it stays sending and a repeat takes it over once stale", 'postgres'),
    onWebhookChange: () => directory.invalidate(),
    keys: core.access.keys,
  });
  const stream = new NotificationStream({
    listen: (channels, listener) => listen(config.databaseUrl, channels, listener),
    notifications,
    maxSubscribers: STREAM_MAX_SUBSCRIBERS,
    onError: report('notification_stream', 'the live stream met an error; it carries on', 'postgres'),
  });
  const app = await buildApp({
    ...ops,
    logger: log,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.requestTimeoutMs,
    receiver: {
      directory,
      writer: new NotificationWriter(notifications, enqueuer, report('enqueue', 'queueing committed notifications failed; the relay queues them'), tracing),
      // A nonce is remembered while its timestamp is within the accepted skew (receiver/authenticate.ts).
      nonces: new NonceStore(producer, config.queuePrefix, config.oauthTimestampSkewS),
      publicBaseUrl: config.publicBaseUrl,
      requireHttpsHrefs: config.requireHttpsHrefs,
      oauthTimestampSkewS: config.oauthTimestampSkewS,
      metrics,
      answered: ingestFirst && ((ms) => ingestFirst.answer(ms)),
      summary: core.received,
      tracing,
      reporter,
    },
    admin: { ...services, stream },
    console: { adminToken: config.adminToken, services, stream, sessions: createSessionStore(api.db), keys: core.access.keys, publicBaseUrl: config.publicBaseUrl },
  });
  return {
    app,
    start: () => {
      listener = listenForWebhookChanges(config.databaseUrl, directory, report('webhook_listener', 'the webhook change listener met an error; it reconnects', 'postgres'));
      keysListener = listenForKeyChanges(config.databaseUrl, core.access.keys, report('keys_listener', "the keys' change listener met an error; keys are read from PostgreSQL until it reconnects", 'postgres'));
    },
    closers: [
      ['http', () => app.close()],
      ['webhook listener', async () => listener?.stop()],
      ['keys listener', async () => keysListener?.stop()],
    ],
  };
}

/** Roles worker and all: the fetch worker with its own pool and connection, the paused-company loop, retention. */
function workerRole(core: Core, handlers: HandlerRegistry): RolePart {
  const { config, log, outages, report, enqueuer, ingestFirst } = core;
  // The jobs share their statements (fetch-job.ts FetchStarts, snapshots.ts), so a few connections serve any
  // concurrency; the rest wait for rare per-job writes (a failure, a gone resource).
  // Generic plans: PostgreSQL would otherwise plan the claim and the store anew for every batch (their
  // custom plans look cheaper than a generic one sized for ten keys), which at a steady rate costs more than
  // running them. Their names, and so their kept plans, wait for db/cached-plans.ts; the worker's other
  // statements are lookups by key, whose generic plan is the custom one.
  const workerDb = connectDatabase(config.databaseUrl, {
    max: Math.min(config.fetch.concurrency, WORKER_DB_CONNECTIONS),
    applicationName: 'skyhook-worker',
    genericPlans: true,
    ...outages.postgresEvents,
  });
  const connection = connectRedis(config, 'worker', 'skyhook-worker', outages.redisDown);
  connection.on('ready', outages.redisBack);
  const notifications = createNotificationsRepository(workerDb.pool, log);
  const gate = new Gate(connection, config.queuePrefix, 'company', companyGateOptions(config.fetch));
  // The parked resources a finished fetch frees get their jobs at once.
  const finishes = new GateFinishes(gate, (handedOut) => enqueuer.addHandedOut(handedOut), sayThrottled(log));
  const fetchWorker = createFetchWorker({
    job: fetchJobDeps(core, { db: workerDb, notifications, gate, finishes, handlers }),
    connection,
    prefix: config.queuePrefix,
    concurrency: config.fetch.concurrency,
    backoff: config.fetch,
    tracing: core.tracing,
  });
  const workerError = report('fetch_worker', 'a fetch worker met an error; it carries on', 'redis');
  // Listened to from the start: BullMQ prints an unheard 'error' to stderr, a stack trace per retry.
  fetchWorker.on('error', workerError);
  fetchWorker.on('failed', (job, err) => log.debug({ jobId: job?.id, companyId: job?.data.companyId, err: err.message }, 'fetch attempt failed'));
  const { mirror, retention } = workerLoops(core, { connection, gate, pool: workerDb.pool, notifications });
  const delivery = deliveryWorker(core, { db: workerDb, connection });
  // Running jobs finish (bounded); a job still running at the deadline is left to stalled-job recovery:
  // its lock lapses and another worker takes it (worker.close(true) would still wait for it). While Redis
  // is unreachable nothing can finish, and a graceful close would wait for Redis: the close is forced.
  const redisGone = () => connection.status !== 'ready';
  const closeWorker = () =>
    withTimeout(fetchWorker.close(redisGone()), config.shutdownTimeoutMs, 'worker close').catch((err: unknown) => {
      if (err instanceof TimeoutError) log.warn('running fetch jobs did not finish in time; they return to the queue when their lock lapses');
      else log.warn({ err: describeError(err) }, 'the fetch workers did not close cleanly; their running jobs return to the queue when their lock lapses');
      connection.disconnect();
    });
  return {
    worker: fetchWorker,
    start: () => {
      void fetchWorker.run().catch(workerError);
      delivery.start();
      ingestFirst?.start();
      retention.start();
      mirror.start();
    },
    closers: [
      ['ingest-first', async () => ingestFirst?.stop()],
      ['fetch workers', closeWorker],
      ...delivery.closers,
      // Their places at the gate are given back before the connections close (else they lapse with their lease).
      ['gate finishes', () => finishes.drain()],
      ['retention', () => retention.close(redisGone())],
      ['company mirror', () => mirror.stop()],
      ['worker connections', async () => (await workerDb.pool.end(), connection.disconnect())],
    ],
  };
}

/** The worker's periodic parts: the companies' mirror (hand-outs, mending, probes) and retention. */
function workerLoops(core: Core, own: { connection: RedisClient; gate: Gate; pool: pg.Pool; notifications: NotificationsRepository }) {
  const { config, log, report, enqueuer } = core;
  const { connection, gate, pool, notifications } = own;
  const mirror = new CompanyMirror({
    states: core.companies,
    handOut: async (companyIds) => enqueuer.addHandedOut(await gate.handOut(companyIds)),
    probeIntervalMs: config.fetch.pausedProbeIntervalMs,
    onError: report('company_mirror', "the companies' mirror loop met an error; it runs again shortly"),
  });
  const retention = createRetention({
    connection,
    prefix: config.queuePrefix,
    pool,
    resources: notifications,
    deliveries: core.destinations,
    countExpired: (n) => core.metrics.deliveries.inc({ outcome: 'expired' }, n),
    retentions: { notifications: config.retentionDays, events: config.eventsRetentionDays, audit: config.auditRetentionDays },
    log,
    onError: report('retention', 'the retention job met an error; it runs again within the hour'),
  });
  return { mirror, retention };
}

/**
 * What a fetch job runs on (processing/fetch-job.ts): the caches and batchers one process's jobs share,
 * the marketplace client, and every write through the notifications repository.
 */
function fetchJobDeps(core: Core, own: { db: DbHandle; notifications: NotificationsRepository; gate: Gate; finishes: GateFinishes; handlers: HandlerRegistry }): FetchJobDeps {
  const { config, metrics, enqueuer, ingestFirst } = core;
  const { notifications, gate } = own;
  const onError = core.report('fetch_gate', "the company gate in Redis missed a fetch's end or a pause; places lapse by themselves, pauses are mended from PostgreSQL", 'redis');
  const connections = new CompanyConnections(own.db.db, config.secretKey, config.fetch.companyConcurrency);
  const starts = new FetchStarts(notifications, gate, config.queuePrefix, config.fetch.minIntervalMs);
  // Handlers write through drizzle, on the connection of the transaction that stores their snapshot.
  const queueDeliveries = core.report('delivery_enqueue', "queueing deliveries after their commit failed; the delivery relay queues them", 'redis');
  const deliver = (keys: DeliveryKey[]) => void core.deliveryEnqueuer.enqueue(keys).catch((err: unknown) => queueDeliveries(err, { companyIds: [...new Set(keys.map((k) => k.companyId))] }));
  const snapshots = new SnapshotStore(notifications, own.handlers, (client) => drizzle({ client, schema }), deliver, core.tracing);
  const marketplace = new MarketplaceClient({
    timeoutMs: config.fetch.timeoutMs,
    connections: config.fetch.concurrency,
    tokens: core.tokens,
    onUsed: core.onUsed,
    onCall: (operation, outcome) => {
      // The fetches themselves are counted as fetch outcomes; only their token requests here.
      if (operation === 'oauth.token') metrics.marketplaceCalls.inc({ operation, outcome });
    },
  });
  return {
    admit: ingestFirst && (() => ingestFirst.admit()),
    company: (companyId) => connections.get(companyId),
    begin: (request) => starts.begin(request),
    finish: (resource, max, answer) => void own.finishes.finish({ id: resource.companyId, item: fetchKey(resource), max, answer }).catch(onError),
    get: (href, connection) => fetchResource(marketplace, href, connection),
    store: (snapshot) => snapshots.store(snapshot),
    retry: notifications.retry,
    fail: notifications.fail,
    markGone: notifications.markGone,
    pause: core.companies.pause,
    forgetCompany: (companyId) => connections.forget(companyId),
    requeue: (resource) => enqueuer.enqueue([resource]),
    now: () => new Date(),
    metrics,
    finished: core.finished,
  };
}

/**
 * Role worker and all: the delivery worker (SPEC §5.2), on the worker's pool and Redis connection, with
 * its own BullMQ worker, its destinations' gate, and the loop of relay, hand-outs, repair and probes.
 */
function deliveryWorker(core: Core, own: { db: DbHandle; connection: RedisClient }): { start: () => void; closers: RolePart['closers'] } {
  const { config, metrics, log, report } = core;
  const gate = new Gate(own.connection, config.queuePrefix, 'destination', destinationGateOptions());
  const onError = report('delivery_gate', "a destination's gate in Redis missed a request's end; places lapse by themselves", 'redis');
  // The jobs' statements on the worker's own pool and connection, as the fetches' are.
  const states = createDestinationStates({ db: own.db.db, gate, wake: (key) => core.deliveryEnqueuer.enqueue([key]), schedule: config.delivery.schedule, log, onGateError: onError });
  // The gate says a hold by destination only: its company is kept from the answer that asked it (one entry per destination that ever did).
  const throttledCompany = new Map<string, string>();
  const finishes = new GateFinishes(gate, (handedOut) => core.deliveryEnqueuer.addHandedOut(handedOut), (destinationId, until, why) =>
    log.warn({ companyId: throttledCompany.get(destinationId), destinationId, state: 'throttled', until: new Date(until).toISOString(), reason: why }, 'a destination asked to slow down: its deliveries are held, then paced'),
  );
  const starts = new Batcher<GateStartRequest, GateStart>(async (requests) => (await gate.start(requests, 0)).map((value) => ({ ok: true, value })), { maxBatch: 500 });
  // The attempts of the process's concurrent requests are recorded together: one commit for a batch (group commit).
  const records = new Batcher<Recorded, AttemptEffect>(splitOnFailure((items) => states.recordMany(items), isDatabaseUnavailable), { maxBatch: 64 });
  const defaults = { concurrency: config.delivery.destinationConcurrency, timeoutMs: config.delivery.timeoutMs };
  const sender = new DeliverySender(config.delivery.addresses);
  const job: DeliveryJobDeps = {
    connect: (d) => destinationConnection(d, d.destination, config.secretKey, defaults),
    claim: states.claim,
    nextDue: states.nextDue,
    record: (attempt, verdict, opts) => records.add({ attempt, verdict, probe: opts.probe }),
    start: (request) => starts.add(request),
    finish: (key, answer) => {
      if (answer.kind === 'throttled') throttledCompany.set(key.destinationId, key.companyId);
      void finishes.finish({ id: key.destinationId, item: key.destinationId, max: 1, answer }).catch(onError);
    },
    send: (delivery) => sender.send(delivery),
    requeue: (key) => core.deliveryEnqueuer.enqueue([key]),
    schedule: config.delivery.schedule,
    bodyLimit: config.delivery.bodyLimit,
    metrics,
    sent: core.sent,
    log,
    now: () => new Date(),
  };
  const worker = createDeliveryWorker({ job, connection: own.connection, prefix: config.queuePrefix, concurrency: config.delivery.concurrency });
  const workerError = report('delivery_worker', 'a delivery worker met an error; it carries on', 'redis');
  worker.on('error', workerError);
  // A delivery's own failures are recorded by the job; a job that throws met something else (PostgreSQL out of reach, say): BullMQ retries it.
  const jobThrew = report('delivery_job', 'a delivery job threw; BullMQ tries it again and the relay covers it');
  worker.on('failed', (job, err) => jobThrew(err, { companyId: job?.data.companyId, destinationId: job?.data.destinationId }));
  const loop = new DeliveryLoop({
    states: core.destinations,
    enqueuer: core.deliveryEnqueuer,
    probe: (id) => probeDestination({ ...job, oldestPending: states.oldestPending }, id),
    disableAfterDays: config.delivery.disableAfterDays,
    onError: report('delivery_loop', "the deliveries' loop met an error; it runs again shortly"),
  });
  return {
    start: () => {
      void worker.run().catch(workerError);
      loop.start();
    },
    closers: [
      ['delivery workers', () => withTimeout(worker.close(own.connection.status !== 'ready'), config.shutdownTimeoutMs, 'delivery worker close')],
      ['delivery gate finishes', () => finishes.drain()],
      ['delivery loop', () => loop.stop()],
      ['delivery connections', () => sender.close()],
    ],
  };
}
