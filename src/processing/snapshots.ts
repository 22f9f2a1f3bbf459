/**
 * Where fetched resources are stored: the snapshot upsert, the event row with its changes and NOTIFY, its
 * deliveries to the company's destinations, the fetch attempt, and the covered notifications' final status,
 * in one statement for every fetch that completed meanwhile (notifications/postgres.ts, STORE_SQL); then the
 * business logic of the types that have a handler, in the same transaction. Once committed, the deliveries'
 * jobs are queued (their relay queues what this could not).
 */
import jsonpatch, { type Operation } from 'fast-json-patch';
import type pg from 'pg';
import type { Tx } from '../db/client.js';
import { isDatabaseUnavailable } from '../lib/database-unavailable.js';
import { type NotificationsRepository } from '../notifications/postgres.js';
import { type FetchedSnapshot, type Stored } from '../notifications/lifecycle.js';
import { Batcher, splitOnFailure } from '../lib/batcher.js';
import { endsWith, type Tracing } from '../lib/tracing.js';
import type { DeliveryKey } from '../destinations/lifecycle.js';
import type { HandlerRegistry } from './handlers/index.js';

/**
 * The RFC 6902 JSON Patch that turns `previous` into `next` (SPEC §5 `changes`): null for a first
 * version. fast-json-patch compares arrays index by index, linear in the size of the two documents
 * (a minimal array diff would be quadratic, and a resource may be 5 MB). A document too deep for its
 * recursion is described as one replacement of the whole: still a correct patch.
 */
export function changesBetween(previous: { body: unknown } | null, next: unknown): Operation[] | null {
  if (previous === null) return null;
  const before = previous.body;
  const comparable = (v: unknown) => typeof v === 'object' && v !== null;
  if (!comparable(before) || !comparable(next) || Array.isArray(before) !== Array.isArray(next)) {
    return JSON.stringify(before) === JSON.stringify(next) ? [] : [{ op: 'replace', path: '', value: next }];
  }
  try {
    return jsonpatch.compare(before as object, next as object);
  } catch (err) {
    if (err instanceof RangeError) return [{ op: 'replace', path: '', value: next }];
    throw err;
  }
}

/**
 * Stores fetched resources. The concurrent jobs' snapshots are written together: one statement, and one
 * commit (the worker's group commit, like ingest's). When some of them have a handler, the statement and
 * those handlers share one transaction; if a handler fails, the batch is rolled back and written again
 * one fetch at a time (splitOnFailure), so a failing handler fails only its own fetch.
 */
export class SnapshotStore {
  private readonly batcher: Batcher<FetchedSnapshot, Stored>;

  constructor(
    private readonly notifications: Pick<NotificationsRepository, 'storeFetched' | 'transaction'>,
    private readonly handlers: HandlerRegistry,
    /** Builds the drizzle transaction handle handlers write through, on the transaction's connection. */
    private readonly handlerTx: (client: pg.PoolClient) => Tx,
    /** Called after the commit with the deliveries it stored (delivery/enqueue.ts queues their jobs; never throws). */
    private readonly queueDeliveries: (keys: DeliveryKey[]) => void,
    /** Set when traces are exported: each handler run is a span under its fetch's snapshot span. */
    private readonly tracing?: Pick<Tracing, 'handler'>,
  ) {
    // A batch holds at most the worker's running jobs; the cap bounds the statement's size (each
    // resource may be up to 5 MB).
    this.batcher = new Batcher(
      splitOnFailure(async (items) => {
        const stored = await this.write(items);
        const keys = stored.flatMap((s, i) => s.destinations.map((destinationId) => ({ companyId: items[i]!.companyId, destinationId, href: items[i]!.href })));
        if (keys.length > 0) this.queueDeliveries(keys);
        return stored;
      }, isDatabaseUnavailable),
      { maxBatch: 64 },
    );
  }

  /** Answers the version the claimed notifications are covered by. */
  async store(input: FetchedSnapshot): Promise<Stored> {
    return this.batcher.add(input);
  }

  private async write(items: FetchedSnapshot[]): Promise<Stored[]> {
    const handlers = items.map((i) => this.handlers.handlerFor(i.claimed.type));
    // Without handlers the statement commits by itself: no BEGIN and COMMIT round trips.
    if (handlers.every((h) => h === undefined)) return this.notifications.storeFetched(items);
    return this.notifications.transaction(async (tx, client) => {
      const results = await tx.storeFetched(items);
      const handlerTx = this.handlerTx(client);
      for (const [i, handler] of handlers.entries()) {
        const { companyId, href, claimed, resource, changes, trace } = items[i]!;
        const { version, stored } = results[i]!;
        if (handler && stored !== null) {
          const span = this.tracing?.handler(trace, { type: claimed.type, companyId });
          await endsWith(
            span,
            handler.handle({
              tx: handlerTx,
              companyId,
              href,
              type: claimed.type,
              resourceId: claimed.resourceId,
              snapshot: { version, body: resource },
              previous: claimed.previous,
              changes: changes as Operation[] | null,
              notificationIds: claimed.ids,
            }),
          );
        }
      }
      return results;
    });
  }
}
