/**
 * When the worker's shared statements (the fetches' claim and snapshot store, the delivery job's claim and
 * record) may be named, so that PostgreSQL keeps their plans. The worker's connections plan generically
 * (plan_cache_mode force_generic_plan, runtime.ts): a named statement's plan is made once and kept, until DDL
 * or an ANALYZE invalidates it.
 * Made while the tables are small (a new install, before autovacuum has looked at them), that plan scans
 * whole tables, looks cheapest, and goes on scanning them as they grow. So the statements run unnamed,
 * planned per batch, until an EXPLAIN of each one's generic plan (on a connection of its own) reads no table
 * sequentially; the check runs at most every PLAN_CHECK_INTERVAL_MS until it passes once. A speed mechanism:
 * docs/decisions.md, "Speed mechanisms".
 */
import type pg from 'pg';
import type { Logger } from 'pino';

export interface Statement {
  name: string;
  text: string;
  /**
   * Tables a sequential scan of is fine in its plan: they hold a row per webhook, not per notification. (Over
   * the partitioned notifications, PostgreSQL expects a row per partition from a lookup by id, and joins the
   * few webhooks by a hash of them.)
   */
  smallTables?: string[];
}

/** The relations a plan (EXPLAIN's JSON) reads by a sequential scan. */
function seqScanned(plan: unknown, into: string[] = []): string[] {
  if (Array.isArray(plan)) for (const p of plan) seqScanned(p, into);
  else if (plan && typeof plan === 'object') {
    const node = plan as Record<string, unknown>;
    if (node['Node Type'] === 'Seq Scan' && typeof node['Relation Name'] === 'string') into.push(node['Relation Name']);
    for (const value of Object.values(node)) if (value && typeof value === 'object') seqScanned(value, into);
  }
  return into;
}

export const PLAN_CHECK_INTERVAL_MS = 10_000;

export class CachedPlans {
  private ready = false;
  private nextCheckAt = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly statements: Statement[],
    private readonly log: Pick<Logger, 'info' | 'warn'>,
  ) {}

  /** The name to run `statement` under, or none (an unnamed statement, planned each time). */
  nameFor(statement: Statement): string | undefined {
    if (!this.ready && Date.now() >= this.nextCheckAt) {
      this.nextCheckAt = Infinity;
      void this.genericPlansUseIndexes()
        .then((ok) => {
          this.ready = ok;
          if (ok) this.log.info({ statements: this.statements.map((s) => s.name) }, 'the worker statements now keep their plans: PostgreSQL plans them with the indexes');
        })
        .catch((err: unknown) => this.log.warn({ err }, 'could not check the worker statements\' plans; they stay planned per batch'))
        .finally(() => (this.nextCheckAt = Date.now() + PLAN_CHECK_INTERVAL_MS));
    }
    return this.ready ? statement.name : undefined;
  }

  /** Whether no statement's generic plan, were it made now, scans a table sequentially (but its small tables). */
  async genericPlansUseIndexes(): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      for (const [i, s] of this.statements.entries()) {
        const params = Math.max(0, ...[...s.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        await client.query(`PREPARE skyhook_plan_check_${i} AS ${s.text}`);
        const args = params > 0 ? `(${Array(params).fill('NULL').join(', ')})` : '';
        const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE skyhook_plan_check_${i}${args}`);
        if (seqScanned(rows[0]!['QUERY PLAN']).some((table) => !s.smallTables?.includes(table))) return false;
      }
      return true;
    } finally {
      // The session's setting and prepared statements go with the connection.
      client.release(true);
    }
  }
}
