/** The ingest-first controller's rule: a flooded receiver holds processing, with a trickle; a calm one lets every job go. */
import { describe, expect, it } from 'vitest';
import { IngestFirst } from '../../src/processing/ingest-first.js';

const INTERVAL = 250;
/** Answers whose times add up to `inFlight` notifications waiting, on average, over one interval. */
function answers(controller: IngestFirst, inFlight: number): void {
  for (let i = 0; i < inFlight; i++) controller.answer(INTERVAL);
}

/** One step over a flood: 64 notifications waiting for their answer, on average. */
function flood(controller: IngestFirst): void {
  answers(controller, 64);
  controller.tick(INTERVAL);
}

function setup() {
  const reported: number[] = [];
  // The controller's clock: it moves only when a test says so.
  let now = 0;
  const controller = new IngestFirst((n) => reported.push(n), () => now);
  const passed: number[] = [];
  const job = (n: number) => void controller.admit().then(() => passed.push(n));
  const settle = () => new Promise((r) => setImmediate(r));
  const advance = (ms: number) => (now += ms);
  return { controller, reported, passed, job, settle, advance };
}

describe('ingest first', () => {
  it('lets a job go on at once while the receiver keeps up', async () => {
    const { controller, passed, job, settle } = setup();
    job(0);
    // 24 in flight is busy but not a flood.
    answers(controller, 24);
    controller.tick(INTERVAL);
    job(1);
    // 40 answers of 250 ms over a full second is 10 in flight: it measures over the time that really passed.
    answers(controller, 40);
    controller.tick(1000);
    job(2);
    await settle();
    expect(passed).toEqual([0, 1, 2]);
    expect(controller.held).toBe(0);
  });

  it('holds jobs while more than 32 notifications wait for their answer, letting four through each step, oldest first', async () => {
    const { controller, reported, passed, job, settle } = setup();
    flood(controller);
    for (let n = 1; n <= 10; n++) job(n);
    await settle();
    expect(passed).toEqual([]);
    expect(controller.held).toBe(10);

    flood(controller);
    await settle();
    expect(passed).toEqual([1, 2, 3, 4]);
    expect(controller.held).toBe(6);

    // The flood is over: every held job goes on.
    answers(controller, 24);
    controller.tick(INTERVAL);
    await settle();
    expect(passed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(controller.held).toBe(0);
    // What skyhook_jobs_held was told, step by step.
    expect(reported).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 6, 0]);
  });

  it('lets every held job through when it stops, so a closing worker is not left waiting', async () => {
    const { controller, passed, job, settle } = setup();
    flood(controller);
    for (let n = 0; n < 6; n++) job(n);
    controller.stop();
    await settle();
    expect(passed).toEqual([0, 1, 2, 3, 4, 5]);
    job(6);
    await settle();
    expect(passed).toContain(6);
  });

  it('lets every held job go once no answer has gone out for 50 ms, without waiting for the next step', async () => {
    const { controller, passed, job, settle, advance } = setup();
    flood(controller);
    for (let n = 0; n < 5; n++) job(n);
    advance(49);
    controller.checkQuiet();
    await settle();
    expect(passed).toEqual([]);

    advance(1);
    controller.checkQuiet();
    await settle();
    expect(passed).toEqual([0, 1, 2, 3, 4]);
    expect(controller.held).toBe(0);
    job(5);
    await settle();
    expect(passed).toContain(5);
  });

  it('checks for the end of a flood on its own while it holds jobs', async () => {
    const { controller, passed, job, settle, advance } = setup();
    flood(controller);
    job(0);
    advance(50);
    // Real time for the controller's own timer (it checks every 25 ms), far less than a step.
    await new Promise((r) => setTimeout(r, 100));
    await settle();
    expect(passed).toEqual([0]);
    controller.stop();
  });

  it('does not hold again at a step whose interval ended with the flood', async () => {
    const { controller, passed, job, settle, advance } = setup();
    answers(controller, 64);
    advance(100);
    controller.tick(INTERVAL);
    job(0);
    await settle();
    expect(passed).toEqual([0]);
  });
});
