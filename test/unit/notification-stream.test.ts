/**
 * The live stream's fan-out (services/notification-stream.ts) and the timeline (notifications.service.ts)
 * in the fast tier: the LISTEN connection and the repository's summaries are fakes.
 */
import { describe, expect, it } from 'vitest';
import type { Listener } from '../../src/db/listen.js';
import type { FetchAttemptRow, NotificationReplayRow, NotificationRow } from '../../src/db/schema/index.js';
import { NOTIFICATIONS_CHANNEL } from '../../src/notifications/postgres.js';
import { buildTimeline } from '../../src/services/notifications.service.js';
import { NotificationStream, type StatusEvent } from '../../src/services/notification-stream.js';

const A = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const B = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

function fakeStream(maxSubscribers = 10) {
  const companyOf = new Map<number, string>([
    [1, A],
    [2, B],
    [3, A],
  ]);
  const connection = { opened: 0, stopped: 0, listener: undefined as Listener | undefined, channels: [] as string[] };
  const errors: unknown[] = [];
  const stream = new NotificationStream({
    listen: (channels, listener) => {
      connection.opened++;
      connection.channels = channels;
      connection.listener = listener;
      return { stop: async () => void connection.stopped++ };
    },
    notifications: {
      summaries: async (ids) => ids.filter((id) => companyOf.has(id)).map((id) => ({ id, companyId: companyOf.get(id)!, webhookId: 'w', type: 'rfqs', resourceId: `r${id}` })),
    },
    maxSubscribers,
    onError: (err) => errors.push(err),
  });
  const announce = (status: string, ids: number[]) => connection.listener!.onNotification(NOTIFICATIONS_CHANNEL, JSON.stringify({ status, ids }));
  return { stream, connection, announce, errors };
}

function recorder() {
  const seen: { events: StatusEvent[]; resyncs: string[]; ended: number } = { events: [], resyncs: [], ended: 0 };
  return { seen, subscriber: { event: (e: StatusEvent) => seen.events.push(e), resync: (r: string) => seen.resyncs.push(r), end: () => void seen.ended++ } };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('the live stream', () => {
  it('opens one LISTEN connection with its first subscriber, none before', async () => {
    const { stream, connection } = fakeStream();
    expect(connection.opened).toBe(0);
    stream.subscribe({}, recorder().subscriber);
    stream.subscribe({}, recorder().subscriber);
    expect([connection.opened, connection.channels]).toEqual([1, [NOTIFICATIONS_CHANNEL]]);
  });

  it('says it listens only once its LISTEN connection is up, and at once after that', async () => {
    const { stream, connection } = fakeStream();
    stream.subscribe({}, recorder().subscriber);
    let listening = false;
    void stream.listening(5_000).then(() => (listening = true));
    await settle();
    expect(listening).toBe(false);
    connection.listener!.onConnected!();
    await settle();
    expect(listening).toBe(true);
    await expect(stream.listening(5_000)).resolves.toBeUndefined();
  });

  it('reports a LISTEN connection that does not come up in time, and answers 503', async () => {
    const { stream, errors } = fakeStream();
    stream.subscribe({}, recorder().subscriber);
    await expect(stream.listening(20)).rejects.toMatchObject({ status: 503, extra: { code: 'database_unavailable' } });
    expect(errors).toEqual([expect.objectContaining({ name: 'TimeoutError', message: expect.stringContaining('LISTEN connection timed out after 20 ms') })]);
  });

  it("hands each subscriber the events of its company, in id order, one per notification", async () => {
    const { stream, announce } = fakeStream();
    const all = recorder();
    const onlyA = recorder();
    stream.subscribe({}, all.subscriber);
    stream.subscribe({ companyId: A }, onlyA.subscriber);
    announce('queued', [3, 1, 2]);
    announce('processed', [1]);
    await settle();
    expect(all.seen.events.map((e) => [e.id, e.status])).toEqual([
      ['1', 'queued'],
      ['2', 'queued'],
      ['3', 'queued'],
      ['1', 'processed'],
    ]);
    expect(onlyA.seen.events.map((e) => [e.id, e.companyId, e.status])).toEqual([
      ['1', A, 'queued'],
      ['3', A, 'queued'],
      ['1', A, 'processed'],
    ]);
  });

  it('tells subscribers to resync when the connection is back after a loss, not on the first connect', async () => {
    const { stream, connection } = fakeStream();
    const r = recorder();
    stream.subscribe({}, r.subscriber);
    connection.listener!.onConnected!();
    expect(r.seen.resyncs).toEqual([]);
    connection.listener!.onConnected!();
    expect(r.seen.resyncs).toEqual([expect.stringMatching(/lost and is back/)]);
  });

  it('refuses a subscriber beyond its limit with a 503 problem; an unsubscribed one frees its place', () => {
    const { stream } = fakeStream(1);
    const unsubscribe = stream.subscribe({}, recorder().subscriber);
    expect(() => stream.subscribe({}, recorder().subscriber)).toThrow(expect.objectContaining({ status: 503, extra: expect.objectContaining({ code: 'too_many_subscribers' }) }));
    unsubscribe();
    expect(() => stream.subscribe({}, recorder().subscriber)).not.toThrow();
  });

  it('ends every subscriber and stops listening when closed', async () => {
    const { stream, connection } = fakeStream();
    const r = recorder();
    stream.subscribe({}, r.subscriber);
    await stream.close();
    expect([r.seen.ended, connection.stopped, stream.size]).toEqual([1, 1, 0]);
  });

  it('reports a broken announcement and keeps serving the next ones', async () => {
    const { stream, connection, announce, errors } = fakeStream();
    const r = recorder();
    stream.subscribe({}, r.subscriber);
    connection.listener!.onNotification(NOTIFICATIONS_CHANNEL, 'not json');
    announce('failed', [2]);
    await settle();
    expect(errors).toHaveLength(1);
    expect(r.seen.events.map((e) => [e.id, e.status])).toEqual([['2', 'failed']]);
  });
});

describe('a notification timeline', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 24, 10, 0, s));
  const row = (over: Partial<NotificationRow>): NotificationRow => ({ receivedAt: at(0), queuedAt: null, finishedAt: null, status: 'received', lastError: null, ...over }) as NotificationRow;
  const attempt = (s: number, outcome: string, httpStatus: number | null, error: string | null = null): FetchAttemptRow =>
    ({ startedAt: at(s), finishedAt: new Date(at(s).getTime() + 250), outcome, httpStatus, error, snapshotVersion: outcome === 'ok' ? 1 : null }) as FetchAttemptRow;

  it('reads received, queued, each fetch attempt with its duration, then the final status', () => {
    const timeline = buildTimeline(row({ queuedAt: at(0), finishedAt: at(5), status: 'processed' }), [attempt(4, 'ok', 200), attempt(1, 'retry', 503, 'HTTP 503')], []);
    expect(timeline.map((e) => [e.kind, e.at.slice(17, 19)])).toEqual([
      ['received', '00'],
      ['queued', '00'],
      ['fetch', '01'],
      ['fetch', '04'],
      ['processed', '05'],
    ]);
    expect(timeline[2]).toMatchObject({ durationMs: 250, httpStatus: 503, outcome: 'retry', error: 'HTTP 503' });
  });

  it('keeps the round a replay ended: the old failure, the replay, then the new round', () => {
    const replay = { previousQueuedAt: at(1), previousStatus: 'failed', previousFinishedAt: at(2), previousError: 'HTTP 404', replayedAt: at(10) } as NotificationReplayRow;
    const timeline = buildTimeline(row({ queuedAt: at(11), finishedAt: at(12), status: 'processed' }), [], [replay]);
    expect(timeline.map((e) => e.kind)).toEqual(['received', 'queued', 'failed', 'replayed', 'queued', 'processed']);
    expect(timeline[2]).toMatchObject({ kind: 'failed', error: 'HTTP 404' });
  });
});
