/** Health, readiness, Prometheus metrics and retention. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllChildren, spawnSkyhook } from '../helpers/processes.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { freePort } from '../helpers/skyhook.js';

let s: Scenario;
let companyId: string;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
  ({ companyId } = await s.company('acme'));
});
afterAll(async () => {
  await killAllChildren();
  await s?.close();
});

describe('health and metrics', () => {
  it('answers /healthz and /readyz', async () => {
    expect((await fetch(`${s.skyhook.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${s.skyhook.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', database: true, redis: true });
  });

  it('exposes received-by-outcome, latency, fetch outcomes, marketplace calls, queue depth, the companies by state (an idle ok company has no series of its own) and the default partitions’ rows', async () => {
    await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: 6, resources: 3 });
    await s.settled(6);
    await fetch(`${s.skyhook.url}/hooks/not-a-key`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const text = await (await fetch(`${s.skyhook.url}/metrics`)).text();
    expect(text).toContain('skyhook_notifications_received_total{outcome="stored"} 6');
    expect(text).toMatch(/skyhook_notifications_received_total\{outcome="401"\} [1-9]/);
    expect(text).toContain('skyhook_processing_latency_seconds_count{status="processed"} 6');
    expect(text).toMatch(/skyhook_fetch_outcomes_total\{outcome="ok"\} [1-6]/);
    expect(text).toContain('skyhook_marketplace_calls_total{operation="webhook_settings.create",outcome="ok"} 1');
    expect(text).toMatch(/skyhook_queue_depth\{state="wait"\} 0/);
    // Everything processed, its state ok: the company is counted, and named nowhere.
    expect(text).toContain('skyhook_companies{state="ok"} 1');
    expect(text).toContain('skyhook_companies{state="paused"} 0');
    expect(text).not.toContain(companyId);
    expect(text).toContain('skyhook_process_resident_memory_bytes');
    // Everything the run stored went to its day's partition: none to a default one.
    for (const table of ['notifications', 'fetch_attempts', 'events', 'audit_log']) expect(text).toContain(`skyhook_partition_default_rows{table="${table}"} 0`);
  });
});

describe('a worker-only process', () => {
  // `node bin/skyhook.js start` with ROLE=worker: src/main.ts is what listens on OPS_PORT.
  it('serves /healthz, /readyz and /metrics on OPS_PORT', { timeout: 60_000 }, async () => {
    const opsPort = await freePort();
    const worker = await spawnSkyhook({
      databaseUrl: s.db.url,
      queuePrefix: s.prefix,
      role: 'worker',
      env: { OPS_PORT: String(opsPort), FETCH_MIN_INTERVAL_MS: '0', DB_POOL_SIZE: '3', WORKER_CONCURRENCY: '4' },
    });
    try {
      const ops = `http://127.0.0.1:${opsPort}`;
      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      expect((await fetch(`${ops}/readyz`)).status).toBe(200);
      const text = await (await fetch(`${ops}/metrics`)).text();
      expect(text).toContain('# TYPE skyhook_processing_latency_seconds histogram');
      expect((await fetch(`${ops}/admin/companies`)).status).toBe(404); // no admin API on a worker
    } finally {
      await worker.stop();
    }
  });
});

describe('retention', () => {
  it('is scheduled as a BullMQ job scheduler by the worker role', async () => {
    const { Queue } = await import('bullmq');
    const { Redis } = await import('ioredis');
    const connection = new Redis(s.skyhook.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue('maintenance', { connection, prefix: s.prefix });
    try {
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers.map((j) => j.key)).toContain('maintain-partitions');
      expect(schedulers[0]?.every).toBe(3_600_000);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
