/**
 * The wiring of docker-compose.yml: the five services and the one-shot setup, Redis's durability flags,
 * healthchecks, the roles, the start order (depends_on conditions), one shared configuration that
 * Skyhook's own loader accepts, and the files under deploy/ the stack mounts. The `monitoring` profile:
 * Prometheus and Grafana, off by default, their images pinned to a release, the rules, the scrape
 * configuration, the data source and the dashboard mounted where each reads them.
 *
 * Checked twice: on the file itself (always; YAML merge keys resolved), and on what the Compose CLI makes
 * of it (`docker compose config`, which validates the file against the Compose specification and needs
 * no Docker engine; without and with `--profile monitoring`) when a Compose CLI is installed; skipped,
 * with the reason in its title, otherwise.
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
/** An image name with its registry (a host with a dot or a port, or `localhost`) and a tag or digest. */
const QUALIFIED = /^(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?)\/[a-z0-9._/-]+(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$/;

interface Healthcheck {
  test?: string[] | string;
  disable?: boolean;
  interval?: string;
}
interface Service {
  image?: string;
  profiles?: string[];
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
  deploy?: { resources?: { limits?: { memory?: string | number } } };
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

const CORE = ['api', 'postgres', 'redis', 'setup', 'simulator', 'worker'];

/** A service's memory limit in bytes: the file's `512M`, or the number `compose config` resolves it to. */
function memoryLimitOf(s: Service): number | undefined {
  const m = s.deploy?.resources?.limits?.memory;
  if (typeof m === 'number') return m;
  const parsed = m === undefined ? null : /^(\d+)([kmg])?b?$/i.exec(m);
  if (!parsed) return undefined;
  return Number(parsed[1]) * 1024 ** ' kmg'.indexOf((parsed[2] ?? ' ').toLowerCase());
}
const MiB = 1024 * 1024;
const MONITORING = ['grafana', 'prometheus'];

/**
 * `monitoring`: whether the config holds the profile's services. The file does, and so does `compose config`
 * with `--profile monitoring`; without it, Compose v2 leaves them out while v1 lists every service
 * ('if listed': then they must carry the profile, as checked below).
 */
function expectWiring(config: ComposeConfig, monitoring: boolean | 'if listed'): void {
  const { services } = config;
  const listed = monitoring === 'if listed' ? 'prometheus' in services : monitoring;
  expect(Object.keys(services).sort()).toEqual(listed ? [...CORE, ...MONITORING].sort() : CORE);
  const { postgres, redis, api, worker, simulator, setup } = services as Record<string, Service>;
  // The stack itself starts without a profile.
  for (const name of CORE) expect(services[name]!.profiles ?? [], name).toEqual([]);

  // Every image fully qualified: podman and buildah refuse short names.
  for (const [name, s] of Object.entries(services)) expect(s.image, name).toMatch(QUALIFIED);

  // Backing services: PostgreSQL 15/16 and Redis with AOF and noeviction, each with a healthcheck.
  expect(postgres!.image).toMatch(/^docker\.io\/library\/postgres:1[56]\b/);
  expect(testOf(postgres!.healthcheck)).toContain('pg_isready');
  expect(redis!.image).toMatch(/^docker\.io\/library\/redis:/);
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

  // Memory (docs/operations.md, "Memory limits"): every service has a limit. Node.js sizes its heap at about half
  // of the container's limit but never under about 260 MB, so a long-running Skyhook process gets 512 MB or more;
  // Redis refuses writes at its maxmemory, below its limit, before the kernel would kill it.
  for (const [name, s] of Object.entries(services)) expect(memoryLimitOf(s), `${name}'s memory limit`).toBeGreaterThan(0);
  for (const s of [api, worker, simulator]) expect(memoryLimitOf(s!)).toBeGreaterThanOrEqual(512 * MiB);
  const redisCommand = commandOf(redis!.command);
  const maxmemory = /^(\d+)mb$/.exec(redisCommand[redisCommand.indexOf('--maxmemory') + 1] ?? '');
  expect(maxmemory, `--maxmemory <n>mb in ${redisCommand.join(' ')}`).not.toBeNull();
  expect(Number(maxmemory![1]) * MiB).toBeLessThan(memoryLimitOf(redis!)! * 0.8);

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

  // Healthchecks: api on /healthz, the worker on /healthz of its OPS_PORT, the simulator on its port.
  expect(testOf(api!.healthcheck)).toContain('http://127.0.0.1:3000/healthz');
  expect(loadConfig(workerEnv).opsPort).toBe(9464);
  expect(testOf(worker!.healthcheck)).toContain('http://127.0.0.1:9464/healthz');
  expect(testOf(simulator!.healthcheck)).toContain('http://127.0.0.1:4010/');

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

  if (listed) expectMonitoring(services, apiConfig.port, loadConfig(workerEnv).opsPort!);
}

/** The `monitoring` profile: off by default, pinned images, and deploy/'s files where Prometheus and Grafana read them. */
function expectMonitoring(services: Record<string, Service>, apiPort: number, opsPort: number): void {
  const { prometheus, grafana } = services as Record<string, Service>;
  for (const s of [prometheus, grafana]) expect(s!.profiles).toEqual(['monitoring']);
  // A release, not `latest` nor a moving major tag.
  expect(prometheus!.image).toMatch(/^docker\.io\/prom\/prometheus:v\d+\.\d+\.\d+$/);
  expect(grafana!.image).toMatch(/^docker\.io\/grafana\/grafana:\d+\.\d+\.\d+$/);
  expect(portsOf(prometheus!)).toEqual(['127.0.0.1:9090:9090']);
  expect(portsOf(grafana!)).toEqual(['127.0.0.1:3001:3000']);

  // Prometheus reads deploy/prometheus/prometheus.yml, whose rule_files (relative to it) is alerts.yml.
  expect(mountsOf(prometheus!)).toContain('prometheus:/etc/prometheus/skyhook:ro');
  expect(commandOf(prometheus!.command)).toContain('--config.file=/etc/prometheus/skyhook/prometheus.yml');
  const scrape = parse(readFileSync(join(ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
  };
  expect(scrape.rule_files).toEqual(['alerts.yml']);
  const job = scrape.scrape_configs.find((j) => j.job_name === 'skyhook');
  // The rules' `up` selects job=~"skyhook.*"; the api on PORT, each worker on OPS_PORT.
  expect(job?.dns_sd_configs.map((c) => [c.names, c.port])).toEqual([
    [['api'], apiPort],
    [['worker'], opsPort],
  ]);
  expect(testOf(prometheus!.healthcheck)).toContain('http://127.0.0.1:9090/-/ready');

  // Grafana: the data source (the stack's Prometheus) and the dashboard provider, which loads the dashboard
  // from the directory it is mounted in.
  const mounts = mountsOf(grafana!);
  expect(mounts).toEqual(
    expect.arrayContaining([
      'datasource.yml:/etc/grafana/provisioning/datasources/skyhook.yml:ro',
      'dashboards.yml:/etc/grafana/provisioning/dashboards/skyhook.yml:ro',
      'skyhook-dashboard.json:/etc/skyhook/grafana/dashboards/skyhook.json:ro',
    ]),
  );
  const datasource = parse(readFileSync(join(ROOT, 'deploy/grafana/datasource.yml'), 'utf8')) as { datasources: { type: string; url: string }[] };
  expect(datasource.datasources).toEqual([expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090' })]);
  const provider = parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards.yml'), 'utf8')) as { providers: { type: string; options: { path: string } }[] };
  expect(provider.providers).toEqual([expect.objectContaining({ type: 'file', options: { path: '/etc/skyhook/grafana/dashboards' } })]);
  expect(envOf(grafana!).GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe('/etc/skyhook/grafana/dashboards/skyhook.json');
  expect(grafana!.depends_on).toMatchObject({ prometheus: { condition: 'service_healthy' } });
}

describe('docker-compose.yml', () => {
  it('wires postgres, redis, api, worker, simulator and setup, and the monitoring profile (the file itself)', () => {
    const config = parse(readFileSync(FILE, 'utf8'), { merge: true }) as ComposeConfig;
    expectWiring(config, true);
  });

  it('mounts deploy/: the simulator companies file and the setup script, the rules, the scrape configuration, the Grafana provisioning and the dashboard', () => {
    const companies = JSON.parse(readFileSync(join(ROOT, 'deploy/simulator-companies.json'), 'utf8')) as { companies: { id: string; name?: string; token: string }[] };
    expect(companies.companies.length).toBeGreaterThan(0);
    for (const c of companies.companies) expect(c).toEqual({ id: expect.any(String), name: expect.any(String), token: expect.any(String) });
    for (const file of [
      'deploy/setup.mjs',
      'deploy/prometheus/prometheus.yml',
      'deploy/prometheus/alerts.yml',
      'deploy/grafana/datasource.yml',
      'deploy/grafana/dashboards.yml',
      'deploy/grafana/skyhook-dashboard.json',
    ]) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
    }
  });

  const compose = findCompose();
  const title = 'reads the same through the Compose CLI (`config`: validated and normalised, no engine needed)';
  if ('reason' in compose) {
    it.skip(`${title}: skipped, ${compose.reason}`, () => {});
  } else {
    for (const monitoring of [false, true]) {
      it(`${title}${monitoring ? ', with --profile monitoring' : ''}: ${compose.name}`, () => {
        const out = compose.run(['-f', FILE, ...(monitoring ? ['--profile', 'monitoring'] : []), 'config', ...(compose.json ? ['--format', 'json'] : [])]);
        const config = (compose.json ? JSON.parse(out) : parse(out)) as ComposeConfig;
        expectWiring(config, monitoring || 'if listed');
      });
    }
  }
});

/**
 * The Dockerfile's promises to other engines and to builds behind a proxy (docs/operations.md, "The
 * image"). scripts/prove-stack.sh builds it for real; these catch the same mistakes without an engine.
 */
describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');

  it('names its base image fully qualified (podman and buildah refuse short names)', () => {
    const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile);
    expect(arg?.[1]).toMatch(QUALIFIED);
    expect(dockerfile.match(/^FROM (\S+)/gm)).toEqual(['FROM ${NODE_IMAGE}', 'FROM ${NODE_IMAGE}', 'FROM ${NODE_IMAGE}']);
  });

  it('runs every npm ci with the optional CA and .npmrc build secrets and without install scripts', () => {
    const installs = dockerfile.split('\n').filter((line) => /^RUN .*\bnpm ci\b/.test(line));
    expect(installs).toHaveLength(2);
    for (const line of installs) {
      expect(line).toContain('--mount=type=secret,id=npm_ca,required=false');
      expect(line).toContain('--mount=type=secret,id=npmrc,required=false,target=/root/.npmrc');
      expect(line).toContain('--ignore-scripts');
    }
  });

  it('leaves no dependency install script undecided (package.json allowScripts)', () => {
    const ls = spawnSync('npm', ['install-scripts', 'ls'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    if (ls.status !== 0 && /Unknown command|not a valid command/i.test(`${ls.stdout}${ls.stderr}`)) return; // npm before 11.x has no allowScripts
    expect(ls.status, ls.stderr).toBe(0);
    expect(ls.stdout).not.toMatch(/not yet covered/);
  });
});

/** `npm run deps`: the override that starts just PostgreSQL and Redis for a machine without them. */
describe('deploy/compose.deps.yml', () => {
  const deps = parse(readFileSync(join(ROOT, 'deploy/compose.deps.yml'), 'utf8')) as { services: Record<string, Service> };
  const base = parse(readFileSync(FILE, 'utf8'), { merge: true }) as { services: Record<string, Service> };

  it('publishes PostgreSQL and Redis on 127.0.0.1 at their default ports unless moved, where Skyhook looks, PostgreSQL without a password', () => {
    expect(Object.keys(deps.services).sort()).toEqual(['postgres', 'redis']);
    for (const name of Object.keys(deps.services)) expect(base.services[name], name).toBeDefined();
    // The host side defaults to the standard port and can be moved (SKYHOOK_DEPS_*_PORT) when it is taken.
    expect(deps.services.postgres!.ports).toEqual(['127.0.0.1:${SKYHOOK_DEPS_POSTGRES_PORT:-5432}:5432']);
    expect(deps.services.redis!.ports).toEqual(['127.0.0.1:${SKYHOOK_DEPS_REDIS_PORT:-6379}:6379']);
    expect(deps.services.postgres!.environment).toMatchObject({ POSTGRES_HOST_AUTH_METHOD: 'trust' });
    expect(new URL(loadConfig({}).databaseUrl)).toMatchObject({ hostname: '127.0.0.1', port: '5432', username: 'postgres', password: '' });
  });
});
