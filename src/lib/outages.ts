/**
 * Outages and the errors of parts that carry on (SPEC §5): what is said while Redis or PostgreSQL is out of
 * reach, and how every other error is reported, counted, or folded into the outage that explains it.
 */
import { isDatabaseUnavailable } from './database-unavailable.js';
import type { ErrorReporter } from './error-reporter.js';
import { withoutPassword } from './redact.js';
import { isRedisUnavailable, type RedisTarget } from './redis/connection.js';

/** Error kinds of the outages a process waits out; each is one line when it starts and one when it ends. */
const REDIS_DOWN = 'redis_unreachable';
const POSTGRES_DOWN = 'postgres_unreachable';

type Outages = ReturnType<typeof outageReports>;

/** What the lines name, read from the configuration (config.ts): where Redis and PostgreSQL are, and the process's role. */
interface OutageConfig extends RedisTarget {
  databaseUrl: string;
  role: 'api' | 'worker' | 'all';
}

/**
 * The one line said when Redis or PostgreSQL becomes unreachable, what Skyhook does meanwhile (by role),
 * rate-limited reminders while it lasts, and one line when it is back.
 */
export function outageReports(config: OutageConfig, reporter: ErrorReporter) {
  const redisAt = config.redisClusterNodes
    ? `the Redis Cluster at ${config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')} (REDIS_CLUSTER_NODES)`
    : `Redis at ${withoutPassword(config.redisUrl)} (REDIS_URL)`;
  const postgresAt = `PostgreSQL at ${withoutPassword(config.databaseUrl)} (DATABASE_URL)`;
  // What goes on meanwhile: the receiver's part (not in a worker-only process), the worker's, the probe's.
  const meanwhile = (receiver: string) =>
    [...(config.role !== 'worker' ? [receiver] : []), ...(config.role !== 'api' ? ['fetches wait for it'] : []), '/readyz answers 503'].join('; ');
  const redisMeanwhile = meanwhile('Basic notifications are still stored and answered 200, and queued when it is back; OAuth ones are answered 503 (their nonce cannot be checked)');
  const postgresMeanwhile = meanwhile('notifications are answered 503 with Retry-After (nothing can be stored)');
  const postgresDown = (err: unknown) => reporter.report(POSTGRES_DOWN, err, `${postgresAt} is not reachable: ${postgresMeanwhile}`);
  const postgresBack = () => reporter.recovered(POSTGRES_DOWN, `${postgresAt} is reachable again`);
  return {
    redisDown: (err: unknown) => reporter.report(REDIS_DOWN, err, `${redisAt} is not reachable: ${redisMeanwhile}`),
    redisBack: () => reporter.recovered(REDIS_DOWN, `${redisAt} is reachable again`),
    postgresDown,
    postgresBack,
    /** For connectDatabase: a lost connection is an outage until a new one connects. */
    postgresEvents: { onError: postgresDown, onConnect: postgresBack },
  };
}

/**
 * Errors of parts that carry on. A part that uses one dependency (`on`) reports its loss as that outage;
 * an error an outage already reported explains is counted under its kind without a line of its own;
 * anything else is logged under its kind.
 */
export function errorPolicy(reporter: ErrorReporter, outages: Outages) {
  return (kind: string, message: string, on?: 'redis' | 'postgres') =>
    (err: unknown, fields?: Record<string, unknown>): void => {
      const redis = isRedisUnavailable(err);
      const postgres = isDatabaseUnavailable(err);
      if (on === 'redis' && redis) outages.redisDown(err);
      else if (on === 'postgres' && postgres) outages.postgresDown(err);
      else if ((redis && reporter.active(REDIS_DOWN)) || (postgres && reporter.active(POSTGRES_DOWN))) reporter.count(kind);
      else reporter.report(kind, err, message, fields);
    };
}

