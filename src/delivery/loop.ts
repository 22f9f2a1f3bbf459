/**
 * The loop each worker process runs over the destinations (SPEC §5.2), every few seconds: the relay
 * (destinations with deliveries due and no job working on them, after a lost Redis, a failed add or a dead
 * worker's lapsed place, queued again), the gates mended from PostgreSQL, the probes of failing
 * destinations that are due (one process each), and the disabling of those failing for days.
 */
import type { DestinationStatesRepository } from '../destinations/postgres.js';
import { every } from '../lib/every.js';
import type { DeliveryEnqueuer } from './enqueue.js';

const LOOP_MS = 5000;
/** A delivery due this long ago with nothing working on it is queued again (its job is gone). */
const RELAY_GRACE_MS = 10_000;
const RELAY_LIMIT = 1000;
const PROBES_PER_PASS = 20;

export class DeliveryLoop {
  private loop: { stop: () => Promise<void> } | undefined;

  constructor(
    private readonly deps: {
      states: Pick<DestinationStatesRepository, 'any' | 'overdueDestinations' | 'repair' | 'probesDue' | 'probeLater' | 'disableStale'>;
      enqueuer: Pick<DeliveryEnqueuer, 'enqueue'>;
      /** One probe: answered (the circuit closed), failed, or nothing to send. */
      probe: (destinationId: string) => Promise<'answered' | 'failed' | 'nothing pending'>;
      disableAfterDays: number;
      onError: (err: unknown) => void;
    },
  ) {}

  start(): void {
    this.loop = every(LOOP_MS, () => this.runOnce(), this.deps.onError);
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  async runOnce(): Promise<void> {
    const { states, enqueuer } = this.deps;
    // A deployment without destinations pays one query a pass, not six.
    if (!(await states.any())) return;
    const overdue = await states.overdueDestinations(RELAY_GRACE_MS, RELAY_LIMIT);
    if (overdue.length > 0) await enqueuer.enqueue(overdue);
    await states.repair();
    for (const { id, failures } of await states.probesDue(PROBES_PER_PASS)) {
      if ((await this.deps.probe(id)) !== 'answered') await states.probeLater(id, failures + 1);
    }
    await states.disableStale(this.deps.disableAfterDays);
  }
}
