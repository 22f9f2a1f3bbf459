/**
 * A Redis server of the test's own (never the machine's shared one), on a free 127.0.0.1 port, without
 * persistence, so a test can stop it (SIGTERM) and start it again on the same port: an outage, and a
 * Redis that comes back empty.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './skyhook.js';

export interface OwnRedis {
  port: number;
  url: string;
  running(): boolean;
  /** SIGTERM, then waits for the process to exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Starts it again on the same port and waits until it answers PING. */
  start(): Promise<void>;
}

const servers = new Set<ChildProcess>();

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const server = redisServerProcess(port, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no']);
  await server.start();
  return { port, url: `redis://127.0.0.1:${port}`, ...server };
}

/**
 * A redis-server child with fixed arguments that can be stopped and started again (same port, same
 * arguments); `start` resolves once it answers PING.
 */
export function redisServerProcess(port: number, args: string[]): Pick<OwnRedis, 'running' | 'stop' | 'start'> {
  let child: ChildProcess | undefined;

  const start = async () => {
    if (child) throw new Error('already running');
    const c = spawn('redis-server', args, { stdio: 'ignore' });
    child = c;
    servers.add(c);
    c.once('exit', () => {
      servers.delete(c);
      if (child === c) child = undefined;
    });
    await waitForPing(port, 10_000);
  };

  const stop = async () => {
    const c = child;
    if (!c) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  return { running: () => child !== undefined, stop, start };
}

async function waitForPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms`);
}

/** SIGKILLs every redis-server this helper started (for afterAll). */
export function killAllRedisServers(): void {
  for (const c of servers) c.kill('SIGKILL');
}
