/**
 * The admin HTTP API (SPEC §7) under /admin, behind the admin bearer token. Thin: every route
 * validates, calls a service, and answers; the CLI calls the same services.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { EventType } from '../marketplace/contract.js';
import { MAX_QUOTE_BODY_BYTES } from '../marketplace/quotes.js';
import type { CompaniesService } from '../services/companies.service.js';
import type { LeadsService } from '../services/leads.service.js';
import type { QuotesService } from '../services/quotes.service.js';
import type { NotificationsService } from '../services/notifications.service.js';
import type { WebhooksService } from '../services/webhooks.service.js';
import { decodeJsonBody } from '../lib/json-body.js';
import { adminTokenCheck } from './auth.js';
import * as s from './schemas.js';

export interface AdminDeps {
  adminToken: string;
  companies: CompaniesService;
  webhooks: WebhooksService;
  notifications: NotificationsService;
  leads: LeadsService;
  quotes: QuotesService;
}

const errors = { 400: s.problemSchema, 401: s.problemSchema, 404: s.problemSchema };

export async function adminRoutes(parent: FastifyInstance, deps: AdminDeps): Promise<void> {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', adminTokenCheck(deps.adminToken, { allowBasic: false }));
  // Strict JSON: bad UTF-8, NUL and lone surrogates are a 400 here, not a replacement character or a 500.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, decodeJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const tags = (t: string) => ({ tags: [t], security: [{ adminToken: [] }] });

  app.post('/companies', { schema: { ...tags('companies'), body: s.createCompanyBody, response: { 201: s.companySchema, ...errors } } }, async (req, reply) =>
    reply.code(201).send(await deps.companies.create(req.body)),
  );
  app.get('/companies', { schema: { ...tags('companies'), querystring: s.listQuery, response: { 200: s.page(s.companySchema), ...errors } } }, async (req) =>
    deps.companies.list(req.query),
  );
  app.get('/companies/:companyId', { schema: { ...tags('companies'), params: s.companyIdParams, response: { 200: s.companySchema, ...errors } } }, async (req) =>
    deps.companies.get(req.params.companyId),
  );
  app.patch(
    '/companies/:companyId',
    { schema: { ...tags('companies'), params: s.companyIdParams, body: s.patchCompanyBody, response: { 200: s.companySchema, ...errors } } },
    async (req) => deps.companies.update(req.params.companyId, req.body),
  );

  app.post(
    '/companies/:companyId/webhooks',
    { schema: { ...tags('webhooks'), params: s.companyIdParams, body: s.createWebhookBody, response: { 201: s.webhookSchema, ...errors, 502: s.problemSchema } } },
    async (req, reply) => reply.code(201).send(await deps.webhooks.create(req.params.companyId, { ...req.body, eventTypes: req.body.eventTypes as EventType[] })),
  );
  app.get(
    '/companies/:companyId/webhooks',
    { schema: { ...tags('webhooks'), params: s.companyIdParams, response: { 200: s.page(s.webhookSchema), ...errors } } },
    async (req) => deps.webhooks.list(req.params.companyId),
  );
  app.get(
    '/companies/:companyId/webhooks/:webhookId',
    { schema: { ...tags('webhooks'), params: s.webhookParams, response: { 200: s.webhookSchema, ...errors } } },
    async (req) => deps.webhooks.get(req.params.companyId, req.params.webhookId),
  );
  app.patch(
    '/companies/:companyId/webhooks/:webhookId',
    { schema: { ...tags('webhooks'), params: s.webhookParams, body: s.patchWebhookBody, response: { 200: s.webhookSchema, ...errors, 502: s.problemSchema } } },
    async (req) => deps.webhooks.update(req.params.companyId, req.params.webhookId, { ...req.body, eventTypes: req.body.eventTypes as EventType[] | undefined }),
  );

  app.post(
    '/companies/:companyId/leads',
    { schema: { ...tags('leads'), params: s.companyIdParams, body: s.createLeadBody, response: { 200: s.leadSchema, 201: s.leadSchema, ...errors, 409: s.problemSchema, 502: s.problemSchema } } },
    async (req, reply) => {
      const { lead, created } = await deps.leads.create(req.params.companyId, req.body);
      return reply.code(created ? 201 : 200).send(lead);
    },
  );
  app.get(
    '/companies/:companyId/leads',
    { schema: { ...tags('leads'), params: s.companyIdParams, querystring: s.listQuery, response: { 200: s.page(s.leadSchema), ...errors } } },
    async (req) => deps.leads.list(req.params.companyId, req.query),
  );

  app.post(
    '/companies/:companyId/quotes',
    {
      // A quote's attachments make it larger than the admin API's 1 MiB: the largest the schema accepts.
      bodyLimit: MAX_QUOTE_BODY_BYTES,
      schema: {
        ...tags('quotes'),
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
    { schema: { ...tags('quotes'), params: s.companyIdParams, querystring: s.quotesQuery, response: { 200: s.page(s.quoteViewSchema), ...errors } } },
    async (req) => deps.quotes.list(req.params.companyId, req.query),
  );

  app.get('/notifications', { schema: { ...tags('notifications'), querystring: s.notificationsQuery, response: { 200: s.page(s.notificationSchema), ...errors } } }, async (req) =>
    deps.notifications.list(req.query),
  );
  app.get('/notifications/:id', { schema: { ...tags('notifications'), params: s.notificationParams, response: { 200: s.notificationSchema, ...errors } } }, async (req) =>
    deps.notifications.get(req.params.id),
  );
  app.post(
    '/notifications/:id/replay',
    { schema: { ...tags('notifications'), params: s.notificationParams, response: { 200: s.notificationSchema, ...errors, 409: s.problemSchema } } },
    async (req) => deps.notifications.replay(req.params.id),
  );

  app.post(
    '/notifications/replay',
    { schema: { ...tags('notifications'), body: s.replayBody, response: { 200: s.replayedSchema, ...errors } } },
    async (req) => deps.notifications.replayMatching(req.body),
  );

  app.get('/resources', { schema: { ...tags('resources'), querystring: s.resourcesQuery, response: { 200: s.page(s.resourceSchema), ...errors } } }, async (req) =>
    deps.notifications.listResources(req.query),
  );
}
