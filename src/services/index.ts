/** The services the admin API and the CLI share, composed once from narrow dependencies. */
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { Metrics } from '../lib/metrics.js';
import { MarketplaceClient } from '../marketplace/client.js';
import { webhookSettingsApi } from '../marketplace/webhook-settings.js';
import type { FetchEnqueuer } from '../processing/fetch-queue.js';
import { createCompaniesService } from './companies.service.js';
import { createLeadsService } from './leads.service.js';
import { createNotificationsService } from './notifications.service.js';
import { createQuotesService } from './quotes.service.js';
import { createWebhooksService } from './webhooks.service.js';

export function createServices(deps: {
  db: Database;
  enqueuer: FetchEnqueuer;
  config: Pick<Config, 'secretKey' | 'env' | 'publicBaseUrl' | 'rotationGraceMs' | 'marketplaceTimeoutMs'>;
  /** Called after a webhook changes (the receiver drops cached credentials). */
  onWebhookChange?: () => void;
  metrics?: Pick<Metrics, 'marketplaceCalls'>;
}) {
  const { db, config } = deps;
  const marketplace = new MarketplaceClient({
    timeoutMs: config.marketplaceTimeoutMs,
    onCall: (operation, outcome) => deps.metrics?.marketplaceCalls.inc({ operation, outcome }),
  });
  const companies = createCompaniesService({ db, secretKey: config.secretKey, requireHttps: config.env === 'production' });
  const webhooks = createWebhooksService({
    db,
    secretKey: config.secretKey,
    publicBaseUrl: config.publicBaseUrl,
    rotationGraceMs: config.rotationGraceMs,
    companies,
    settings: webhookSettingsApi(marketplace),
    onChange: deps.onWebhookChange ?? (() => {}),
  });
  return {
    companies,
    webhooks,
    notifications: createNotificationsService({ db, enqueuer: deps.enqueuer }),
    leads: createLeadsService({ db, companies, marketplace, timeoutMs: config.marketplaceTimeoutMs }),
    quotes: createQuotesService({ db, companies, marketplace, timeoutMs: config.marketplaceTimeoutMs }),
  };
}

export type Services = ReturnType<typeof createServices>;
