/**
 * `npm run deps`: for a machine without PostgreSQL or Redis, brings up just those two from the compose file
 * (Docker, or podman), published on 127.0.0.1 at their default ports, waits until both answer, and says how
 * to stop them. Exits non-zero, saying why, when neither Docker nor podman is installed or they do not answer.
 */
import { spawnSync } from 'node:child_process';
import { DEPS_COMPOSE_ARGS, findUnreachable, onPath } from '../src/lib/dependencies.js';

const WAIT_MS = 120_000;
// The host ports can be moved when the defaults are taken (deploy/compose.deps.yml reads the same variables).
const pgPort = process.env.SKYHOOK_DEPS_POSTGRES_PORT ?? '5432';
const redisPort = process.env.SKYHOOK_DEPS_REDIS_PORT ?? '6379';
const target = { databaseUrl: process.env.DATABASE_URL ?? `postgres://postgres@127.0.0.1:${pgPort}/postgres`, redisUrl: process.env.REDIS_URL ?? `redis://127.0.0.1:${redisPort}` };
const hostOf = (url: string) => new URL(url).host;

const already = await findUnreachable(target);
if (already.length === 0) {
  console.log('PostgreSQL and Redis already answer at their addresses: nothing to start.');
  process.exit(0);
}

// Docker needs its engine; podman runs without one.
const dockerEngine = onPath('docker') && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0;
// A project name of the caller's (COMPOSE_PROJECT_NAME), given as -p: podman-compose 1.0.3 does not read the variable.
const project = process.env.COMPOSE_PROJECT_NAME ? ['-p', process.env.COMPOSE_PROJECT_NAME] : [];
const tool = dockerEngine ? { cmd: 'docker', args: ['compose', ...project, ...DEPS_COMPOSE_ARGS] } : onPath('podman-compose') ? { cmd: 'podman-compose', args: [...project, ...DEPS_COMPOSE_ARGS] } : undefined;
if (!tool) {
  console.error(`Neither Docker (with its engine running) nor podman-compose is installed here.${onPath('docker') ? ' docker is installed, but its engine does not answer.' : ''}`);
  console.error('Install one of them, or start PostgreSQL (127.0.0.1:5432, user postgres) and Redis (127.0.0.1:6379) another way.');
  process.exit(1);
}
const show = `${tool.cmd} ${tool.args.join(' ')}`;
console.log(`Starting PostgreSQL and Redis: ${show} up -d postgres redis`);
const up = spawnSync(tool.cmd, [...tool.args, 'up', '-d', 'postgres', 'redis'], { stdio: 'inherit' });
if (up.status !== 0) {
  console.error(`${tool.cmd} could not start them (exit ${up.status ?? up.signal}): see its output above.`);
  process.exit(1);
}
const deadline = Date.now() + WAIT_MS;
for (;;) {
  const missing = await findUnreachable(target);
  if (missing.length === 0) break;
  if (Date.now() > deadline) {
    console.error(`Started, but ${missing.map((m) => `${m.name} (${m.address})`).join(' and ')} did not answer within ${WAIT_MS / 1000} s.`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 1000));
}
const moved = pgPort !== '5432' || redisPort !== '6379';
console.log(`PostgreSQL (${hostOf(target.databaseUrl)}) and Redis (${hostOf(target.redisUrl)}) answer. Now: ${moved ? `DATABASE_URL=postgres://postgres@127.0.0.1:${pgPort}/skyhook REDIS_URL=redis://127.0.0.1:${redisPort} ` : ''}npm run demo`);
console.log(`Stop them with: ${show} stop postgres redis   (their data stays; "down -v" removes it)`);
