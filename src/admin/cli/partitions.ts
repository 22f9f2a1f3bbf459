/**
 * `skyhook partitions …`: the growing tables' partitions by day (SPEC §5.3; db/partitions.ts), on the database
 * itself (DATABASE_URL), like `skyhook migrate`: a tool of the database's owner, not a change through the
 * admin API. `maintain` does what the worker's hourly retention pass does but end pending deliveries
 * `expired` (that is the pass's, with the queues): a day that holds one stays until the pass has run.
 */
import type { Command } from 'commander';
import pg from 'pg';
import { loadConfig } from '../../config.js';
import { DatabaseStartError } from '../../db/migrate.js';
import { listPartitions, maintainPartitions, type Partition } from '../../db/partitions.js';
import { UNFINISHED } from '../../processing/retention.js';
import { execute, group, subcommand, type JsonFlag } from './command.js';
import { table } from './output.js';

const size = (bytes: number): string => (bytes >= 1 << 30 ? `${(bytes / 2 ** 30).toFixed(1)} GB` : bytes >= 1 << 20 ? `${(bytes / 2 ** 20).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} kB`);
const when = (p: Partition): string => (p.kind === 'day' ? (p.day ?? '') : p.kind === 'history' ? `before ${p.until?.toISOString() ?? '?'}` : 'default (a catch)');

/** Runs `fn` on a pool of DATABASE_URL; a database out of reach is said in one line naming it. */
async function onDatabase<T>(fn: (pool: pg.Pool, retentions: { notifications: number; events: number; audit: number }) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 1, application_name: 'skyhook-cli' });
  try {
    await pool.query('SELECT 1').catch((err: unknown) => {
      throw new DatabaseStartError(config.databaseUrl, err);
    });
    return await fn(pool, { notifications: config.retentionDays, events: config.eventsRetentionDays, audit: config.auditRetentionDays });
  } finally {
    await pool.end();
  }
}

export function registerPartitions(program: Command): void {
  const partitions = group(program, 'partitions', "the growing tables' partitions by day (SPEC §5.3), on DATABASE_URL: list them, or make them ahead and drop those past retention");

  subcommand(partitions, 'list', 'list the partitions of every growing table: the day each holds, its rows (estimated; counted in a default partition, where none should be) and size')
    .option('--json', 'print JSON')
    .action((flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const all = await onDatabase((pool) => listPartitions(pool));
        if (flags.json) return void process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
        process.stdout.write(`${table(['TABLE', 'PARTITION', 'HOLDS', 'ROWS', 'SIZE'], all.map((p) => [p.table, p.name, when(p), String(p.rows), size(p.bytes)]))}\n`);
        const caught = all.filter((p) => p.kind === 'default' && p.rows > 0);
        if (caught.length > 0) process.stderr.write(`skyhook: rows in a default partition (${caught.map((p) => `${p.name}: ${p.rows}`).join(', ')}): see the SkyhookRowsInDefaultPartition runbook\n`);
      }),
    );

  subcommand(
    partitions,
    'maintain',
    "make the partitions of today and the next 7 days, and drop the days past RETENTION_DAYS, EVENTS_RETENTION_DAYS and AUDIT_RETENTION_DAYS, but a day that holds unfinished work; run it as the database's owner when Skyhook runs as a role that may not",
  )
    .option('--json', 'print JSON')
    .action((flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const result = await onDatabase((pool, retentions) => maintainPartitions(pool, { retentions, unfinished: UNFINISHED }));
        if (flags.json) return void process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        if (!result.owner) throw new Error("this role does not own the partitioned tables: run it as the database's owner (DATABASE_URL)");
        if (!result.ran) return void process.stdout.write('another process is maintaining the partitions right now: nothing done\n');
        const lines = [
          `made ${result.made.length} partitions${result.made.length > 0 ? `: ${result.made.join(', ')}` : ''}`,
          `dropped ${result.dropped.length}${result.dropped.length > 0 ? `: ${result.dropped.join(', ')}` : ''}`,
          ...result.kept.map((k) => `kept ${k.day}, past retention: ${k.reason}`),
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }),
    );
}
