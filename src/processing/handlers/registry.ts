/**
 * Business logic per notification `type`. The worker has already stored the snapshot and appended
 * the event row when a handler runs, inside the same transaction: a handler adds what its type
 * needs (links to Skyhook's own leads and quotes, say) and commits or fails with the rest.
 */
import type { Operation } from 'fast-json-patch';
import type { Tx } from '../../db/client.js';

export interface HandlerContext {
  tx: Tx;
  companyId: string;
  href: string;
  type: string;
  resourceId: string;
  /** The stored snapshot: the resource as fetched, and the version it was stored as. */
  snapshot: { version: number; body: unknown };
  /** The version stored before this one, or null for the first. */
  previous: { version: number; body: unknown } | null;
  /** RFC 6902 JSON Patch from `previous` to `snapshot` (what changed); null for the first version. */
  changes: Operation[] | null;
  /** The notifications this fetch covers. */
  notificationIds: number[];
}

export interface NotificationHandler {
  /** The notification `type` it handles (seed §2.4). */
  type: string;
  handle(ctx: HandlerContext): Promise<void>;
}

export class HandlerRegistry {
  private readonly byType = new Map<string, NotificationHandler>();

  constructor(handlers: NotificationHandler[]) {
    for (const h of handlers) {
      if (this.byType.has(h.type)) throw new Error(`two handlers for type ${h.type}`);
      this.byType.set(h.type, h);
    }
  }

  handlerFor(type: string): NotificationHandler | undefined {
    return this.byType.get(type);
  }
}
