/**
 * A newcomer on a machine where PostgreSQL or Redis does not answer: `npm run demo` and the CLI's database
 * commands end within seconds saying which one, where (from which variable), and the command that starts
 * it from the compose file; no stack trace, no JSON log line. `npm run deps` says what it runs, and why it
 * cannot when neither Docker nor podman is there.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/skyhook.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A PATH where neither Docker nor podman is (the commands run with this Node.js itself, so they need nothing on it). */
const EMPTY_PATH = await mkdtemp(join(tmpdir(), 'skyhook-empty-path-'));

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: typeof err?.code === 'number' ? err.code : err ? 1 : 0, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Closed ports: nothing answers there. */
async function closed(): Promise<{ databaseUrl: string; redisUrl: string }> {
  return { databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/skyhook`, redisUrl: `redis://127.0.0.1:${await freePort()}` };
}

const plain = (text: string) => {
  expect(text).not.toMatch(/^\s+at /m); // no stack trace
  expect(text).not.toMatch(/\{"level":/); // no JSON log line
};

describe('a newcomer without PostgreSQL or Redis', () => {
  it('npm run demo ends within seconds naming both, their addresses and variables, and the compose command', async () => {
    const { databaseUrl, redisUrl } = await closed();
    const r = await run(['bin/skyhook.js', 'demo'], { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl });
    expect(r.code).not.toBe(0);
    expect(r.ms).toBeLessThan(15_000);
    expect(r.stderr).toContain(`PostgreSQL does not answer at ${new URL(databaseUrl).host} (DATABASE_URL=${databaseUrl})`);
    expect(r.stderr).toContain(`Redis does not answer at ${new URL(redisUrl).host} (REDIS_URL=${redisUrl})`);
    expect(r.stderr).toMatch(/(docker compose|podman-compose) -f docker-compose\.yml -f deploy\/compose\.deps\.yml up -d postgres redis/);
    expect(r.stderr).toContain('npm run deps');
    expect(r.stdout).toBe('');
    plain(r.stderr);
  });

  it('names only the one that does not answer: Redis alone', async () => {
    const { redisUrl } = await closed();
    const r = await run(['bin/skyhook.js', 'demo'], { REDIS_URL: redisUrl });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Redis does not answer');
    expect(r.stderr).not.toContain('PostgreSQL does not answer');
    plain(r.stderr);
  });

  it('names Docker and podman both when neither is installed', async () => {
    const { databaseUrl } = await closed();
    const r = await run(['bin/skyhook.js', 'demo'], { DATABASE_URL: databaseUrl, PATH: EMPTY_PATH });
    expect(r.stderr).toContain('install Docker, or podman with podman-compose, first');
    expect(r.stderr).toContain('docker compose -f docker-compose.yml');
    expect(r.stderr).toContain('podman-compose -f docker-compose.yml');
  });

  it('a CLI command that needs the database says the same, the same way', async () => {
    const { databaseUrl } = await closed();
    for (const args of [['companies', 'list'], ['companies', 'create', '--name', 'Acme', '--api-base-url', 'https://api.example.com/api', '--api-token', 'token-0123456789']]) {
      const r = await run(['bin/skyhook.js', ...args], { DATABASE_URL: databaseUrl });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.ms).toBeLessThan(15_000);
      expect(r.stderr).toContain(`PostgreSQL does not answer at ${new URL(databaseUrl).host} (DATABASE_URL=${databaseUrl})`);
      expect(r.stderr).toContain('deploy/compose.deps.yml up -d postgres redis');
      plain(r.stderr);
    }
  });

  it('npm run deps: says why when neither Docker nor podman is there; runs the compose file otherwise', async () => {
    const { databaseUrl, redisUrl } = await closed();
    const tsx = join(ROOT, 'node_modules/tsx/dist/cli.mjs');
    const none = await run([tsx, 'scripts/deps.ts'], { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PATH: EMPTY_PATH });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('Neither Docker (with its engine running) nor podman-compose is installed here');
    // A podman-compose of the test's own, that records what it is asked and fails as a machine without images would.
    const bin = await mkdtemp(join(tmpdir(), 'skyhook-deps-'));
    await writeFile(join(bin, 'podman-compose'), `#!/bin/sh\necho "$@" > "${bin}/args"\nexit 3\n`);
    await chmod(join(bin, 'podman-compose'), 0o755);
    const stub = await run([tsx, 'scripts/deps.ts'], { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PATH: bin });
    expect((await readFile(join(bin, 'args'), 'utf8')).trim()).toBe('-f docker-compose.yml -f deploy/compose.deps.yml up -d postgres redis');
    expect(stub.code).toBe(1);
    expect(stub.stderr).toContain('podman-compose could not start them (exit 3)');
    // Where both answer already (this machine's own), there is nothing to start.
    const running = await run([tsx, 'scripts/deps.ts'], { PATH: EMPTY_PATH });
    expect(running.code).toBe(0);
    expect(running.stdout).toContain('already answer');
  }, 90_000);
});
