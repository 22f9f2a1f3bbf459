/**
 * Ingest first (role `all` only): the receiver and the fetch workers share one process, and the answer
 * to a notification is the critical path. The marketplace waits for it, and a slow answer turns into a
 * retry. Processing may lag: the rows are committed and the jobs wait.
 *
 * The signal is the receiver's backlog: how many notifications were waiting for their answer, on
 * average, over the last INTERVAL_MS (Little's law: the answers' total time divided by the interval).
 * More than BUSY_IN_FLIGHT means notifications arrive faster than the process answers them: processing
 * is held. A job waits in `admit()` before it claims anything, and each step lets RELEASED_PER_STEP held
 * jobs through, oldest first, so processing never stops under a sustained flood (16 fetches a second,
 * each covering every pending notification of its resource). Once the flood is over, every held job goes
 * on at once: a flood is over when no answer has gone out for QUIET_MS, which is checked every
 * QUIET_MS / 2 while jobs are held, not only at the next step. A steady rate the process keeps up with
 * has a handful in flight, so nothing is held back.
 *
 * A speed mechanism, kept for its measured gain: docs/decisions.md, "Speed mechanisms".
 */
const INTERVAL_MS = 250;
const BUSY_IN_FLIGHT = 32;
const RELEASED_PER_STEP = 4;
/**
 * Under a flood answers go out every few milliseconds (one commit answers a whole batch). A commit slower
 * than this lets the held jobs go early; the next step holds again while answers still go out.
 */
const QUIET_MS = 50;
const ADMITTED = Promise.resolve();

export class IngestFirst {
  /** The answers' total time since the last step, in ms. */
  private answerMs = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Runs while jobs are held: lets them go as soon as the answers stop. */
  private quietTimer: NodeJS.Timeout | undefined;
  private lastAnswerAt = -Infinity;
  private flooded = false;
  /** Jobs waiting in admit(), oldest first. */
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly onHeld: (jobs: number) => void = () => {},
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The receiver accepted one notification and answered after `ms`. */
  answer(ms: number): void {
    this.answerMs += ms;
    this.lastAnswerAt = this.now();
  }

  start(): void {
    let last = this.now();
    this.timer = setInterval(() => {
      const now = this.now();
      this.tick(now - last);
      last = now;
    }, INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops the steps and lets every held job through (a closing Worker waits for its jobs). */
  stop(): void {
    clearInterval(this.timer);
    this.setFlooded(false);
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

  /** Whether the last step found the receiver flooded (jobs are held). */
  get holding(): boolean {
    return this.flooded;
  }

  /** Jobs waiting in admit(). */
  get held(): number {
    return this.waiting.length;
  }

  /** One control step over the answers of the last `elapsedMs` (the timer calls it; so can a test). */
  tick(elapsedMs: number): void {
    const inFlight = this.answerMs / elapsedMs;
    this.answerMs = 0;
    // An interval that ended with the flood still averages high: the answers must still be going out.
    this.setFlooded(inFlight > BUSY_IN_FLIGHT && !this.quiet());
    this.release(this.flooded ? RELEASED_PER_STEP : this.waiting.length);
  }

  /** Between steps (its timer calls it; so can a test): a flood whose answers stopped is over. */
  checkQuiet(): void {
    if (!this.flooded || !this.quiet()) return;
    this.setFlooded(false);
    this.release(this.waiting.length);
  }

  private quiet(): boolean {
    return this.now() - this.lastAnswerAt >= QUIET_MS;
  }

  private setFlooded(flooded: boolean): void {
    this.flooded = flooded;
    if (flooded && !this.quietTimer) {
      this.quietTimer = setInterval(() => this.checkQuiet(), QUIET_MS / 2);
      this.quietTimer.unref();
    } else if (!flooded && this.quietTimer) {
      clearInterval(this.quietTimer);
      this.quietTimer = undefined;
    }
  }

  private release(count: number): void {
    if (count === 0 || this.waiting.length === 0) return;
    for (const go of this.waiting.splice(0, count)) go();
    this.onHeld(this.waiting.length);
  }
}
