/**
 * The simulated marketplace behind both doors: startSimulator answers this object (index.ts exports it as
 * Simulator), and the HTTP control routes call the same operations, so "same as POST /_sim/events" holds by
 * construction. Control input is validated here (schemas.ts) and refused with a SimulatorInputError.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { NOTIFICATION_TYPE_BY_EVENT, SCHEDULING_EVENT_TYPES, type EventType, type NotificationBody } from '../marketplace/contract.js';
import { DeliveryQueue } from './delivery.js';
import { parseInput, SimulatorInputError } from './errors.js';
import { applyCompanyFaults, applyFaults, companyFaultsPatch, faultsPatch } from './faults.js';
import { Ledger, type SimulatorReport } from './ledger.js';
import { newRfqFields } from './rfq-resources.js';
import { companyAccount, fireRequest, resourceProgram, type simulationSettings } from './schemas.js';
import { API_PREFIX, MarketplaceState, resourcePath, SCHEDULING_PREFIX, type Company } from './state.js';
import type { CompanyAccount, CompanyFaults, CompanyFaultsPatch, Faults, FireRequest, ResourceProgram } from './types.js';

export class Simulation {
  readonly state: MarketplaceState;
  readonly ledger: Ledger;
  readonly deliveries: DeliveryQueue;
  /** The simulator's public origin, e.g. http://127.0.0.1:4010; known once it listens, before any event can be fired. */
  url = '';

  constructor(
    readonly settings: z.output<typeof simulationSettings>,
    private readonly server: FastifyInstance,
  ) {
    this.state = new MarketplaceState(settings.faults, settings.tokenLifetimeS * 1000);
    this.ledger = new Ledger(settings.historyLimit);
    this.deliveries = new DeliveryQueue(this.state, this.ledger, settings);
  }

  /** `${url}/api`: the base URL companies use. */
  get apiBaseUrl(): string {
    return `${this.url}${API_PREFIX}`;
  }

  /** `${url}/scheduling`: the scheduling product's base URL (SPEC §14), which a company's connection lists in `baseUrls`. */
  get schedulingBaseUrl(): string {
    return `${this.url}${SCHEDULING_PREFIX}`;
  }

  hrefOf(path: string): string {
    return `${this.url}${path}`;
  }

  addCompany(input: CompanyAccount): Company {
    return this.state.addCompany(parseInput(companyAccount, input));
  }

  /** Forgets the company's webhook settings, as the marketplace's sandbox wipe does; its pending deliveries are dropped. */
  resetCompany(companyId: string): { forgotten: number } {
    this.requireCompany(companyId);
    const forgotten = this.state.forgetWebhooks(companyId);
    for (const id of forgotten) this.deliveries.dropWebhook(id);
    return { forgotten: forgotten.length };
  }

  /** Moves the company's last use of its connection `days` back: past 60 days, the marketplace refuses it (401 connection_deactivated). */
  ageConnection(companyId: string, days: number): { lastUsedAt: string } {
    this.requireCompany(companyId);
    return this.state.ageConnection(companyId, days);
  }

  /** The company's OAuth client secret expires now: the token endpoint refuses it. */
  expireClientSecret(companyId: string): { expiresAt: string } {
    this.requireCompany(companyId);
    return this.state.expireClientSecret(companyId);
  }

  /** The company's access tokens stop working before they expire (a 401 makes Skyhook fetch a new one). */
  revokeTokens(companyId: string): { revoked: number } {
    this.requireCompany(companyId);
    return { revoked: this.state.revokeAccessTokens(companyId) };
  }

  /** Fires `count` events of one type for one company; each changes a resource and notifies its webhooks. */
  async fire(input: FireRequest): Promise<EmittedNotification[]> {
    const request = parseInput(fireRequest, input);
    this.requireCompany(request.companyId);
    return resourceIdsToChange(request).map((resourceId) => this.emit(request.companyId, request.eventType, resourceId, { extra: request.extra }));
  }

  /**
   * Records a change to a company's resource (`fields` are what a GET of it then shows) and queues its
   * notification (`extra` are added to the body) for the subscribed webhooks.
   */
  emit(
    companyId: string,
    eventType: EventType,
    resourceId: string,
    { extra, fields }: { extra?: Record<string, unknown>; fields?: Record<string, unknown> } = {},
  ) {
    const type = NOTIFICATION_TYPE_BY_EVENT[eventType];
    // A new RFQ gets its actions and requested lifts, whose hrefs Skyhook answers it at.
    const isNewRfq = type === NOTIFICATION_TYPE_BY_EVENT.TripRequest && !this.state.resourceAt(resourcePath(type, resourceId));
    const shape = isNewRfq ? newRfqFields((path) => this.hrefOf(path), resourceId) : {};
    // (assumed) A scheduling notification names the marketplace trip it belongs to, as the real one may.
    const trip = (SCHEDULING_EVENT_TYPES as readonly string[]).includes(eventType) ? { platformTripId: `trip_${resourceId}` } : {};
    const resource = this.state.changeResource(companyId, type, resourceId, { ...shape, ...trip, ...fields, lastEventType: eventType });
    const notification: NotificationBody = { id: resource.id, href: this.hrefOf(resource.path), type, ...trip, ...extra };
    this.ledger.eventFired(companyId);
    const webhookIds = this.state.subscribers(companyId, eventType).map((setting) => setting.id);
    for (const webhookId of webhookIds) this.deliveries.enqueue(webhookId, companyId, notification);
    return { companyId, eventType, notification, webhookIds };
  }

  /** Changes some fault knobs and answers all of them. */
  setFaults(input: Partial<Faults>): Faults {
    this.state.faults = applyFaults(this.state.faults, parseInput(faultsPatch, input));
    return this.state.faults;
  }

  /** Changes some of one company's fault knobs (null clears one) and answers all of them. */
  setCompanyFaults(companyId: string, input: CompanyFaultsPatch): CompanyFaults {
    this.requireCompany(companyId);
    const faults = applyCompanyFaults(this.state.faultsOf(companyId), parseInput(companyFaultsPatch, input));
    this.state.setFaultsOf(companyId, faults);
    return faults;
  }

  /** Queues scripted answers `{href, responses}` for the next GETs of that href. */
  programResource(input: ResourceProgram): void {
    const { href, responses } = parseInput(resourceProgram, input);
    this.state.program(new URL(href).pathname, responses);
  }

  report(): SimulatorReport {
    const resources = this.state.newestResources(this.settings.historyLimit).map(({ companyId, path, type, id, version }) => ({
      companyId,
      href: this.hrefOf(path),
      type,
      id,
      version,
    }));
    return this.ledger.report(this.deliveries.pendingCount, this.state.companyIds(), resources);
  }

  /** Resolves when no delivery is pending or in flight. */
  idle(): Promise<void> {
    return this.deliveries.idle();
  }

  /** Stops timers and the server; pending deliveries are abandoned. */
  async stop(): Promise<void> {
    this.deliveries.stop();
    await this.server.close();
  }

  private requireCompany(companyId: string): void {
    if (!this.state.hasCompany(companyId)) throw new SimulatorInputError(`companyId: unknown company "${companyId}"`);
  }
}

/** One fired event: the notification body and the webhooks it was queued for. */
export type EmittedNotification = ReturnType<Simulation['emit']>;

/** Which resource each event changes: the given one, round-robin over a few new ones, or a new one each. */
function resourceIdsToChange(request: z.infer<typeof fireRequest>): string[] {
  const { count, resourceId, resources } = request;
  if (resourceId !== undefined) return new Array<string>(count).fill(resourceId);
  const distinct = Array.from({ length: Math.min(resources ?? count, count) }, () => randomUUID());
  return Array.from({ length: count }, (_, i) => distinct[i % distinct.length] as string);
}
