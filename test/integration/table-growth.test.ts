/**
 * Processing must cost the same per notification on a large database as on the new one it started on.
 * PostgreSQL reuses a generic plan for a named statement after five executions on a connection; made
 * while the tables were small, the snapshot store's plan scanned all of `resources` and `notifications`
 * for every batch, and went on doing so as they grew (runtime.ts sets the worker's pool to plan per
 * batch). The witness is PostgreSQL's own count of rows read by sequential scans.
 */
import { afterEach, expect, it } from 'vitest';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const GROWN_BY = 50_000;

it('the snapshot store keeps using the indexes after the tables grow from empty', async () => {
  scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  const s = scenario;
  // An ANALYZE would make PostgreSQL plan again; this test is about a connection that is never told to.
  await s.sql.query('ALTER TABLE resources SET (autovacuum_enabled = false)');
  await s.sql.query('ALTER TABLE notifications SET (autovacuum_enabled = false)');
  const { companyId } = await s.company('acme');

  // One notification at a time: one store per notification, on the worker's pool connections, while
  // the tables hold a handful of rows.
  let fired = 0;
  const fireOne = async (resourceId: string) => {
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', resourceId });
    await s.settled(++fired);
  };
  for (let k = 0; k < 8; k++) await fireOne(`rfq-small-${k}`);

  // The tables grow as they would over weeks of traffic.
  await s.sql.query(
    `INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
     SELECT $1, 'https://elsewhere.test/api/rfqs/old-' || g, 'TripRequest', 'old-' || g, 1, now(), false, '{"old": true}'
     FROM generate_series(1, $2::int) g`,
    [companyId, GROWN_BY],
  );
  for (let k = 0; k < 5; k++) await fireOne(`rfq-large-${k}`);

  // Each backend reports its table statistics by the time it exits.
  await s.skyhook.stop();
  s.skyhooks.length = 0;
  const stats = await eventually(async () => {
    const { rows } = await s.sql.query<{ events: string; seq_read: string }>(
      `SELECT (SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'events') AS events,
              (SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'resources') AS seq_read`,
    );
    return Number(rows[0]!.events) >= 13 && rows[0];
  }, 'the worker connections report their statistics');
  // Each store of the five after the growth would have read all 50,000 rows with the small tables' plan.
  expect(Number(stats.seq_read)).toBeLessThan(GROWN_BY);
}, 60_000);
