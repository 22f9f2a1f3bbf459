/** The ingest-first controller's rule: a flooded receiver holds processing and lowers the workers' concurrency, a calm one restores both. */
import { describe, expect, it } from 'vitest';
import { concurrencyShare, IngestFirst } from '../../src/processing/ingest-first.js';

const INTERVAL = 250;
/** Answers whose times add up to `inFlight` notifications waiting, on average, over one interval. */
function answers(controller: IngestFirst, inFlight: number): void {
  for (let i = 0; i < inFlight; i++) controller.answer(INTERVAL);
}

function setup(max = 128) {
  const workers = Array.from({ length: 4 }, () => ({ concurrency: 0 }));
  const changes: number[] = [];
  const controller = new IngestFirst(max, (n) => changes.push(n));
  controller.start(workers);
  controller.stop(); // the test drives the steps itself
  const total = () => workers.reduce((sum, w) => sum + w.concurrency, 0);
  return { workers, controller, changes, total };
}

describe('ingest first', () => {
  it('halves the workers’ concurrency while more than 32 notifications wait for their answer, down to one job per worker', () => {
    const { workers, controller, changes, total } = setup();
    for (let step = 0; step < 10; step++) {
      answers(controller, 64);
      controller.tick(INTERVAL);
    }
    expect(changes).toEqual([64, 32, 16, 8, 4]);
    expect(workers.map((w) => w.concurrency)).toEqual([1, 1, 1, 1]);
    expect(total()).toBe(4);
  });

  it('doubles it back to WORKER_CONCURRENCY once fewer than 16 wait, or nothing arrives, and never above', () => {
    const { controller, changes, total } = setup();
    for (let step = 0; step < 3; step++) {
      answers(controller, 50);
      controller.tick(INTERVAL);
    }
    expect(controller.concurrency).toBe(16);
    answers(controller, 5);
    controller.tick(INTERVAL);
    for (let step = 0; step < 5; step++) controller.tick(INTERVAL);
    expect(changes).toEqual([64, 32, 16, 32, 64, 128]);
    expect(total()).toBe(128);
  });

  it('holds between the two thresholds, and measures over the time that really passed', () => {
    const { controller, changes } = setup();
    answers(controller, 24);
    controller.tick(INTERVAL);
    expect(changes).toEqual([]);
    // 40 answers of 250 ms over a full second is 10 in flight: calm, not a flood.
    answers(controller, 40);
    controller.tick(1000);
    expect(changes).toEqual([]);
    expect(controller.concurrency).toBe(128);
  });

  it('holds jobs while the receiver is flooded, letting one per worker through each step, oldest first', async () => {
    const { controller } = setup();
    const passed: number[] = [];
    const job = (n: number) => void controller.admit().then(() => passed.push(n));
    // Calm: a job goes on at once.
    job(0);
    await Promise.resolve();
    expect(passed).toEqual([0]);

    answers(controller, 64);
    controller.tick(INTERVAL);
    for (let n = 1; n <= 10; n++) job(n);
    await Promise.resolve();
    expect(passed).toEqual([0]);

    answers(controller, 64);
    controller.tick(INTERVAL);
    await Promise.resolve();
    expect(passed).toEqual([0, 1, 2, 3, 4]);

    // Between the thresholds the flood is over: every held job goes on.
    answers(controller, 24);
    controller.tick(INTERVAL);
    await Promise.resolve();
    expect(passed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('lets every held job through when it stops, so a closing worker is not left waiting', async () => {
    const { controller } = setup();
    answers(controller, 64);
    controller.tick(INTERVAL);
    let through = 0;
    for (let n = 0; n < 6; n++) void controller.admit().then(() => through++);
    controller.stop();
    await Promise.resolve();
    expect(through).toBe(6);
    await controller.admit();
  });

  it('splits a total over the workers without losing or adding a job', () => {
    for (const total of [4, 5, 7, 32, 127, 128]) {
      const shares = [0, 1, 2, 3].map((i) => concurrencyShare(total, 4, i));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(total);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    }
  });
});
