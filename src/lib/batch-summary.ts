/**
 * One `info` line per finished batch of notifications (or of deliveries), with counts by company and outcome
 * (SPEC §15), so a live process reads well without debug logs: the receiver's group commit answers its
 * requests together, a worker's stored snapshots finish their fetches together, and its delivery jobs'
 * requests are answered together; the lines per request stay at debug.
 * A batch is what finishes in one turn of the event loop. Under load, batches that finish within
 * `intervalMs` of the last line are summed into the next one: at most a line a second, whatever the rate.
 */
import type { Logger } from 'pino';

export class BatchSummary {
  private counts = new Map<string, Record<string, number>>();
  private total = 0;
  private lastLineAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly counted: string;

  constructor(
    private readonly log: Pick<Logger, 'info'>,
    /** The line's message for `total` notifications ("received 12 notifications"). */
    private readonly message: (total: number) => string,
    opts: { intervalMs?: number; now?: () => number; /** The field the total is logged as: what is counted. */ counted?: string } = {},
  ) {
    this.intervalMs = opts.intervalMs ?? 1000;
    this.now = opts.now ?? (() => performance.now());
    this.counted = opts.counted ?? 'notifications';
  }

  /** `count` notifications (or deliveries) of `companyId` finished with `outcome` (stored, processed, failed, a refusal's status...). */
  add(companyId: string, outcome: string, count = 1): void {
    let company = this.counts.get(companyId);
    if (!company) this.counts.set(companyId, (company = {}));
    company[outcome] = (company[outcome] ?? 0) + count;
    this.total += count;
    if (this.timer === undefined) {
      // Not before the turn ends (the rest of the batch), nor within intervalMs of the last line.
      this.timer = setTimeout(() => this.flush(), Math.max(0, this.lastLineAt + this.intervalMs - this.now()));
      this.timer.unref();
    }
  }

  /** Says what was counted since the last line, if anything (also at shutdown). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.total === 0) return;
    this.log.info({ [this.counted]: this.total, byCompany: Object.fromEntries(this.counts) }, this.message(this.total));
    this.counts = new Map();
    this.total = 0;
    this.lastLineAt = this.now();
  }
}
