/**
 * Starts Skyhook for a test exactly as main.ts does (createRuntime, listen, start), on a free port, against the
 * test file's own database and queue prefix. Nothing is mocked: real PostgreSQL, real Redis.
 */
import { createServer } from 'node:net';
import { pino, type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import type { HandlerRegistry } from '../../src/processing/handlers/index.js';
import { REDIS_URL } from './database.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * Runs `start` on `port`, or on a free one. freePort() only finds a port that was free a moment ago:
 * another test's process, or any outgoing connection's ephemeral port, can take it before `start`
 * listens; then (EADDRINUSE) a new one is tried, up to three times in all.
 */
export async function onFreePort<T>(port: number | undefined, start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(port ?? (await freePort()));
    } catch (err) {
      const taken = (err as { code?: string }).code === 'EADDRINUSE' || /EADDRINUSE/.test(String(err));
      if (port !== undefined || attempt >= 3 || !taken) throw err;
    }
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever the API answered
export type AdminCall = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** Calls `${url}/admin${path}` with `Authorization: Bearer <token>`; answers the status and the parsed JSON body. */
export function adminClient(url: string, token: string = ADMIN_TOKEN): AdminCall {
  return async (method, path, body) => {
    const res = await fetch(`${url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

export interface TestSkyhook {
  url: string;
  config: Config;
  runtime: Runtime;
  admin: AdminCall;
  stop(): Promise<void>;
}

export async function startSkyhook(opts: {
  databaseUrl: string;
  queuePrefix: string;
  env?: Record<string, string>;
  role?: 'api' | 'worker' | 'all';
  handlers?: HandlerRegistry;
  port?: number;
  /** The process's logger (default: pino at TEST_LOG_LEVEL, silent unless set). */
  log?: Logger;
}): Promise<TestSkyhook> {
  return onFreePort(opts.port, (port) => startOnce({ ...opts, port }));
}

async function startOnce(opts: Parameters<typeof startSkyhook>[0] & { port: number }): Promise<TestSkyhook> {
  const port = opts.port;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL,
    PORT: String(port),
    PUBLIC_BASE_URL: url,
    ADMIN_TOKEN,
    QUEUE_PREFIX: opts.queuePrefix,
    ROLE: opts.role ?? 'all',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    FETCH_BACKOFF_BASE_MS: '50',
    FETCH_BACKOFF_MAX_MS: '500',
    RELAY_INTERVAL_MS: '200',
    RELAY_GRACE_MS: '500',
    // Tests send many wrong credentials from 127.0.0.1 on purpose; the limiter has its own test.
    AUTH_FAILURE_LIMIT: '1000000',
    // Several Skyhooks run at once in the suite; PostgreSQL allows 100 connections in all.
    DB_POOL_SIZE: '6',
    WORKER_CONCURRENCY: '8',
    ...opts.env,
  });
  const log = opts.log ?? pino({ level: config.logLevel });
  const runtime = await createRuntime(config, log, { handlers: opts.handlers });
  try {
    if (runtime.app) await runtime.app.listen({ port, host: '127.0.0.1' });
    await runtime.start();
  } catch (err) {
    await runtime.close();
    throw err;
  }
  return { url, config, runtime, admin: adminClient(url), stop: () => runtime.close() };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}
