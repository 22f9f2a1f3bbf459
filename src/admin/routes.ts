/**
 * The admin HTTP API (SPEC §7) under /admin, behind the admin bearer token. Thin: every route
 * validates, calls a service, and answers; the CLI calls the same services. Each operation has a summary
 * and a description, so /docs reads as documentation.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EventType } from '../marketplace/contract.js';
import { MAX_QUOTE_BODY_BYTES } from '../marketplace/quotes.js';
import type { CompaniesService } from '../services/companies.service.js';
import type { DeletionsService } from '../services/deletions.service.js';
import type { LeadsService } from '../services/leads.service.js';
import type { NotificationStream } from '../services/notification-stream.js';
import type { QuotesService } from '../services/quotes.service.js';
import type { NotificationsService } from '../services/notifications.service.js';
import type { WebhooksService } from '../services/webhooks.service.js';
import type { AuthFailureLimiter } from '../lib/auth-failure-limiter.js';
import { decodeJsonBody } from '../lib/json-body.js';
import { adminTokenCheck } from './auth.js';
import { streamToClient } from './stream.js';
import * as s from './schemas.js';

export interface AdminDeps {
  adminToken: string;
  companies: CompaniesService;
  webhooks: WebhooksService;
  deletions: DeletionsService;
  notifications: NotificationsService;
  leads: LeadsService;
  quotes: QuotesService;
  stream: NotificationStream;
}

const errors = { 400: s.problemSchema, 401: s.problemSchema, 404: s.problemSchema };

export async function adminRoutes(parent: FastifyInstance, deps: AdminDeps, limiter: AuthFailureLimiter): Promise<void> {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', adminTokenCheck(deps.adminToken, { allowBasic: false, limiter }));
  // Strict JSON: bad UTF-8, NUL and lone surrogates are a 400 here, not a replacement character or a 500.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, decodeJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  // Live streams end when the server closes: they would otherwise hold the shutdown open.
  app.addHook('preClose', async () => deps.stream.close());

  const doc = (tag: string, summary: string, description: string) => ({ tags: [tag], summary, description, security: [{ adminToken: [] }] });

  // ---- companies
  app.post(
    '/companies',
    {
      schema: {
        ...doc(
          'companies',
          'Add a company',
          'Adds a company (a tenant) with its marketplace API base URL, its API token and, optionally, its `connection`: the `bearer` profile (the default, `Authorization: Bearer <apiToken>`) or `avinode` (the real marketplace\'s headers), with a fixed auth token or OAuth 2.0 client credentials. Secrets are stored encrypted and never returned. The credentials are then checked with one harmless call (the webhook settings list): `credentials.status` says whether the marketplace accepted them (`accepted`, `refused`, `unreachable`); the company is created either way.',
        ),
        body: s.createCompanyBody,
        response: { 201: s.companySchema, ...errors },
      },
    },
    async (req, reply) => reply.code(201).send(await deps.companies.create(req.body)),
  );
  app.get(
    '/companies',
    { schema: { ...doc('companies', 'List companies', 'Every company, oldest id first, a page at a time.'), querystring: s.listQuery, response: { 200: s.page(s.companySchema), ...errors } } },
    async (req) => deps.companies.list(req.query),
  );
  app.get(
    '/companies/:companyId',
    {
      schema: {
        ...doc('companies', 'Show a company', 'One company: its connection (without secrets), the last credentials check, and its connection status (`unauthorized` once a fetch was refused).'),
        params: s.companyIdParams,
        response: { 200: s.companySchema, ...errors },
      },
    },
    async (req) => deps.companies.get(req.params.companyId),
  );
  app.patch(
    '/companies/:companyId',
    {
      schema: {
        ...doc(
          'companies',
          'Rename a company or replace its credentials',
          'A new API token or `connection` (which replaces the whole connection: give every secret it needs; an API token not given is kept) lifts an `unauthorized` pause, so the paused fetches resume by themselves, and is checked like a new company\'s: `credentials.status` says whether the marketplace accepted it.',
        ),
        params: s.companyIdParams,
        body: s.patchCompanyBody,
        response: { 200: s.companySchema, ...errors },
      },
    },
    async (req) => deps.companies.update(req.params.companyId, req.body),
  );
  app.delete(
    '/companies/:companyId',
    {
      schema: {
        ...doc(
          'companies',
          'Delete a company',
          'Deactivates each of its active webhook settings on the marketplace, then deletes the company with everything of it (webhooks, notifications and their history, resources, events, leads, quotes). If the marketplace refuses a deactivation, nothing is deleted (502), unless `force=true`: then it is deleted here all the same, and the answer (200) lists the settings that stay active on the marketplace.',
        ),
        params: s.companyIdParams,
        querystring: s.deleteQuery,
        response: { 200: s.deletedSchema, 204: z.null().describe('deleted'), ...errors, 502: s.problemSchema },
      },
    },
    async (req, reply) => {
      const deleted = await deps.deletions.deleteCompany(req.params.companyId, { force: req.query.force });
      return deleted.remainingRemoteSettings.length > 0 ? reply.code(200).send(deleted) : reply.code(204).send(null);
    },
  );

  // ---- webhooks
  app.post(
    '/companies/:companyId/webhooks',
    {
      schema: {
        ...doc(
          'webhooks',
          'Register a webhook',
          'Generates the credentials (clientIdentifier, clientSecret) and registers the webhook setting on the marketplace with the company token. `sharedTarget: true` uses the shared targetURI `/hooks`; otherwise the webhook gets its own.',
        ),
        params: s.companyIdParams,
        body: s.createWebhookBody,
        response: { 201: s.webhookSchema, ...errors, 502: s.problemSchema },
      },
    },
    async (req, reply) => reply.code(201).send(await deps.webhooks.create(req.params.companyId, { ...req.body, eventTypes: req.body.eventTypes as EventType[] })),
  );
  app.post(
    '/companies/:companyId/webhooks/reconcile',
    {
      schema: {
        ...doc(
          'webhooks',
          "Reconcile a company's webhooks with the marketplace",
          "Lists the company's settings on the marketplace (`GET /webhooks/settings`) and reports the drift from its local webhooks: `missing_remotely` (the marketplace lost it, as a sandbox reset does), `remote_id_changed`, `differs` (event types, target, active, ...), `unknown_remotely` (a setting no local webhook knows; never touched). A POST without a body only reports. With `apply: true` (in the body, or `?apply=true`), the lost settings are re-created under the same targetURI and clientIdentifier (a BASIC webhook gets a new secret; the old one stays accepted for the rotation grace period) and moved ids are taken over; each drift entry says what was done. 502 when the marketplace does not answer the list.",
        ),
        params: s.companyIdParams,
        querystring: s.reconcileQuery,
        body: s.reconcileBody,
        response: { 200: s.reconciliationSchema, ...errors, 502: s.problemSchema },
      },
    },
    async (req) => deps.webhooks.reconcile(req.params.companyId, { apply: req.body?.apply ?? req.query.apply ?? false }),
  );
  app.get(
    '/companies/:companyId/webhooks',
    { schema: { ...doc('webhooks', "List a company's webhooks", 'All of them, as one page.'), params: s.companyIdParams, response: { 200: s.page(s.webhookSchema), ...errors } } },
    async (req) => deps.webhooks.list(req.params.companyId),
  );
  app.get(
    '/companies/:companyId/webhooks/:webhookId',
    { schema: { ...doc('webhooks', 'Show a webhook', 'One webhook (its secret is never shown).'), params: s.webhookParams, response: { 200: s.webhookSchema, ...errors } } },
    async (req) => deps.webhooks.get(req.params.companyId, req.params.webhookId),
  );
  app.patch(
    '/companies/:companyId/webhooks/:webhookId',
    {
      schema: {
        ...doc(
          'webhooks',
          'Change a webhook',
          'Activates or deactivates it, changes its event types or display name, or rotates its secret (the previous secret is accepted for ROTATION_GRACE_HOURS). The change goes to the marketplace first.',
        ),
        params: s.webhookParams,
        body: s.patchWebhookBody,
        response: { 200: s.webhookSchema, ...errors, 502: s.problemSchema },
      },
    },
    async (req) => deps.webhooks.update(req.params.companyId, req.params.webhookId, { ...req.body, eventTypes: req.body.eventTypes as EventType[] | undefined }),
  );
  app.delete(
    '/companies/:companyId/webhooks/:webhookId',
    {
      schema: {
        ...doc(
          'webhooks',
          'Delete a webhook',
          'Deactivates the setting on the marketplace (if active), then deletes the webhook with its notifications and their history. If the marketplace refuses, nothing is deleted (502), unless `force=true`: then the answer (200) says the setting stays active there.',
        ),
        params: s.webhookParams,
        querystring: s.deleteQuery,
        response: { 200: s.deletedSchema, 204: z.null().describe('deleted'), ...errors, 502: s.problemSchema },
      },
    },
    async (req, reply) => {
      const deleted = await deps.deletions.deleteWebhook(req.params.companyId, req.params.webhookId, { force: req.query.force });
      return deleted.remainingRemoteSettings.length > 0 ? reply.code(200).send(deleted) : reply.code(204).send(null);
    },
  );

  // ---- leads and quotes
  app.post(
    '/companies/:companyId/leads',
    {
      schema: {
        ...doc(
          'leads',
          'Create a client lead',
          'Validates the Client Lead and sends it to the marketplace. Idempotent by `clientIdentifier`: a repeat answers the stored lead (200) and sends nothing.',
        ),
        params: s.companyIdParams,
        body: s.createLeadBody,
        response: { 200: s.leadSchema, 201: s.leadSchema, ...errors, 409: s.problemSchema, 502: s.problemSchema },
      },
    },
    async (req, reply) => {
      const { lead, created } = await deps.leads.create(req.params.companyId, req.body);
      return reply.code(created ? 201 : 200).send(lead);
    },
  );
  app.get(
    '/companies/:companyId/leads',
    { schema: { ...doc('leads', "List a company's leads", 'Newest first.'), params: s.companyIdParams, querystring: s.listQuery, response: { 200: s.page(s.leadSchema), ...errors } } },
    async (req) => deps.leads.list(req.params.companyId, req.query),
  );
  app.post(
    '/companies/:companyId/quotes',
    {
      // A quote's attachments make it larger than the admin API's 1 MiB: the largest the schema accepts.
      bodyLimit: MAX_QUOTE_BODY_BYTES,
      schema: {
        ...doc(
          'quotes',
          'Submit a quote',
          "Validates the quote (the total must equal its line items' sum unless `allowPriceMismatch`) and submits it. Idempotent by `sellerUniqueQuoteIdentifier`. A submission that may have reached the marketplace without a success read is held `unknown` (409 on repeats) until `resendUnknown: true`.",
        ),
        params: s.companyIdParams,
        body: s.createQuoteBody,
        response: { 200: s.quoteViewSchema, 201: s.quoteViewSchema, ...errors, 409: s.problemSchema, 413: s.problemSchema, 502: s.problemSchema },
      },
    },
    async (req, reply) => {
      const { quote, created } = await deps.quotes.submit(req.params.companyId, req.body);
      return reply.code(created ? 201 : 200).send(quote);
    },
  );
  app.get(
    '/companies/:companyId/quotes',
    {
      schema: {
        ...doc('quotes', "List a company's quotes", 'Newest first. `liftId` finds the quote for an availability upload; `status=unknown` lists the ones to check on the marketplace.'),
        params: s.companyIdParams,
        querystring: s.quotesQuery,
        response: { 200: s.page(s.quoteViewSchema), ...errors },
      },
    },
    async (req) => deps.quotes.list(req.params.companyId, req.query),
  );

  // ---- notifications
  app.get(
    '/notifications',
    {
      schema: {
        ...doc('notifications', 'List notifications', 'Newest first, with any of the filters. Times are ISO 8601 with their offset.'),
        querystring: s.notificationsQuery,
        response: { 200: s.page(s.notificationSchema), ...errors },
      },
    },
    async (req) => deps.notifications.list(req.query),
  );
  app.get(
    '/notifications/:id',
    {
      schema: {
        ...doc('notifications', 'Show a notification', 'One notification with its body and its timeline: received, queued, every fetch attempt, replays, and each final status (SPEC §7.1).'),
        params: s.notificationParams,
        response: { 200: s.notificationSchema, ...errors },
      },
    },
    async (req) => deps.notifications.get(req.params.id),
  );
  app.post(
    '/notifications/:id/replay',
    {
      schema: {
        ...doc(
          'notifications',
          'Replay a notification',
          'Fetches its resource again (a discarded one cannot be replayed: 409). The replay is added to its timeline; earlier attempts and errors stay. `note` says why the fetch will wait, when its company is paused.',
        ),
        params: s.notificationParams,
        response: { 200: s.replayedNotificationSchema, ...errors, 409: s.problemSchema },
      },
    },
    async (req) => deps.notifications.replay(req.params.id),
  );
  app.post(
    '/notifications/replay',
    {
      schema: {
        ...doc(
          'notifications',
          'Replay every notification matching a filter',
          'Oldest first, at most `limit` (discarded ones never; `status` defaults to failed). `dryRun: true` only counts: `matched` is how many match.',
        ),
        body: s.replayBody,
        response: { 200: s.replayedSchema, ...errors },
      },
    },
    async (req) => deps.notifications.replayMatching(req.body),
  );
  app.get(
    '/stream',
    {
      schema: {
        ...doc(
          'notifications',
          'Follow status changes live',
          'Server-Sent Events: one `notification` event per status change of a notification (`{id, companyId, webhookId, type, resourceId, status, at}`), of one company with `companyId`. A comment every 15 s keeps the connection open; a `resync` event says changes may have been missed (reload).',
        ),
        querystring: s.streamQuery,
        response: { ...errors, 503: s.problemSchema },
      },
    },
    async (req, reply) => streamToClient(deps.stream, req, reply, { companyId: req.query.companyId }),
  );

  // ---- resources
  app.get(
    '/resources',
    { schema: { ...doc('resources', 'List stored resources', 'The latest snapshot of each href, by company and href.'), querystring: s.resourcesQuery, response: { 200: s.page(s.resourceSchema), ...errors } } },
    async (req) => deps.notifications.listResources(req.query),
  );
  app.get(
    '/resources/history',
    {
      schema: {
        ...doc('resources', "List a resource's versions", 'Every stored version of one resource, newest first, each with the RFC 6902 JSON Patch from the version before (`changes`).'),
        querystring: s.resourceHistoryQuery,
        response: { 200: s.page(s.resourceVersionSchema), ...errors },
      },
    },
    async (req) => deps.notifications.resourceHistory(req.query),
  );
}
