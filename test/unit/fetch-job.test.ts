/**
 * A fetch job and its outcomes (SPEC §5) without Redis or PostgreSQL: the job is a plain function of
 * narrow dependencies (processing/fetch-job.ts), here in-memory fakes that record what was asked of them.
 */
import { describe, expect, it } from 'vitest';
import type { FetchAttempt, FetchedSnapshot, Verdict } from '../../src/notifications/lifecycle.js';
import { createMetrics } from '../../src/lib/metrics.js';
import type { CompanyConnection } from '../../src/companies/connections.js';
import type { Refusal } from '../../src/companies/states.js';
import type { GateAnswer } from '../../src/gate/gate.js';
import { runFetchJob, type FetchJobDeps } from '../../src/processing/fetch-job.js';
import type { FetchResult } from '../../src/processing/fetch-job.js';
import type { FetchStart } from '../../src/processing/fetch-job.js';
import { RetryableFetchError } from '../../src/processing/fetch.queue.js';

const resource = { companyId: '00000000-0000-4000-8000-000000000001', href: 'https://api.example.com/api/rfqs/r1' };
const company: CompanyConnection = { paused: false, maxFetches: 8, connection: { baseUrl: 'https://api.example.com/api', profile: 'bearer', apiToken: 'token' }, revision: 1 };
const claimed = { ids: [11, 12], receivedAt: [0, 0], type: 'rfqs', resourceId: 'r1', previous: { version: 1, body: { state: 'Open' } } };

/** A world of fakes: one GET answer, a company, a claim; every write recorded. */
function world(answer: FetchResult | Error, opts: { start?: FetchStart; company?: CompanyConnection | null; pauses?: boolean; storeFails?: Error } = {}) {
  const recorded: { attempt: FetchAttempt; verdict: Verdict }[] = [];
  const stored: FetchedSnapshot[] = [];
  const gone: FetchAttempt[] = [];
  const paused: { companyId: string; refusal: Refusal }[] = [];
  const requeued: unknown[] = [];
  const forgotten: string[] = [];
  const finished: { companyId: string; outcome: string; count: number }[] = [];
  const gate: GateAnswer[] = [];
  const begun: unknown[] = [];
  const deps: FetchJobDeps = {
    company: async () => (opts.company === undefined ? company : opts.company),
    begin: async (request) => {
      begun.push(request);
      return opts.start ?? { kind: 'claimed', claimed };
    },
    finish: (_resource, _max, answer) => void gate.push(answer),
    get: async () => {
      if (answer instanceof Error) throw answer;
      return answer;
    },
    store: async (snapshot) => {
      if (opts.storeFails) throw opts.storeFails;
      stored.push(snapshot);
      return { version: 2, stored: 2, eventId: 1, destinations: [] };
    },
    retry: async (attempt) => void recorded.push({ attempt, verdict: { status: 'pending' } }),
    fail: async (attempt, error) => void recorded.push({ attempt, verdict: { status: 'failed', error } }),
    markGone: async (attempt) => void gone.push(attempt),
    pause: async (companyId, refusal) => {
      paused.push({ companyId, refusal });
      return opts.pauses ?? true;
    },
    forgetCompany: (id) => void forgotten.push(id),
    requeue: async (r) => void requeued.push(r),
    now: () => new Date('2026-11-24T10:00:00Z'),
    metrics: createMetrics(),
    finished: { add: (companyId, outcome, count = 1) => void finished.push({ companyId, outcome, count }) },
  };
  return { deps, recorded, stored, gone, paused, requeued, forgotten, finished, gate, begun };
}

const job = (attemptsMade = 0, attempts = 3) => ({ resource, attemptsMade, attempts });

describe('a fetch job', () => {
  it('2xx: stores the snapshot with the changes from the claimed previous version', async () => {
    const w = world({ kind: 'ok', status: 200, resource: { state: 'Quoted' } });
    expect(await runFetchJob(w.deps, job())).toEqual({ next: 'done', summary: 'ok' });
    expect(w.stored).toEqual([expect.objectContaining({ companyId: resource.companyId, href: resource.href, httpStatus: 200, changes: [{ op: 'replace', path: '/state', value: 'Quoted' }] })]);
    expect(w.recorded).toEqual([]);
  });

  it('a store (or handler) that fails is recorded and retried, then failed after the last attempt', async () => {
    const failing = world({ kind: 'ok', status: 200, resource: {} }, { storeFails: new Error('business logic failed') });
    const first = await runFetchJob(failing.deps, job(0, 2));
    expect(first).toEqual({ next: 'retry', error: new Error('business logic failed') });
    expect(failing.recorded[0]).toMatchObject({ attempt: { outcome: 'retry', error: 'storing the snapshot failed: business logic failed', ids: [11, 12] }, verdict: { status: 'pending' } });
    const last = await runFetchJob(failing.deps, job(1, 2));
    expect(last).toEqual({ next: 'done', summary: 'ok' });
    expect(failing.recorded[1]).toMatchObject({ attempt: { outcome: 'failed' }, verdict: { status: 'failed', error: 'gave up after 2 attempts: storing the snapshot failed: business logic failed' } });
  });

  it('404/410: the resource is marked gone and the notifications processed', async () => {
    const w = world({ kind: 'gone', status: 410 });
    expect(await runFetchJob(w.deps, job())).toEqual({ next: 'done', summary: 'gone' });
    expect(w.gone).toEqual([expect.objectContaining({ outcome: 'gone', httpStatus: 410, ids: [11, 12] })]);
  });

  it('a soft error fails the notifications at once, with its reason', async () => {
    const w = world({ kind: 'soft_error', status: 200, message: 'resource is being rebuilt (E42)' });
    await runFetchJob(w.deps, job());
    expect(w.recorded).toEqual([{ attempt: expect.objectContaining({ outcome: 'soft_error', error: 'resource is being rebuilt (E42)' }), verdict: { status: 'failed', error: 'soft error: resource is being rebuilt (E42)' } }]);
  });

  it('429 is retried with the Retry-After kept for the backoff, and failed after the last attempt', async () => {
    const w = world({ kind: 'retry', status: 429, message: 'marketplace answered 429', retryAfterMs: 1000 });
    const end = await runFetchJob(w.deps, job(0, 3));
    expect(end.next).toBe('retry');
    expect((end as { error: RetryableFetchError }).error).toMatchObject({ message: 'marketplace answered 429', retryAfterMs: 1000 });
    expect(w.recorded[0]).toMatchObject({ attempt: { outcome: 'retry', httpStatus: 429 }, verdict: { status: 'pending' } });
    await runFetchJob(w.deps, job(2, 3));
    expect(w.recorded[1]).toMatchObject({ attempt: { outcome: 'failed' }, verdict: { status: 'failed', error: 'gave up after 3 attempts: marketplace answered 429' } });
  });

  it('a network error is recorded with no HTTP status', async () => {
    const w = world({ kind: 'retry', status: null, message: 'the GET failed: ECONNREFUSED' });
    await runFetchJob(w.deps, job());
    expect(w.recorded[0]!.attempt).toMatchObject({ httpStatus: null, error: 'the GET failed: ECONNREFUSED' });
  });

  it('F4 401/403: pauses the company and parks the fetch, failing nothing; forgets the cached token', async () => {
    const w = world({ kind: 'unauthorized', status: 401, message: 'marketplace answered 401: the API token was refused' });
    expect(await runFetchJob(w.deps, job())).toEqual({ next: 'done', summary: 'parked' });
    expect(w.finished).toEqual([]);
    // The attempt is recorded, its notifications left pending; the company paused for the credentials the fetch used.
    expect(w.recorded).toEqual([{ attempt: expect.objectContaining({ outcome: 'unauthorized', ids: claimed.ids }), verdict: { status: 'pending' } }]);
    expect(w.paused).toEqual([{ companyId: resource.companyId, refusal: { revision: 1, reason: `GET ${resource.href}: marketplace answered 401: the API token was refused`, hrefs: [resource.href] } }]);
    expect(w.forgotten).toEqual([resource.companyId]);
    expect(w.requeued).toEqual([]);
  });

  it('401/403 with a token replaced meanwhile: no pause, fetched again with the new token', async () => {
    const w = world({ kind: 'unauthorized', status: 403, message: 'marketplace answered 403: the API token was refused' }, { pauses: false });
    await runFetchJob(w.deps, job());
    expect(w.requeued).toEqual([resource]);
  });

  it('waits, without an attempt, while the C5 slot is taken or its company held; ends parked; does nothing for a deleted company', async () => {
    expect(await runFetchJob(world({ kind: 'gone', status: 404 }, { start: { kind: 'wait', waitMs: 700 } }).deps, job())).toEqual({ next: 'delay', ms: 700 });
    const paused = world({ kind: 'gone', status: 404 }, { company: { ...company, paused: true }, start: { kind: 'park' } });
    expect(await runFetchJob(paused.deps, job(1))).toEqual({ next: 'done', summary: 'parked' });
    expect(paused.begun).toEqual([{ resource, max: 8, paused: true, retried: true }]);
    expect(paused.gate).toEqual([]);
    expect(await runFetchJob(world({ kind: 'gone', status: 404 }, { company: null }).deps, job())).toEqual({ next: 'done', summary: 'company deleted' });
    expect(await runFetchJob(world({ kind: 'gone', status: 404 }, { start: { kind: 'empty' } }).deps, job())).toEqual({ next: 'done', summary: 'nothing pending' });
  });

  it('F3: tells the gate how the marketplace answered: a 429 or a 503 with Retry-After holds the company, no answer marks it unreachable', async () => {
    const told = async (answer: FetchResult) => {
      const w = world(answer);
      await runFetchJob(w.deps, job());
      return w.gate;
    };
    expect(await told({ kind: 'ok', status: 200, resource: {} })).toEqual([{ kind: 'answered' }]);
    expect(await told({ kind: 'retry', status: 429, message: 'marketplace answered 429', retryAfterMs: 2000 })).toEqual([{ kind: 'throttled', retryAfterMs: 2000, why: 'marketplace answered 429' }]);
    expect(await told({ kind: 'retry', status: 503, message: 'marketplace answered 503', retryAfterMs: 5000 })).toEqual([{ kind: 'throttled', retryAfterMs: 5000, why: 'marketplace answered 503' }]);
    expect(await told({ kind: 'retry', status: 503, message: 'marketplace answered 503' })).toEqual([{ kind: 'answered' }]);
    expect(await told({ kind: 'retry', status: null, message: 'the GET timed out', noAnswer: 'timeout' })).toEqual([{ kind: 'no_answer', why: 'the GET timed out' }]);
    expect(await told({ kind: 'unauthorized', status: 401, message: 'marketplace answered 401' })).toEqual([{ kind: 'none' }]);
    const empty = world({ kind: 'gone', status: 404 }, { start: { kind: 'empty' } });
    await runFetchJob(empty.deps, job());
    expect(empty.gate).toEqual([{ kind: 'none' }]);
    const thrown = world(new Error('socket hang up'));
    await expect(runFetchJob(thrown.deps, job())).rejects.toThrow('socket hang up');
    expect(thrown.gate).toEqual([{ kind: 'none' }]);
  });

  it('counts the notifications each fetch finished, by company and outcome, for the log line per batch (SPEC §15)', async () => {
    const outcomes = async (answer: FetchResult, attemptsMade = 0) => {
      const w = world(answer);
      await runFetchJob(w.deps, job(attemptsMade, 3));
      return w.finished;
    };
    const each = (outcome: string) => [{ companyId: resource.companyId, outcome, count: 2 }];
    expect(await outcomes({ kind: 'ok', status: 200, resource: {} })).toEqual(each('processed'));
    expect(await outcomes({ kind: 'gone', status: 404 })).toEqual(each('gone'));
    expect(await outcomes({ kind: 'soft_error', status: 200, message: 'no' })).toEqual(each('failed'));
    // A retry finishes nothing; its last attempt fails them.
    expect(await outcomes({ kind: 'retry', status: 503, message: 'marketplace answered 503' })).toEqual([]);
    expect(await outcomes({ kind: 'retry', status: 503, message: 'marketplace answered 503' }, 2)).toEqual(each('failed'));
  });

  it('a claim as large as CLAIM_LIMIT asks for a follow-up job for the rest', async () => {
    const many = { ...claimed, ids: Array.from({ length: 5000 }, (_, i) => i + 1), receivedAt: Array.from({ length: 5000 }, () => 0) };
    const w = world({ kind: 'ok', status: 200, resource: {} }, { start: { kind: 'claimed', claimed: many } });
    await runFetchJob(w.deps, job());
    expect(w.requeued).toEqual([resource]);
  });
});
