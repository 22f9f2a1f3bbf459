/**
 * Adding delivery jobs (the queue's contract is delivery.queue.ts): after the commit that stored their
 * deliveries, one job per (destination, resource), while its destination has a free place at its gate;
 * else the key is parked there, no job, until one frees or the destination resumes (src/gate/). The relay
 * (loop.ts) queues what a lost Redis or a failed add left without a job.
 */
import type { Queue } from 'bullmq';
import type { DeliveryKey, DeliveryLifecycle } from '../destinations/lifecycle.js';
import type { Gate, HandedOut } from '../gate/gate.js';
import { withTimeout } from '../lib/timeout.js';
import { deliveryJobOptions, deliveryKey, gateItemOf, keyOfHandedOut, type DeliveryJob } from './delivery.queue.js';

/** Keys queued per admission when a destination resumes. */
const RESUME_BATCH = 1000;

export class DeliveryEnqueuer {
  constructor(
    private readonly queue: Queue<DeliveryJob>,
    /** The destinations' gate. */
    private readonly gate: Pick<Gate, 'admit'>,
    private readonly lifecycle: Pick<DeliveryLifecycle, 'waitingKeys'>,
    private readonly timeoutMs: number,
  ) {}

  /** One job per distinct key admitted at its destination's gate (deduplicated by BullMQ); bounded in time, throws on failure. */
  async enqueue(keys: DeliveryKey[]): Promise<void> {
    const unique = [...new Map(keys.map((k) => [deliveryKey(k), k])).values()];
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

  /** Adds the jobs of keys their destination's gate handed out as a place freed (they had none while parked). */
  async addHandedOut(handedOut: HandedOut[]): Promise<void> {
    await withTimeout(Promise.all(handedOut.map((h) => this.add(keyOfHandedOut(h), h.priority))), this.timeoutMs, 'enqueue deliveries');
  }

  /** Queues again every key with deliveries pending of a destination (it resumed): from PostgreSQL; answers how many. */
  async queueWaiting(destinationId: string): Promise<number> {
    const keys = await this.lifecycle.waitingKeys(destinationId);
    for (let i = 0; i < keys.length; i += RESUME_BATCH) await this.enqueue(keys.slice(i, i + RESUME_BATCH));
    return keys.length;
  }

  private add(key: DeliveryKey, priority: number): Promise<unknown> {
    const data: DeliveryJob = { companyId: key.companyId, destinationId: key.destinationId, href: key.href };
    return this.queue.add('deliver', data, deliveryJobOptions(deliveryKey(key), priority));
  }
}
