/**
 * Adding delivery jobs (the queue's contract is delivery.queue.ts): after the commit that stored deliveries,
 * one job per destination, admitted at its gate; a failing or disabled destination's job is parked there,
 * no job, until it resumes (src/gate/). A job delayed to its next due delivery is woken. The relay (loop.ts)
 * queues what a lost Redis or a failed add left without a job.
 */
import type { Queue } from 'bullmq';
import type { DestinationKey } from '../destinations/lifecycle.js';
import type { Gate, HandedOut } from '../gate/gate.js';
import { withTimeout } from '../lib/timeout.js';
import { deliveryJobOptions, gateItemOf, keyOfHandedOut, type DeliveryJob } from './delivery.queue.js';

export class DeliveryEnqueuer {
  constructor(
    private readonly queue: Queue<DeliveryJob>,
    /** The destinations' gate. */
    private readonly gate: Pick<Gate, 'admit'>,
    private readonly timeoutMs: number,
  ) {}

  /** One job per distinct destination admitted at its gate (deduplicated by BullMQ); bounded in time, throws on failure. */
  async enqueue(keys: DestinationKey[]): Promise<void> {
    const unique = [...new Map(keys.map((k) => [k.destinationId, { companyId: k.companyId, destinationId: k.destinationId }])).values()];
    if (unique.length === 0) return;
    await withTimeout(
      (async () => {
        const admitted = await this.gate.admit(unique.map(gateItemOf));
        await Promise.all(unique.flatMap((k, i) => (typeof admitted[i] === 'number' ? [this.add(k, admitted[i])] : [])));
      })(),
      this.timeoutMs,
      'enqueue deliveries',
    );
  }

  /** Adds the jobs of destinations their gate handed out (they had none while parked). */
  async addHandedOut(handedOut: HandedOut[]): Promise<void> {
    await withTimeout(Promise.all(handedOut.map((h) => this.add(keyOfHandedOut(h), h.priority))), this.timeoutMs, 'enqueue deliveries');
  }

  private add(key: DeliveryJob, priority: number): Promise<unknown> {
    return this.queue.add('deliver', key, deliveryJobOptions(key.destinationId, priority));
  }
}
