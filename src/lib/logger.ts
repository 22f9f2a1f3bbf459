import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/** pino: JSON in production (and whenever output is not a terminal), readable in development. Secrets are redacted. */
export function createLogger(config: { env: 'development' | 'test' | 'production'; logLevel: string }): Logger {
  return pino({
    level: config.logLevel,
    base: { service: 'skyhook' },
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'authorization',
        'req.headers["x-avinode-apitoken"]',
        'headers["x-avinode-apitoken"]',
        '*.apiToken',
        '*.authToken',
        '*.clientSecret',
        '*.access_token',
        '*.secret',
        '*.token',
      ],
      censor: '[redacted]',
    },
    ...(config.env === 'development' && process.stdout.isTTY && prettyAvailable() ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  });
}

/** pino-pretty is a dev dependency: an image without it logs JSON instead of failing to start. */
function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
