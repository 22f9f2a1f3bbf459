/**
 * Smart batching without a timer: an item is handed to `run` at once when no batch is in flight; while
 * one is, items gather and go together in the next run. Low load gets no added latency, high load gets
 * large batches (group commit, bulk enqueue), and one batch at a time keeps them large.
 */
type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Pending<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

export class Batcher<T, R> {
  private queue: Pending<T, R>[] = [];
  private running = false;

  constructor(
    /** Must settle every item, in order: one result per item. */
    private readonly run: (items: T[]) => Promise<Settled<R>[]>,
    private readonly opts: { maxBatch: number },
  ) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    void this.execute(this.queue.splice(0, this.opts.maxBatch)).finally(() => {
      this.running = false;
      this.pump();
    });
  }

  private async execute(batch: Pending<T, R>[]): Promise<void> {
    let results: Settled<R>[];
    try {
      results = await this.run(batch.map((p) => p.item));
    } catch (error) {
      results = batch.map(() => ({ ok: false, error }));
    }
    batch.forEach((p, i) => {
      const r = results[i] ?? { ok: false, error: new Error('batch returned too few results') };
      if (r.ok) p.resolve(r.value);
      else p.reject(r.error);
    });
  }
}

/**
 * Turns a whole-batch writer into a per-item one for Batcher: when the database refuses a batch, its
 * items are written one by one, so one bad item does not fail its neighbours. An error that is
 * `shared` (the database is unreachable) fails the whole batch at once instead.
 */
export function splitOnFailure<T, R>(write: (items: T[]) => Promise<R[]>, shared: (err: unknown) => boolean): (items: T[]) => Promise<Settled<R>[]> {
  const run = async (items: T[]): Promise<Settled<R>[]> => {
    try {
      return (await write(items)).map((value) => ({ ok: true, value }));
    } catch (error) {
      if (items.length === 1 || shared(error)) return items.map(() => ({ ok: false, error }));
      return Promise.all(items.map(async (item) => (await run([item]))[0]!));
    }
  };
  return run;
}
