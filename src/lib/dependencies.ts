/**
 * Whether PostgreSQL and Redis answer where the configuration says, and what to tell a newcomer when they do
 * not: which one, at which address (from which variable), and the one command that brings both up from the
 * compose file (`npm run deps` runs it and waits). Used by `npm run demo` and by the CLI's commands that need
 * the database, before anything else is printed; a service (`npm start`) waits for them instead (SPEC §5).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { describeError } from './error-reporter.js';
import { withoutPassword } from './redact.js';

/** How long each is given to answer. */
const ANSWER_WITHIN_MS = 3000;

export interface Unreachable {
  name: 'PostgreSQL' | 'Redis';
  variable: 'DATABASE_URL' | 'REDIS_URL';
  /** host:port */
  address: string;
  /** The variable's value, without its password. */
  url: string;
  why: string;
}

/** The compose command that starts just PostgreSQL and Redis (deploy/compose.deps.yml publishes them on 127.0.0.1). */
export const DEPS_COMPOSE_ARGS = ['-f', 'docker-compose.yml', '-f', 'deploy/compose.deps.yml'];
const composeCommand = (tool: 'docker' | 'podman') => `${tool === 'docker' ? 'docker compose' : 'podman-compose'} ${DEPS_COMPOSE_ARGS.join(' ')} up -d postgres redis`;

/** Whether `command` is an executable on PATH. */
export function onPath(command: string, path = process.env.PATH ?? ''): boolean {
  return path.split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false; // not in this folder: the next one
    }
  });
}

const hostPort = (url: URL, port: number) => `${url.hostname}:${url.port || port}`;

async function postgresProblem(databaseUrl: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: ANSWER_WITHIN_MS });
  // An error the client emits (a server going away) is this function's answer, as a failed connect is.
  let cause: unknown;
  client.on('error', (err: unknown) => (cause = err));
  try {
    await client.connect();
    // It answered. A client that never connected has nothing to end; one that did is ended here, and a
    // failure to end (the server gone in between) is the answer.
    await client.end();
    return null;
  } catch (err) {
    // It answered, with a refusal (no such database yet, a password): the demo's own start says what.
    const code = (err as { code?: string }).code;
    if (code && /^[0-9A-Z]{5}$/.test(code)) return null;
    return describeError(cause ?? err);
  }
}

async function redisProblem(redisUrl: string): Promise<string | null> {
  const redis = new Redis(redisUrl, { lazyConnect: true, connectTimeout: ANSWER_WITHIN_MS, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  // Its connection error is this function's answer (connect() itself only says the connection closed).
  let cause: unknown;
  redis.on('error', (err: unknown) => (cause = err));
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (err) {
    return describeError(cause ?? err);
  } finally {
    redis.disconnect();
  }
}

/** PostgreSQL and Redis, each that does not answer within a few seconds (a Redis Cluster is not checked here). */
export async function findUnreachable(target: { databaseUrl: string; redisUrl?: string }): Promise<Unreachable[]> {
  const [pgWhy, redisWhy] = await Promise.all([postgresProblem(target.databaseUrl), target.redisUrl ? redisProblem(target.redisUrl) : null]);
  const out: Unreachable[] = [];
  if (pgWhy) out.push({ name: 'PostgreSQL', variable: 'DATABASE_URL', address: hostPort(new URL(target.databaseUrl), 5432), url: withoutPassword(target.databaseUrl), why: pgWhy });
  if (redisWhy && target.redisUrl) out.push({ name: 'Redis', variable: 'REDIS_URL', address: hostPort(new URL(target.redisUrl), 6379), url: withoutPassword(target.redisUrl), why: redisWhy });
  return out;
}

/**
 * Plain lines saying what does not answer and how to start it: Docker's or podman's command, whichever is
 * installed (both when neither is). podman counts only with podman-compose, the command the lines name.
 */
export function howToStart(missing: Unreachable[], tools: { docker: boolean; podman: boolean } = { docker: onPath('docker'), podman: onPath('podman-compose') }): string[] {
  const lines = missing.map((m) => `${m.name} does not answer at ${m.address} (${m.variable}=${m.url}): ${m.why}`);
  const which = tools.docker || tools.podman ? (['docker', 'podman'] as const).filter((t) => tools[t]) : (['docker', 'podman'] as const);
  lines.push(
    '',
    `Start ${missing.length === 1 ? 'it' : 'them'} from the compose file${tools.docker || tools.podman ? '' : ' (install Docker, or podman with podman-compose, first)'} with:`,
    ...which.map((t) => `    ${composeCommand(t)}`),
    'or `npm run deps`, which runs that and waits until both answer. Or set the variable to where yours runs.',
  );
  return lines;
}
