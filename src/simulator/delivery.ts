/**
 * Delivers notifications the way the marketplace does (seed §6): a signed JSON POST to the webhook's
 * targetURI, consumed only by HTTP 200, retried with backoff until 48 hours after the first attempt.
 */
import type { z } from 'zod';
import type { NotificationBody } from '../marketplace/contract.js';
import { Fifo } from './collections.js';
import { fetchFailureReason } from './errors.js';
import { happens } from './faults.js';
import type { FinalStatus, Ledger } from './ledger.js';
import type { simulationSettings } from './schemas.js';
import { deliveryAuthorization } from './sign.js';
import type { MarketplaceState, StoredWebhookSetting } from './state.js';
import type { NotificationRecord } from './types.js';

const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 15 * 60_000;
/** Seed §6.4 and §8: after 48 hours without consumption the marketplace stops trying. */
const GIVE_UP_AFTER_MS = 48 * 3_600_000;

/** timeScale scales the backoffs and the 48 h window (1 = real time). */
type DeliverySettings = Pick<z.output<typeof simulationSettings>, 'timeScale' | 'replyTimeoutMs' | 'deliveryConcurrency'>;

interface Delivery {
  record: NotificationRecord;
  /** Serialised once: every attempt sends, and OAuth signs, these same bytes. */
  rawBody: string;
  firstAttemptAt?: number;
  timer?: NodeJS.Timeout;
  sending: boolean;
}

export class DeliveryQueue {
  /** Every delivery not yet settled: waiting for its time, waiting for a slot, or being sent. */
  private readonly pending = new Set<Delivery>();
  private readonly due = new Fifo<Delivery>();
  private sendingCount = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly state: MarketplaceState,
    private readonly ledger: Ledger,
    private readonly settings: DeliverySettings,
  ) {}

  get pendingCount(): number {
    return this.pending.size;
  }

  enqueue(webhookId: string, companyId: string, notification: NotificationBody): void {
    const { id, href, type } = notification;
    const record: NotificationRecord = { id, href, type, companyId, webhookId, attempts: 0, status: 'pending' };
    const delivery: Delivery = { record, rawBody: JSON.stringify(notification), sending: false };
    this.ledger.logs.notifications.push(record);
    this.pending.add(delivery);
    this.scheduleAttempt(delivery, 0);
  }

  /**
   * A deactivated webhook gets nothing more: its waiting deliveries are dropped now; one being sent right
   * now is dropped when its attempt fails (if it succeeds, it was delivered).
   */
  dropWebhook(webhookId: string): void {
    for (const delivery of this.pending) {
      if (delivery.record.webhookId === webhookId && !delivery.sending) {
        clearTimeout(delivery.timer);
        this.settle(delivery, 'dropped');
      }
    }
  }

  idle(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Abandons every pending delivery; attempts already sent finish unobserved. */
  stop(): void {
    this.stopped = true;
    for (const delivery of this.pending) clearTimeout(delivery.timer);
    this.pending.clear();
    this.wakeIdleWaiters();
  }

  private scheduleAttempt(delivery: Delivery, delayMs: number): void {
    const waitMs = delayMs + this.state.faults.deliveryLatencyMs;
    if (waitMs <= 0) this.makeDue(delivery);
    else delivery.timer = setTimeout(() => this.makeDue(delivery), waitMs);
  }

  private makeDue(delivery: Delivery): void {
    delivery.timer = undefined;
    this.due.push(delivery);
    this.startDueAttempts();
  }

  private startDueAttempts(): void {
    while (!this.stopped && this.sendingCount < this.settings.deliveryConcurrency) {
      const delivery = this.due.shift();
      if (!delivery) return;
      if (delivery.record.status !== 'pending') continue; // dropped while it waited for a slot
      this.sendingCount++;
      delivery.sending = true;
      void this.attempt(delivery).finally(() => {
        delivery.sending = false;
        this.sendingCount--;
        this.startDueAttempts();
      });
    }
  }

  private async attempt(delivery: Delivery): Promise<void> {
    // The setting object is updated in place by PUT, so reading it after the await sees the current state.
    const webhook = this.state.webhook(delivery.record.webhookId);
    if (!webhook?.active) {
      this.settle(delivery, 'dropped');
      return;
    }
    const firstAttemptAt = (delivery.firstAttemptAt ??= Date.now());
    delivery.record.attempts++;
    const error = await this.post(webhook, delivery.rawBody);
    if (this.stopped) return;
    const { faults } = this.state;
    const ackLost = error === undefined && happens(faults.lostAckRate);
    if (ackLost) this.ledger.counts.lostAcks++;
    if (error === undefined && !ackLost) {
      // The duplicate fault: the same body once more, freshly signed; its answer does not matter.
      if (happens(faults.duplicateRate)) {
        this.ledger.counts.duplicatesSent++;
        await this.post(webhook, delivery.rawBody);
      }
      if (!this.stopped) this.settle(delivery, 'delivered');
      return;
    }
    delivery.record.lastError = error ?? 'acknowledgement lost (fault)';
    if (!webhook.active) this.settle(delivery, 'dropped');
    else this.retryLater(delivery, firstAttemptAt);
  }

  /** The next attempt after the backoff, but no later than the end of the window: a last try at 48 h. */
  private retryLater(delivery: Delivery, firstAttemptAt: number): void {
    const giveUpAt = firstAttemptAt + GIVE_UP_AFTER_MS * this.settings.timeScale;
    const now = Date.now();
    if (now >= giveUpAt) {
      this.settle(delivery, 'gave_up');
      return;
    }
    this.ledger.counts.retried++;
    this.scheduleAttempt(delivery, Math.min(this.backoffMs(delivery.record.attempts), giveUpAt - now));
  }

  /** 1 s doubling to 15 min (scaled), drawn from the upper half so the retries of a burst spread out. */
  private backoffMs(attempts: number): number {
    const ceilingMs = Math.min(FIRST_BACKOFF_MS * 2 ** (attempts - 1), MAX_BACKOFF_MS) * this.settings.timeScale;
    return ceilingMs * (0.5 + Math.random() / 2);
  }

  /** Undefined when the webhook consumed the notification, else why not. */
  private async post(webhook: StoredWebhookSetting, rawBody: string): Promise<string | undefined> {
    const { replyTimeoutMs } = this.settings;
    try {
      const response = await fetch(webhook.targetURI, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: deliveryAuthorization(webhook, rawBody),
        },
        body: rawBody,
        signal: AbortSignal.timeout(replyTimeoutMs),
      });
      // Read the (small) reply so the connection can be reused for the next delivery.
      await response.arrayBuffer();
      return response.status === 200 ? undefined : `answered HTTP ${response.status}`;
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      return timedOut ? `no reply within ${replyTimeoutMs} ms` : fetchFailureReason(error);
    }
  }

  private settle(delivery: Delivery, status: FinalStatus): void {
    this.pending.delete(delivery);
    this.ledger.deliverySettled(delivery.record, status);
    if (this.pending.size === 0) this.wakeIdleWaiters();
  }

  private wakeIdleWaiters(): void {
    for (const wake of this.idleWaiters.splice(0)) wake();
  }
}
