/**
 * Live status changes of notifications (SPEC §7 `GET /admin/stream`, `skyhook notifications tail`): one
 * LISTEN connection per process, opened with the first subscriber. The repository announces each change as
 * a batch of ids per status; the stream looks them up (one query per announcement, only while someone
 * listens) and hands each matching subscriber one event per notification, in the order announced.
 * Announcements sent while the connection is lost are lost to it: when it is back, subscribers are told to
 * resync (reload what they show).
 */
import type { Listener } from '../db/listen.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import { NOTIFICATIONS_CHANNEL, type StatusAnnouncement } from '../notifications/postgres.js';
import type { NotificationStatus } from '../db/schema/index.js';
import { serviceUnavailable } from '../lib/problem.js';
import { withTimeout } from '../lib/timeout.js';

/** One status change of one notification (SPEC §7). */
export interface StatusEvent {
  id: string;
  companyId: string;
  webhookId: string;
  type: string;
  resourceId: string;
  status: NotificationStatus;
  at: string;
}

interface Subscriber {
  event(e: StatusEvent): void;
  /** Changes may have been missed (the listening connection was lost and is back): reload. */
  resync(reason: string): void;
  /** The stream is closing (shutdown). */
  end(): void;
}

interface StreamDeps {
  /** Opens the LISTEN connection (db/listen.ts, bound to DATABASE_URL). */
  listen: (channels: string[], listener: Listener) => { stop: () => Promise<void> };
  notifications: Pick<NotificationLifecycle, 'summaries'>;
  maxSubscribers: number;
  onError: (err: unknown) => void;
}

export class NotificationStream {
  private readonly subscribers = new Map<Subscriber, { companyId?: string }>();
  private connection: { stop: () => Promise<void> } | undefined;
  /** Announcements are handled one after another, so events keep their order. */
  private pending: Promise<void> = Promise.resolve();
  private connectedOnce = false;
  /** Waiting in listening() for the first connection. */
  private awaitingConnection: (() => void)[] = [];

  constructor(private readonly deps: StreamDeps) {}

  get size(): number {
    return this.subscribers.size;
  }

  /** Adds a subscriber (at most maxSubscribers: a 503 problem beyond); answers how to remove it. */
  subscribe(filter: { companyId?: string }, subscriber: Subscriber): () => void {
    if (this.subscribers.size >= this.deps.maxSubscribers) {
      throw serviceUnavailable(`The live stream already has its ${this.deps.maxSubscribers} subscribers in this process; retry later.`, 'too_many_subscribers');
    }
    this.subscribers.set(subscriber, filter);
    this.connection ??= this.deps.listen([NOTIFICATIONS_CHANNEL], {
      onNotification: (_channel, payload) => this.announced(payload),
      onConnected: () => {
        if (this.connectedOnce) for (const s of this.subscribers.keys()) s.resync('the connection to PostgreSQL was lost and is back: changes may have been missed');
        this.connectedOnce = true;
        for (const go of this.awaitingConnection.splice(0)) go();
      },
      onError: this.deps.onError,
    });
    return () => this.subscribers.delete(subscriber);
  }

  /**
   * Resolves once the LISTEN connection has been up: changes from then on reach the subscribers. A client
   * answered before that would miss the first changes after it subscribed. Past `timeoutMs`, the error is
   * reported and a 503 problem thrown.
   */
  async listening(timeoutMs: number): Promise<void> {
    if (this.connectedOnce) return;
    try {
      await withTimeout(new Promise<void>((resolve) => this.awaitingConnection.push(resolve)), timeoutMs, 'the live stream\'s LISTEN connection');
    } catch (err) {
      this.deps.onError(err);
      throw serviceUnavailable('The live stream cannot reach PostgreSQL; retry later.', 'database_unavailable');
    }
  }

  async close(): Promise<void> {
    for (const s of this.subscribers.keys()) s.end();
    this.subscribers.clear();
    await this.connection?.stop();
  }

  private announced(payload: string | undefined): void {
    if (this.subscribers.size === 0 || !payload) return;
    const at = new Date().toISOString();
    this.pending = this.pending.then(() => this.fanOut(payload, at)).catch(this.deps.onError);
  }

  private async fanOut(payload: string, at: string): Promise<void> {
    const { status, ids } = JSON.parse(payload) as StatusAnnouncement;
    const rows = await this.deps.notifications.summaries(ids);
    for (const row of rows.sort((a, b) => a.id - b.id)) {
      const event: StatusEvent = { id: String(row.id), companyId: row.companyId, webhookId: row.webhookId, type: row.type, resourceId: row.resourceId, status, at };
      for (const [subscriber, filter] of this.subscribers) if (!filter.companyId || filter.companyId === row.companyId) subscriber.event(event);
    }
  }
}
