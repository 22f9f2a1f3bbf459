/**
 * The growing tables' partitions (SPEC §5.3; docs/decisions.md, "Partitions"): one a day (UTC) by ranges of
 * their time-carrying ids (schema/partitioned.ts), made ahead, and dropped whole once past their retention.
 * Each table has three kinds of partition: `<table>_history` (the table the previous version made, attached
 * by migration partitions_attach; its rows are older than the time in its comment), `<table>_pYYYYMMDD`, and
 * `<table>_default`, a catch only: nothing lands there while partitions are made ahead, and
 * skyhook_partition_default_rows says when something does.
 *
 * Every change holds PostgreSQL's locks only for a moment: a new partition is made as a table of its own and
 * attached (SHARE UPDATE EXCLUSIVE on the parent: reads and writes go on), a dropped one is dropped alone
 * (ACCESS EXCLUSIVE on the parent), not tried while a long read holds the table; each waits at most
 * LOCK_TIMEOUT_MS for its lock, so the service's queries never queue behind it for longer, and tries again. One process at a time maintains them, under
 * an advisory lock; the others skip.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { idAt } from './schema/partitioned.js';

/** What a table's rows are kept for: SPEC §5.3's three retentions. */
export type RetentionClass = 'notifications' | 'events' | 'audit';
export type Retentions = Record<RetentionClass, number>;

/**
 * The partitioned tables and their retentions. A day of the `notifications` class goes as one: the
 * notifications, their fetch attempts and replays, the deliveries and their attempts made that day.
 */
export const PARTITIONED_TABLES = [
  { table: 'notifications', retention: 'notifications' },
  { table: 'fetch_attempts', retention: 'notifications' },
  { table: 'notification_replays', retention: 'notifications' },
  { table: 'deliveries', retention: 'notifications' },
  { table: 'delivery_attempts', retention: 'notifications' },
  { table: 'events', retention: 'events' },
  { table: 'audit_log', retention: 'audit' },
] as const satisfies readonly { table: string; retention: RetentionClass }[];

export type PartitionedTable = (typeof PARTITIONED_TABLES)[number]['table'];

/** Days of partitions made ahead of today: a process down for a week still finds today's at start-up. */
export const DAYS_AHEAD = 7;
const PARTITIONS_LOCK = 7_461_736_002; // arbitrary, fixed: "skyhook partitions"
const LOCK_TIMEOUT_MS = 50;
const LOCK_TRIES = 10;
/** A transaction holding a table this long is a long read, which a drop waits out rather than queue behind; for at most PATIENCE_MS. */
const LONG_READ_MS = 1000;
const PATIENCE_MS = 120_000;

export interface Partition {
  table: PartitionedTable;
  name: string;
  kind: 'history' | 'day' | 'default';
  /** The day it holds (UTC, YYYY-MM-DD), for a day's partition. */
  day: string | null;
  /** For a day's partition: when its last row was made (its upper bound); for the history: the conversion's time. */
  until: Date | null;
  /** PostgreSQL's estimate (exact for a default partition, whose rows should be none). */
  rows: number;
  bytes: number;
}

type Sql = Pick<pg.Pool, 'query' | 'connect'>;

const DAY_MS = 86_400_000;
const startOfDay = (at: Date): Date => new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
const dayName = (day: Date): string => day.toISOString().slice(0, 10).replaceAll('-', '');
const partitionName = (table: string, day: Date): string => `${table}_p${dayName(day)}`;

/** The partitions of every partitioned table, oldest first, the default last. */
export async function listPartitions(sql: Pick<pg.Pool, 'query'>): Promise<Partition[]> {
  const { rows } = await sql.query<{ parent: PartitionedTable; name: string; bound: string; comment: string | null; rows: string; bytes: string }>(
    `SELECT p.relname AS parent, c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, obj_description(c.oid, 'pg_class') AS comment,
            greatest(c.reltuples, 0)::bigint AS rows, pg_total_relation_size(c.oid) AS bytes
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
     JOIN pg_namespace n ON n.oid = p.relnamespace
     WHERE n.nspname = current_schema() AND p.relname = ANY($1::text[])`,
    [PARTITIONED_TABLES.map((t) => t.table)],
  );
  const partitions = rows.map((r): Partition => {
    const base = { table: r.parent, name: r.name, rows: Number(r.rows), bytes: Number(r.bytes) };
    if (r.bound === 'DEFAULT') return { ...base, kind: 'default', day: null, until: null };
    const day = /_p(\d{4})(\d{2})(\d{2})$/.exec(r.name);
    if (day) return { ...base, kind: 'day', day: `${day[1]}-${day[2]}-${day[3]}`, until: new Date(Date.parse(`${day[1]}-${day[2]}-${day[3]}T00:00:00Z`) + DAY_MS) };
    const made = /rows made before (\S+)/.exec(r.comment ?? '');
    return { ...base, kind: 'history', day: null, until: made?.[1] ? new Date(made[1]) : null };
  });
  // A default partition's rows are counted, not estimated: they are the ones an alert must not miss.
  for (const p of partitions.filter((x) => x.kind === 'default')) p.rows = await countRows(sql, p.name);
  const order = { history: 0, day: 1, default: 2 };
  return partitions.sort((a, b) => a.table.localeCompare(b.table) || order[a.kind] - order[b.kind] || a.name.localeCompare(b.name));
}

/** Rows in each table's default partition: none in normal running (skyhook_partition_default_rows). */
export async function defaultPartitionRows(sql: Pick<pg.Pool, 'query'>): Promise<Map<PartitionedTable, number>> {
  const counts = new Map<PartitionedTable, number>();
  for (const { table } of PARTITIONED_TABLES) counts.set(table, await countRows(sql, `${table}_default`));
  return counts;
}

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** The rows of table `name` (that match `where`, an SQL condition), counted. */
async function countRows(sql: Pick<pg.Pool, 'query'>, name: string, where?: string): Promise<number> {
  const { rows } = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${quote(name)}${where === undefined ? '' : ` WHERE ${where}`}`);
  return Number(rows[0]?.n ?? 0);
}

/** Whether a transaction older than LONG_READ_MS holds a lock on `table` (a long read): a try now would only wait for it. */
async function heldLong(client: pg.PoolClient, table: string): Promise<boolean> {
  const { rows } = await client.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                    WHERE l.relation = $1::regclass AND l.pid <> pg_backend_pid() AND a.xact_start < now() - make_interval(secs => $2::double precision / 1000)) AS held`,
    [table, LONG_READ_MS],
  );
  return rows[0]?.held ?? false;
}

/**
 * Runs `statements` in one transaction whose every lock is waited for at most LOCK_TIMEOUT_MS, retried a few
 * times. With `table` (a statement that needs its ACCESS EXCLUSIVE lock: a drop), no try is made while a long
 * transaction holds the table, for up to PATIENCE_MS: each try would queue the service's queries behind it.
 */
async function briefly(client: pg.PoolClient, statements: string[], table?: string): Promise<void> {
  const patience = performance.now() + PATIENCE_MS;
  for (let attempt = 1; ; attempt++) {
    while (table && performance.now() < patience && (await heldLong(client, table))) await sleep(LONG_READ_MS / 4);
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      for (const statement of statements) await client.query(statement);
      await client.query('COMMIT');
      return;
    } catch (err) {
      await client.query('ROLLBACK');
      if ((err as { code?: string }).code !== '55P03' || attempt >= LOCK_TRIES) throw err;
    }
    await sleep(LOCK_TIMEOUT_MS * attempt);
  }
}

/** The statements that make `table`'s partition of `day`: a table of its own, then attached. */
function makeStatements(table: PartitionedTable, day: Date): string[] {
  const name = partitionName(table, day);
  const from = idAt(day);
  const to = idAt(new Date(day.getTime() + DAY_MS));
  return [
    `CREATE TABLE ${quote(name)} (LIKE ${quote(table)} INCLUDING DEFAULTS INCLUDING STORAGE)`,
    // Its bound as a constraint: ATTACH then need not scan it (it is empty anyway) and the catch is checked cheaply.
    `ALTER TABLE ${quote(name)} ADD CONSTRAINT ${quote(`${name}_bound`)} CHECK (id >= ${from} AND id < ${to})`,
    // A unique key without the id cannot be the partitioned table's: each partition holds its own.
    ...(table === 'events' ? [`CREATE UNIQUE INDEX ${quote(`${name}_company_seq_idx`)} ON ${quote(name)} (company_id, seq)`] : []),
    `ALTER TABLE ${quote(table)} ATTACH PARTITION ${quote(name)} FOR VALUES FROM (${from}) TO (${to})`,
    `ALTER TABLE ${quote(name)} DROP CONSTRAINT ${quote(`${name}_bound`)}`,
  ];
}

export interface MaintainResult {
  /** False when another process held the lock (it is maintaining them), or this role may not (`owner`). */
  ran: boolean;
  /** Whether this role owns the partitioned tables (only an owner may make and drop partitions). */
  owner: boolean;
  /** Days ahead of today whose partitions all exist, after this run. */
  daysAhead: number;
  made: string[];
  dropped: string[];
  /** Days past retention kept, with why: they still hold unfinished work, or a long read held their table. */
  kept: { day: string; reason: string }[];
}

/** SQL conditions (the lifecycles' guards) for the rows a notifications-class day may not be dropped with. */
export interface Unfinished {
  notifications: string;
  deliveries: string;
}

/**
 * Makes every missing partition from today to DAYS_AHEAD days ahead, and, with `retentions`, drops the days
 * past their retention: the history partition once the conversion itself is past it. A day of the
 * notifications class that still holds a notification not final (a paused company's, SPEC §5.1 F4) or a
 * pending delivery is kept, whole, until it ends; the caller ends pending deliveries past retention `expired`
 * first (DeliveryLifecycle.expire).
 */
export async function maintainPartitions(sql: Sql, opts: { now?: Date; retentions?: Retentions; unfinished?: Unfinished }): Promise<MaintainResult> {
  const now = opts.now ?? new Date();
  const client = await sql.connect();
  try {
    const existing = new Set((await listPartitions(client)).map((p) => p.name));
    const today = startOfDay(now);
    const ahead = () => {
      let d = 0;
      while (d <= DAYS_AHEAD && PARTITIONED_TABLES.every(({ table }) => existing.has(partitionName(table, new Date(today.getTime() + d * DAY_MS))))) d++;
      return d - 1;
    };
    const { rows: owns } = await client.query<{ owner: boolean }>(`SELECT pg_has_role(current_user, relowner, 'USAGE') AS owner FROM pg_class WHERE oid = 'notifications'::regclass`);
    if (!owns[0]?.owner) return { ran: false, owner: false, daysAhead: ahead(), made: [], dropped: [], kept: [] };
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PARTITIONS_LOCK]);
    if (!rows[0]?.locked) return { ran: false, owner: true, daysAhead: ahead(), made: [], dropped: [], kept: [] };
    try {
      const result: MaintainResult = { ran: true, owner: true, daysAhead: 0, made: [], dropped: [], kept: [] };
      await dropDetached(client, result); // before a day ahead is made again under its name
      for (let d = 0; d <= DAYS_AHEAD; d++) {
        const day = new Date(today.getTime() + d * DAY_MS);
        for (const { table } of PARTITIONED_TABLES) {
          if (existing.has(partitionName(table, day))) continue;
          await briefly(client, makeStatements(table, day));
          existing.add(partitionName(table, day));
          result.made.push(partitionName(table, day));
        }
      }
      result.daysAhead = ahead();
      if (opts.retentions && opts.unfinished) await dropExpired(client, now, opts.retentions, opts.unfinished, result);
      return result;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PARTITIONS_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** What still holds a notifications-class partition back: work that is not finished. */
async function unfinishedIn(client: pg.PoolClient, group: Partition[], unfinished: Unfinished): Promise<string | null> {
  const of = (table: string) => group.find((p) => p.table === table)?.name;
  const notifications = of('notifications');
  const notFinal = notifications ? await countRows(client, notifications, unfinished.notifications) : 0;
  if (notFinal > 0) return `${notFinal} notifications not final (a paused company's wait there)`;
  const deliveries = of('deliveries');
  const pending = deliveries ? await countRows(client, deliveries, unfinished.deliveries) : 0;
  if (pending > 0) return `${pending} deliveries pending`;
  return null;
}

/**
 * Partitions detached by a drop that stopped before the table itself went (the process ended between the
 * two): tables named as partitions that are no longer attached. A partition is made and attached in one
 * transaction, so no other table has such a name.
 */
async function dropDetached(client: pg.PoolClient, result: MaintainResult): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND NOT c.relispartition AND c.relname ~ $1`,
    [`^(${PARTITIONED_TABLES.map((t) => t.table).join('|')})_(p[0-9]{8}|history)$`],
  );
  for (const { name } of rows) {
    await briefly(client, [`DROP TABLE ${quote(name)}`]);
    result.dropped.push(name);
  }
}

async function dropExpired(client: pg.PoolClient, now: Date, retentions: Retentions, unfinished: Unfinished, result: MaintainResult): Promise<void> {
  const partitions = (await listPartitions(client)).filter((p) => p.kind !== 'default');
  for (const retention of ['notifications', 'events', 'audit'] as const) {
    const cutoff = now.getTime() - retentions[retention] * DAY_MS;
    const tables = new Set<string>(PARTITIONED_TABLES.filter((t) => t.retention === retention).map((t) => t.table));
    // Grouped by day (the history as one group): a day of a class goes as one, or stays as one.
    const groups = new Map<string, Partition[]>();
    for (const p of partitions) {
      if (!tables.has(p.table) || !p.until || p.until.getTime() > cutoff) continue;
      const key = p.day ?? 'history';
      groups.set(key, [...(groups.get(key) ?? []), p]);
    }
    for (const [day, group] of groups) {
      const reason = retention === 'notifications' ? await unfinishedIn(client, group, unfinished) : null;
      if (reason) {
        result.kept.push({ day, reason });
        continue;
      }
      try {
        for (const p of group) {
          // Detached first: the parent's ACCESS EXCLUSIVE lock is then held for a change of the catalog
          // only, and the files go with the drop of a table no query can reach any more.
          await briefly(client, [`ALTER TABLE ${quote(p.table)} DETACH PARTITION ${quote(p.name)}`], p.table);
          await briefly(client, [`DROP TABLE ${quote(p.name)}`]);
          result.dropped.push(p.name);
        }
      } catch (err) {
        if ((err as { code?: string }).code !== '55P03') throw err;
        // Held by long reads through every try: the next run drops what is left of the day.
        result.kept.push({ day, reason: 'its table stayed locked by a long read through every try: dropped at the next run' });
      }
    }
  }
}
