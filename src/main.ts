/**
 * Entry: config -> runtime (roles chosen by ROLE) -> listen -> start (waits for PostgreSQL) -> graceful
 * shutdown on SIGTERM/SIGINT. It listens before PostgreSQL is ready, so that probes answer (/readyz 503)
 * and senders are told to retry while it waits; it never waits for Redis (SPEC §5).
 */
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './lib/logger.js';
import { createRuntime } from './runtime.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`skyhook: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config);
  for (const warning of config.warnings) log.warn(warning);

  const runtime = await createRuntime(config, log);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new requests, in-flight work finishes');
    const deadline = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 10_000);
    deadline.unref();
    await runtime.close();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => void stop(signal));

  if (runtime.app) {
    const port = config.role === 'worker' ? config.opsPort! : config.port;
    await runtime.app.listen({ port, host: config.host });
    const base = config.publicBaseUrl;
    const pages = config.role === 'worker' ? {} : { publicBaseUrl: base, docs: `${base}/docs`, console: `${base}/console`, queues: `${base}/admin/queues` };
    log.info({ role: config.role, port, ...pages }, `skyhook is listening${'docs' in pages ? `: API docs ${pages.docs}, console ${pages.console} (sign in with the admin token), queue dashboard ${pages.queues} (user any, password the admin token)` : ''}`);
  }
  try {
    await runtime.start();
  } catch (err) {
    if (stopping) return; // a signal ended the wait for PostgreSQL
    throw err;
  }
  log.info({ role: config.role }, 'skyhook started');
}

main().catch((err) => {
  // One line: a refused database names PostgreSQL and DATABASE_URL, never its password (db/migrate.ts).
  console.error(`skyhook: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
