/**
 * The start of a fetch, batched across the worker's concurrent jobs: first one SELECT claims the pending
 * notifications of every job in the batch (C4: what a fetch starting now covers); then, for the jobs that
 * found something pending, one Redis script passes each company's gate (src/gate/: paused, held,
 * paced, at its limit) and reserves the C5 fetch slot, right before the GET. A job whose slot is taken or
 * whose company is held waits (it is delayed; what it claimed is claimed again when it starts again); a
 * parked one ends; a job with nothing pending reserves nothing, so the next notification for that key is
 * fetched at once.
 */
import type { Claimed, NotificationLifecycle } from '../notifications/lifecycle.js';
import { Batcher } from '../lib/batcher.js';
import type { Gate, GateStartRequest } from '../gate/gate.js';
import { fetchKey, type ResourceKey } from './fetch.queue.js';

export type FetchStart =
  /** The key's previous fetch started less than FETCH_MIN_INTERVAL_MS ago, or its company is held or paced: try again in `waitMs`. */
  | { kind: 'wait'; waitMs: number }
  /** The company is paused or at its limit: the href is parked at its gate until it has a place. */
  | { kind: 'park' }
  /** Nothing is pending for the key (an earlier fetch covered it). */
  | { kind: 'empty' }
  /** The slot is reserved and these rows, committed before now, are what this fetch covers (C4). */
  | { kind: 'claimed'; claimed: Claimed };

/** What a starting job tells the gate about itself. */
export interface StartRequest extends Pick<GateStartRequest, 'max' | 'paused' | 'retried'> {
  resource: ResourceKey;
}

export class FetchStarts {
  private readonly batcher: Batcher<StartRequest, FetchStart>;

  constructor(
    private readonly notifications: Pick<NotificationLifecycle, 'claimPending'>,
    /** The companies' gate. */
    private readonly gate: Pick<Gate, 'start'>,
    private readonly prefix: string,
    private readonly minIntervalMs: number,
  ) {
    // Not split on failure (as writes are): nothing here fails for one key alone. A failed batch fails its
    // jobs, which BullMQ retries; it reserved no slot if its claim failed.
    this.batcher = new Batcher(async (keys) => (await this.startMany(keys)).map((value) => ({ ok: true, value })), { maxBatch: 500 });
  }

  begin(request: StartRequest): Promise<FetchStart> {
    return this.batcher.add(request);
  }

  /**
   * The claim before the gate: the C5 slot is reserved once the claim is done, right before the GET, and
   * only for a fetch that will happen (C5 is about when the marketplace sees the GETs).
   */
  private async startMany(requests: StartRequest[]): Promise<FetchStart[]> {
    const claims = await this.notifications.claimPending(requests.map((r) => r.resource));
    const pending = requests.flatMap((r, i) => (claims[i] ? [i] : []));
    const gated = await this.gate.start(
      pending.map((i) => {
        const r = requests[i]!;
        const key = fetchKey(r.resource);
        return { id: r.resource.companyId, item: key, payload: r.resource.href, max: r.max, paused: r.paused, retried: r.retried, slot: `${this.prefix}:fetch-slot:${key}` };
      }),
      this.minIntervalMs,
    );
    const starts: FetchStart[] = requests.map(() => ({ kind: 'empty' }));
    pending.forEach((i, n) => {
      const gate = gated[n]!;
      starts[i] = gate.kind === 'go' ? { kind: 'claimed', claimed: claims[i]! } : gate.kind === 'wait' ? { kind: 'wait', waitMs: gate.ms } : { kind: 'park' };
    });
    return starts;
  }
}
