/**
 * Connections to Redis (a standalone server or a Redis Cluster), and what a caller asks of them: whether
 * they are ready, whether Redis answers, which process is behind them, whether an error means Redis is
 * unreachable.
 */
import { Cluster, Redis, type ClusterOptions, type DNSLookupFunction, type RedisOptions } from 'ioredis';
import { describeError } from '../error-reporter.js';

/** A connection to a standalone Redis or to a Redis Cluster; every Skyhook key lives under one hash tag. */
export type RedisClient = Redis | Cluster;

export interface RedisNodeAddress {
  host: string;
  port: number;
}

/**
 * Where Redis is: a standalone server at `redisUrl`, or, when `redisClusterNodes` is set, a cluster
 * discovered from those seed nodes; `redisUrl` then supplies only the credentials and TLS (`rediss:`).
 */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes?: RedisNodeAddress[] | undefined;
}

type RedisKind = 'producer' | 'worker';

const retryStrategy = (times: number): number => Math.min(200 * times, 2000);
/** A producer's command fails fast; a worker's waits and retries forever, as BullMQ requires. */
const perRequest = (kind: RedisKind): RedisOptions => (kind === 'producer' ? { maxRetriesPerRequest: 1, commandTimeout: 2000 } : { maxRetriesPerRequest: null });
const keepHostNames: DNSLookupFunction = (address, callback) => callback(null, address);

/** The last error of each connection, so that a caller waiting for it (redisReady) can say why it is not ready. */
const lastErrors = new WeakMap<RedisClient, Error>();

/**
 * Two kinds of Redis connection. A producer (HTTP handlers, relay) fails fast when Redis is down, so a
 * request never waits for it: the relay re-sends later. A worker connection waits and retries forever,
 * as BullMQ requires (maxRetriesPerRequest: null). Either reconnects by itself; each error it meets on the
 * way goes to `onError` (a long-running process reports them, rate-limited: lib/error-reporter.ts), and
 * the last one is kept for redisReady's answer.
 */
export function connectRedis(target: RedisTarget, kind: RedisKind, name: string, onError?: (err: Error) => void): RedisClient {
  const redis = target.redisClusterNodes
    ? connectCluster(target.redisUrl, target.redisClusterNodes, kind, name)
    : new Redis(target.redisUrl, { connectionName: name, lazyConnect: false, retryStrategy, enableOfflineQueue: kind === 'worker', ...perRequest(kind) });
  redis.on('error', (err: Error) => {
    lastErrors.set(redis, err);
    onError?.(err);
  });
  return redis;
}

function connectCluster(url: string, nodes: RedisNodeAddress[], kind: RedisKind, name: string): Cluster {
  // Per-node options. ioredis forces an offline queue and no reconnection on each node connection (the
  // cluster reconnects and re-reads the slots instead), so failing fast is the cluster's own
  // enableOfflineQueue below. BullMQ reads maxRetriesPerRequest from here, and duplicates these options
  // for a worker's blocking connection.
  const redisOptions: RedisOptions = {
    connectionName: name,
    ...credentialsOf(url),
    ...perRequest(kind),
  };
  const options: ClusterOptions = {
    lazyConnect: false,
    enableOfflineQueue: kind === 'worker',
    clusterRetryStrategy: retryStrategy,
    // ioredis re-reads the slot map only after a MOVED or a reconnect unless told to: a master that
    // restarted or joined is then seen within seconds by /readyz and the relay's restart check.
    slotsRefreshInterval: 5000,
    redisOptions,
    // TLS certificates name the hosts the cluster announces, not the addresses DNS resolves them to
    // (the ioredis README's advice for clusters behind TLS, such as ElastiCache).
    ...(redisOptions.tls ? { dnsLookup: keepHostNames } : {}),
  };
  return new Cluster(nodes, options);
}

/** User, password and TLS of a redis:// or rediss:// URL: what a cluster's nodes share. */
function credentialsOf(url: string): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  const parsed = new URL(url);
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * The servers that hold data: the server itself, or every master the cluster's slot map names. A command
 * without a key (INFO, SCAN) reaches one random node of a cluster, so per-server questions ask each.
 * Undefined while the client has no connection to one of them: ioredis drops a node it lost from its
 * pool (until the next slot refresh), and the remaining masters alone would look like a healthy cluster.
 */
export function masterNodes(redis: RedisClient): Redis[] | undefined {
  if (!(redis instanceof Cluster)) return [redis];
  const connected = new Map(redis.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]));
  const serving = new Set(redis.slots.map((owners) => owners[0]).filter((key) => key !== undefined));
  const masters = [...serving].map((key) => connected.get(key));
  return masters.length > 0 && masters.every((node) => node !== undefined) ? (masters as Redis[]) : undefined;
}

/** Errors that mean "Redis cannot be reached now", not "this command is wrong": worth waiting out. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const UNREACHABLE_MESSAGES = /Connection is closed|Stream isn't writeable|Reached the max retries per request|Command timed out|None of startup nodes is available|Failed to refresh slots cache|ClusterAllFailedError|Redis not ready|enqueue timed out/;

export function isRedisUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  return (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) || UNREACHABLE_MESSAGES.test(`${String(e.name)}: ${String(e.message)}`);
}

/** Resolves when the connection is ready, or rejects after `ms`. */
export function redisReady(redis: RedisClient, ms = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      const last = lastErrors.get(redis);
      reject(new Error(`Redis not ready after ${ms} ms${last ? `: ${describeError(last)}` : ''}`));
    }, ms);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/**
 * Whether Redis can serve Skyhook now (/readyz). A standalone server answers PING. On a cluster every
 * master of the slot map must answer and report `cluster_state:ok` (every slot served): a PING would
 * reach one random node and say nothing about the others.
 */
export async function redisAnswers(redis: RedisClient): Promise<boolean> {
  try {
    if (!(redis instanceof Cluster)) return (await redis.ping()) === 'PONG';
    const masters = masterNodes(redis);
    if (!masters) return false;
    const infos = await Promise.all(masters.map((node) => node.cluster('INFO')));
    return infos.every((info) => /^cluster_state:ok\s*$/m.test(info));
  } catch {
    return false;
  }
}

/**
 * The identity of the running Redis process(es): the server's `run_id`, or the masters' run_ids, sorted
 * and joined. It changes when any of them restarted (and, on a cluster, when a failover or resharding
 * changed the masters: the relay then re-queues once more than needed, which deduplication absorbs).
 * Undefined when it cannot be told now (a master lost); rejects when a server does not answer.
 */
export async function redisRunId(redis: RedisClient): Promise<string | undefined> {
  const masters = masterNodes(redis);
  if (!masters) return undefined;
  const ids = await Promise.all(masters.map(async (node) => /run_id:(\w+)/.exec(await node.info('server'))?.[1]));
  if (ids.some((id) => id === undefined)) return undefined;
  return ids.sort().join(',');
}
