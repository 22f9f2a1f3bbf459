/**
 * Deliveries (SPEC §5.2) beyond test/integration/deliveries.test.ts: each destination on its own (a hanging
 * one delays no other company), a 429 with Retry-After holds the whole destination, a destination without
 * a success for DESTINATION_DISABLE_AFTER_DAYS is disabled, a deleted destination's pending deliveries end
 * `skipped`, enabling with skipBefore skips older ones, pending deliveries past RETENTION_DAYS end
 * `expired`, and a body above DELIVERY_BODY_LIMIT_BYTES leaves its snapshot (then its changes) out.
 * One Skyhook (role all) against the simulator; each company's application is a real receiver that
 * verifies every request with the reference Standard Webhooks library.
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeDeletedCompanies } from '../../src/companies/purge.js';
import { connectDatabase, type DbHandle } from '../../src/db/client.js';
import { destinationGateOptions } from '../../src/delivery/delivery.queue.js';
import { createDestinationStates, type DestinationStatesRepository, type Recorded } from '../../src/destinations/postgres.js';
import { Gate } from '../../src/gate/gate.js';
import { REDIS_URL } from '../helpers/database.js';
import { deliveriesOf, destinationFor, destinationView, storedVersion } from '../helpers/destinations.js';
import { startReceiver, type Answer, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { adminClient, eventually } from '../helpers/skyhook.js';
import { sleep } from '../faults/support.js';

/** A destination's requests time out after this (the hanging destination's). */
/** A's own timeout (its destination's `timeoutMs`): B must be answered while A still hangs, on a slow and loaded machine too (at 15 s, CI's once was not). */
const A_TIMEOUT_MS = 45_000;
/** Each destination runs at most this many requests at once: fewer than the worker's DELIVERY_CONCURRENCY. */
const DESTINATION_CONCURRENCY = 4;
const BODY_LIMIT = 4096;
/** 0.864 s: a failing destination is disabled at the deliveries' loop's next pass. */
const DISABLE_AFTER_DAYS = 0.00001;

let s: Scenario;
const receivers: TestReceiver[] = [];
/** Requests a receiver holds open: let go at the end. */
const held: (() => void)[] = [];

beforeAll(async () => {
  s = await startScenario({
    env: {
      FETCH_MIN_INTERVAL_MS: '0',
      DELIVERY_RETRY_SCHEDULE: '0,300,300,300,300,300,300,300',
      DESTINATION_CONCURRENCY: String(DESTINATION_CONCURRENCY),
      DELIVERY_CONCURRENCY: '8',
      DESTINATION_DISABLE_AFTER_DAYS: String(DISABLE_AFTER_DAYS),
      DELIVERY_BODY_LIMIT_BYTES: String(BODY_LIMIT),
    },
  });
});

afterAll(async () => {
  for (const let_go of held) let_go();
  for (const r of receivers) await r.close();
  await s?.close();
});

async function receiver(answer?: TestReceiver['answer']): Promise<TestReceiver> {
  const r = await startReceiver();
  if (answer) r.answer = answer;
  receivers.push(r);
  return r;
}

/** An answer that never comes (until the end of the file): Skyhook's timeout ends the request. */
const hang = () => new Promise<Answer>((resolve) => held.push(() => resolve({ status: 503 })));

const admin = (method: string, path: string, body?: unknown) => s.skyhook.admin(method, path, body);

/** The destinations' repository the runtime builds, on a connection of its own, for what a test does as the worker would. */
async function withStates(use: (states: DestinationStatesRepository) => Promise<void>): Promise<void> {
  const handle: DbHandle = connectDatabase(s.db.url, { max: 1, applicationName: 'delivery-behaviours-test' });
  const redis = new Redis(REDIS_URL);
  try {
    await use(
      createDestinationStates({
        db: handle.db,
        gate: new Gate(redis, s.prefix, 'destination', destinationGateOptions()),
        wake: async () => undefined,
        schedule: [0, 5000],
        log: pino({ level: 'silent' }),
        onGateError: (err) => {
          throw err;
        },
      }),
    );
  } finally {
    redis.disconnect();
    await handle.pool.end();
  }
}

describe('each destination on its own (SPEC §5.2)', () => {
  it("a destination that hangs until the timeout does not delay another company's deliveries", async () => {
    const a = await s.company('hangs');
    const b = await s.company('answers');
    const ra = await receiver(hang);
    const rb = await receiver();
    const destA = await destinationFor(admin, a, ra, { timeoutMs: A_TIMEOUT_MS });
    await destinationFor(admin, b, rb);
    // Five times A's concurrency: with no gate, A's requests alone would take all of the worker's 8 places.
    for (let i = 0; i < 5 * DESTINATION_CONCURRENCY; i++) await storedVersion(s, a, `a${i}`, 1);
    await eventually(async () => ra.attempts.length >= DESTINATION_CONCURRENCY, "A's requests hanging");

    for (let i = 0; i < 5; i++) await storedVersion(s, b, `b${i}`, 1);
    await eventually(async () => rb.received.length === 5, "B's deliveries");
    // B was answered while A's first requests still hung: none of them has ended (by its timeout) yet.
    const attemptsOfA = async () => (await s.sql.query<{ error: string }>('SELECT a.error FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.destination_id = $1 ORDER BY a.id', [destA.id])).rows;
    expect(await attemptsOfA(), "A's attempts ended before B's deliveries were answered").toEqual([]);
    expect(ra.attempts.length, 'A never had more than its concurrency running').toBe(DESTINATION_CONCURRENCY);
    expect(rb.received.every((r) => r.verifiedWith === 0)).toBe(true);

    // A's requests end at its timeout, as attempts that say so.
    const ended = await eventually(async () => {
      const rows = await attemptsOfA();
      return rows.length >= DESTINATION_CONCURRENCY && rows;
    }, "A's first attempts timed out", 2 * A_TIMEOUT_MS);
    expect(ended.slice(0, DESTINATION_CONCURRENCY)).toEqual(Array(DESTINATION_CONCURRENCY).fill({ error: `no answer within ${A_TIMEOUT_MS} ms` }));
  }, 150_000);

  it('an answer with a NUL byte is recorded (shown as U+FFFD) and the delivery is delivered once', async () => {
    const company = await s.company('nul-answer');
    const r = await receiver(() => ({ status: 200, body: 'ok\u0000then more' }));
    const dest = await destinationFor(admin, company, r);
    await storedVersion(s, company, 'nul', 1);
    const [delivered] = await eventually(async () => {
      const shown = await deliveriesOf(admin, company.companyId, dest.id);
      return shown.length === 1 && shown[0]!.status === 'delivered' && shown;
    }, 'delivered');
    const shown = await admin('GET', `/companies/${company.companyId}/deliveries/${delivered!.id}`);
    expect(shown.body.attemptsList).toMatchObject([{ httpStatus: 200, response: 'ok\uFFFDthen more' }]);
    await sleep(1000);
    expect(r.received).toHaveLength(1);
  });

  it('a 429 with Retry-After holds the whole destination (throttled) at least that long', async () => {
    const company = await s.company('throttles');
    let first = true;
    const r = await receiver(() => (first ? ((first = false), { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' }) : { status: 200 }));
    const dest = await destinationFor(admin, company, r);
    await storedVersion(s, company, 't1', 1);
    await eventually(async () => r.attempts.length === 1, 'the first attempt');
    const throttled = await eventually(async () => {
      const view = await destinationView(admin, company.companyId, dest.id);
      return view.state.status === 'throttled' && view;
    }, 'the destination throttled');
    expect(throttled.state).toMatchObject({ status: 'throttled', reason: expect.stringContaining('429'), until: expect.any(String) });
    expect(Date.parse(throttled.state.until)).toBeGreaterThanOrEqual(r.attempts[0]!.at + 2000);
    // Another resource of the destination waits out the hold too.
    await storedVersion(s, company, 't2', 1);

    await eventually(async () => r.received.length === 2, 'both delivered after the hold');
    const [refused, ...after] = r.attempts;
    for (const attempt of after) expect(attempt.at - refused!.at, `${attempt.event.resource?.id} waited for Retry-After`).toBeGreaterThanOrEqual(2000);
    expect(after.map((x) => x.event.resource?.id).sort()).toEqual(['t1', 't2']);
    expect(after.find((x) => x.event.resource?.id === 't1')!.webhookId).toBe(refused!.webhookId);
    expect((await destinationView(admin, company.companyId, dest.id)).state.status).toBe('ok');
    // The answer is recorded just after the receiver had the request (attempts are written in batches).
    const t1 = await eventually(async () => {
      const [shown] = (await deliveriesOf(admin, company.companyId, dest.id)).filter((d) => d.resource.id === 't1');
      return shown?.status === 'delivered' && shown;
    }, 't1 recorded delivered');
    expect(t1).toMatchObject({ status: 'delivered', attempts: 2 });
  }, 30_000);

  it('a 429 holds the destination though requests sent beside it are answered 200 after it', async () => {
    const company = await s.company('throttles-among');
    const r = await receiver((req) => (req.event.resource?.id === 'm1' ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200, delayMs: 500 }));
    // Inactive while three resources' deliveries wait, so that enabling it sends them in one turn, at once.
    const dest = await destinationFor(admin, company, r, { active: false });
    for (const id of ['m1', 'm2', 'm3']) await storedVersion(s, company, id, 1);
    await eventually(async () => (await deliveriesOf(admin, company.companyId, dest.id)).length === 3, 'three deliveries waiting');
    await admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { active: true });
    const throttled = await eventually(async () => {
      const view = await destinationView(admin, company.companyId, dest.id);
      return view.state.status === 'throttled' && view;
    }, 'the destination throttled', 5000);
    expect(throttled.state.reason).toContain('429');
    const refused = r.attempts.find((a) => a.event.resource?.id === 'm1')!;
    await eventually(async () => r.attempts.filter((a) => a.event.resource?.id === 'm1').length === 2, 'm1 sent again after the hold');
    const again = r.attempts.filter((a) => a.event.resource?.id === 'm1')[1]!;
    expect(again.at - refused.at).toBeGreaterThanOrEqual(3000);
  }, 30_000);

  it('a destination without a success for DESTINATION_DISABLE_AFTER_DAYS is disabled, saying why; its deliveries wait', async () => {
    const company = await s.company('never-answers');
    const r = await receiver(() => ({ status: 500 }));
    const dest = await destinationFor(admin, company, r);
    await storedVersion(s, company, 'd1', 1);
    const disabled = await eventually(async () => {
      const view = await destinationView(admin, company.companyId, dest.id);
      return view.state.status === 'disabled' && view;
    }, 'disabled for no success', 30_000);
    expect(disabled).toMatchObject({ active: false, state: { status: 'disabled', by: 'skyhook', reason: `no success for ${DISABLE_AFTER_DAYS} days` } });
    expect((await deliveriesOf(admin, company.companyId, dest.id)).map((d) => d.status)).toEqual(['pending']);
  }, 40_000);
});

describe("a destination's pending deliveries (SPEC §5.2)", () => {
  it('a deleted destination: its pending deliveries end skipped, and none is sent again, not even when one is replayed', async () => {
    const company = await s.company('deletes');
    const r = await receiver(() => ({ status: 503 }));
    const dest = await destinationFor(admin, company, r);
    await storedVersion(s, company, 'x1', 1);
    await storedVersion(s, company, 'x1', 2);
    await storedVersion(s, company, 'x2', 1);
    await eventually(async () => r.attempts.length >= 2, 'attempts failing');
    expect((await admin('DELETE', `/companies/${company.companyId}/destinations/${dest.id}`)).status).toBe(204);
    expect((await admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).status).toBe(404);
    const deliveries = await deliveriesOf(admin, company.companyId, dest.id);
    expect(deliveries.map((d) => [d.resource.id, d.resource.version, d.status])).toEqual([
      ['x1', 1, 'skipped'],
      ['x1', 2, 'skipped'],
      ['x2', 1, 'skipped'],
    ]);
    const tried = r.attempts.length;
    const replayed = await admin('POST', `/companies/${company.companyId}/deliveries/${deliveries[0]!.id}/replay`);
    expect(replayed.status).toBe(409);
    expect(replayed.body).toMatchObject({ code: 'destination_deleted', detail: expect.stringContaining('destination was deleted') });
    // Its retries were 300 ms apart: a second is several of them.
    await sleep(1000);
    expect(r.attempts.length, 'no attempt after the deletion').toBe(tried);
    expect((await deliveriesOf(admin, company.companyId, dest.id)).map((d) => d.status)).toEqual(['skipped', 'skipped', 'skipped']);
  });

  it('a deleted company stops at once (its ids answer 404, its key is refused, its rows in no list) and its rows are purged after, nothing of its gates left in Redis', async () => {
    const company = await s.company('deleted-co');
    const r = await receiver(() => ({ status: 429, headers: { 'retry-after': '60' } }));
    const dest = await destinationFor(admin, company, r);
    await storedVersion(s, company, 'z1', 1);
    await eventually(async () => r.attempts.length >= 1, 'an attempt, held after its 429');
    const redis = new Redis(REDIS_URL);
    try {
      const gateKeys = () => redis.keys(`${s.prefix}:destination:${dest.id}*`);
      await eventually(async () => (await gateKeys()).length > 0, "the destination's gate in Redis");
      await s.sql.query(`INSERT INTO notification_replays (notification_id, previous_status) SELECT id, 'processed' FROM notifications WHERE company_id = $1`, [company.companyId]);
      const deliveryIds = (await s.sql.query('SELECT id FROM deliveries WHERE company_id = $1', [company.companyId])).rows.map((row) => row.id);
      const notificationIds = (await s.sql.query('SELECT id FROM notifications WHERE company_id = $1', [company.companyId])).rows.map((row) => Number(row.id));
      const left = async () =>
        (
          await s.sql.query(
            `SELECT (SELECT count(*) FROM notifications WHERE company_id = $3)::int AS notifications,
                    (SELECT count(*) FROM fetch_attempts WHERE company_id = $3)::int AS "fetchAttempts",
                    (SELECT count(*) FROM notification_replays WHERE notification_id = ANY($2::bigint[]))::int AS replays,
                    (SELECT count(*) FROM events WHERE company_id = $3)::int AS events,
                    (SELECT count(*) FROM deliveries WHERE company_id = $3)::int AS deliveries,
                    (SELECT count(*) FROM delivery_attempts WHERE delivery_id = ANY($1::bigint[]))::int AS "deliveryAttempts"`,
            [deliveryIds, notificationIds, company.companyId],
          )
        ).rows[0] as Record<string, number>;
      const before = await left();
      expect(Object.values(before).every((n) => n > 0), JSON.stringify(before)).toBe(true);
      const made = await admin('POST', '/keys', { name: 'its application', role: 'company', companyId: company.companyId });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const asCompany = adminClient(s.skyhook.url, made.body.key);
      expect((await asCompany('GET', `/companies/${company.companyId}/events`)).status).toBe(200);

      expect((await admin('DELETE', `/companies/${company.companyId}?force=true`)).status).toBe(204);
      // At once, whatever is left to purge.
      expect((await admin('GET', `/companies/${company.companyId}/destinations/${dest.id}`)).status).toBe(404);
      expect((await admin('GET', `/companies/${company.companyId}/events`)).status).toBe(404);
      expect((await admin('GET', `/notifications/${notificationIds[0]}`)).status).toBe(404);
      expect((await admin('GET', `/notifications?companyId=${company.companyId}`)).body.items).toEqual([]);
      expect((await admin('GET', '/notifications?limit=500')).body.items.map((n: { companyId: string }) => n.companyId)).not.toContain(company.companyId);
      expect((await asCompany('GET', `/companies/${company.companyId}/events`)).status).toBe(401);
      // Then purged: every row of it in the growing tables, those without a key to it included.
      await eventually(async () => Object.values(await left()).every((n) => n === 0), 'its rows purged');
      // (Its job, delayed by the hold, stays queued until then: it runs, finds nothing to send, and ends.)
      expect(await gateKeys()).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('a purge a stopped process left: the next one purges in batches, then forgets the company once a purge finds nothing, a while after its deletion', async () => {
    const company = await s.company('purged-later');
    const r = await receiver();
    await destinationFor(admin, company, r);
    for (const [id, n] of [['p1', 1], ['p1', 2], ['p2', 1]] as const) await storedVersion(s, company, id, n);
    await eventually(async () => r.attempts.length >= 3, 'its deliveries sent');
    const rowsOf = async () => (await s.sql.query('SELECT (SELECT count(*) FROM notifications WHERE company_id = $1) + (SELECT count(*) FROM events WHERE company_id = $1) + (SELECT count(*) FROM deliveries WHERE company_id = $1) AS n', [company.companyId])).rows[0].n;
    const rows = Number(await rowsOf());
    expect(rows).toBeGreaterThanOrEqual(9);
    // What the deletion's transaction commits, its own purge never run (the process stopped).
    const notificationId = Number((await s.sql.query('SELECT min(id) AS id FROM notifications WHERE company_id = $1', [company.companyId])).rows[0].id);
    expect((await admin('GET', `/notifications/${notificationId}`)).status).toBe(200);
    const replayable = async () => (await admin('POST', '/notifications/replay', { companyId: company.companyId, status: 'processed', dryRun: true })).body.matched;
    expect(await replayable()).toBeGreaterThan(0);
    await s.sql.query(`WITH p AS (INSERT INTO company_purges (company_id) VALUES ($1)) DELETE FROM companies WHERE id = $1`, [company.companyId]);
    // Its rows still there, and shown nowhere.
    expect(Number(await rowsOf())).toBe(rows);
    expect((await admin('GET', `/notifications/${notificationId}`)).status).toBe(404);
    expect((await admin('GET', `/notifications?companyId=${company.companyId}`)).body.items).toEqual([]);
    expect((await admin('GET', '/notifications?limit=500')).body.items.map((n: { companyId: string }) => n.companyId)).not.toContain(company.companyId);
    expect(await replayable()).toBe(0);
    const purged = await purgeDeletedCompanies(s.sql, { only: company.companyId, batch: 2, forgetAfterMs: 60_000 });
    expect(purged).toBeGreaterThanOrEqual(rows);
    expect(Number(await rowsOf())).toBe(0);
    const purging = async () => (await s.sql.query('SELECT count(*)::int AS n FROM company_purges WHERE company_id = $1', [company.companyId])).rows[0].n;
    expect(await purging(), 'kept for what a fetch in flight may still store').toBe(1);
    expect(await purgeDeletedCompanies(s.sql, { only: company.companyId, forgetAfterMs: 0 })).toBe(0);
    expect(await purging()).toBe(0);
  });

  it('enabled with skipBefore: what was created before it is skipped, the rest sent in order (the next version says its previous one)', async () => {
    const company = await s.company('skips');
    const r = await receiver();
    const dest = await destinationFor(admin, company, r, { active: false });
    await storedVersion(s, company, 'k1', 1);
    await storedVersion(s, company, 'k1', 2);
    await storedVersion(s, company, 'k2', 1);
    await sleep(50);
    const skipBefore = new Date().toISOString();
    await sleep(50);
    await storedVersion(s, company, 'k1', 3);
    await storedVersion(s, company, 'k3', 1);
    expect((await deliveriesOf(admin, company.companyId, dest.id)).map((d) => d.status)).toEqual(Array(5).fill('pending'));
    expect(r.attempts).toEqual([]);

    const enabled = await admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { active: true, skipBefore });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    expect(enabled.body.state.status).toBe('ok');
    await eventually(async () => r.received.length === 2, 'the two newer ones delivered');
    expect(r.received.map((x) => [x.event.resource?.id, x.event.resource?.version, x.event.resource?.previousVersion]).sort()).toEqual([
      ['k1', 3, 2],
      ['k3', 1, null],
    ]);
    // The answers are recorded just after the receiver had the requests (attempts are written in batches).
    const settled = await eventually(async () => {
      const shown = await deliveriesOf(admin, company.companyId, dest.id);
      return shown.every((d) => d.status !== 'pending') && shown;
    }, 'none pending');
    expect(settled.map((d) => [d.resource.id, d.resource.version, d.status])).toEqual([
      ['k1', 1, 'skipped'],
      ['k1', 2, 'skipped'],
      ['k2', 1, 'skipped'],
      ['k1', 3, 'delivered'],
      ['k3', 1, 'delivered'],
    ]);
  });

  it('pending past RETENTION_DAYS: the retention pass ends them expired; younger ones stay pending; an expired one can be replayed', async () => {
    const company = await s.company('expires');
    const r = await receiver();
    const dest = await destinationFor(admin, company, r, { active: false });
    await storedVersion(s, company, 'old', 1);
    await storedVersion(s, company, 'young', 1);
    const [old, young] = await deliveriesOf(admin, company.companyId, dest.id);
    await s.sql.query(`UPDATE deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, [old!.id]);

    // What the retention job does first (processing/retention.ts), on the same repository the runtime builds.
    await withStates(async (states) => expect(await states.expire(s.skyhook.config.retentionDays)).toEqual([{ companyId: company.companyId, destinationId: dest.id, expired: 1 }]));

    const after = await admin('GET', `/companies/${company.companyId}/deliveries/${old!.id}`);
    expect(after.body).toMatchObject({ status: 'expired', nextAttemptAt: null, finishedAt: expect.any(String) });
    expect((await admin('GET', `/companies/${company.companyId}/deliveries/${young!.id}`)).body.status).toBe('pending');

    // Enabled: only the young one is sent; the expired one only when replayed, with its webhook-id.
    await admin('PATCH', `/companies/${company.companyId}/destinations/${dest.id}`, { active: true });
    await eventually(async () => r.received.length === 1, 'the young one delivered');
    expect(r.received[0]!.webhookId).toBe(young!.webhookId);
    const replayed = await admin('POST', `/companies/${company.companyId}/deliveries/${old!.id}/replay`);
    expect(replayed.status).toBe(200);
    await eventually(async () => r.received.length === 2, 'the expired one replayed');
    expect(r.received[1]!.webhookId).toBe(old!.webhookId);
  });
});

describe('attempts recorded together (group commit, SPEC §5.2)', () => {
  it('a batch does to its deliveries and its destination what its attempts would one by one, in order', async () => {
    const company = await s.company('batched');
    const r = await receiver();
    // Disabled while its deliveries are made, so that the worker sends none of them; then ok again in
    // PostgreSQL only, its deliveries due in an hour (a repair that resumed its gate would find none due):
    // the attempts below are the test's, as the worker would record them.
    const dest = await destinationFor(admin, company, r, { active: false });
    for (const id of ['batched1', 'batched2', 'batched3', 'batched4', 'batched5', 'batched6']) await storedVersion(s, company, id, 1);
    const [d1, d2, d3, d4, d5, d6] = await deliveriesOf(admin, company.companyId, dest.id);
    await s.sql.query(`UPDATE deliveries SET next_attempt_at = now() + interval '1 hour' WHERE destination_id = $1`, [dest.id]);
    await s.sql.query('UPDATE destinations SET disabled_at = NULL, disabled_by = NULL, disabled_reason = NULL WHERE id = $1', [dest.id]);
    const attempt = (d: { id: number }, httpStatus: number, verdict: Recorded['verdict'], probe = false): Recorded => ({
      attempt: { deliveryId: d.id, companyId: company.companyId, destinationId: dest.id, startedAt: new Date(), durationMs: 3, url: r.url, httpStatus, error: null, response: 'no' },
      verdict,
      probe,
    });
    const retry = (): Recorded['verdict'] => ({ kind: 'retry', nextAt: new Date(Date.now() + 60_000), countsAgainst: true });
    const row = async () => (await s.sql.query('SELECT consecutive_failures, failing_since, failing_error, next_probe_at FROM destinations WHERE id = $1', [dest.id])).rows[0];

    await withStates(async (states) => {
      // A 429 (not counted), then five failures: the fifth opens the circuit, and only its effect says so.
      const opened = await states.recordMany([attempt(d1!, 429, { kind: 'retry', nextAt: new Date(Date.now() + 60_000), countsAgainst: false }), ...[d2, d3, d4, d5, d6].map((d) => attempt(d!, 500, retry()))]);
      expect(opened.map((e) => e.circuitOpened)).toEqual([false, false, false, false, false, true]);
      expect(await row()).toMatchObject({ consecutive_failures: 5, failing_since: expect.any(Date), failing_error: 'answered 500', next_probe_at: expect.any(Date) });
      expect((await destinationView(admin, company.companyId, dest.id)).state).toMatchObject({ status: 'failing', reason: 'answered 500' });

      // A probe that fails, another failure, an answered probe, a failure: the success closes the circuit (the
      // last attempt's effect), and the count starts again after it.
      const closed = await states.recordMany([attempt(d1!, 503, retry(), true), attempt(d3!, 500, retry()), attempt(d4!, 200, { kind: 'delivered' }, true), attempt(d2!, 500, retry())]);
      expect(closed.map((e) => e.circuitClosed)).toEqual([false, false, false, true]);
      expect(await row()).toMatchObject({ consecutive_failures: 1, failing_since: null, failing_error: 'answered 500', next_probe_at: null });

      // The same delivery twice in one batch: both attempts recorded, both counted.
      await states.recordMany([attempt(d2!, 500, retry()), attempt(d2!, 502, retry())]);
      expect(await row()).toMatchObject({ consecutive_failures: 3, failing_since: null, failing_error: 'answered 502' });
    });

    const view = async (d: { id: number }) => (await admin('GET', `/companies/${company.companyId}/deliveries/${d.id}`)).body;
    const tried = (v: { attemptsList: { httpStatus: number; probe: boolean }[] }) => v.attemptsList.map((a) => [a.httpStatus, a.probe]);
    // The 429 spent an attempt, the failed probe none.
    expect(await view(d1!)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(tried(await view(d1!))).toEqual([[429, false], [503, true]]);
    expect(await view(d4!)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(await view(d2!)).toMatchObject({ status: 'pending', attempts: 4, lastError: 'answered 502' });
    expect(tried(await view(d2!))).toEqual([[500, false], [500, false], [500, false], [502, false]]);
  });
});

describe('a body above DELIVERY_BODY_LIMIT_BYTES (SPEC §5.2)', () => {
  it('leaves the snapshot out, then the changes; still signed and verified; the event keeps both', async () => {
    const company = await s.company('big');
    const r = await receiver();
    await destinationFor(admin, company, r);
    await storedVersion(s, company, 'big1', 1, { fields: { notes: 'n'.repeat(BODY_LIMIT) } });
    await storedVersion(s, company, 'big1', 2, { fields: { notes: 'm'.repeat(BODY_LIMIT) } });
    await storedVersion(s, company, 'small', 1);
    await eventually(async () => r.received.length === 3, 'three deliveries');
    const byVersion = (id: string, v: number) => r.received.find((x) => x.event.resource?.id === id && x.event.resource.version === v)!;

    const first = byVersion('big1', 1);
    expect(first.verifiedWith).toBe(0);
    expect(Buffer.byteLength(first.body)).toBeLessThanOrEqual(BODY_LIMIT);
    expect(JSON.parse(first.body)).toMatchObject({ snapshotOmitted: true, changes: null });
    expect(JSON.parse(first.body)).not.toHaveProperty('snapshot');
    // Version 2's changes carry the new notes: too big as well.
    const second = byVersion('big1', 2);
    expect(second.verifiedWith).toBe(0);
    expect(JSON.parse(second.body)).toMatchObject({ snapshotOmitted: true, changesOmitted: true });
    expect(JSON.parse(second.body)).not.toHaveProperty('changes');
    // A small one is whole.
    expect(JSON.parse(byVersion('small', 1).body)).toMatchObject({ snapshot: { id: 'small' } });
    expect(JSON.parse(byVersion('small', 1).body)).not.toHaveProperty('snapshotOmitted');

    // Both stay readable from the event.
    const event = await admin('GET', `/companies/${company.companyId}/events/${second.event.id}`);
    expect(event.status).toBe(200);
    expect(event.body.snapshot.notes).toBe('m'.repeat(BODY_LIMIT));
    expect(JSON.stringify(event.body.changes)).toContain('m'.repeat(BODY_LIMIT));
  });
});
