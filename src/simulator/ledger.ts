/** What the simulator did, kept so a test can compare what was sent with what Skyhook stored. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BoundedLog } from './collections.js';
import type { ApiCallRecord, DeclineRecord, DeliveryStatus, FetchRecord, LeadRecord, NotificationRecord, QuoteRecord, ResourceRecord, TokenRecord } from './types.js';

export type FinalStatus = Exclude<DeliveryStatus, 'pending'>;

/**
 * An onSend hook that counts a call once its answer is done or its caller has hung up on a late answer
 * (a response's `close` comes once, either way), so repeats, soft errors, refused tokens and calls
 * given up on all count.
 */
export const countCall =
  (count: () => void) =>
  async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.raw.once('close', count);
  };

export class Ledger {
  /** In the report's order; the final statuses are counted by deliverySettled. */
  readonly counts = { delivered: 0, retried: 0, gaveUp: 0, duplicatesSent: 0, lostAcks: 0, dropped: 0 };
  /** Every POST received on the lead, quote and decline routes (repeats, soft errors and refused tokens included), token requests and settings lists. */
  readonly calls = { leads: 0, quotes: 0, declines: 0, tokens: 0, settingsLists: 0 };
  /**
   * By company: its events fired and delivered (the report's perCompany), and the resource GETs that carried
   * its token (resourceGets): `answered` with anything but 429, `refused429` with 429 (its rate limit, the
   * global resource429Rate or a scripted answer). GETs made = the sum.
   */
  private readonly tallies = new Map<string, { fired: number; delivered: number; answered: number; refused429: number }>();
  /** The newest records of each kind (historyLimit of each); a delivery's record is updated in place as its attempts go on. */
  readonly logs;

  constructor(historyLimit: number) {
    const log = <T>() => new BoundedLog<T>(historyLimit);
    this.logs = {
      notifications: log<NotificationRecord>(),
      fetches: log<FetchRecord>(),
      leads: log<LeadRecord>(),
      quotes: log<QuoteRecord>(),
      declines: log<DeclineRecord>(),
      tokens: log<TokenRecord>(),
      apiCalls: log<ApiCallRecord>(),
    };
  }

  eventFired(companyId: string): void {
    this.tally(companyId).fired++;
  }

  deliverySettled(record: NotificationRecord, status: FinalStatus): void {
    record.status = status;
    this.counts[status === 'gave_up' ? 'gaveUp' : status]++;
    if (status === 'delivered') this.tally(record.companyId).delivered++;
  }

  fetchServed(fetch: FetchRecord): void {
    this.logs.fetches.push(fetch);
    if (fetch.tokenCompanyId !== null) this.tally(fetch.tokenCompanyId)[fetch.status === 429 ? 'refused429' : 'answered']++;
  }

  report(pending: number, companyIds: string[], resources: ResourceRecord[]) {
    for (const companyId of companyIds) this.tally(companyId);
    const tallies = [...this.tallies];
    return {
      ...this.counts,
      pending,
      perCompany: Object.fromEntries(tallies.map(([id, { fired, delivered }]) => [id, { fired, delivered }])),
      resourceGets: Object.fromEntries(tallies.map(([id, { answered, refused429 }]) => [id, { answered, refused429 }])),
      // Copies, so a caller holding the report does not see later attempts change it.
      notifications: this.logs.notifications.toArray().map((record) => ({ ...record })),
      fetches: this.logs.fetches.toArray(),
      resources,
      leads: this.logs.leads.toArray(),
      quotes: this.logs.quotes.toArray(),
      declines: this.logs.declines.toArray(),
      calls: { ...this.calls },
      tokens: this.logs.tokens.toArray(),
      apiCalls: this.logs.apiCalls.toArray(),
    };
  }

  /** A company's tally, made on first use. */
  private tally(companyId: string) {
    const tally = this.tallies.get(companyId) ?? { fired: 0, delivered: 0, answered: 0, refused429: 0 };
    this.tallies.set(companyId, tally);
    return tally;
  }
}

/** What the simulator did (GET /_sim/report), as the ledger tells it. */
export type SimulatorReport = ReturnType<Ledger['report']>;
