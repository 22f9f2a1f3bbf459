/**
 * Skyhook as a real child process (`node bin/skyhook.js start`), for the tests that must kill, signal
 * or restart a process: a worker killed with SIGKILL, a SIGTERM under load. Each child is configured by
 * its environment only (exactly as in production), listens on 127.0.0.1, and its stdout/stderr lines are
 * kept (bounded) so a test can wait for a log line or read what was logged. Every child started here is
 * killed by `killAllChildren()` (call it in afterAll), whatever the test did.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { REDIS_URL } from './database.js';
import { ADMIN_TOKEN, adminClient, onFreePort, type AdminCall } from './skyhook.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_LINES = 20_000;

export interface SkyhookProcess {
  child: ChildProcess;
  role: 'api' | 'worker' | 'all';
  /** http://127.0.0.1:<port> (api and all roles). */
  url: string;
  port: number;
  /** Every stdout and stderr line so far (the newest MAX_LINES). */
  lines(): string[];
  /** Resolves with the first line (already seen or new) that matches. */
  waitForLine(match: RegExp, timeoutMs?: number): Promise<string>;
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exitInfo(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  admin: AdminCall;
}

const children = new Set<SkyhookProcess>();

export interface SpawnOptions {
  databaseUrl: string;
  queuePrefix: string;
  role: 'api' | 'worker' | 'all';
  /** Extra or overriding environment variables (FETCH_*, SHUTDOWN_TIMEOUT_MS, SECRET_KEY, REDIS_URL...). */
  env?: Record<string, string>;
  port?: number;
  /** How long to wait for readiness. Default 30 s (tsx compiles the sources on the first start). */
  readyTimeoutMs?: number;
  /** `listening`: return once /healthz answers, before the database is prepared (a start-up test). Default `started`. */
  waitFor?: 'started' | 'listening';
}

/**
 * Spawns `node bin/skyhook.js start` and waits until it has started (its database prepared): /readyz no
 * longer says `starting` for the api and all roles, the "skyhook started" log line for a worker (LOG_LEVEL
 * must then be info or more verbose; it is info unless the caller overrides it).
 */
export async function spawnSkyhook(opts: SpawnOptions): Promise<SkyhookProcess> {
  // The child's EADDRINUSE is in the error's last lines: onFreePort tries another port.
  return onFreePort(opts.port, (port) => spawnOnce({ ...opts, port }));
}

async function spawnOnce(opts: SpawnOptions & { port: number }): Promise<SkyhookProcess> {
  const port = opts.port;
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    NODE_ENV: 'test',
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL,
    QUEUE_PREFIX: opts.queuePrefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: url,
    ROLE: opts.role,
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    FETCH_BACKOFF_BASE_MS: '50',
    FETCH_BACKOFF_MAX_MS: '500',
    RELAY_INTERVAL_MS: '200',
    RELAY_GRACE_MS: '500',
    AUTH_FAILURE_LIMIT: '1000000',
    ...opts.env,
  };
  const child = spawn(process.execPath, ['bin/skyhook.js', 'start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters = new Set<{ match: RegExp; resolve: (line: string) => void }>();
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });

  const collect = (stream: NodeJS.ReadableStream | null) => {
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (lines.length > MAX_LINES) lines.shift();
        for (const w of [...waiters]) {
          if (w.match.test(line)) {
            waiters.delete(w);
            w.resolve(line);
          }
        }
      }
    });
  };
  collect(child.stdout);
  collect(child.stderr);

  const proc: SkyhookProcess = {
    child,
    role: opts.role,
    url,
    port,
    lines: () => [...lines],
    waitForLine(match, timeoutMs = 15_000) {
      const seen = lines.find((l) => match.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve: (line: string) => (clearTimeout(timer), resolve(line)) };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`no line matching ${match} within ${timeoutMs} ms from pid ${child.pid}; last lines:\n${lines.slice(-15).join('\n')}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    exited,
    exitInfo: () => exitInfo,
    kill(signal) {
      if (!exitInfo) child.kill(signal);
    },
    async stop(graceMs = 20_000) {
      if (exitInfo) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    admin: adminClient(url, env.ADMIN_TOKEN!),
  };
  children.add(proc);
  void exited.then(() => children.delete(proc));

  try {
    await waitReady(proc, opts.readyTimeoutMs ?? 30_000, opts.waitFor ?? 'started');
  } catch (err) {
    proc.kill('SIGKILL');
    throw err;
  }
  return proc;
}

async function waitReady(proc: SkyhookProcess, timeoutMs: number, waitFor: 'started' | 'listening'): Promise<void> {
  const failed = proc.exited.then((e) => {
    throw new Error(`skyhook (${proc.role}) exited before it was ready (${JSON.stringify(e)}):\n${proc.lines().slice(-20).join('\n')}`);
  });
  // A worker says so in its log (main.ts); an HTTP role's /readyz says `starting` until then (503 with
  // `unavailable` is a started process whose Redis or PostgreSQL is down).
  if (proc.role === 'worker') {
    await Promise.race([proc.waitForLine(/skyhook started/, timeoutMs), failed]);
    return;
  }
  const deadline = Date.now() + timeoutMs;
  const poll = async (): Promise<void> => {
    while (Date.now() < deadline) {
      if (proc.exitInfo()) return;
      try {
        if (waitFor === 'listening') {
          if ((await fetch(`${proc.url}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200) return;
        } else {
          const res = await fetch(`${proc.url}/readyz`, { signal: AbortSignal.timeout(2000) });
          if (((await res.json()) as { status?: string }).status !== 'starting') return;
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`skyhook (${proc.role}) not started within ${timeoutMs} ms:\n${proc.lines().slice(-20).join('\n')}`);
  };
  await Promise.race([poll(), failed]);
}

/** Kills (SIGKILL) every child this helper started that is still running, and waits for them. */
export async function killAllChildren(): Promise<void> {
  const running = [...children];
  for (const c of running) c.kill('SIGKILL');
  await Promise.all(running.map((c) => Promise.race([c.exited, new Promise((r) => setTimeout(r, 5000))])));
}
