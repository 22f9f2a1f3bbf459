/**
 * The marketplace's memory: companies and their tokens, webhook settings, leads, quotes, resources and
 * scripted answers.
 */
import { z } from 'zod';
import { randomToken } from '../lib/crypto.js';
import {
  authorizationHeader,
  type EventType,
  type WebhookSetting,
} from '../marketplace/contract.js';
import type { LeadCreated } from '../marketplace/leads.js';
import type { QuoteSubmitted } from '../marketplace/quotes.js';
import { PerCompany } from './collections.js';
import { SimulatorInputError } from './errors.js';
import type { CompanyAccount, Faults, ScriptedResponse } from './types.js';

/** Where the marketplace API lives on the simulator; the rest of the origin is the simulator's URL. */
export const API_PREFIX = '/api';

export const companyAccount = z.object({
  id: z.string().min(1).max(200),
  name: z.string().min(1).max(200).optional(),
  token: z.string().min(1).max(500),
});

export interface Company {
  id: string;
  name: string;
  token: string;
}

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

/** A new marketplace id such as `lead_…`: a kind prefix and 96 random bits. */
export const newId = (prefix: string): string => `${prefix}_${randomToken(12)}`;

export const resourcePath = (type: string, id: string): string =>
  `${API_PREFIX}/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;

export class MarketplaceState {
  private readonly companies = new Map<string, Company>();
  /** Keyed by the whole Authorization header value, so the token scheme stays the contract's decision. */
  private readonly companiesByAuthorization = new Map<string, Company>();
  private readonly webhooks = new Map<string, StoredWebhookSetting>();
  /** The same settings by owner, so finding a company's subscribers does not walk every company's. */
  private readonly webhooksByCompany = new Map<string, Map<string, StoredWebhookSetting>>();
  /**
   * Keyed by path, in creation order. Kept whole, like leads and quotes: forgetting one would make a GET of
   * an href already sent answer 404. Only the report is trimmed (to the newest `historyLimit`).
   */
  private readonly resources = new Map<string, Resource>();
  private readonly scripts = new Map<string, ScriptedResponse[]>();
  /**
   * What a repeat answers: leads by clientIdentifier, quotes by sellerUniqueQuoteIdentifier. Kept whole:
   * forgetting an entry would let a repeat create a second lead or quote.
   */
  readonly leads = new PerCompany<LeadCreated>();
  readonly quotes = new PerCompany<QuoteSubmitted>();

  constructor(public faults: Faults) {}

  /** Adds a company, or replaces the name and token of a known one. */
  addCompany(account: CompanyAccount): Company {
    const authorization = authorizationHeader(account.token);
    const holder = this.companiesByAuthorization.get(authorization);
    if (holder && holder.id !== account.id) {
      throw new SimulatorInputError(`token: already the token of company "${holder.id}"`);
    }
    const previous = this.companies.get(account.id);
    if (previous) this.companiesByAuthorization.delete(authorizationHeader(previous.token));
    const company = { id: account.id, name: account.name ?? account.id, token: account.token };
    this.companies.set(company.id, company);
    this.companiesByAuthorization.set(authorization, company);
    return company;
  }

  hasCompany(companyId: string): boolean {
    return this.companies.has(companyId);
  }

  companyIds(): string[] {
    return [...this.companies.keys()];
  }

  companyByAuthorization(header: string | undefined): Company | undefined {
    return header === undefined ? undefined : this.companiesByAuthorization.get(header);
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
    const subscribed: StoredWebhookSetting[] = [];
    for (const setting of this.webhooksByCompany.get(companyId)?.values() ?? []) {
      if (setting.active && setting.eventTypes.includes(eventType)) subscribed.push(setting);
    }
    return subscribed;
  }

  /** clientIdentifier is unique across the whole marketplace, not just per company. */
  clientIdentifierTaken(clientIdentifier: string, exceptWebhookId?: string): boolean {
    for (const setting of this.webhooks.values()) {
      if (setting.clientIdentifier === clientIdentifier && setting.id !== exceptWebhookId) return true;
    }
    return false;
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
    if (existing && existing.companyId !== companyId) {
      throw new SimulatorInputError(`resourceId: ${type}/${id} belongs to another company`);
    }
    if (existing) {
      // Merged, so an event fired on a lead or quote keeps what it holds.
      const merged = { ...existing.fields, ...fields };
      Object.assign(existing, { version: existing.version + 1, updatedAt: new Date(), fields: merged });
      return existing;
    }
    const resource = { companyId, type, id, path, version: 1, updatedAt: new Date(), fields };
    this.resources.set(path, resource);
    return resource;
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
