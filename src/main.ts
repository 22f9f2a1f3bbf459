/** Entry: config -> runtime (roles chosen by ROLE) -> listen -> graceful shutdown on SIGTERM/SIGINT. */
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './lib/logger.js';
import { startRuntime } from './runtime.js';

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

  const runtime = await startRuntime(config, log);
  if (config.role !== 'worker') {
    await runtime.app!.listen({ port: config.port, host: config.host });
    log.info({ role: config.role, publicBaseUrl: config.publicBaseUrl }, 'skyhook is listening');
  } else {
    if (runtime.app) await runtime.app.listen({ port: config.opsPort!, host: config.host });
    log.info({ role: config.role, opsPort: config.opsPort }, 'skyhook worker is running');
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new requests, in-flight work finishes');
    const deadline = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5000);
    deadline.unref();
    await runtime.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(`skyhook: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
