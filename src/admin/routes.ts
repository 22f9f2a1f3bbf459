/**
 * The admin HTTP API (SPEC §7) under /admin, behind the admin bearer token. Thin: every route
 * validates, calls a service, and answers; the CLI calls the same services. Each operation has a summary
 * and a description, so /docs reads as documentation.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_QUOTE_BODY_BYTES } from '../marketplace/quotes.js';
import type { Deleted } from '../services/deletions.service.js';
import type { Services } from '../services/index.js';
import type { NotificationStream } from '../services/notification-stream.js';
import { auditOf, type Audit } from '../access/audit.js';
import { companyInReach, ownCompany } from '../access/guard.js';
import { decodeJsonBody } from '../lib/json-body.js';
import { notFound } from '../lib/problem.js';
import { accessRoutes } from './access-routes.js';
import { destinationRoutes } from './destination-routes.js';
import { documented, errors } from './documented.js';
import { streamToClient } from './stream.js';
import * as s from '../services/schemas.js';

/** The services the routes call (the CLI and the console call the same ones), the live stream. */
export type AdminDeps = Pick<Services, 'companies' | 'webhooks' | 'deletions' | 'notifications' | 'leads' | 'quotes' | 'declines' | 'destinations' | 'events' | 'keys' | 'audit'> & {
  stream: NotificationStream;
};

/** A DELETE answers 204, or 200 with the settings a forced delete left active on the marketplace. */
const deletedResponse = { 200: s.deletedSchema, 204: z.null().describe('deleted'), ...errors, 502: s.problemSchema };
const answerDeleted = (reply: FastifyReply, deleted: Deleted) => (deleted.remainingRemoteSettings.length > 0 ? reply.code(200).send(deleted) : reply.code(204).send(null));

// Over 80 lines on purpose: a registrar, one route after another, each a few lines; the helpers it shares sit above it.
export async function adminRoutes(parent: FastifyInstance, deps: AdminDeps): Promise<void> {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  // Strict JSON: bad UTF-8, NUL and lone surrogates are a 400 here, not a replacement character or a 500.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (_req: FastifyRequest, body: Buffer) => decodeJsonBody(body));
  // Live streams end when the server closes: they would otherwise hold the shutdown open.
  app.addHook('preClose', async () => {
    await deps.stream.close();
    await deps.events.close();
  });

  app.post(
    '/companies',
    documented(
      'companies',
      'companies',
      'Add a company',
      'Adds a company (a tenant) with its marketplace API base URL, its API token and, optionally, its `connection`: the `bearer` profile (the default, `Authorization: Bearer <apiToken>`) or `avinode` (the real marketplace\'s headers), with a fixed auth token or OAuth 2.0 client credentials. Secrets are stored encrypted and never returned. The credentials are then checked with one harmless call (the webhook settings list): `credentials.status` says whether the marketplace accepted them (`accepted`, `refused`, `unreachable`); the company is created either way.',
      { body: s.createCompanyBody, response: { 201: s.companyViewSchema, ...errors } },
    ),
    async (req, reply) => reply.code(201).send(await deps.companies.create(req.body, auditOf(req))),
  );
  app.get(
    '/companies',
    documented('read', 'companies', 'List companies', 'Every company, oldest id first, a page at a time.', { querystring: s.listQuery, response: { 200: s.page(s.companyViewSchema), ...errors } }),
    // A company key's list is its own company.
    async (req) => {
      const own = ownCompany(req);
      return own === undefined ? deps.companies.list(req.query) : { items: [await deps.companies.get(own)], nextCursor: null };
    },
  );
  app.get(
    '/companies/:companyId',
    documented('read', 'companies', 'Show a company', 'One company: its connection (without secrets), the last credentials check, and its connection status (`unauthorized` once a fetch was refused).', {
      params: s.companyIdParams,
      response: { 200: s.companyViewSchema, ...errors },
    }),
    async (req) => deps.companies.get(req.params.companyId),
  );
  app.patch(
    '/companies/:companyId',
    documented(
      'companies',
      'companies',
      'Rename a company or replace its credentials',
      'A new API token or `connection` (which replaces the whole connection: give every secret it needs; an API token not given is kept) lifts an `unauthorized` pause, so the paused fetches resume by themselves, and is checked like a new company\'s: `credentials.status` says whether the marketplace accepted it.',
      { params: s.companyIdParams, body: s.patchCompanyBody, response: { 200: s.companyViewSchema, ...errors } },
    ),
    async (req) => deps.companies.update(req.params.companyId, req.body, auditOf(req)),
  );
  app.delete(
    '/companies/:companyId',
    documented(
      'companies',
      'companies',
      'Delete a company',
      'Deactivates each of its active webhook settings on the marketplace, then deletes the company with everything of it (webhooks, notifications and their history, resources, events, leads, quotes). If the marketplace refuses a deactivation, nothing is deleted (502), unless `force=true`: then it is deleted here all the same, and the answer (200) lists the settings that stay active on the marketplace.',
      { params: s.companyIdParams, querystring: s.deleteQuery, response: deletedResponse },
    ),
    async (req, reply) => answerDeleted(reply, await deps.deletions.deleteCompany(req.params.companyId, { force: req.query.force }, auditOf(req))),
  );

  app.post(
    '/companies/:companyId/webhooks',
    documented(
      'companies',
      'webhooks',
      'Register a webhook',
      'Generates the credentials (clientIdentifier, clientSecret) and registers the webhook setting on the marketplace with the company token. `sharedTarget: true` uses the shared targetURI `/hooks`; otherwise the webhook gets its own.',
      { params: s.companyIdParams, body: s.createWebhookBody, response: { 201: s.webhookViewSchema, ...errors, 502: s.problemSchema } },
    ),
    async (req, reply) => reply.code(201).send(await deps.webhooks.create(req.params.companyId, req.body, auditOf(req))),
  );
  app.post(
    '/companies/:companyId/webhooks/reconcile',
    documented(
      'companies',
      'webhooks',
      "Reconcile a company's webhooks with the marketplace",
      "Lists the company's settings on the marketplace (`GET /webhooks/settings`) and reports the drift from its local webhooks: `missing_remotely` (the marketplace lost it, as a sandbox reset does), `remote_id_changed`, `differs` (event types, target, active, ...), `unknown_remotely` (a setting no local webhook knows; never touched). A POST without a body only reports. With `apply: true` (in the body, or `?apply=true`), the lost settings are re-created under the same targetURI and clientIdentifier (a BASIC webhook gets a new secret; the old one stays accepted for the rotation grace period) and moved ids are taken over; each drift entry says what was done. 502 when the marketplace does not answer the list.",
      { params: s.companyIdParams, querystring: s.reconcileQuery, body: s.reconcileBody, response: { 200: s.reconciliationViewSchema, ...errors, 502: s.problemSchema } },
    ),
    async (req) => deps.webhooks.reconcile(req.params.companyId, { apply: req.body?.apply ?? req.query.apply ?? false }, auditOf(req)),
  );
  app.get(
    '/companies/:companyId/webhooks',
    documented('read', 'webhooks', "List a company's webhooks", 'All of them, as one page.', { params: s.companyIdParams, response: { 200: s.page(s.webhookViewSchema), ...errors } }),
    async (req) => deps.webhooks.list(req.params.companyId),
  );
  app.get(
    '/companies/:companyId/webhooks/:webhookId',
    documented('read', 'webhooks', 'Show a webhook', 'One webhook (its secret is never shown).', { params: s.webhookParams, response: { 200: s.webhookViewSchema, ...errors } }),
    async (req) => deps.webhooks.get(req.params.companyId, req.params.webhookId),
  );
  app.patch(
    '/companies/:companyId/webhooks/:webhookId',
    documented(
      'companies',
      'webhooks',
      'Change a webhook',
      'Activates or deactivates it, changes its event types or display name, or rotates its secret (the previous secret is accepted for ROTATION_GRACE_HOURS). The change goes to the marketplace first.',
      { params: s.webhookParams, body: s.patchWebhookBody, response: { 200: s.webhookViewSchema, ...errors, 502: s.problemSchema } },
    ),
    async (req) => deps.webhooks.update(req.params.companyId, req.params.webhookId, req.body, auditOf(req)),
  );
  app.delete(
    '/companies/:companyId/webhooks/:webhookId',
    documented(
      'companies',
      'webhooks',
      'Delete a webhook',
      'Deactivates the setting on the marketplace (if active), then deletes the webhook with its notifications and their history. If the marketplace refuses, nothing is deleted (502), unless `force=true`: then the answer (200) says the setting stays active there.',
      { params: s.webhookParams, querystring: s.deleteQuery, response: deletedResponse },
    ),
    async (req, reply) => answerDeleted(reply, await deps.deletions.deleteWebhook(req.params.companyId, req.params.webhookId, { force: req.query.force }, auditOf(req))),
  );

  /** A notification, as long as it is in the asker's reach (a company key's own company's): 404 otherwise. */
  async function notificationInReach(req: FastifyRequest, id: number) {
    const notification = await deps.notifications.get(id);
    const own = ownCompany(req);
    if (own !== undefined && notification.companyId !== own) throw notFound(`Notification ${id}`);
    return notification;
  }

  /**
   * A call Skyhook sends once for a company: POST validates it and sends it (201 new, 200 a repeat that sent
   * nothing), GET lists the company's, newest first.
   */
  function sentOnce<Body extends z.ZodType, View extends z.ZodType, Query extends z.ZodType>(
    kind: 'leads' | 'quotes' | 'declines',
    spec: {
      view: View;
      send: {
        summary: string;
        description: string;
        body: Body;
        /** Statuses answered beyond 400, 401 and 404. */
        problems: number[];
        bodyLimit?: number;
        run: (companyId: string, body: z.infer<Body>, audit: Audit) => Promise<{ view: z.infer<View>; created: boolean }>;
      };
      list: { description: string; query: Query; run: (companyId: string, query: z.infer<Query>) => Promise<{ items: z.infer<View>[]; nextCursor: string | null }> };
    },
  ): void {
    const { view, send, list } = spec;
    const sendProblems = Object.fromEntries(send.problems.map((status) => [status, s.problemSchema]));
    // The routes validate with these schemas as every other does; their types are not inferred through the generics.
    const untyped = app as unknown as FastifyInstance;
    const companyIdOf = (req: { params: unknown }) => (req.params as z.infer<typeof s.companyIdParams>).companyId;
    untyped.post(
      `/companies/:companyId/${kind}`,
      {
        ...(send.bodyLimit ? { bodyLimit: send.bodyLimit } : {}),
        ...documented('send', kind, send.summary, send.description, { params: s.companyIdParams, body: send.body, response: { 200: view, 201: view, ...errors, ...sendProblems } }),
      },
      async (req, reply) => {
        const { view: answer, created } = await send.run(companyIdOf(req), req.body as z.infer<Body>, auditOf(req));
        return reply.code(created ? 201 : 200).send(answer);
      },
    );
    untyped.get(
      `/companies/:companyId/${kind}`,
      documented('read', kind, `List a company's ${kind}`, list.description, { params: s.companyIdParams, querystring: list.query, response: { 200: s.page(view), ...errors } }),
      async (req) => list.run(companyIdOf(req), req.query as z.infer<Query>),
    );
  }

  sentOnce('leads', {
    view: s.leadViewSchema,
    send: {
      summary: 'Create a client lead',
      description: 'Validates the Client Lead and sends it to the marketplace. Idempotent by `clientIdentifier`: a repeat answers the stored lead (200) and sends nothing.',
      body: s.createLeadBody,
      problems: [409, 502],
      run: (companyId, body, audit) => deps.leads.create(companyId, body, audit).then(({ lead, created }) => ({ view: lead, created })),
    },
    list: { description: 'Newest first.', query: s.listQuery, run: (companyId, query) => deps.leads.list(companyId, query) },
  });
  sentOnce('quotes', {
    view: s.quoteViewSchema,
    send: {
      summary: 'Submit a quote',
      description:
        "Validates the quote (the total must equal its line items' sum unless `allowPriceMismatch`) and submits it: to the RFQ's `submitQuote` action href (or its requested lift's) when Skyhook stored the RFQ, else to the assumed path; `target` says which. Idempotent by `sellerUniqueQuoteIdentifier`. A submission that may have reached the marketplace without a success read is held `unknown` (409 on repeats) until `resendUnknown: true`.",
      body: s.createQuoteBody,
      problems: [409, 413, 422, 502],
      // A quote's attachments make it larger than the admin API's 1 MiB: the largest the schema accepts.
      bodyLimit: MAX_QUOTE_BODY_BYTES,
      run: (companyId, body, audit) => deps.quotes.submit(companyId, body, audit).then(({ quote, created }) => ({ view: quote, created })),
    },
    list: {
      description: 'Newest first. `liftId` finds the quote for an availability upload; `status=unknown` lists the ones to check on the marketplace.',
      query: s.quotesQuery,
      run: (companyId, query) => deps.quotes.list(companyId, query),
    },
  });
  sentOnce('declines', {
    view: s.declineViewSchema,
    send: {
      summary: 'Decline a requested lift or an RFQ',
      description:
        "Validates the decline (`declineReason` one of the documented reasons) and sends it: to the RFQ's `decline` action href (or its requested lift's) when Skyhook stored the RFQ, else to the assumed path; `target` says which. Idempotent by `requestId`: a lift or RFQ already declined answers the stored decline (200) and sends nothing. A decline that may have reached the marketplace without a success read is held `unknown` (409 on repeats) until `resendUnknown: true`.",
      body: s.createDeclineBody,
      problems: [409, 422, 502],
      run: (companyId, body, audit) => deps.declines.decline(companyId, body, audit).then(({ decline, created }) => ({ view: decline, created })),
    },
    list: {
      description: 'Newest first. `requestId` finds the decline of a lift or an RFQ; `status=unknown` lists the ones to check on the marketplace.',
      query: s.declinesQuery,
      run: (companyId, query) => deps.declines.list(companyId, query),
    },
  });
  app.get(
    '/companies/:companyId/declines/:declineId',
    documented('read', 'declines', 'Get a decline', 'With the body sent and where it was sent.', { params: s.declineParams, response: { 200: s.declineViewSchema, ...errors } }),
    async (req) => deps.declines.get(req.params.companyId, req.params.declineId),
  );

  app.get(
    '/notifications',
    documented('read', 'notifications', 'List notifications', 'Newest first, with any of the filters. Times are ISO 8601 with their offset.', {
      querystring: s.notificationsQuery,
      response: { 200: s.page(s.notificationViewSchema), ...errors },
    }),
    async (req) => deps.notifications.list({ ...req.query, companyId: companyInReach(req, req.query.companyId) }),
  );
  app.get(
    '/notifications/:id',
    documented('read', 'notifications', 'Show a notification', 'One notification with its body and its timeline: received, queued, every fetch attempt, replays, and each final status (SPEC §7.1).', {
      params: s.notificationParams,
      response: { 200: s.notificationViewSchema, ...errors },
    }),
    async (req) => notificationInReach(req, req.params.id),
  );
  app.post(
    '/notifications/:id/replay',
    documented(
      'replay',
      'notifications',
      'Replay a notification',
      'Fetches its resource again (a discarded one cannot be replayed: 409). The replay is added to its timeline; earlier attempts and errors stay. `note` says why the fetch will wait, when its company is paused.',
      { params: s.notificationParams, response: { 200: s.replayedNotificationSchema, ...errors, 409: s.problemSchema } },
    ),
    async (req) => (await notificationInReach(req, req.params.id), deps.notifications.replay(req.params.id, auditOf(req))),
  );
  app.post(
    '/companies/:companyId/resync',
    documented(
      'replay',
      'notifications',
      'Fetch again every resource of a company',
      "For an outage longer than the marketplace's 48 hours of retries (docs/operations.md): one notification of Skyhook's own (`authenticatedBy: resync`) per resource Skyhook stored for the company, each fetched through the company's gate and limits like any other, so what changed meanwhile is stored and delivered. A resource whose href is now under none of the company's base URLs is left out (`outOfScope`). 409 when the company has no webhook.",
      { params: s.companyIdParams, response: { 200: s.resyncViewSchema, ...errors, 409: s.problemSchema } },
    ),
    async (req) => deps.notifications.resync(req.params.companyId, auditOf(req)),
  );
  app.post(
    '/notifications/replay',
    documented(
      'replay',
      'notifications',
      'Replay every notification matching a filter',
      'Oldest first, at most `limit` (discarded ones never; `status` defaults to failed). `dryRun: true` only counts: `matched` is how many match.',
      { body: s.replayBody, response: { 200: s.replayedSchema, ...errors } },
    ),
    async (req) => deps.notifications.replayMatching({ ...req.body, companyId: companyInReach(req, req.body.companyId) }, auditOf(req)),
  );
  app.get(
    '/stream',
    documented(
      'read',
      'notifications',
      'Follow status changes live',
      'Server-Sent Events: one `notification` event per status change of a notification (`{id, companyId, webhookId, type, resourceId, status, at}`), of one company with `companyId`. A comment every 15 s keeps the connection open; a `resync` event says changes may have been missed (reload).',
      { querystring: s.streamQuery, response: { ...errors, 503: s.problemSchema } },
    ),
    async (req, reply) => streamToClient(deps.stream, req, reply, { companyId: companyInReach(req, req.query.companyId) }),
  );

  app.get(
    '/resources',
    documented('read', 'resources', 'List stored resources', 'The latest snapshot of each href, by company and href.', { querystring: s.resourcesQuery, response: { 200: s.page(s.resourceViewSchema), ...errors } }),
    async (req) => deps.notifications.listResources({ ...req.query, companyId: companyInReach(req, req.query.companyId) }),
  );
  app.get(
    '/resources/history',
    documented('read', 'resources', "List a resource's versions", 'Every stored version of one resource, newest first, each with the RFC 6902 JSON Patch from the version before (`changes`).', {
      querystring: s.resourceHistoryQuery,
      response: { 200: s.page(s.resourceVersionViewSchema), ...errors },
    }),
    async (req) => deps.notifications.resourceHistory({ ...req.query, companyId: companyInReach(req, req.query.companyId)! }),
  );

  destinationRoutes(app, deps);
  accessRoutes(app, deps);
}
