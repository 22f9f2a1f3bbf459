/** The services the admin API, the CLI and the console share, composed once from narrow dependencies. */
import type { CompanyStates } from '../companies/states.js';
import { listen } from '../db/listen.js';
import type { DeliveryKey, DeliveryLifecycle } from '../destinations/lifecycle.js';
import type { DestinationStatesRepository } from '../destinations/postgres.js';
import { DeliverySender } from '../delivery/send.js';
import { newSigningSecret, signatureHeaders } from '../delivery/sign.js';
import type { Gate } from '../gate/gate.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import type { Metrics } from '../lib/metrics.js';
import { MarketplaceClient } from '../marketplace/client.js';
import type { AccessTokens } from '../marketplace/oauth2.js';
import { webhookSettingsApi } from '../marketplace/webhook-settings.js';
import type { FetchEnqueuer } from '../processing/enqueue.js';
import { createAuditLog } from '../access/audit.js';
import { createKeys, type Keys } from '../access/keys.js';
import { createCompaniesService } from './companies.service.js';
import { createDeclinesService } from './declines.service.js';
import { createDeletionsService } from './deletions.service.js';
import { createDestinationsService } from './destinations.service.js';
import { createEventsService } from './events.service.js';
import { createLeadsService } from './leads.service.js';
import { createNotificationsService } from './notifications.service.js';
import { createOverviewService } from './overview.service.js';
import { createQuotesService } from './quotes.service.js';
import { createWebhooksService } from './webhooks.service.js';

export function createServices(deps: {
  db: Database;
  notifications: Pick<NotificationLifecycle, 'replay' | 'queue' | 'deleteWebhook' | 'accept'>;
  enqueuer: Pick<FetchEnqueuer, 'enqueue'>;
  config: Pick<Config, 'secretKey' | 'env' | 'publicBaseUrl' | 'rotationGraceMs' | 'marketplaceTimeoutMs' | 'requireHttpsHrefs' | 'fetch' | 'delivery' | 'databaseUrl' | 'retentionDays'>;
  /** Called after a webhook changes (the receiver drops cached credentials). */
  onWebhookChange?: () => void;
  metrics?: Pick<Metrics, 'marketplaceCalls'>;
  /** The process's OAuth token cache, shared with its fetches (default: the services' own). */
  tokens?: AccessTokens;
  /** A successful marketplace call with a company's credentials (companies/usage.ts); the CLI's reads pass none. */
  onUsed?: (companyId: string | undefined) => void;
  /** The companies' states and their gates (SPEC §5.1). */
  states: CompanyStates;
  /** Destinations' states and deliveries (SPEC §5.2), their gate's views, and how replayed deliveries are queued. */
  destinations: {
    states: Pick<DestinationStatesRepository, 'disable' | 'enable' | 'delete' | 'forgetGates'> & Pick<DeliveryLifecycle, 'replay' | 'replayMatching'>;
    gate: Pick<Gate, 'views'>;
    enqueue: (keys: DeliveryKey[]) => Promise<void>;
  };
  /** A failed outbound call's row that could not be settled (services/send-once.ts): the call's error is answered. */
  onOutboundCleanupError: (err: unknown) => void;
  /** A gate that could not be read (Redis out of reach), or the events' listener: the call carries on. */
  onBackgroundError: (err: unknown) => void;
  /** The keys the process checks requests with (access/guard.ts); the CLI has none of its own. */
  keys?: Keys;
}) {
  const { db, config } = deps;
  const marketplace = new MarketplaceClient({
    timeoutMs: config.marketplaceTimeoutMs,
    tokens: deps.tokens,
    onUsed: deps.onUsed,
    onCall: (operation, outcome) => deps.metrics?.marketplaceCalls.inc({ operation, outcome }),
  });
  const settings = webhookSettingsApi(marketplace);
  const companies = createCompaniesService({
    db,
    secretKey: config.secretKey,
    requireHttps: config.env === 'production',
    states: deps.states,
    defaultMaxFetches: config.fetch.companyConcurrency,
  });
  const webhooks = createWebhooksService({
    db,
    secretKey: config.secretKey,
    publicBaseUrl: config.publicBaseUrl,
    rotationGraceMs: config.rotationGraceMs,
    companies,
    settings,
    onChange: deps.onWebhookChange ?? (() => {}),
  });
  // Quotes and declines answer the RFQs the company fetched: the action hrefs they carry are checked as a notification's href is.
  const outbound = { db, companies, marketplace, timeoutMs: config.marketplaceTimeoutMs, requireHttpsHrefs: config.requireHttpsHrefs, onCleanupError: deps.onOutboundCleanupError };
  // A destination's test is sent as deliveries are: through the address rules, signed.
  const sender = new DeliverySender(config.delivery.addresses);
  const destinations = createDestinationsService({
    db,
    secretKey: config.secretKey,
    companies,
    states: deps.destinations.states,
    gate: deps.destinations.gate,
    enqueue: deps.destinations.enqueue,
    deliveriesKeptDays: config.retentionDays,
    sender: {
      newSecret: newSigningSecret,
      sendTest: async (t) => {
        const result = await sender.send({ destinationId: t.destinationId, companyId: t.companyId, url: t.url, body: t.body, headers: signatureHeaders(t.webhookId, t.body, t.secrets), timeoutMs: t.timeoutMs });
        return result.kind === 'answered'
          ? { httpStatus: result.status, durationMs: result.durationMs, response: result.response, error: null }
          : { httpStatus: null, durationMs: result.durationMs, response: null, error: result.error };
      },
    },
    addresses: config.delivery.addresses,
    defaults: { timeoutMs: config.delivery.timeoutMs },
    onGateError: deps.onBackgroundError,
  });
  return {
    companies,
    webhooks,
    destinations,
    events: createEventsService({ db, companies, listen: (channels, listener) => listen(config.databaseUrl, channels, listener), onError: deps.onBackgroundError }),
    deletions: createDeletionsService({ db, webhooks, notifications: deps.notifications, states: deps.states, destinations: deps.destinations.states }),
    notifications: createNotificationsService({ db, notifications: deps.notifications, enqueuer: deps.enqueuer, requireHttpsHrefs: deps.config.requireHttpsHrefs }),
    leads: createLeadsService(outbound),
    quotes: createQuotesService(outbound),
    declines: createDeclinesService(outbound),
    overview: createOverviewService({ db, states: deps.states }),
    // The process's own keys (their cache) when it has them: a revocation through these services drops it at once.
    keys: deps.keys ?? createKeys(db),
    audit: createAuditLog(db),
  };
}

export type Services = ReturnType<typeof createServices>;
