/** The marketplace's memory: companies and their tokens, webhook settings, leads, quotes, resources, scripted answers. */
import type { z } from 'zod';
import { randomToken } from '../lib/crypto.js';
import { HEADERS, SENT_TIMESTAMP_SKEW_MS } from '../marketplace/connection.js';
import { NOTIFICATION_TYPE_BY_EVENT, SCHEDULING_EVENT_TYPES, type EventType, type SeedEnvelopeMessage, type WebhookSetting } from '../marketplace/contract.js';
import type { LeadCreated } from '../marketplace/leads.js';
import type { DeclineAnswered } from '../marketplace/declines.js';
import type { QuoteSubmitted } from '../marketplace/quotes.js';
import { PerCompany } from './collections.js';
import { SimulatorInputError } from './errors.js';
import { NO_COMPANY_FAULTS } from './faults.js';
import { SlidingWindow } from './rate-window.js';
import type { companyAccount } from './schemas.js';
import type { CompanyFaults, Faults, ScriptedResponse } from './types.js';

/** Where the marketplace API lives on the simulator; the rest of the origin is the simulator's URL. */
export const API_PREFIX = '/api';

/** A company the marketplace knows: its account, named (by its id when it was given no name). */
export type Company = z.output<typeof companyAccount> & { name: string };

/** Who a request's credentials name, or why they are refused (status and envelope entry). */
type Identification = { company: Company; refused?: undefined } | Refusal;
interface Refusal {
  refused: number;
  error: SeedEnvelopeMessage;
}

const refused = (status: number, code: string, message: string, field?: string): Refusal => ({
  refused: status,
  error: { code, message, ...(field !== undefined ? { field } : {}) },
});

/** A webhook setting as the marketplace keeps it: what it answers, plus its owner and its secret. */
export interface StoredWebhookSetting extends WebhookSetting {
  companyId: string;
  clientSecret: string;
}

export interface Resource {
  companyId: string;
  type: string;
  id: string;
  /** The href without its origin, e.g. `/api/rfqs/<id>`: GETs find the resource by it. */
  path: string;
  version: number;
  updatedAt: Date;
  fields: Record<string, unknown>;
}

/** The fixed bearer token that names a company: bearer's `token`, avinode's `authToken`. */
const fixedBearer = (company: Company): string | undefined => (company.profile === 'avinode' ? company.authToken : company.token);

export const headerOf = (headers: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
};

/** The token of an `Authorization: Bearer <token>` header. */
function bearerOf(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer (\S+)$/.exec(header);
  return match?.[1];
}

/** What an avinode request's own headers lack, as the real marketplace answers it: 401 for the API token, 400 for the rest. */
function avinodeHeaderProblem(company: Company, header: (name: string) => string | undefined, now: number): Refusal | undefined {
  if (header(HEADERS.avinodeApiToken) !== company.token) return refused(401, 'invalid_api_token', `missing or wrong ${HEADERS.avinodeApiToken}`, HEADERS.avinodeApiToken);
  const sent = header(HEADERS.avinodeSentTimestamp);
  if (sent === undefined) return refused(400, 'missing_sent_timestamp', `${HEADERS.avinodeSentTimestamp} is required`, HEADERS.avinodeSentTimestamp);
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z$/.test(sent) ? Date.parse(sent) : Number.NaN;
  if (Number.isNaN(at)) return refused(400, 'invalid_sent_timestamp', `${HEADERS.avinodeSentTimestamp} must be an ISO 8601 UTC time`, HEADERS.avinodeSentTimestamp);
  if (Math.abs(now - at) > SENT_TIMESTAMP_SKEW_MS) return refused(400, 'invalid_sent_timestamp', `${HEADERS.avinodeSentTimestamp} is too far from the marketplace's clock`, HEADERS.avinodeSentTimestamp);
  if (!header(HEADERS.avinodeProduct)) return refused(400, 'missing_product', `${HEADERS.avinodeProduct} is required`, HEADERS.avinodeProduct);
  return undefined;
}

/** A new marketplace id such as `lead_…`: a kind prefix and 96 random bits. */
export const newId = (prefix: string): string => `${prefix}_${randomToken(12)}`;

/** The marketplace deactivates an API connection it has not seen used this long (its documentation). */
const CONNECTION_DEACTIVATED_AFTER_MS = 60 * 86_400_000;

/** (assumed) The scheduling product's host, served by the simulator as a second base URL of its own server. */
export const SCHEDULING_PREFIX = '/scheduling';
const SCHEDULING_TYPES: ReadonlySet<string> = new Set(SCHEDULING_EVENT_TYPES.map((e) => NOTIFICATION_TYPE_BY_EVENT[e]));

/** Where a resource lives: the scheduling product's resources under its own base URL, the rest under the API's. */
export const resourcePath = (type: string, id: string): string =>
  `${SCHEDULING_TYPES.has(type) ? SCHEDULING_PREFIX : API_PREFIX}/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;

export class MarketplaceState {
  /** Companies are few, so finding one by its token or client id walks them (companyWhere): no second index to keep in step. */
  private readonly companies = new Map<string, Company>();
  /** Access tokens the token endpoint issued, with their company and expiry (ms). */
  private readonly accessTokens = new Map<string, { companyId: string; expiresAt: number }>();
  private readonly webhooks = new Map<string, StoredWebhookSetting>();
  /** When each company's connection was last used (ms); a connection unused for 60 days is refused. */
  private readonly lastUsed = new Map<string, number>();
  /** When a company's OAuth client secret expires (ms), when a test made it. */
  private readonly secretExpiry = new Map<string, number>();
  /** The same settings by owner, so finding a company's subscribers does not walk every company's. */
  private readonly webhooksByCompany = new Map<string, Map<string, StoredWebhookSetting>>();
  /**
   * Keyed by path, in creation order. Kept whole, like leads and quotes: forgetting one would make a GET of
   * an href already sent answer 404. Only the report is trimmed (to the newest `historyLimit`).
   */
  private readonly resources = new Map<string, Resource>();
  private readonly scripts = new Map<string, ScriptedResponse[]>();
  /** Companies with fault knobs of their own, and the window of their rate limit when they have one. */
  private readonly companyFaults = new Map<string, { faults: CompanyFaults; window: SlidingWindow | null }>();
  /**
   * What a repeat answers: leads by clientIdentifier, quotes by sellerUniqueQuoteIdentifier, declines by the
   * lift or RFQ declined. Kept whole: forgetting an entry would let a repeat create a second one.
   */
  readonly leads = new PerCompany<LeadCreated>();
  readonly quotes = new PerCompany<QuoteSubmitted>();
  readonly declines = new PerCompany<Required<DeclineAnswered>>();

  constructor(
    public faults: Faults,
    private readonly tokenLifetimeMs: number = 60_000,
  ) {}

  /** Adds a company, or replaces the name and credentials of a known one (its issued access tokens stay valid until they expire). */
  addCompany(account: z.output<typeof companyAccount>): Company {
    const company: Company = { ...account, name: account.name ?? account.id };
    const bearer = fixedBearer(company);
    const holder = bearer === undefined ? undefined : this.companyWhere((other) => other.id !== company.id && fixedBearer(other) === bearer);
    if (holder) throw new SimulatorInputError(`${company.profile === 'avinode' ? 'authToken' : 'token'}: already the token of company "${holder.id}"`);
    const client = company.clientId === undefined ? undefined : this.companyWhere((other) => other.id !== company.id && other.clientId === company.clientId);
    if (client) throw new SimulatorInputError(`clientId: already the client of company "${client.id}"`);
    this.companies.set(company.id, company);
    return company;
  }

  private companyWhere(matches: (company: Company) => boolean): Company | undefined {
    return [...this.companies.values()].find(matches);
  }

  hasCompany(companyId: string): boolean {
    return this.companies.has(companyId);
  }

  companyIds(): string[] {
    return [...this.companies.keys()];
  }

  /** The company an `Authorization: Bearer` value names (a fixed token, or an access token even if expired), without checking anything else. */
  companyByAuthorization(header: string | undefined): Company | undefined {
    return this.holderOf(bearerOf(header)).company;
  }

  /** The company a bearer token names, and the issued access token it is when it is no company's fixed one. */
  private holderOf(bearer: string | undefined): { company?: Company; issued?: { companyId: string; expiresAt: number } } {
    if (bearer === undefined) return {};
    const fixed = this.companyWhere((company) => fixedBearer(company) === bearer);
    const issued = fixed ? undefined : this.accessTokens.get(bearer);
    return { company: fixed ?? (issued && this.companies.get(issued.companyId)), issued };
  }

  /**
   * The company a request's credentials name, checked as its profile requires: the bearer token (fixed, or an
   * access token not expired nor revoked), and for avinode the API token, the sent timestamp and the product.
   */
  identify(headers: Record<string, string | string[] | undefined>, now = Date.now()): Identification {
    const { company, issued } = this.holderOf(bearerOf(headerOf(headers, HEADERS.authorization)));
    if (!company) return refused(401, 'unauthorized', 'missing or unknown API token');
    if (issued && issued.expiresAt <= now) return refused(401, 'token_expired', 'the access token has expired');
    const problem = this.profileHeadersProblem(company, headers, now);
    if (problem) return problem;
    // (the real marketplace's documentation) A connection not seen used for 60 days is deactivated.
    if (now - (this.lastUsed.get(company.id) ?? now) > CONNECTION_DEACTIVATED_AFTER_MS) {
      return refused(401, 'connection_deactivated', 'the API connection was deactivated: it was not used for 60 days');
    }
    this.lastUsed.set(company.id, now);
    return { company };
  }

  /** The company's connection last used `days` earlier than it was (a test's 60 days pass at once); answers when that now is. */
  ageConnection(companyId: string, days: number, now = Date.now()): { lastUsedAt: string } {
    const at = (this.lastUsed.get(companyId) ?? now) - days * 86_400_000;
    this.lastUsed.set(companyId, at);
    return { lastUsedAt: new Date(at).toISOString() };
  }

  /** The company's OAuth client secret expires at `at`: the token endpoint refuses it from then on. */
  expireClientSecret(companyId: string, at = Date.now()): { expiresAt: string } {
    this.secretExpiry.set(companyId, at);
    return { expiresAt: new Date(at).toISOString() };
  }

  /** What the company's profile requires of a request's headers besides Authorization (the avinode ones), or undefined. */
  profileHeadersProblem(company: Company, headers: Record<string, string | string[] | undefined>, now = Date.now()): Refusal | undefined {
    return company.profile === 'avinode' ? avinodeHeaderProblem(company, (name) => headerOf(headers, name), now) : undefined;
  }

  /** Client credentials as the token endpoint receives them: the company they belong to, if the secret matches. */
  companyByClientCredentials(clientId: string, clientSecret: string, now = Date.now()): Company | undefined {
    const company = this.companyWhere((known) => known.clientId === clientId);
    if (company && (this.secretExpiry.get(company.id) ?? Infinity) <= now) return undefined; // an expired secret is a wrong one
    return company?.clientSecret === clientSecret ? company : undefined;
  }

  issueAccessToken(companyId: string, now = Date.now()): { value: string; lifetimeS: number } {
    // Expired tokens are dropped as new ones are issued, so the map stays the size of the live ones.
    for (const [value, issued] of this.accessTokens) if (issued.expiresAt <= now) this.accessTokens.delete(value);
    const value = `at_${randomToken(24)}`;
    this.accessTokens.set(value, { companyId, expiresAt: now + this.tokenLifetimeMs });
    return { value, lifetimeS: Math.round(this.tokenLifetimeMs / 1000) };
  }

  /** The company's access tokens stop working now (as a revocation on the marketplace would). */
  revokeAccessTokens(companyId: string): number {
    const revoked = [...this.accessTokens].filter(([, issued]) => issued.companyId === companyId);
    for (const [value] of revoked) this.accessTokens.delete(value);
    return revoked.length;
  }

  /** Forgets every webhook setting of the company, as the marketplace's weekly sandbox wipe does; answers their ids. */
  forgetWebhooks(companyId: string): string[] {
    const own = this.webhooksByCompany.get(companyId);
    if (!own) return [];
    this.webhooksByCompany.delete(companyId);
    for (const id of own.keys()) this.webhooks.delete(id);
    return [...own.keys()];
  }

  webhook(webhookId: string): StoredWebhookSetting | undefined {
    return this.webhooks.get(webhookId);
  }

  /** Adds a new setting; its owner never changes (PUT changes the setting in place, not its companyId). */
  addWebhook(setting: StoredWebhookSetting): void {
    this.webhooks.set(setting.id, setting);
    const own = this.webhooksByCompany.get(setting.companyId) ?? new Map<string, StoredWebhookSetting>();
    own.set(setting.id, setting);
    this.webhooksByCompany.set(setting.companyId, own);
  }

  webhooksOf(companyId: string): StoredWebhookSetting[] {
    return [...(this.webhooksByCompany.get(companyId)?.values() ?? [])];
  }

  /** The webhooks a company's event is delivered to: active and subscribed to it. */
  subscribers(companyId: string, eventType: EventType): StoredWebhookSetting[] {
    return this.webhooksOf(companyId).filter((setting) => setting.active && setting.eventTypes.includes(eventType));
  }

  /** clientIdentifier is unique across the whole marketplace, not just per company. */
  clientIdentifierTaken(clientIdentifier: string, exceptWebhookId?: string): boolean {
    return [...this.webhooks.values()].some((setting) => setting.clientIdentifier === clientIdentifier && setting.id !== exceptWebhookId);
  }

  resourceAt(path: string): Resource | undefined {
    return this.resources.get(path);
  }

  /** The newest `limit` resources, oldest first; only those are copied, however many the simulator keeps. */
  newestResources(limit: number): Resource[] {
    let skip = Math.max(0, this.resources.size - limit);
    const newest: Resource[] = [];
    for (const resource of this.resources.values()) {
      if (skip > 0) skip--;
      else newest.push(resource);
    }
    return newest;
  }

  /** Creates the resource for its company, or records a change to it (a new version). */
  changeResource(companyId: string, type: string, id: string, fields: Record<string, unknown>): Resource {
    const path = resourcePath(type, id);
    const existing = this.resources.get(path);
    if (existing) {
      if (existing.companyId !== companyId) throw new SimulatorInputError(`resourceId: ${type}/${id} belongs to another company`);
      // Merged, so an event fired on a lead or quote keeps what it holds.
      const merged = { ...existing.fields, ...fields };
      Object.assign(existing, { version: existing.version + 1, updatedAt: new Date(), fields: merged });
      return existing;
    }
    const resource = { companyId, type, id, path, version: 1, updatedAt: new Date(), fields };
    this.resources.set(path, resource);
    return resource;
  }

  faultsOf(companyId: string): CompanyFaults {
    return this.companyFaults.get(companyId)?.faults ?? NO_COMPANY_FAULTS;
  }

  /** Sets a company's fault knobs; its rate limit's window starts afresh when the limit per second changes. */
  setFaultsOf(companyId: string, faults: CompanyFaults): void {
    const previous = this.companyFaults.get(companyId);
    const perSecond = faults.resourceRateLimit?.perSecond;
    const window = perSecond === undefined ? null : previous?.window?.perSecond === perSecond ? previous.window : new SlidingWindow(perSecond);
    this.companyFaults.set(companyId, { faults, window });
  }

  /**
   * Whether the company's rate limit admits a resource GET arriving now (taking its place in the window),
   * or the Retry-After seconds of its refusal.
   */
  admitResourceGet(companyId: string): { admitted: true } | { admitted: false; retryAfterS: number } {
    const limited = this.companyFaults.get(companyId);
    if (!limited?.window || limited.window.tryTake()) return { admitted: true };
    return { admitted: false, retryAfterS: limited.faults.resourceRateLimit?.retryAfterS ?? 1 };
  }

  /** Queues scripted answers for the next GETs of a path, after any already queued. */
  program(path: string, responses: ScriptedResponse[]): void {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...responses]);
  }

  nextScriptedResponse(path: string): ScriptedResponse | undefined {
    const queue = this.scripts.get(path);
    const next = queue?.shift();
    if (queue?.length === 0) this.scripts.delete(path);
    return next;
  }
}
