/**
 * The loop each worker process runs over the companies' gates (SPEC §5.1 F4): every few seconds it
 * mends the gates from PostgreSQL and makes the probes that are due (postgres.ts repair()), and hands out
 * the parked resources of companies whose places freed without a fetch ending (a dead worker's lapsed
 * leases, a raised limit).
 */
import type { CompanyStatesRepository } from './postgres.js';

/** How often each worker process looks at the companies, at most (the probes themselves are rarer). */
const LOOP_MS = 15_000;

export class CompanyMirror {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      states: Pick<CompanyStatesRepository, 'repair' | 'waiting'>;
      /** Hands out the parked resources of these companies that have free places (gate/gate.ts handOut) and adds their jobs. */
      handOut: (companyIds: string[]) => Promise<void>;
      probeIntervalMs: number;
      onError: (err: unknown) => void;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.runOnce().catch(this.deps.onError).finally(() => (this.running = undefined));
    }, Math.min(LOOP_MS, this.deps.probeIntervalMs / 2));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass: the companies with work waiting given their freed places, the gates mended, the probes due made. */
  async runOnce(): Promise<void> {
    const waiting = await this.deps.states.waiting();
    if (waiting.length > 0) await this.deps.handOut(waiting);
    await this.deps.states.repair();
  }
}
