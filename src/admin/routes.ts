/**
 * The admin HTTP API (SPEC §7) under /admin, behind the admin bearer token. Thin: every route
 * validates, calls a service, and answers; the CLI calls the same services.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { constantTimeEqual, sha256 } from '../lib/crypto.js';
import { Problem } from '../lib/problem.js';
import type { EventType } from '../marketplace/contract.js';
import type { CompaniesService } from '../services/companies.service.js';
import type { NotificationsService } from '../services/notifications.service.js';
import type { WebhooksService } from '../services/webhooks.service.js';
import * as s from './schemas.js';

export interface AdminDeps {
  adminToken: string;
  companies: CompaniesService;
  webhooks: WebhooksService;
  notifications: NotificationsService;
}

const errors = { 400: s.problemSchema, 401: s.problemSchema, 404: s.problemSchema };

export async function adminRoutes(parent: FastifyInstance, deps: AdminDeps): Promise<void> {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  const expected = sha256(deps.adminToken);

  app.addHook('onRequest', async (req) => {
    const header = req.headers.authorization ?? '';
    const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? '';
    if (!constantTimeEqual(sha256(token), expected)) {
      throw new Problem(401, 'Unauthorized', 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>.', {
        code: 'unauthorized',
        headers: { 'www-authenticate': 'Bearer realm="skyhook-admin"' },
      });
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
    async (req) => ({ items: await deps.webhooks.list(req.params.companyId), nextCursor: null }),
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

  app.get('/resources', { schema: { ...tags('resources'), querystring: s.resourcesQuery, response: { 200: s.page(s.resourceSchema), ...errors } } }, async (req) =>
    deps.notifications.listResources(req.query),
  );
}
