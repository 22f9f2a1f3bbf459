/**
 * When the worker's shared statements (the claim, the snapshot store) may be named, so that PostgreSQL
 * keeps their plans.
 *
 * For a named statement PostgreSQL makes, after five executions on a connection, a generic plan, and from
 * then on uses it whenever it looks no dearer than planning anew (plan_cache_mode auto). It keeps that
 * plan until something invalidates it (DDL, an ANALYZE). Made while the tables are small (a new database,
 * the first minutes of an install, before autovacuum has looked at them), the generic plan scans whole
 * tables, looks cheapest, and goes on scanning them as they grow.
 *
 * So these statements run unnamed, planned for every batch, until PostgreSQL's generic plan for each of
 * them reads no table sequentially (an EXPLAIN of that plan, on a connection of its own); from then on
 * they are named, and PostgreSQL chooses plan by plan again. The check runs when a statement is about to
 * run, at most every CHECK_INTERVAL_MS, until it passes once. A speed mechanism, kept for its measured
 * gain: docs/decisions.md, "Speed mechanisms".
 */
import type pg from 'pg';
import type { Logger } from 'pino';

export interface Statement {
  name: string;
  text: string;
}

const CHECK_INTERVAL_MS = 10_000;

export class CachedPlans {
  private ready = false;
  private nextCheckAt = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly statements: Statement[],
    private readonly log: Logger,
  ) {}

  /** The name to run `statement` under, or none (an unnamed statement, planned each time). */
  nameFor(statement: Statement): string | undefined {
    if (!this.ready && Date.now() >= this.nextCheckAt) {
      this.nextCheckAt = Infinity;
      void this.genericPlansUseIndexes()
        .then((ok) => {
          this.ready = ok;
          if (ok) this.log.info('the worker statements now keep their plans: PostgreSQL plans them with the indexes');
        })
        .catch((err: unknown) => this.log.warn({ err }, 'could not check the worker statements\' plans; they stay planned per batch'))
        .finally(() => (this.nextCheckAt = Date.now() + CHECK_INTERVAL_MS));
    }
    return this.ready ? statement.name : undefined;
  }

  /** Whether no statement's generic plan, were it made now, scans a table sequentially. */
  async genericPlansUseIndexes(): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      for (const [i, s] of this.statements.entries()) {
        const params = Math.max(0, ...[...s.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        await client.query(`PREPARE skyhook_plan_check_${i} AS ${s.text}`);
        const args = params > 0 ? `(${Array(params).fill('NULL').join(', ')})` : '';
        const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE skyhook_plan_check_${i}${args}`);
        if (JSON.stringify(rows[0]!['QUERY PLAN']).includes('"Seq Scan"')) return false;
      }
      return true;
    } finally {
      // The session's setting and prepared statements go with the connection.
      client.release(true);
    }
  }
}
