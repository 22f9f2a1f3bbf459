/** Two queues that stay fast at a hundred thousand entries (where `Array.shift` would not), and an index per company. */

/** Keeps the newest `capacity` entries, so a long demo does not grow the report without limit. */
export class BoundedLog<T> {
  private readonly entries: T[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  push(entry: T): void {
    if (this.entries.length < this.capacity) this.entries.push(entry);
    else this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  toArray(): T[] {
    // Before the log is full, `next` is its length: the first slice is empty.
    return [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)];
  }
}

/** First in, first out, with amortised O(1) removal from the front. */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Drop the consumed front once it is most of the array, so memory follows the live size.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/** Values by company and a key the company chose, so two companies' keys never collide. */
export class PerCompany<T> {
  private readonly byCompany = new Map<string, Map<string, T>>();

  get(companyId: string, key: string): T | undefined {
    return this.byCompany.get(companyId)?.get(key);
  }

  set(companyId: string, key: string, value: T): void {
    const own = this.byCompany.get(companyId) ?? new Map<string, T>();
    own.set(key, value);
    this.byCompany.set(companyId, own);
  }
}
