/** The public shapes of the marketplace simulator: its options, its control inputs and its report. */
import type { ConnectionProfile } from '../marketplace/connection.js';
import type { EventType, NotificationBody } from '../marketplace/contract.js';
import type { DeclineReason } from '../marketplace/declines.js';

/** How a quote or a decline reached the simulator: the assumed path, or an action href of an RFQ resource (rfq-actions.ts). */
export type AnswerRoute = 'assumed_path' | 'action_href';

/**
 * A marketplace company account (SPEC §14): `bearer` (the default) is known by `Authorization: Bearer <token>`,
 * `avinode` by `Bearer <authToken>` and its X-Avinode-* headers (marketplace/connection.ts). With `clientId`
 * and `clientSecret`, the token endpoint issues access tokens that stand in for the fixed bearer token.
 */
export interface CompanyAccount {
  id: string;
  name?: string;
  /** bearer: the Authorization token (optional with OAuth client credentials); avinode: the X-Avinode-ApiToken (required). */
  token?: string;
  /** Default `bearer`. */
  profile?: ConnectionProfile;
  /** avinode: the fixed Authorization token (optional with OAuth client credentials). */
  authToken?: string;
  /** OAuth 2.0 client credentials the token endpoint accepts for this company. */
  clientId?: string;
  clientSecret?: string;
}

/** Fault knobs, so tests can see how Skyhook copes with an imperfect marketplace. Rates are shares in [0, 1]. */
export interface Faults {
  /** Share of deliveries sent twice. */
  duplicateRate: number;
  /** Share of 200 answers treated as lost (retried anyway). */
  lostAckRate: number;
  /** Added before each delivery attempt. */
  deliveryLatencyMs: number;
  /** Added before each resource GET answer. */
  resourceLatencyMs: number;
  /** Added after a lead, a quote or a decline was handled, before its answer: the marketplace acted, the caller may time out. */
  submitLatencyMs: number;
  /** Share of resource GETs answering 503. */
  resource5xxRate: number;
  /** Share of resource GETs answering 429 with `Retry-After: 1`. */
  resource429Rate: number;
  /** The plural PUT /webhooks/settings/{id} answers 404 (to test Skyhook's singular fallback). */
  pluralPutMissing: boolean;
  /** The OAuth token endpoint answers 503. */
  tokenEndpointDown: boolean;
}

/** A company's rate limit on resource GETs: above `perSecond` in any sliding second, `429` with `Retry-After: <retryAfterS>`. */
export interface ResourceRateLimit {
  perSecond: number;
  retryAfterS: number;
}

/**
 * Fault knobs of one company's resource GETs (those carrying its credentials), on top of the global ones:
 * one company slow or rate-limited while the others are not (SPEC §5.1).
 */
export interface CompanyFaults {
  /** Added before each of its resource GET answers (after the global resourceLatencyMs); a 429 of its rate limit is not delayed. */
  resourceLatencyMs: number;
  /**
   * Decided when the GET arrives, before its latency and any scripted answer; a refused GET takes no place
   * in the window. null: no limit.
   */
  resourceRateLimit: ResourceRateLimit | null;
}

/** A partial update of a company's faults: an absent knob keeps its value, `null` clears it. */
export interface CompanyFaultsPatch {
  resourceLatencyMs?: number | null;
  resourceRateLimit?: ResourceRateLimit | null;
}

export interface SimulatorOptions {
  /** 0 = a random free port. Default 0. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * The origin other processes reach the simulator at (e.g. `http://simulator:4010` in docker compose);
   * hrefs and the API base URL use it. Default: the listening address.
   */
  publicUrl?: string;
  companies?: CompanyAccount[];
  /** 1 = real time; 0.001 compresses the 48 h give-up to 172.8 s and the backoffs likewise. */
  timeScale?: number;
  /** Default 10 000; a reply slower than this counts as undelivered. */
  replyTimeoutMs?: number;
  /** Default 64 parallel deliveries. */
  deliveryConcurrency?: number;
  faults?: Partial<Faults>;
  /**
   * How many notifications, fetches, leads, quotes and resources the report lists (the newest). Default
   * 100 000. Only the report is trimmed: every resource stays in the simulator's state and answers GETs.
   */
  historyLimit?: number;
  /**
   * The shape of the error entries in its envelopes: `seed` (default) `{code, message, field}`, the seed's
   * assumption; `titled` `{title, code, path}`, the real marketplace's (SPEC §14). Scripted bodies are sent as given.
   */
  errorShape?: ErrorShape;
  /** Log every request (pino). Default false. */
  logger?: boolean;
  /** Seconds an access token from the token endpoint lives. Default 60 (short-lived, so refreshes happen). */
  tokenLifetimeS?: number;
}

export const ERROR_SHAPES = ['seed', 'titled'] as const;
export type ErrorShape = (typeof ERROR_SHAPES)[number];

/** Fire events on demand (POST /_sim/events). */
export interface FireRequest {
  companyId: string;
  eventType: EventType;
  /** Number of events. Default 1. */
  count?: number;
  /** Every event changes this resource (created on first use). */
  resourceId?: string;
  /** The events go round-robin over this many new resources. Default: a new resource per event. */
  resources?: number;
  /** Extra notification properties; they are spread last, so tests can also override `type` or `href`. */
  extra?: Record<string, unknown>;
}

/** One fired event: the notification body and the webhooks it was queued for. */
export interface EmittedNotification {
  companyId: string;
  eventType: EventType;
  notification: NotificationBody;
  webhookIds: string[];
}

/** A scripted answer for the next GET of a resource href. */
export interface ScriptedResponse {
  status: number;
  /** Default: an envelope (with an error for status >= 400, else the resource or null). */
  body?: unknown;
  headers?: Record<string, string>;
}

export type DeliveryStatus = 'delivered' | 'pending' | 'gave_up' | 'dropped';

/** One notification on its way to one webhook. */
export interface NotificationRecord {
  id: string;
  href: string;
  type: string;
  companyId: string;
  webhookId: string;
  attempts: number;
  status: DeliveryStatus;
  /** Why the last attempt did not count as consumed. */
  lastError?: string;
}

/** One resource GET, recorded to prove that no company's token reached another company's data. */
export interface FetchRecord {
  href: string;
  /** null when no such resource exists. */
  ownerCompanyId: string | null;
  /** null for an unknown token. */
  tokenCompanyId: string | null;
  status: number;
  /** When the GET arrived. */
  startedAt: string;
  /** When it was answered. */
  at: string;
}

export interface ResourceRecord {
  companyId: string;
  href: string;
  type: string;
  id: string;
  version: number;
}

/** A lead the simulator created; a repeat of its clientIdentifier adds no record. */
export interface LeadRecord {
  companyId: string;
  id: string;
  clientIdentifier: string;
  kind: 'client_search' | 'empty_leg';
}

/** A quote the simulator accepted; a repeat of its sellerUniqueQuoteIdentifier adds no record. */
export interface QuoteRecord {
  companyId: string;
  requestId: string;
  tripMessageId: string;
  sellerQuoteId: string;
  liftId: string;
  /** The act-as header of the company's profile (X-Service-ActAsAccount or X-Avinode-ActAsAccount); null when it was not sent. */
  actAsAccount: string | null;
  sellerUniqueQuoteIdentifier: string;
  /** Where it was sent: the assumed path, or an action href of an RFQ resource. */
  via: AnswerRoute;
}

/** A decline the simulator accepted; a repeat for the same lift or RFQ adds no record. */
export interface DeclineRecord {
  companyId: string;
  requestId: string;
  declineReason: DeclineReason;
  tripMessageId: string;
  /** The act-as header of the company's profile; null when it was not sent. */
  actAsAccount: string | null;
  via: AnswerRoute;
}

/** One request to the OAuth token endpoint. */
export interface TokenRecord {
  /** The company whose client credentials were presented; null for an unknown client. */
  companyId: string | null;
  status: number;
  at: string;
}

/** One call to the marketplace API (resource GETs included), with the profile headers it carried. */
export interface ApiCallRecord {
  method: string;
  path: string;
  /** The company its credentials named; null when they named none. */
  companyId: string | null;
  status: number;
  /** X-Avinode-Product and X-Avinode-ApiVersion as sent; null when absent. */
  product: string | null;
  apiVersion: string | null;
  /** The act-as header of the company's profile, as sent; null when absent. */
  actAsAccount: string | null;
  at: string;
}

export interface SimulatorReport {
  delivered: number;
  retried: number;
  gaveUp: number;
  duplicatesSent: number;
  lostAcks: number;
  dropped: number;
  pending: number;
  perCompany: Record<string, { fired: number; delivered: number }>;
  /**
   * Resource GETs by the company whose token they carried: `answered` with anything but 429, `refused429`
   * with 429 (its rate limit, the global resource429Rate or a scripted answer). GETs made = the sum.
   */
  resourceGets: Record<string, { answered: number; refused429: number }>;
  notifications: NotificationRecord[];
  fetches: FetchRecord[];
  resources: ResourceRecord[];
  leads: LeadRecord[];
  quotes: QuoteRecord[];
  declines: DeclineRecord[];
  /** Every POST received on the lead, quote and decline routes (repeats, soft errors and refused tokens included), token requests and settings lists. */
  calls: { leads: number; quotes: number; declines: number; tokens: number; settingsLists: number };
  tokens: TokenRecord[];
  apiCalls: ApiCallRecord[];
}

export interface Simulator {
  /** e.g. http://127.0.0.1:4010 */
  url: string;
  /** `${url}/api`: the base URL companies use. */
  apiBaseUrl: string;
  addCompany(company: CompanyAccount): void;
  /** Same as POST /_sim/events. */
  fire(request: FireRequest): Promise<EmittedNotification[]>;
  setFaults(faults: Partial<Faults>): void;
  /** Same as PUT /_sim/companies/{id}/faults: changes some of the company's fault knobs and answers all of them. */
  setCompanyFaults(companyId: string, faults: CompanyFaultsPatch): CompanyFaults;
  /** Same as POST /_sim/resources/program. */
  programResource(href: string, responses: ScriptedResponse[]): void;
  /** Same as GET /_sim/report. */
  report(): SimulatorReport;
  /** Same as POST /_sim/companies/{id}/reset: the company's webhook settings are forgotten (a sandbox wipe). */
  resetCompany(companyId: string): { forgotten: number };
  /** Same as POST /_sim/companies/{id}/revoke-tokens: its access tokens stop working before they expire. */
  revokeTokens(companyId: string): { revoked: number };
  /** Resolves when no delivery is pending or in flight. */
  idle(): Promise<void>;
  /** Stops timers and the server; pending deliveries are abandoned. */
  stop(): Promise<void>;
}
