/**
 * The pull feed (SPEC §5.2 "Pull"): a company's events in order, as pages (`GET .../events?after=`) and as
 * a Server-Sent Events stream resumable with Last-Event-ID. Its cursor scheme (events.seq, numbered under
 * the company's event_sequences row lock held to commit: notifications/postgres.ts STORE_SQL) is proved
 * under concurrent stores: several connections store batches of one company's events at once, each
 * holding its transaction open a moment after numbering its events (where a scheme that numbers before
 * commit lets a higher number commit first), while a reader pages in a tight loop. The reader must see
 * every event exactly once, in order; compared at the end with the events table. (Numbered from a plain
 * sequence instead, as a scheme without the lock would be, the reader skips a score of events per run.)
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import type { FetchedSnapshot } from '../../src/notifications/lifecycle.js';
import { createNotificationsRepository } from '../../src/notifications/postgres.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany, type SeededCompany } from '../helpers/fixtures.js';
import { prng } from '../helpers/prng.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const WRITERS = 4;
const BATCHES = 25;
const PER_BATCH = 4;

let db: TestDatabase;
let fx: DbHandle;
let skyhook: TestSkyhook;
let company: SeededCompany;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  fx = connectFixtures(db.url);
  skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'api' });
  company = await seedCompany(fx.db, skyhook.config.secretKey, { name: 'feed' });
});

afterAll(async () => {
  for (const p of pools) await p.end();
  await skyhook?.stop();
  await fx?.pool.end();
  await db?.drop();
});

interface FeedEvent {
  id: number;
  cursor: string;
  resource: { id: string; version: number };
}

const feed = (query: string) => skyhook.admin('GET', `/companies/${company.id}/events${query}`);

/** The company's events as the table has them, in seq order. */
async function tableIds(): Promise<number[]> {
  const { rows } = await fx.pool.query<{ id: string }>('SELECT id FROM events WHERE company_id = $1 ORDER BY seq', [company.id]);
  return rows.map((r) => Number(r.id));
}

/** A fetched version of `resourceId`, as the fetch worker hands it to storeFetched (no notification covers it). */
function fetched(resourceId: string, n: number): FetchedSnapshot {
  const now = new Date();
  return {
    companyId: company.id,
    href: `${company.apiBaseUrl}/rfqs/${resourceId}`,
    claimed: { ids: [], receivedAt: [], type: 'rfqs', resourceId, previous: null },
    fetchStartedAt: now,
    fetchFinishedAt: now,
    httpStatus: 200,
    resource: { id: resourceId, n },
    changes: null,
  };
}

/** One writer: its own connection, BATCHES transactions of PER_BATCH new resources, each held open 0-10 ms after it stored them. */
async function writer(w: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  pools.push(pool);
  const repository = createNotificationsRepository(pool);
  const random = prng(w + 1);
  for (let b = 0; b < BATCHES; b++) {
    await repository.transaction(async (tx, client) => {
      await tx.storeFetched(Array.from({ length: PER_BATCH }, (_, i) => fetched(`w${w}-b${b}-${i}`, b)));
      await client.query('SELECT pg_sleep($1)', [random() * 0.01]);
    });
  }
}

/** Opens the stream (after `lastEventId`) and reads events until `enough` says so; then disconnects. */
async function readStream(lastEventId: string | undefined, enough: (got: FeedEvent[]) => boolean, timeoutMs = 15_000): Promise<FeedEvent[]> {
  const ended = new AbortController();
  const timer = setTimeout(() => ended.abort(), timeoutMs);
  const res = await fetch(`${skyhook.url}/admin/companies/${company.id}/events/stream`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: ended.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const got: FeedEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = new Map(frame.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trimStart()]));
        if (fields.get('event') !== 'event') continue;
        const event = JSON.parse(fields.get('data')!) as FeedEvent;
        expect(fields.get('id')).toBe(event.cursor);
        got.push(event);
      }
      if (enough(got)) break;
    }
  } catch (err) {
    if (!ended.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ended.abort();
  }
  return got;
}

describe('the pull feed (SPEC §5.2)', () => {
  it('a reader paging in a tight loop while four connections store at once sees every event exactly once, in order', async () => {
    let writing = true;
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w))).finally(() => (writing = false));
    const seen: FeedEvent[] = [];
    let cursor: string | undefined;
    // Pages that reached the head of the feed while the writers wrote: where a late commit would be skipped.
    let atHead = 0;
    // After the writers finish, one more page: it must be empty.
    for (let lastRound = false; ; ) {
      const page = await feed(`?limit=100${cursor ? `&after=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...(page.body.items as FeedEvent[]));
      cursor = page.body.nextCursor ?? cursor;
      if (writing && page.body.items.length < 100) atHead++;
      if (lastRound && page.body.items.length === 0) break;
      if (!writing) lastRound = true;
    }
    await writers;
    const ids = seen.map((e) => e.id);
    expect(new Set(ids).size, 'no event seen twice').toBe(ids.length);
    expect(ids, 'every event, in seq order, none skipped').toEqual(await tableIds());
    expect(ids).toHaveLength(WRITERS * BATCHES * PER_BATCH);
    expect(atHead, 'pages that reached the head of the feed while the writers wrote').toBeGreaterThanOrEqual(20);
  }, 60_000);

  it('the stream resumes after a disconnect with Last-Event-ID: no gap, no duplicate', async () => {
    const all = await tableIds();
    const first = await readStream(undefined, (got) => got.length >= 10);
    expect(first.map((e) => e.id)).toEqual(all.slice(0, first.length));
    // Disconnected; events stored meanwhile, and while the second connection reads.
    const more = writer(WRITERS);
    const rest = await readStream(first.at(-1)!.cursor, (got) => got.length >= all.length - first.length + BATCHES * PER_BATCH);
    await more;
    expect([...first, ...rest].map((e) => e.id)).toEqual(await tableIds());
  }, 60_000);

  it('a cursor that is not one the feed wrote is a 400 naming after, on pages and on the stream', async () => {
    const valid = (await feed('?limit=1')).body.nextCursor as string;
    for (const bad of ['nonsense', 'e1.', `${valid}!!`, 'e1.LTE', 'e2.MQ', `${valid}=`]) {
      const answer = await feed(`?after=${encodeURIComponent(bad)}`);
      expect(answer.status, bad).toBe(400);
      expect(answer.body).toMatchObject({ status: 400, errors: [{ field: 'after' }] });
    }
    const stream = await fetch(`${skyhook.url}/admin/companies/${company.id}/events/stream`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'last-event-id': 'e1.' } });
    expect(stream.status).toBe(400);
    expect(stream.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await stream.json()) as { errors: unknown }).errors).toEqual([{ field: 'after', message: expect.any(String) }]);
  });

  it('a cursor older than what is kept answers 410 naming the oldest valid cursor, which then reads on from the oldest kept', async () => {
    const before = (await feed('?limit=60')).body.items as FeedEvent[];
    await fx.pool.query('DELETE FROM events WHERE company_id = $1 AND seq <= (SELECT min(seq) + 49 FROM events WHERE company_id = $1)', [company.id]);
    const oldestValid = before[49]!.cursor;

    const gone = await feed(`?after=${before[9]!.cursor}`);
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ status: 410, code: 'cursor_expired', errors: [{ field: 'after', message: expect.stringContaining(oldestValid) }] });
    expect(gone.body.detail).toContain(`after=${oldestValid}`);
    const stream = await fetch(`${skyhook.url}/admin/companies/${company.id}/events/stream`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'last-event-id': before[9]!.cursor } });
    expect(stream.status).toBe(410);
    await stream.body?.cancel();

    const resumed = await feed(`?after=${oldestValid}&limit=10`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.items.map((e: FeedEvent) => e.id)).toEqual(before.slice(50, 60).map((e) => e.id));
    // Without a cursor: from the oldest kept.
    expect((await feed('?limit=1')).body.items[0].id).toBe(before[50]!.id);

    // Every event gone: a cursor behind them is still told so, with the head as the oldest valid cursor.
    const all = (await feed('?limit=500')).body.items as FeedEvent[];
    const head = all.at(-1)!.cursor;
    await fx.pool.query('DELETE FROM events WHERE company_id = $1', [company.id]);
    const allGone = await feed(`?after=${before[55]!.cursor}`);
    expect(allGone.status).toBe(410);
    expect(allGone.body.detail).toContain(`after=${head}`);
    const caughtUp = await feed(`?after=${head}`);
    expect(caughtUp.status).toBe(200);
    expect(caughtUp.body).toMatchObject({ items: [], nextCursor: head });
  });
});
