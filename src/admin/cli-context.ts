/**
 * What an admin CLI command runs on: the same services as the admin API, over its own small pool and
 * a producer Redis connection (replays enqueue; if Redis is down the relay of a running Skyhook
 * queues them). Configuration comes from the same environment variables as `skyhook start`.
 */
import { loadConfig, type Config } from '../config.js';
import { connectDatabase } from '../db/client.js';
import { prepareDatabase } from '../db/migrate.js';
import { createLogger } from '../lib/logger.js';
import { connectRedis, redisReady } from '../lib/redis.js';
import { createFetchQueue, FetchEnqueuer } from '../processing/fetch-queue.js';
import { createServices, type Services } from '../services/index.js';

export interface AdminContext {
  config: Config;
  services: Services;
  close(): Promise<void>;
}

export async function openAdminContext(env: Record<string, string | undefined> = process.env): Promise<AdminContext> {
  const config = loadConfig(env);
  const log = createLogger({ env: config.env, logLevel: 'silent' });
  await prepareDatabase(config.databaseUrl);
  const handle = connectDatabase(config.databaseUrl, { max: 2, applicationName: 'skyhook-cli' });
  const redis = connectRedis(config, 'producer', 'skyhook-cli');
  await redisReady(redis, 2000).catch(() => {});
  const queue = createFetchQueue(redis, config.queuePrefix);
  queue.on('error', () => {});
  const enqueuer = new FetchEnqueuer(queue, redis, handle.pool, { attempts: config.fetch.attempts, timeoutMs: 2000 }, log);
  return {
    config,
    services: createServices({ db: handle.db, enqueuer, config }),
    async close() {
      await queue.close().catch(() => {});
      redis.disconnect();
      await handle.pool.end();
    },
  };
}
