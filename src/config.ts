/**
 * The one validated configuration (SPEC §3). Read once at start-up; a bad or missing value stops the
 * process with one clear line naming the variable. Nothing else in the code reads process.env, but for the
 * OpenTelemetry SDK (lib/tracing-otel.ts), which reads the standard OTEL_* variables itself.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { withoutPassword } from './lib/redact.js';
import type { RedisNodeAddress } from './lib/redis/connection.js';
import type { TracingConfig } from './lib/tracing.js';
import { parseAllowList } from './lib/addresses.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Used outside production only, with a loud warning: never a secret anybody relies on. */
const DEVELOPMENT_SECRET_KEY = Buffer.alloc(32, 'skyhook-development-key-not-secret');

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** `250` (ms), `5s`, `5m`, `2h`; undefined when it is none of these. */
function durationMs(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
}

/** `host:port`, or `[ipv6]:port`. */
const NODE_ADDRESS = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:,[\]]+)):(\d{1,5})$/;

function parseNodeAddress(entry: string): RedisNodeAddress | undefined {
  const match = NODE_ADDRESS.exec(entry);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) return undefined;
  return { host: (match[1] ?? match[2])!, port };
}

/** Comma-separated seed nodes of a Redis Cluster; every entry must be an address. */
const clusterNodes = z
  .string()
  .transform((value, ctx) => {
    const entries = value.split(',').map((s) => s.trim()).filter(Boolean);
    const nodes = entries.map(parseNodeAddress);
    const bad = entries.filter((_, i) => nodes[i] === undefined);
    if (entries.length === 0 || bad.length > 0) {
      const got = bad.length > 0 ? ` (not an address: ${bad.map((b) => JSON.stringify(b)).join(', ')})` : '';
      ctx.addIssue({ code: 'custom', message: `must be comma-separated host:port seed nodes of a Redis Cluster, such as redis-1:6379,redis-2:6379${got}` });
      return z.NEVER;
    }
    return nodes as RedisNodeAddress[];
  });

/** OTLP over HTTP only: the gRPC exporter (and its native dependencies) is not shipped. */
const otlpProtocol = z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json (Skyhook exports OTLP over HTTP; grpc is not supported)' });

const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/skyhook'),
    REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
    /** When set, Redis is a cluster found from these seeds; REDIS_URL then gives only user, password and TLS. */
    REDIS_CLUSTER_NODES: clusterNodes.optional(),
    PORT: int(0, 65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    /** Required in production (an https origin): targetURIs and OAuth base strings are built from it. */
    PUBLIC_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) origin, such as https://hooks.example.com' }).optional(),
    /** A worker-only process serves /healthz, /readyz and /metrics on this port when it is set. */
    OPS_PORT: int(1, 65535).optional(),
    SECRET_KEY: z.string().optional(),
    ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /** When set, /metrics needs it as a bearer token (SPEC §10.1); unset, /metrics is public. */
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    ROLE: z.enum(['api', 'worker', 'all']).default('all'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Addresses of proxies whose X-Forwarded-For is trusted (comma-separated); Fastify ignores a number. */
    TRUST_PROXY: z.string().default(''),
    /** BullMQ key prefix; hash-tagged so every key of a queue lands in one Redis Cluster slot. */
    QUEUE_PREFIX: z.string().regex(/^\{[^{}]+\}$/, 'must be a hash tag such as {skyhook}').default('{skyhook}'),
    FETCH_MIN_INTERVAL_MS: int(0, 3_600_000).default(1000),
    FETCH_TIMEOUT_MS: int(100, 120_000).default(10_000),
    FETCH_ATTEMPTS: int(1, 100).default(14),
    FETCH_BACKOFF_BASE_MS: int(10, 600_000).default(2000),
    FETCH_BACKOFF_MAX_MS: int(100, 86_400_000).default(15 * 60_000),
    WORKER_CONCURRENCY: int(1, 1000).default(128),
    /** A company's fetches at once across every worker (SPEC §5.1 F2), unless the company sets its own. */
    COMPANY_FETCH_CONCURRENCY: int(1, 10_000).default(256),
    /** How often a paused company's refused credentials are tried again with one harmless call (SPEC §5.1 F4). */
    PAUSED_PROBE_INTERVAL_MS: int(10_000, 86_400_000).default(300_000),
    MARKETPLACE_TIMEOUT_MS: int(100, 120_000).default(15_000),
    ROTATION_GRACE_HOURS: z.coerce.number().min(0).max(24 * 30).default(24),
    OAUTH_TIMESTAMP_SKEW_S: int(1, 3600).default(300),
    RELAY_INTERVAL_MS: int(100, 600_000).default(2000),
    /** A received row younger than this is left to the receiver's own enqueue before the relay takes it. */
    RELAY_GRACE_MS: int(0, 600_000).default(3000),
    RETENTION_DAYS: int(1, 3650).default(30),
    /** Events with their bodies, and a resource's older versions (SPEC §5.3). */
    EVENTS_RETENTION_DAYS: int(1, 3650).default(90),
    AUDIT_RETENTION_DAYS: int(1, 3650).default(365),
    /** Destinations' delivery jobs one worker process runs at once (SPEC §5.2), each sending up to its destination's limit; a queue and workers apart from the fetches'. */
    DELIVERY_CONCURRENCY: int(1, 1000).default(64),
    /** A destination's requests at once across every worker, unless it sets its own. */
    DESTINATION_CONCURRENCY: int(1, 1000).default(16),
    /** A request that has not answered by then failed (a destination may set its own, up to 60 s). */
    DESTINATION_TIMEOUT_MS: int(100, 60_000).default(15_000),
    /** The wait before each attempt: `0,5s,5m,30m,2h,5h,10h,10h` (about 28 h in all). */
    DELIVERY_RETRY_SCHEDULE: z.string().default('0,5s,5m,30m,2h,5h,10h,10h').transform((value, ctx) => {
      const waits = value.split(',').map((s) => durationMs(s.trim()));
      if (waits.length === 0 || waits.some((w) => w === undefined)) {
        ctx.addIssue({ code: 'custom', message: 'must be comma-separated waits such as 0,5s,5m,30m,2h (ms without a unit)' });
        return z.NEVER;
      }
      return waits as number[];
    }),
    /** A delivery's body above this leaves the snapshot out, then the changes. */
    DELIVERY_BODY_LIMIT_BYTES: int(4096, 10 * 1024 * 1024).default(256 * 1024),
    /** A destination failing for this long without a success is disabled (fractions allowed). */
    DESTINATION_DISABLE_AFTER_DAYS: z.coerce.number().positive().max(365).default(5),
    /** Destinations admitted beyond the public https rule: hosts or CIDRs, each optionally `=companyId+companyId` (lib/addresses.ts). */
    DESTINATION_ALLOW: z.string().default('').transform((value, ctx) => {
      const parsed = parseAllowList(value);
      if (typeof parsed === 'string') {
        ctx.addIssue({ code: 'custom', message: `must be comma-separated hosts or CIDRs, each optionally =companyId+companyId: ${parsed}` });
        return z.NEVER;
      }
      return parsed;
    }),
    DB_POOL_SIZE: int(1, 200).default(20),
    /** Failed authentications allowed per client address and minute before 429s. */
    AUTH_FAILURE_LIMIT: int(1, 1_000_000).default(60),
    SHUTDOWN_TIMEOUT_MS: int(100, 600_000).default(15_000),
    /** A request whose headers and body have not all arrived by then is ended (408): a trickling sender holds nothing. */
    REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
    // OpenTelemetry (SPEC §15): these decide whether and how traces are exported; the SDK reads the other
    // standard OTEL_* variables itself (headers, timeout, service name, resource attributes, batch sizes).
    OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, such as http://otel-collector:4318' }).optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, such as http://otel-collector:4318/v1/traces' }).optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.optional(),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
    OTEL_SDK_DISABLED: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
    OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none'], { error: 'must be otlp or none (Skyhook exports traces over OTLP only)' }).optional(),
    OTEL_TRACES_SAMPLER: z
      .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'], {
        error: 'must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio',
      })
      .optional(),
    OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production') {
      for (const key of ['SECRET_KEY', 'ADMIN_TOKEN'] as const) if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required in production' });
      // The default names this machine: the marketplace could never reach a targetURI built from it.
      if (!env.PUBLIC_BASE_URL) ctx.addIssue({ code: 'custom', path: ['PUBLIC_BASE_URL'], message: 'is required in production (the https origin the marketplace reaches, such as https://hooks.example.com)' });
      else if (!env.PUBLIC_BASE_URL.startsWith('https:')) ctx.addIssue({ code: 'custom', path: ['PUBLIC_BASE_URL'], message: 'must use https in production' });
    }
    if (env.PUBLIC_BASE_URL) {
      // A path is allowed (a proxy that serves Skyhook under a prefix); a query, fragment or credentials are not.
      const url = new URL(env.PUBLIC_BASE_URL);
      if (url.search || url.hash || url.username || url.password) {
        ctx.addIssue({ code: 'custom', path: ['PUBLIC_BASE_URL'], message: 'must not carry a query, a fragment or credentials' });
      }
    }
    if (env.REDIS_CLUSTER_NODES && /^\/\d*[1-9]/.test(new URL(env.REDIS_URL).pathname)) {
      ctx.addIssue({ code: 'custom', path: ['REDIS_URL'], message: 'must not select a database other than 0 when REDIS_CLUSTER_NODES is set (a Redis Cluster has database 0 only)' });
    }
    if (env.SECRET_KEY !== undefined && Buffer.from(env.SECRET_KEY, 'base64').length !== 32) {
      ctx.addIssue({ code: 'custom', path: ['SECRET_KEY'], message: 'must be 32 random bytes, base64-encoded' });
    }
  });

export type Config = ReturnType<typeof loadConfig>;

export class ConfigError extends Error {}

export function loadConfig(source: Record<string, string | undefined> = process.env) {
  // Empty strings count as unset, the way shells and compose files usually mean them.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'} ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const env = parsed.data;
  const warnings: string[] = [];

  const secretKey = env.SECRET_KEY ? Buffer.from(env.SECRET_KEY, 'base64') : DEVELOPMENT_SECRET_KEY;
  if (!env.SECRET_KEY) warnings.push('SECRET_KEY is not set: stored secrets are encrypted with the fixed DEVELOPMENT key. Never do this in production.');

  // Stable across restarts (derived from SECRET_KEY), so a browser tab or a script keeps working; production requires ADMIN_TOKEN.
  const adminToken = env.ADMIN_TOKEN ?? `dev-${createHmac('sha256', secretKey).update('skyhook development admin token').digest('base64url').slice(0, 24)}`;
  if (!env.ADMIN_TOKEN) warnings.push(`ADMIN_TOKEN is not set: this process accepts the development admin token ${adminToken} (set ADMIN_TOKEN to choose one)`);

  const publicBaseUrl = (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, '');
  const publicOrigin = new URL(publicBaseUrl);
  const publicPort = Number(publicOrigin.port || (publicOrigin.protocol === 'https:' ? 443 : 80));
  if (LOOPBACK_HOSTS.has(publicOrigin.hostname) && publicPort !== env.PORT) {
    warnings.push(`PUBLIC_BASE_URL ${publicBaseUrl} names port ${publicPort} of this machine, but Skyhook listens on PORT ${env.PORT}: targetURIs built from it will not reach this process.`);
  }

  return {
    env: env.NODE_ENV,
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    redisClusterNodes: env.REDIS_CLUSTER_NODES,
    port: env.PORT,
    host: env.HOST,
    publicBaseUrl,
    opsPort: env.OPS_PORT,
    secretKey,
    adminToken,
    metricsToken: env.METRICS_TOKEN,
    role: env.ROLE,
    logLevel: env.LOG_LEVEL,
    trustProxy: env.TRUST_PROXY.split(',').map((s) => s.trim()).filter(Boolean),
    queuePrefix: env.QUEUE_PREFIX,
    /** Production requires https hrefs; elsewhere http is accepted for local marketplaces. */
    requireHttpsHrefs: env.NODE_ENV === 'production',
    fetch: {
      minIntervalMs: env.FETCH_MIN_INTERVAL_MS,
      timeoutMs: env.FETCH_TIMEOUT_MS,
      attempts: env.FETCH_ATTEMPTS,
      backoffBaseMs: env.FETCH_BACKOFF_BASE_MS,
      backoffMaxMs: env.FETCH_BACKOFF_MAX_MS,
      concurrency: env.WORKER_CONCURRENCY,
      companyConcurrency: env.COMPANY_FETCH_CONCURRENCY,
      pausedProbeIntervalMs: env.PAUSED_PROBE_INTERVAL_MS,
    },
    marketplaceTimeoutMs: env.MARKETPLACE_TIMEOUT_MS,
    rotationGraceMs: env.ROTATION_GRACE_HOURS * 3_600_000,
    oauthTimestampSkewS: env.OAUTH_TIMESTAMP_SKEW_S,
    relayIntervalMs: env.RELAY_INTERVAL_MS,
    relayGraceMs: env.RELAY_GRACE_MS,
    retentionDays: env.RETENTION_DAYS,
    eventsRetentionDays: env.EVENTS_RETENTION_DAYS,
    auditRetentionDays: env.AUDIT_RETENTION_DAYS,
    delivery: {
      concurrency: env.DELIVERY_CONCURRENCY,
      destinationConcurrency: env.DESTINATION_CONCURRENCY,
      timeoutMs: env.DESTINATION_TIMEOUT_MS,
      schedule: env.DELIVERY_RETRY_SCHEDULE,
      bodyLimit: env.DELIVERY_BODY_LIMIT_BYTES,
      disableAfterDays: env.DESTINATION_DISABLE_AFTER_DAYS,
      /** Outside development: https and public addresses only, unless allowed (SPEC §5.2). */
      addresses: { strict: env.NODE_ENV === 'production', allow: env.DESTINATION_ALLOW },
    },
    dbPoolSize: env.DB_POOL_SIZE,
    authFailureLimit: env.AUTH_FAILURE_LIMIT,
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    tracing: tracingConfig(env),
    /** Warnings to print once the logger exists (development keys, a PUBLIC_BASE_URL that misses PORT). */
    warnings,
  };
}

/**
 * Traces are exported when an OTLP endpoint is set, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
 * (the standard switches). The traces' own endpoint and protocol win over the general ones, as the SDK has it.
 */
function tracingConfig(env: z.infer<typeof envSchema>): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return undefined;
  return {
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    endpoint: withoutPassword(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${endpoint.replace(/\/+$/, '')}/v1/traces`),
  };
}
