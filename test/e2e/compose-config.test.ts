/**
 * The wiring of docker-compose.yml: the five services and the one-shot setup, Redis's durability flags,
 * healthchecks, the roles, the start order (depends_on conditions), one shared configuration that
 * Skyhook's own loader accepts, and the files under deploy/ the stack mounts.
 *
 * Checked twice: on the file itself (always; YAML merge keys resolved), and on what the Compose CLI makes
 * of it (`docker compose config`, which validates the file against the Compose specification and needs
 * no Docker engine) when a Compose CLI is installed; skipped, with the reason in its title, otherwise.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FILE = join(ROOT, 'docker-compose.yml');

interface Healthcheck {
  test?: string[] | string;
  disable?: boolean;
  interval?: string;
}
interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string | null;
  entrypoint?: string[] | string | null;
  environment?: Record<string, string | number | boolean | null>;
  healthcheck?: Healthcheck;
  depends_on?: Record<string, { condition: string }>;
  ports?: (string | { target: number | string; published?: number | string; host_ip?: string })[];
  volumes?: (string | { type?: string; source?: string; target: string; read_only?: boolean })[];
  restart?: string;
  stop_grace_period?: string;
  init?: boolean;
}
interface ComposeConfig {
  services: Record<string, Service>;
}

/** How to run the Compose CLI here, or why it cannot run. */
function findCompose(): { run: (args: string[]) => string; json: boolean; name: string } | { reason: string } {
  const tryRun = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  const plugin = tryRun('docker', ['compose', 'version', '--short']);
  if (plugin.status === 0) {
    return { name: `docker compose ${plugin.stdout.trim()}`, json: true, run: (args) => mustRun(tryRun('docker', ['compose', ...args])) };
  }
  const standalone = tryRun('docker-compose', ['version', '--short']);
  if (standalone.status === 0) {
    const version = standalone.stdout.trim();
    // Compose v1 (docker-compose 1.x) prints YAML only; v2 also takes --format json.
    return { name: `docker-compose ${version}`, json: !version.startsWith('1.'), run: (args) => mustRun(tryRun('docker-compose', args)) };
  }
  const docker = plugin.error ? 'no `docker` command' : '`docker compose` is not installed (the Compose CLI plugin)';
  return { reason: `${docker}, and no \`docker-compose\` either` };
}

function mustRun(result: ReturnType<typeof spawnSync>): string {
  if (result.status !== 0) throw new Error(`compose config failed (${result.status}): ${String(result.stderr)}`);
  return String(result.stdout);
}

const commandOf = (value: string[] | string | null | undefined): string[] => (Array.isArray(value) ? value : value ? value.split(/\s+/) : []);
const testOf = (hc: Healthcheck | undefined): string => (Array.isArray(hc?.test) ? hc.test.join(' ') : (hc?.test ?? ''));
const disabled = (hc: Healthcheck | undefined): boolean => hc?.disable === true || (Array.isArray(hc?.test) && hc.test[0] === 'NONE');
const envOf = (s: Service): Record<string, string> =>
  Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]));

/** "127.0.0.1:3000:3000" or {host_ip, published, target}: as "host:published:target". */
const portsOf = (s: Service): string[] =>
  (s.ports ?? []).map((p) => (typeof p === 'string' ? p.replace(/\/tcp$/, '') : `${p.host_ip ?? ''}:${p.published ?? ''}:${p.target}`));

/** "./deploy:/deploy:ro" or {source, target, read_only}: as "<last source segment>:target[:ro]". */
const mountsOf = (s: Service): string[] =>
  (s.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const [source = '', target = '', mode] = v.split(':');
      return `${source.split('/').pop()}:${target}${mode === 'ro' ? ':ro' : ''}`;
    }
    return `${(v.source ?? '').split('/').pop()}:${v.target}${v.read_only ? ':ro' : ''}`;
  });

/** Each pair of flags follows each other in the command, e.g. --appendonly yes. */
function expectFlags(command: string[], flags: [string, string][]): void {
  for (const [flag, value] of flags) {
    const at = command.indexOf(flag);
    expect(at, `${flag} in ${command.join(' ')}`).toBeGreaterThanOrEqual(0);
    expect(command[at + 1], flag).toBe(value);
  }
}

function expectWiring(config: ComposeConfig): void {
  const { services } = config;
  expect(Object.keys(services).sort()).toEqual(['api', 'postgres', 'redis', 'setup', 'simulator', 'worker']);
  const { postgres, redis, api, worker, simulator, setup } = services as Record<string, Service>;

  // Backing services: PostgreSQL 15/16 and Redis with AOF and noeviction, each with a healthcheck.
  expect(postgres!.image).toMatch(/^postgres:1[56]\b/);
  expect(testOf(postgres!.healthcheck)).toContain('pg_isready');
  expect(redis!.image).toMatch(/^redis:/);
  expectFlags(commandOf(redis!.command), [
    ['--appendonly', 'yes'],
    ['--maxmemory-policy', 'noeviction'],
  ]);
  expect(testOf(redis!.healthcheck)).toContain('redis-cli ping');

  // One Skyhook image for api, worker, simulator and setup.
  for (const s of [api, worker, simulator, setup]) {
    expect(s!.image).toBe(api!.image);
    expect(s!.build, 'every Skyhook service builds the same image').toBeDefined();
  }

  // Roles, and one configuration that Skyhook's own loader accepts (a bad value would stop the process).
  const apiEnv = envOf(api!);
  const workerEnv = envOf(worker!);
  expect(apiEnv.ROLE).toBe('api');
  expect(workerEnv.ROLE).toBe('worker');
  expect(commandOf(api!.command)).toEqual(['start']);
  expect(commandOf(worker!.command)).toEqual(['start']);
  expect(apiEnv.PUBLIC_BASE_URL).toBe('http://api:3000');
  for (const key of ['DATABASE_URL', 'REDIS_URL', 'QUEUE_PREFIX', 'SECRET_KEY', 'NODE_ENV', 'HOST']) {
    expect(workerEnv[key], `${key} is the same for api and worker`).toBe(apiEnv[key]);
  }
  expect(new URL(apiEnv.DATABASE_URL!).host).toBe('postgres:5432');
  expect(new URL(apiEnv.REDIS_URL!).host).toBe('redis:6379');
  // Every interface of the container, set by compose itself (not only by the Dockerfile).
  expect(apiEnv.HOST).toBe('0.0.0.0');
  const apiConfig = loadConfig(apiEnv);
  expect(apiConfig).toMatchObject({ role: 'api', host: '0.0.0.0', port: 3000, publicBaseUrl: 'http://api:3000', requireHttpsHrefs: false });
  // Explicit secrets, so no dev-key warning.
  expect(apiConfig.warnings).toEqual([]);
  expect(loadConfig(workerEnv)).toMatchObject({ role: 'worker' });
  expect(portsOf(api!)).toEqual(['127.0.0.1:3000:3000']);

  // Graceful shutdown: running jobs get SHUTDOWN_TIMEOUT_MS, the process exits at most 5 s later; Docker
  // must not SIGKILL before that (its default is 10 s). tini forwards the signal.
  const shutdownS = apiConfig.shutdownTimeoutMs / 1000 + 5;
  for (const s of [api, worker]) {
    expect(s!.init).toBe(true);
    const grace = /^(\d+)s$/.exec(String(s!.stop_grace_period));
    expect(Number(grace?.[1]), `stop_grace_period ${String(s!.stop_grace_period)}`).toBeGreaterThan(shutdownS);
  }

  // Healthchecks: api on /healthz, the simulator on its port; a worker serves no HTTP, so none.
  expect(testOf(api!.healthcheck)).toContain('http://127.0.0.1:3000/healthz');
  expect(testOf(simulator!.healthcheck)).toContain('http://127.0.0.1:4010/');
  expect(disabled(worker!.healthcheck)).toBe(true);

  // The simulator, reachable by the api's targetURIs' sender and by Skyhook's workers at simulator:4010.
  expect(commandOf(simulator!.command)).toEqual([
    'simulator',
    'start',
    '--host',
    '0.0.0.0',
    '--port',
    '4010',
    '--public-url',
    'http://simulator:4010',
    '--config',
    '/deploy/simulator-companies.json',
  ]);
  expect(portsOf(simulator!)).toEqual(['127.0.0.1:4010:4010']);
  expect(mountsOf(simulator!)).toContain('deploy:/deploy:ro');

  // Setup: one shot, the script from deploy/, the api's admin token, the simulator's API.
  expect(setup!.restart).toBe('no');
  expect(commandOf(setup!.entrypoint)).toEqual(['node', '/deploy/setup.mjs']);
  expect(mountsOf(setup!)).toContain('deploy:/deploy:ro');
  const setupEnv = envOf(setup!);
  expect(setupEnv).toMatchObject({ SKYHOOK_URL: 'http://api:3000', ADMIN_TOKEN: apiEnv.ADMIN_TOKEN, SIMULATOR_API_URL: 'http://simulator:4010/api' });

  // Start order.
  const healthy = { condition: 'service_healthy' };
  expect(api!.depends_on).toMatchObject({ postgres: healthy, redis: healthy });
  expect(worker!.depends_on).toMatchObject({ postgres: healthy, redis: healthy });
  expect(setup!.depends_on).toMatchObject({ api: healthy, simulator: healthy });
  // service_healthy needs a healthcheck on the service waited for.
  for (const s of Object.values(services)) {
    for (const [name, dep] of Object.entries(s.depends_on ?? {})) {
      if (dep.condition === 'service_healthy') expect(disabled(services[name]!.healthcheck) || !services[name]!.healthcheck, name).toBe(false);
    }
  }
}

describe('docker-compose.yml', () => {
  it('wires postgres, redis, api, worker, simulator and setup (the file itself)', () => {
    const config = parse(readFileSync(FILE, 'utf8'), { merge: true }) as ComposeConfig;
    expectWiring(config);
  });

  it('mounts deploy/: the simulator companies file and the setup script', () => {
    const companies = JSON.parse(readFileSync(join(ROOT, 'deploy/simulator-companies.json'), 'utf8')) as { companies: { id: string; name?: string; token: string }[] };
    expect(companies.companies.length).toBeGreaterThan(0);
    for (const c of companies.companies) expect(c).toEqual({ id: expect.any(String), name: expect.any(String), token: expect.any(String) });
    expect(existsSync(join(ROOT, 'deploy/setup.mjs'))).toBe(true);
  });

  const compose = findCompose();
  const title = 'reads the same through the Compose CLI (`config`: validated and normalised, no engine needed)';
  if ('reason' in compose) {
    it.skip(`${title}: skipped, ${compose.reason}`, () => {});
  } else {
    it(`${title}: ${compose.name}`, () => {
      const out = compose.run(['-f', FILE, 'config', ...(compose.json ? ['--format', 'json'] : [])]);
      const config = (compose.json ? JSON.parse(out) : parse(out)) as ComposeConfig;
      expectWiring(config);
    });
  }
});
