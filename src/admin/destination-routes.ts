/**
 * The admin API of SPEC §5.2: a company's destinations, their deliveries, and its events to pull, as pages
 * and as a Server-Sent Events stream resumable with Last-Event-ID. Thin, as the other admin routes are:
 * each validates, calls services/destinations.service.ts or events.service.ts, and answers.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { auditOf } from '../access/audit.js';
import type { Services } from '../services/index.js';
import * as s from '../services/schemas.js';
import { documented, errors } from './documented.js';
import { openEventStream } from './stream.js';

/** A stream's client that reads slower than events come is ended past this (it resumes with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

// Over 80 lines on purpose: a registrar, one route after another, each a few lines.
export function destinationRoutes(parent: FastifyInstance, deps: Pick<Services, 'destinations' | 'events'>): void {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  const d = deps.destinations;

  app.post(
    '/companies/:companyId/destinations',
    documented('destinations',
      'destinations',
      'Add a destination',
      "An endpoint of the company's own application that its events are delivered to (SPEC §5.2), signed as Standard Webhooks 1.0 says. The answer carries the signing `secret` (`whsec_...`): verify every request with it. Outside development the URL must be https at a public address (DESTINATION_ALLOW admits others): a literal address that could never be admitted is a 400 naming `url`.",
      { params: s.companyIdParams, body: s.createDestinationBody, response: { 201: s.destinationWithSecretSchema, ...errors } },
    ),
    async (req, reply) => reply.code(201).send(await d.create(req.params.companyId, req.body, auditOf(req))),
  );
  app.get(
    '/companies/:companyId/destinations',
    documented('read', 'destinations', "List a company's destinations", 'With each one state (`ok`, `failing`, `throttled`, `disabled`) and what its deliveries did in the last 24 h; never a secret.', {
      params: s.companyIdParams,
      querystring: s.listQuery,
      response: { 200: s.page(s.destinationViewSchema), ...errors },
    }),
    async (req) => d.list(req.params.companyId, req.query),
  );
  app.get(
    '/companies/:companyId/destinations/:destinationId',
    documented('read', 'destinations', 'Show a destination', 'Its state, filter, limits and delivery statistics (never its secret: GET .../secret).', { params: s.destinationParams, response: { 200: s.destinationViewSchema, ...errors } }),
    async (req) => d.get(req.params.companyId, req.params.destinationId),
  );
  app.patch(
    '/companies/:companyId/destinations/:destinationId',
    documented('destinations',
      'destinations',
      'Change a destination',
      'Its URL (pending deliveries go there too), description, filter (later events), limits; `rotateSecret` makes a new secret, answered once, the previous one signing beside it for `graceSeconds` (default 24 h; 0 after a leak); `active: false` disables it (its deliveries wait), `active: true` enables it: what waits is sent, in order, or skipped when created before `skipBefore`.',
      { params: s.destinationParams, body: s.patchDestinationBody, response: { 200: s.destinationViewSchema.extend({ secret: z.string().optional() }), ...errors } },
    ),
    async (req) => d.update(req.params.companyId, req.params.destinationId, req.body, auditOf(req)),
  );
  app.delete(
    '/companies/:companyId/destinations/:destinationId',
    documented('destinations', 'destinations', 'Delete a destination', 'Its pending deliveries end `skipped`; its deliveries stay listed until retention.', { params: s.destinationParams, response: { 204: z.null(), ...errors } }),
    async (req, reply) => {
      await d.delete(req.params.companyId, req.params.destinationId, auditOf(req));
      return reply.code(204).send(null);
    },
  );
  const readSecret = documented('secrets', 'destinations', "Read a destination's signing secret", 'The secret signing now, and the previous one while it still signs (a rotation); each read is in the audit log.', {
    params: s.destinationParams,
    response: { 200: s.destinationSecretSchema, ...errors },
  });
  app.get(
    '/companies/:companyId/destinations/:destinationId/secret',
    { ...readSecret, config: { ...readSecret.config, auditRead: true } },
    async (req) => d.secret(req.params.companyId, req.params.destinationId, auditOf(req)),
  );
  app.post(
    '/companies/:companyId/destinations/:destinationId/test',
    documented('destinations', 'destinations', 'Send a test event', 'A `test` event, signed as deliveries are, sent now; answered with the attempt (nothing is stored).', {
      params: s.destinationParams,
      response: { 200: s.testAttemptSchema, ...errors },
    }),
    async (req) => d.test(req.params.companyId, req.params.destinationId, auditOf(req)),
  );
  app.post(
    '/companies/:companyId/destinations/:destinationId/replay',
    documented(
      'replay',
      'destinations',
      "Replay a destination's deliveries",
      "Every delivery of it created `since` a time (and `before` one, of `status`, say `failed` after an outage, of one `resourceId`) sent again, with the same `webhook-id`s, outside the order of versions (receivers keep the highest `version`). With `since` and no `status`, the events stored since then that the destination's filter matches now but that have no delivery (an earlier filter left them out) get theirs, created pending in their resource's order (`created`). `dryRun: true` only counts.",
      { params: s.destinationParams, body: s.destinationReplayBody, response: { 200: s.destinationReplayedSchema, ...errors } },
    ),
    async (req) => d.replay(req.params.companyId, req.params.destinationId, req.body, auditOf(req)),
  );

  app.get(
    '/companies/:companyId/deliveries',
    documented('read', 'deliveries', "List a company's deliveries", 'Newest first, with any of the filters.', { params: s.companyIdParams, querystring: s.deliveriesQuery, response: { 200: s.page(s.deliveryViewSchema), ...errors } }),
    async (req) => d.deliveries(req.params.companyId, req.query),
  );
  app.get(
    '/companies/:companyId/deliveries/:deliveryId',
    documented('read', 'deliveries', 'Show a delivery', 'With every attempt: when, where, how long, the status or the error, the first 4 KB of the answer.', {
      params: s.deliveryParams,
      response: { 200: s.deliveryViewSchema, ...errors },
    }),
    async (req) => d.delivery(req.params.companyId, req.params.deliveryId),
  );
  app.post(
    '/companies/:companyId/deliveries/:deliveryId/replay',
    documented('replay', 'deliveries', 'Replay a delivery', 'Sent again, with the same `webhook-id`, outside the order of versions; a pending one cannot be (409).', {
      params: s.deliveryParams,
      response: { 200: s.deliveryViewSchema, ...errors, 409: s.problemSchema },
    }),
    async (req) => d.replayDelivery(req.params.companyId, req.params.deliveryId, auditOf(req)),
  );

  app.get(
    '/companies/:companyId/events',
    documented(
      'read',
      'events',
      "Read a company's events",
      "Its events in order (SPEC §5.2), each as its deliveries carry it (changes and snapshot), with `cursor`: pass the last one as `after` to read what follows; a cursor never skips an event committed after it. `nextCursor` is the cursor to ask with next (the same when nothing is new). A cursor older than what is kept: 410, naming the oldest valid one.",
      { params: s.companyIdParams, querystring: s.eventsQuery, response: { 200: s.eventsPageSchema, ...errors, 410: s.problemSchema } },
    ),
    async (req) => deps.events.page(req.params.companyId, req.query.after, req.query.limit),
  );
  app.get(
    '/companies/:companyId/events/:eventId',
    documented('read', 'events', 'Show an event', 'One event as its deliveries carry it, with its changes and snapshot whole (a delivery leaves them out above its size limit).', {
      params: s.eventParams,
      response: { 200: s.eventViewSchema, ...errors },
    }),
    async (req) => deps.events.get(req.params.companyId, req.params.eventId),
  );
  app.get(
    '/companies/:companyId/events/stream',
    documented(
      'read',
      'events',
      "Follow a company's events live",
      'Server-Sent Events: one `event` per event, in order, its `id:` the cursor; reconnecting with `Last-Event-ID` (or `?after=`) resumes after it. A comment every 15 s keeps the connection open.',
      { params: s.companyIdParams, querystring: s.eventsQuery.pick({ after: true }), response: { ...errors, 410: s.problemSchema } },
    ),
    async (req, reply) => {
      const header = req.headers['last-event-id'];
      const after = (Array.isArray(header) ? header[0] : header) ?? req.query.after;
      // A page is read before the answer starts: a bad cursor or an unknown company is still answered a problem.
      await deps.events.page(req.params.companyId, after, 1);
      const res = reply.raw;
      const ended = new AbortController();
      const stopHeartbeat = openEventStream(req, reply, `events of company ${req.params.companyId}`, (text) => res.write(text), () => ended.abort());
      await deps.events
        .follow(
          req.params.companyId,
          after,
          (e) => {
            // Too slow a reader is ended rather than buffered: it resumes from its Last-Event-ID.
            if (res.writableLength > MAX_BUFFERED_BYTES) return void res.destroy();
            res.write(`id: ${e.cursor}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`);
          },
          ended.signal,
        )
        .catch((err: unknown) => {
          // PostgreSQL out of reach, say: the client reconnects with its Last-Event-ID and loses nothing.
          req.log.warn({ err: String(err), companyId: req.params.companyId }, 'the events stream ended on an error');
          res.destroy();
        })
        .finally(stopHeartbeat);
      return reply;
    },
  );
}
