/**
 * A notification's whole way in the fast tier, in milliseconds: the receiver (buildApp, requests injected)
 * commits through the in-memory lifecycle (test/helpers/memory-lifecycle.ts); its commit follow-up hands the keys to
 * a fake queue that deduplicates like BullMQ (C1); the real fetch job (processing/fetch-job.ts) claims,
 * "GETs" from a table of answers and applies each outcome through the same lifecycle; the real relay
 * (processing/relay.ts) queues what was committed while the queue was down. The integration tier runs
 * the same path against PostgreSQL, Redis and the simulator (test/integration/, test/faults/). A company's
 * state is the in-memory double of src/companies/ (test/helpers/memory-company-states.ts).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { PendingKey, ResourceRef } from '../../src/notifications/lifecycle.js';
import { createMemoryLifecycle } from '../helpers/memory-lifecycle.js';
import { createMetrics } from '../../src/lib/metrics.js';
import type { CompanyConnection } from '../../src/companies/connections.js';
import { createMemoryCompanyStates } from '../helpers/memory-company-states.js';
import { runFetchJob, type FetchJobDeps, type FetchResult } from '../../src/processing/fetch-job.js';
import { Relay } from '../../src/processing/relay.js';
import { basicAuthorization } from '../helpers/fixtures.js';
import { API_BASE_URL, unitApp, type FakeWebhook } from './support/app.js';

const webhook: FakeWebhook = {
  webhookId: '11111111-1111-4111-8111-111111111111',
  companyId: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  clientIdentifier: 'flow-client',
  endpointKey: 'flow-key',
  authType: 'BASIC',
  secret: 'flow-secret-0123456789',
};
const company: CompanyConnection = { paused: false, maxFetches: 8, connection: { baseUrl: API_BASE_URL, profile: 'bearer', apiToken: 'token' }, revision: 1 };
const ATTEMPTS = 3;
const href = (id: string) => `${API_BASE_URL}/rfqs/${id}`;

/** The receiver, the lifecycle, a queue deduplicating by key, the job's dependencies and the relay, all in memory. */
async function pipeline() {
  // The lifecycle's clock, moved on by hand: the relay takes only rows older than its grace.
  const clock = { ms: Date.parse('2026-11-26T10:00:00Z') };
  const companies = createMemoryCompanyStates({});
  companies.add({ id: webhook.companyId });
  const lifecycle = createMemoryLifecycle({ paused: companies.paused, now: () => new Date(clock.ms) });
  /** What each href answers, in turn (the last answer repeats). */
  const answers = new Map<string, FetchResult[]>();
  const gets: string[] = [];
  /** Jobs by key, as BullMQ keeps them: one per (company, href), an add while one waits does nothing (C1). */
  const jobs = new Map<string, { resource: ResourceRef; attemptsMade: number }>();
  const queue = {
    down: false,
    add(rows: ResourceRef[]): void {
      if (this.down) throw new Error('connect ECONNREFUSED (Redis)');
      for (const r of rows) if (!jobs.has(`${r.companyId} ${r.href}`)) jobs.set(`${r.companyId} ${r.href}`, { resource: { companyId: r.companyId, href: r.href }, attemptsMade: 0 });
    },
  };
  // The commit follow-up, as processing/enqueue.ts does it: rows whose add failed go back to received.
  const followUp = {
    get queueing() {
      return !queue.down;
    },
    afterCommit(rows: { id: number; status: string; companyId: string; href: string }[]): void {
      try {
        queue.add(rows);
        void lifecycle.queue(rows.filter((r) => r.status === 'received').map((r) => r.id));
      } catch {
        void lifecycle.unqueue(rows.filter((r) => r.status === 'queued').map((r) => r.id));
      }
    },
  };
  const { app } = await unitApp({ webhooks: [webhook], lifecycle, followUp });
  const deps: FetchJobDeps = {
    company: async () => company,
    begin: async ({ resource }) => {
      const [claimed] = await lifecycle.claimPending([resource]);
      return claimed ? { kind: 'claimed', claimed } : { kind: 'empty' };
    },
    finish: () => {},
    get: async (target) => {
      gets.push(target);
      const queued = answers.get(target) ?? [];
      return queued.length > 1 ? queued.shift()! : (queued[0] ?? { kind: 'gone', status: 404 });
    },
    store: async (snapshot) => (await lifecycle.storeFetched([snapshot]))[0]!,
    retry: lifecycle.retry,
    fail: lifecycle.fail,
    markGone: lifecycle.markGone,
    pause: companies.pause,
    forgetCompany: () => {},
    requeue: async (resource) => queue.add([resource]),
    now: () => new Date(),
    metrics: createMetrics(),
    finished: { add: () => {} },
  };
  /** Runs every job until none is left, as a worker would: a retry spends an attempt, a delay does not. */
  const drain = async (): Promise<void> => {
    for (let turns = 0; jobs.size > 0; turns++) {
      if (turns > 100) throw new Error('the queue never drained');
      const [key, job] = jobs.entries().next().value!;
      jobs.delete(key);
      const end = await runFetchJob(deps, { resource: job.resource, attemptsMade: job.attemptsMade, attempts: ATTEMPTS });
      if (end.next === 'retry') jobs.set(key, { ...job, attemptsMade: job.attemptsMade + 1 });
      if (end.next === 'delay') jobs.set(key, job);
    }
  };
  const enqueuer = { enqueue: async (rows: PendingKey[]) => queue.add(rows) };
  const relay = new Relay(lifecycle, enqueuer, { intervalMs: 1000, graceMs: 5000 }, pino({ level: 'silent' }), async () => 'run-1', () => {});
  return { app, lifecycle, companies, clock, answers, gets, queue, jobs, drain, relay };
}

async function notify(app: FastifyInstance, id: string): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: `/hooks/${webhook.endpointKey}`,
    headers: { authorization: basicAuthorization(webhook.clientIdentifier, webhook.secret), 'content-type': 'application/json' },
    payload: JSON.stringify({ id, type: 'rfqs', href: href(id) }),
  });
  expect(res.statusCode).toBe(200);
  return Number(res.json<{ id: string }>().id);
}

describe('a notification from the receiver to its outcome, in memory', () => {
  it('is stored, queued once per resource, fetched once, and processed with its snapshot', async () => {
    const p = await pipeline();
    p.answers.set(href('r1'), [{ kind: 'ok', status: 200, resource: { state: 'Open' } }]);
    const ids = [await notify(p.app, 'r1'), await notify(p.app, 'r1')];
    expect(ids.map((id) => p.lifecycle.inspect.row(id)?.status)).toEqual(['queued', 'queued']);
    expect(p.jobs.size).toBe(1);

    await p.drain();
    expect(p.gets).toEqual([href('r1')]);
    expect(ids.map((id) => p.lifecycle.inspect.row(id)?.status)).toEqual(['processed', 'processed']);
    expect(p.lifecycle.inspect.resource({ companyId: webhook.companyId, href: href('r1') })).toMatchObject({ version: 1, body: { state: 'Open' } });

    // A later change is a new version, with what changed.
    p.answers.set(href('r1'), [{ kind: 'ok', status: 200, resource: { state: 'Quoted' } }]);
    await notify(p.app, 'r1');
    await p.drain();
    expect(p.lifecycle.inspect.events().at(-1)).toMatchObject({ version: 2, changes: [{ op: 'replace', path: '/state', value: 'Quoted' }] });
  });

  it('a passing fault is retried; a lasting one fails after the last attempt; a 404 is processed as gone', async () => {
    const p = await pipeline();
    p.answers.set(href('flaky'), [{ kind: 'retry', status: 503, message: 'marketplace answered 503' }, { kind: 'ok', status: 200, resource: {} }]);
    p.answers.set(href('down'), [{ kind: 'retry', status: 502, message: 'marketplace answered 502' }]);
    const flaky = await notify(p.app, 'flaky');
    const down = await notify(p.app, 'down');
    const gone = await notify(p.app, 'gone');
    await p.drain();
    expect(p.lifecycle.inspect.row(flaky)).toMatchObject({ status: 'processed', attempts: 2 });
    expect(p.lifecycle.inspect.row(down)).toMatchObject({ status: 'failed', attempts: ATTEMPTS, lastError: `gave up after ${ATTEMPTS} attempts: marketplace answered 502` });
    expect(p.lifecycle.inspect.row(gone)).toMatchObject({ status: 'processed', outcome: 'gone' });
  });

  it('refused credentials pause the company: its notifications wait, none failed', async () => {
    const p = await pipeline();
    p.answers.set(href('r2'), [{ kind: 'unauthorized', status: 401, message: 'marketplace answered 401: the API token was refused' }]);
    const id = await notify(p.app, 'r2');
    await p.drain();
    expect(p.lifecycle.inspect.row(id)?.status).toBe('queued');
    expect(p.companies.paused(webhook.companyId)).toBe(true);
  });

  it('committed while the queue is down: answered 200, then queued by the relay once it is back, and processed', async () => {
    const p = await pipeline();
    p.answers.set(href('r3'), [{ kind: 'ok', status: 200, resource: { state: 'Open' } }]);
    p.queue.down = true;
    const id = await notify(p.app, 'r3');
    expect(p.lifecycle.inspect.row(id)?.status).toBe('received');
    expect(await p.relay.runOnce()).toBe(0); // still within the grace the receiver's own follow-up has
    p.clock.ms += 10_000;
    await expect(p.relay.runOnce()).rejects.toThrow('ECONNREFUSED');
    expect(p.lifecycle.inspect.row(id)?.status).toBe('received');

    p.queue.down = false;
    expect(await p.relay.runOnce()).toBe(1);
    expect(p.lifecycle.inspect.row(id)?.status).toBe('queued');
    await p.drain();
    expect(p.lifecycle.inspect.row(id)?.status).toBe('processed');
  });
});
