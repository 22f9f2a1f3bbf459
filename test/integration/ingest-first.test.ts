/**
 * Ingest first, in a real `all` process: a flood of notifications holds jobs back while the receiver is
 * busy (skyhook_jobs_held shows it), nothing is lost, and nothing is held once the flood is over.
 * Refused requests do not count.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectNothingMissing, type FaultCompany } from '../faults/support.js';
import { basicAuthorization } from '../helpers/fixtures.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';

/**
 * The worker's concurrency. The simulator, Skyhook and this test share one event loop here. With 64
 * workers on a slow machine, 50–110 ms passed between two bursts of answers (the loop was busy: the disk
 * syncs in 0.2 ms), longer than ingest first's 50 ms, so every step took the flood for over (a commit
 * slower than that lets held jobs go, by design) and nothing was held. 16 workers still fill up with
 * acme's jobs.
 */
const CONCURRENCY = 16;
const FLOOD = 3000;

let s: Scenario;
let acme: FaultCompany;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', WORKER_CONCURRENCY: String(CONCURRENCY) }, sim: { deliveryConcurrency: 128 } });
  acme = await s.company('acme');
  // A company's gate starts it at a few fetches at once and grows with answers (SPEC §5.1 F3): answered
  // often enough first, acme's jobs fill the worker during the flood, as a busy company's would.
  await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: CONCURRENCY, resources: CONCURRENCY });
  await s.settled(CONCURRENCY);
});
afterAll(async () => {
  await s?.close();
});

const held = () => s.skyhook.runtime.ingestFirst!.held;
const gauge = async (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(`${s.skyhook.url}/metrics`)).text())?.[1]);

it('holds jobs back while the receiver is flooded, processes everything, then holds none', async () => {
  let mostHeld = 0;
  let flooded = false;
  const sampler = setInterval(() => {
    mostHeld = Math.max(mostHeld, held());
    flooded ||= s.skyhook.runtime.ingestFirst!.holding;
  }, 20);
  await s.sim.fire({ companyId: 'acme', eventType: 'TripRequest', count: FLOOD, resources: FLOOD });
  await s.sim.idle();
  await s.settled(CONCURRENCY + FLOOD, 90_000);
  clearInterval(sampler);

  // Every notification stored and processed. On a slow machine a delivery may be sent again (its reply
  // came after the simulator's 10 s timeout), as the marketplace would: stored at most once per attempt.
  expect(s.sim.report().delivered).toBe(CONCURRENCY + FLOOD);
  await expectNothingMissing(s.sql, s.sim.report(), { acme }, { allowExtraPerResource: (_n, attempts) => attempts });
  expect(flooded).toBe(true);
  expect(mostHeld).toBeGreaterThan(0);
  // Calm again: nothing is held.
  expect(held()).toBe(0);
  expect(await gauge('skyhook_jobs_held')).toBe(0);
}, 120_000);

it('is not held back by a flood of refused requests', async () => {
  await expect.poll(held, { timeout: 5000, interval: 100 }).toBe(0);
  let flooded = false;
  const sampler = setInterval(() => (flooded ||= s.skyhook.runtime.ingestFirst!.holding), 20);
  const stranger = basicAuthorization('skh_nobody', 'wrong-secret');
  const statuses = new Set<number>();
  const client = async () => {
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${s.skyhook.url}/hooks`, { method: 'POST', headers: { authorization: stranger, 'content-type': 'application/json' }, body: '{}' });
      statuses.add(res.status);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 128 }, client));
  // Two more steps of the controller over what the flood left behind.
  await new Promise((r) => setTimeout(r, 600));
  clearInterval(sampler);
  expect([...statuses].every((status) => status === 401 || status === 429)).toBe(true);
  expect(flooded).toBe(false);
}, 60_000);
