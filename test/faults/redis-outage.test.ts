/**
 * Redis goes away while notifications arrive (SPEC §2, §4, §5 relay). Skyhook runs on a redis-server of
 * this file's own (never the machine's shared one), which the test stops with SIGTERM and starts again on
 * the same port, empty (no persistence).
 *
 * Proves: every BASIC notification delivered during the outage is answered 200 at its first attempt
 * (committed in PostgreSQL, left `received`); OAuth ones are answered 503 with Retry-After (no nonce
 * store, by design) and land on the simulator's retries; within seconds of Redis returning the relay
 * queues the `received` rows and every notification ends processed, with the simulator's final version
 * as snapshot and nothing missing or stored twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFixtures, oauthAuthorization, postNotification, seedCompany, seedWebhook } from '../helpers/fixtures.js';
import { killAllRedisServers, startOwnRedis, type OwnRedis } from '../helpers/redis-server.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';
import { expectNothingMissing, sleep, type FaultCompany } from './support.js';

let redis: OwnRedis;
let s: Scenario;

beforeAll(async () => {
  redis = await startOwnRedis();
  s = await startScenario({ env: { REDIS_URL: redis.url, FETCH_MIN_INTERVAL_MS: '0' } });
});

afterAll(async () => {
  // Closing BullMQ against a Redis that is down would wait for it: bring it back first.
  if (redis && !redis.running()) await redis.start(); // a failure to start is the run's to see
  await s?.close();
  await redis?.stop();
  killAllRedisServers();
});

describe('Redis outage', () => {
  it('answers every BASIC notification 200 while Redis is down and processes all within seconds of its return', async () => {
    const companies: Record<string, FaultCompany> = {
      basic: await s.company('basic', { authType: 'BASIC' }),
      oauth: await s.company('oauth', { authType: 'OAUTH', sharedTarget: true }),
    };

    // Before the outage: the normal path, so the jobs it queued are all done when Redis dies.
    await s.sim.fire({ companyId: 'basic', eventType: 'TripRequest', count: 20, resources: 5 });
    await s.sim.fire({ companyId: 'oauth', eventType: 'TripRequest', count: 20, resources: 5 });
    await s.sim.idle();
    await s.settled(40, 20_000);

    await redis.stop();
    const ready = await fetch(`${s.skyhook.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ database: true, redis: false });

    // During the outage: BASIC over the webhook's own targetURI, OAuth over the shared one.
    const basicFired = [
      ...(await s.sim.fire({ companyId: 'basic', eventType: 'TripRequest', count: 120, resources: 30 })),
      ...(await s.sim.fire({ companyId: 'basic', eventType: 'ClientLeads', count: 30, resources: 10 })),
    ];
    const oauthFired = await s.sim.fire({ companyId: 'oauth', eventType: 'TripRequest', count: 40, resources: 10 });
    const basicHrefs = new Set(basicFired.map((n) => n.notification.href));

    // Every BASIC delivery consumed at its first attempt: a 200, with the row committed.
    const basicDeliveries = () => s.sim.report().notifications.filter((n) => n.webhookId === companies.basic!.remoteWebhookId && basicHrefs.has(n.href));
    await eventually(async () => basicDeliveries().filter((n) => n.status === 'delivered').length === basicFired.length, 'BASIC deliveries during the outage', 20_000);
    const retriedBasic = basicDeliveries().filter((n) => n.attempts !== 1);
    expect(retriedBasic, 'BASIC notifications not answered 200 at their first attempt').toEqual([]);

    // Stored, and left `received`: nothing can queue them while Redis is away (the relay keeps failing).
    await sleep(1000);
    expect(await s.statusCounts()).toEqual({ processed: 40, received: basicFired.length });

    // A replay asked for meanwhile is accepted too: its row waits `received` for the relay, like the rest.
    const { rows: done } = await s.sql.query(`SELECT id FROM notifications WHERE status = 'processed' ORDER BY id LIMIT 1`);
    const replay = await s.skyhook.admin('POST', `/notifications/${done[0].id}/replay`);
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(replay.body.status).toBe('received');

    // OAuth needs the nonce store: refused with 503 and Retry-After, nothing stored, the simulator retries.
    const oauthDeliveries = s.sim.report().notifications.filter((n) => n.webhookId === companies.oauth!.remoteWebhookId && n.status === 'pending');
    expect(oauthDeliveries.length).toBe(oauthFired.length);
    const attempted = oauthDeliveries.filter((n) => n.attempts > 0);
    expect(attempted.length, 'OAuth deliveries attempted during the outage').toBeGreaterThan(0);
    for (const d of attempted) expect(d.lastError).toBe('answered HTTP 503');

    // The same, seen directly: a correctly signed OAuth notification gets a problem with Retry-After.
    const fx = connectFixtures(s.db.url);
    try {
      const company = await seedCompany(fx.db, s.skyhook.config.secretKey, { apiBaseUrl: s.sim.apiBaseUrl });
      const hook = await seedWebhook(fx.db, s.skyhook.config.secretKey, { companyId: company.id, authType: 'OAUTH', publicBaseUrl: s.skyhook.url });
      const rawBody = JSON.stringify({ id: 'direct-1', type: 'rfqs', href: `${s.sim.apiBaseUrl}/rfqs/direct-1` });
      const answer = await postNotification(s.skyhook.url, hook.path, {
        authorization: oauthAuthorization({ clientIdentifier: hook.clientIdentifier, secret: hook.secret, url: hook.targetURI, rawBody }),
        body: rawBody,
      });
      expect(answer.status, answer.text).toBe(503);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await s.sql.query('SELECT count(*)::int AS n FROM notifications WHERE company_id = $1', [company.id])).rows[0].n).toBe(0);
      await s.sql.query('DELETE FROM companies WHERE id = $1', [company.id]);
    } finally {
      await fx.pool.end();
    }

    // Redis returns (empty). The relay queues the `received` rows; the OAuth retries now land.
    await redis.start();
    const back = Date.now();
    const expected = 40 + basicFired.length + oauthFired.length;
    await eventually(async () => {
      const c = await s.statusCounts();
      return c.processed === expected && Object.keys(c).length === 1;
    }, `${expected} notifications processed after Redis returned`, 30_000);
    const recoveryMs = Date.now() - back;
    console.log(`redis-outage: all ${expected} notifications processed ${recoveryMs} ms after Redis returned`);
    expect(recoveryMs, 'processed within seconds of Redis returning').toBeLessThan(10_000);

    await s.sim.idle();
    const report = s.sim.report();
    expect(report.gaveUp).toBe(0);
    expect(report.delivered).toBe(expected);
    await expectNothingMissing(s.sql, report, { basic: companies.basic!, oauth: companies.oauth! });
    expect((await fetch(`${s.skyhook.url}/readyz`)).status).toBe(200);
  });

  /**
   * Rows already `queued` when Redis restarts empty have lost their jobs. The relay sees Redis's new
   * `run_id` and re-adds a job for every key with rows left `queued` at once (not after STALE_QUEUED_MS),
   * page after page.
   */
  it('recovers at once the jobs that an empty restarted Redis lost', async () => {
    await s.company('lost', { authType: 'BASIC' });
    const before = (await s.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM notifications')).rows[0]!.n;
    const worker = s.skyhook.runtime.worker!;
    await worker.pause();
    await s.sim.fire({ companyId: 'lost', eventType: 'TripRequest', count: 10, resources: 10 });
    await s.sim.idle();
    await eventually(async () => (await s.statusCounts()).queued === 10, '10 queued', 10_000);
    // And more keys than the relay takes in one page (1,000): rows of 1,500 other resources of the company.
    await s.sql.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
       SELECT company_id, webhook_id, 'orphan-' || g, type, regexp_replace(href, '[^/]+$', 'orphan-' || g), '{}'::jsonb, 'basic', 'queued'
       FROM (SELECT * FROM notifications WHERE status = 'queued' LIMIT 1) n, generate_series(1, 1500) g`,
    );
    await redis.stop();
    await redis.start();
    worker.resume();
    const back = Date.now();
    // The orphans' jobs are back within seconds, not the minute after which the relay re-queues rows left
    // `queued` without a restart: the first of them finished says so; all 1,510 then take what the
    // machine's speed gives them.
    await eventually(
      async () => (await s.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM notifications WHERE resource_id LIKE 'orphan-%' AND status NOT IN ('received', 'queued')")).rows[0]!.n > 0,
      'an orphan finished',
      30_000,
    );
    expect(Date.now() - back).toBeLessThan(20_000);
    await s.settled(before + 1510, 90_000);
  }, 150_000);
});
