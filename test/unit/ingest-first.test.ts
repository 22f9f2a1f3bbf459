/** The ingest-first controller's rule: a flooded receiver lowers the workers' concurrency, a calm one restores it. */
import { describe, expect, it } from 'vitest';
import { concurrencyShare, IngestFirst } from '../../src/processing/ingest-first.js';

const INTERVAL = 250;
/** Answers whose times add up to `inFlight` notifications waiting, on average, over one interval. */
function answers(controller: IngestFirst, inFlight: number): void {
  for (let i = 0; i < inFlight; i++) controller.answer(INTERVAL);
}

/** A BullMQ Worker as the controller sees it: a concurrency, and pause/resume (pause only stops taking jobs). */
function fakeWorker() {
  let paused = false;
  return {
    concurrency: 0,
    pause: async () => void (paused = true),
    resume: async () => void (paused = false),
    isPaused: () => paused,
  };
}

function setup(max = 128) {
  const workers = Array.from({ length: 4 }, fakeWorker);
  const changes: number[] = [];
  const controller = new IngestFirst(max, (n) => changes.push(n));
  controller.start(workers);
  controller.stop(); // the test drives the steps itself
  /** Jobs the workers may run at once: a paused worker takes none. */
  const total = () => workers.reduce((sum, w) => sum + (w.isPaused() ? 0 : w.concurrency), 0);
  return { workers, controller, changes, total };
}

describe('ingest first', () => {
  it('halves the workers’ concurrency while more than 32 notifications wait for their answer, down to one job: the workers left without one are paused', () => {
    const { workers, controller, changes, total } = setup();
    for (let step = 0; step < 10; step++) {
      answers(controller, 64);
      controller.tick(INTERVAL);
    }
    expect(changes).toEqual([64, 32, 16, 8, 4, 2, 1]);
    expect(workers.map((w) => w.isPaused())).toEqual([false, true, true, true]);
    expect(workers[0]!.concurrency).toBe(1);
    expect(total()).toBe(1);
  });

  it('resumes the paused workers as the concurrency climbs back', () => {
    const { workers, controller, total } = setup();
    for (let step = 0; step < 8; step++) {
      answers(controller, 64);
      controller.tick(INTERVAL);
    }
    expect(total()).toBe(1);
    controller.tick(INTERVAL); // nothing arrived: calm
    expect(workers.map((w) => w.isPaused())).toEqual([false, false, true, true]);
    expect(total()).toBe(2);
    for (let step = 0; step < 7; step++) controller.tick(INTERVAL);
    expect(workers.map((w) => w.isPaused())).toEqual([false, false, false, false]);
    expect(workers.map((w) => w.concurrency)).toEqual([32, 32, 32, 32]);
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

  it('splits a total over the workers without losing or adding a job', () => {
    for (const total of [1, 3, 4, 5, 7, 32, 127, 128]) {
      const shares = [0, 1, 2, 3].map((i) => concurrencyShare(total, 4, i));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(total);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    }
  });
});
