/**
 * Ingest first (role `all` only): the receiver and the fetch workers share one process, and the answer
 * to a notification is the critical path. The marketplace waits for it, and a slow answer turns into a
 * retry. Processing may lag: the rows are committed and the jobs wait in Redis.
 *
 * The signal is the receiver's backlog: how many notifications were waiting for their answer, on
 * average, over the last INTERVAL_MS (Little's law: the answers' total time divided by the interval).
 * More than BUSY_IN_FLIGHT means notifications arrive faster than the process answers them. Then:
 *  - processing is held: a job waits in `admit()` before it claims anything. Each step lets one waiting
 *    job per BullMQ Worker through, oldest first, so processing never stops under a sustained flood
 *    (16 fetches a second with four Workers, each covering every pending notification of its resource);
 *  - the workers' concurrency is halved, down to one job per Worker, so few jobs pile up in the hold.
 * Fewer than CALM_IN_FLIGHT doubles the concurrency back up to WORKER_CONCURRENCY; anything up to
 * BUSY_IN_FLIGHT lets every job through. A steady rate the process keeps up with has a handful in flight
 * (500/s answered in 10 ms is 5), so nothing is held back; the README's Performance section has the figures.
 * Holding, rather than only lowering the concurrency, is what frees the receiver: a job runs in a few
 * milliseconds, so even one job per Worker processed about as fast as the flood arrived.
 */
const INTERVAL_MS = 250;
const BUSY_IN_FLIGHT = 32;
const CALM_IN_FLIGHT = 16;
const ADMITTED = Promise.resolve();

/** What a BullMQ Worker offers: its concurrency can be changed while it runs. */
export interface Throttleable {
  concurrency: number;
}

/** Worker i's share of a total concurrency split over `count` workers (every worker gets at least 1). */
export const concurrencyShare = (total: number, count: number, i: number): number =>
  Math.max(1, Math.floor(total / count) + (i < total % count ? 1 : 0));

export class IngestFirst {
  /** The answers' total time since the last step, in ms. */
  private answerMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private workers: Throttleable[] = [];
  private current: number;
  private flooded = false;
  /** Jobs waiting in admit(), oldest first. */
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly onChange: (concurrency: number) => void = () => {},
    private readonly onHeld: (jobs: number) => void = () => {},
  ) {
    this.current = max;
  }

  /** The receiver accepted one notification and answered after `ms`. */
  answer(ms: number): void {
    this.answerMs += ms;
  }

  start(workers: Throttleable[]): void {
    this.workers = workers;
    let last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      this.tick(now - last);
      last = now;
    }, INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops the steps and lets every held job through (a closing Worker waits for its jobs). */
  stop(): void {
    clearInterval(this.timer);
    this.flooded = false;
    this.release(this.waiting.length);
  }

  /** Resolves when a job may go on: at once, unless the receiver is flooded (see above). */
  admit(): Promise<void> {
    if (!this.flooded) return ADMITTED;
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.onHeld(this.waiting.length);
    });
  }

  get concurrency(): number {
    return this.current;
  }

  /** Jobs waiting in admit(). */
  get held(): number {
    return this.waiting.length;
  }

  /** One control step over the answers of the last `elapsedMs` (the timer calls it; so can a test). */
  tick(elapsedMs: number): void {
    const inFlight = this.answerMs / elapsedMs;
    this.answerMs = 0;
    this.flooded = inFlight > BUSY_IN_FLIGHT;
    this.release(this.flooded ? Math.max(1, this.workers.length) : this.waiting.length);
    let next = this.current;
    if (inFlight > BUSY_IN_FLIGHT) next = Math.ceil(this.current / 2);
    else if (inFlight < CALM_IN_FLIGHT) next = this.current * 2;
    next = Math.min(this.max, Math.max(this.workers.length || 1, next));
    if (next === this.current) return;
    this.current = next;
    this.workers.forEach((w, i) => (w.concurrency = concurrencyShare(next, this.workers.length, i)));
    this.onChange(next);
  }

  private release(count: number): void {
    if (count === 0) return;
    for (const go of this.waiting.splice(0, count)) go();
    this.onHeld(this.waiting.length);
  }
}
