/**
 * The loop each worker process runs over the companies' gates (SPEC §5.1 F4): every few seconds it
 * mends the gates from PostgreSQL and makes the probes that are due (postgres.ts repair()), and hands out
 * the parked resources of companies whose places freed without a fetch ending (a dead worker's lapsed
 * leases, a raised limit).
 */
import { every } from '../lib/every.js';
import type { CompanyStatesRepository } from './postgres.js';

/** How often each worker process looks at the companies, at most (the probes themselves are rarer). */
const LOOP_MS = 15_000;

export class CompanyMirror {
  private loop: { stop: () => Promise<void> } | undefined;

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
    this.loop = every(Math.min(LOOP_MS, this.deps.probeIntervalMs / 2), () => this.runOnce(), this.deps.onError);
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  /** One pass: the companies with work waiting given their freed places, the gates mended, the probes due made. */
  async runOnce(): Promise<void> {
    const waiting = await this.deps.states.waiting();
    if (waiting.length > 0) await this.deps.handOut(waiting);
    await this.deps.states.repair();
  }
}
