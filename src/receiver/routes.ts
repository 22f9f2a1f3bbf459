/**
 * The receiver (SPEC §4): POST /hooks/:endpointKey and POST /hooks. Checks run in the spec's order:
 * credentials before the body is read (onRequest: webhook known, Basic secret or OAuth signature,
 * timestamp, nonce), then the OAuth body hash (it needs the body), Content-Type (415), size (413, while
 * reading), the notification itself (400), the href rule (422), and the commit (503).
 */
import basicAuth from '@fastify/basic-auth';
import type { FastifyInstance, FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import type { Metrics } from '../lib/metrics.js';
import { Problem } from '../lib/problem.js';
import { endsWith, type RequestSpan, type Tracing } from '../lib/tracing.js';
import { fetchKey } from '../processing/fetch.queue.js';
import { authenticateBasic, authenticateOAuth, BASIC_CHALLENGE, checkBodyHash, unauthorized, type AuthDeps, type Authenticated } from './authenticate.js';
import { checkHrefScope, parseNotification, type NotificationWriter } from './ingest.js';

export const MAX_NOTIFICATION_BYTES = 256 * 1024;
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

export interface ReceiverDeps extends AuthDeps {
  writer: NotificationWriter;
  requireHttpsHrefs: boolean;
  metrics: Pick<Metrics, 'received'>;
  /** Told how long each accepted notification's answer took (role `all`: the workers yield to a busy receiver, processing/ingest-first.ts). */
  answered?: (ms: number) => void;
  /** Counts each answer by company and outcome, for the per-batch log line (lib/batch-summary.ts). */
  summary: { add(companyId: string, outcome: string): void };
  /** Set when traces are exported (lib/tracing.ts): each notification's POST is a span. */
  tracing?: Pick<Tracing, 'request'>;
}

declare module 'fastify' {
  interface FastifyRequest {
    notificationAuth?: Authenticated;
    /** The request's span, when traces are exported. */
    notificationSpan?: RequestSpan;
  }
}

const isJson = (req: FastifyRequest): boolean => JSON_TYPE.test(req.headers['content-type']?.split(';')[0]?.trim() ?? '');
const unsupportedMediaType = () => new Problem(415, 'Unsupported Media Type', 'Notifications must be sent as application/json.', { code: 'unsupported_media_type' });

/** What authentication needs of a request before its body is read. */
const requestLine = (req: FastifyRequest) => ({ method: req.method, url: req.url, endpointKey: (req.params as { endpointKey?: string }).endpointKey });

/**
 * Over 80 lines on purpose: the two routes and the hooks they share, each a named step below in the order
 * a request meets them (authenticate, refuseUnreadBody, receive, onResponse), over one `deps`.
 */
export async function receiverRoutes(app: FastifyInstance, deps: ReceiverDeps): Promise<void> {
  // The raw bytes of any body are kept, for the OAuth body hash; which bodies are read at all is decided
  // before parsing (refuseUnreadBody): a JSON body always, another one only to check its hash first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_NOTIFICATION_BYTES }, (_req, body, done) => done(null, body));

  await app.register(basicAuth, {
    validate: async (clientIdentifier: string, secret: string, req: FastifyRequest) => {
      req.notificationAuth = await authenticateBasic(deps, requestLine(req), clientIdentifier, secret).catch((err: unknown) => {
        // @fastify/basic-auth answers 401 for any error without a status; a failed lookup (the database
        // is down, say) is not a wrong password: the app's error handler makes it a 503 or a 500.
        const e = err as { statusCode?: number };
        if (e.statusCode === undefined) e.statusCode = 500;
        throw err;
      });
    },
    authenticate: { realm: 'skyhook' },
    utf8: false,
  });

  // A callback hook, not an async one: it runs for every notification, and the Basic plugin answers by callback.
  const authenticate = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const header = req.headers.authorization;
    const scheme = typeof header === 'string' ? /^\s*(\w+)/.exec(header)?.[1]?.toLowerCase() : undefined;
    if (scheme === 'basic') return app.basicAuth(req, reply, done);
    if (scheme === 'oauth' && typeof header === 'string') {
      authenticateOAuth(deps, requestLine(req), header).then((auth) => {
        req.notificationAuth = auth;
        done();
      }, done);
      return;
    }
    done(unauthorized(BASIC_CHALLENGE, 'Credentials are required.'));
  };

  /**
   * SPEC §4's order puts authentication, the OAuth body hash included, before the Content-Type (415): a
   * body that is not JSON is still read when its hash is to be checked (and the 401 given first), and is
   * refused unread otherwise. A body over 256 KiB is refused (413) before its hash: no more is ever read.
   */
  const refuseUnreadBody = (req: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (err: Error | null, payload?: RequestPayload) => void): void => {
    if (isJson(req) || req.notificationAuth?.oauth?.bodyHash !== undefined) return done(null, payload);
    done(unsupportedMediaType());
  };

  const receive = async (req: FastifyRequest, reply: FastifyReply) => {
    const auth = req.notificationAuth!;
    const raw = req.body as Buffer | undefined;
    checkBodyHash(auth, raw ?? Buffer.alloc(0));
    if (!isJson(req)) throw unsupportedMediaType();
    if (!raw || raw.length === 0) throw new Problem(400, 'Bad Request', 'The body is empty.', { code: 'invalid_input' });

    const { body, text, href } = parseNotification(raw);
    const { webhook } = auth;
    const span = req.notificationSpan;
    span?.attributed(webhook, auth.by);
    checkHrefScope(href, webhook.apiBaseUrl, deps.requireHttpsHrefs);

    // Durability first: the answer waits for the commit; a database error becomes a 503 upstream.
    const commitWait = span?.commitWait();
    const inserting = deps.writer.insert({
      companyId: webhook.companyId,
      webhookId: webhook.webhookId,
      resourceId: body.id,
      type: body.type,
      href: body.href,
      bodyJson: text,
      authenticatedBy: auth.by,
      // A webhook Skyhook deactivated is still acknowledged, so the marketplace stops retrying.
      disposition: webhook.active ? 'accepted' : 'discarded',
      trace: commitWait,
    });
    const stored = await endsWith(commitWait, inserting);
    span?.stored({ id: stored.id, type: body.type, status: stored.status, fetchKey: fetchKey({ companyId: webhook.companyId, href: body.href }) });
    req.log.debug({ companyId: webhook.companyId, notificationId: stored.id, type: body.type, status: stored.status }, 'notification stored');
    const discarded = stored.status === 'discarded';
    deps.metrics.received.inc({ outcome: discarded ? 'discarded' : 'stored' });
    deps.summary.add(webhook.companyId, discarded ? 'discarded' : 'stored');
    // The answer says received (stored and committed) or discarded, whichever status the row was given.
    return reply.code(200).send({ status: discarded ? 'discarded' : 'received', id: String(stored.id) });
  };

  app.addHook('onResponse', (req, reply, done) => {
    // Only accepted notifications: refused requests (a stranger's 401s, say) must not hold processing back.
    if (reply.statusCode < 300) deps.answered?.(reply.elapsedTime);
    const companyId = req.notificationAuth?.webhook.companyId ?? 'unknown';
    if (reply.statusCode >= 400) {
      deps.metrics.received.inc({ outcome: String(reply.statusCode) });
      deps.summary.add(companyId, String(reply.statusCode));
    }
    req.notificationSpan?.answered(reply.statusCode);
    done();
  });

  const tracing = deps.tracing;
  // Only when traces are exported: otherwise the route runs exactly as without them.
  const startSpan = (req: FastifyRequest, _reply: FastifyReply, done: () => void): void => {
    req.notificationSpan = tracing!.request({
      method: req.method,
      route: req.routeOptions.url ?? '/hooks',
      scheme: req.protocol,
      host: req.headers.host,
      clientAddress: req.ip,
      userAgent: req.headers['user-agent'],
      httpVersion: req.raw.httpVersion,
    });
    done();
  };
  if (tracing) {
    app.addHook('onRequestAbort', (req, done) => {
      req.notificationSpan?.aborted();
      done();
    });
  }

  const routeOptions = { onRequest: tracing ? [startSpan, authenticate] : authenticate, preParsing: refuseUnreadBody, bodyLimit: MAX_NOTIFICATION_BYTES };
  // Documentation only: no response schema, whose serialisation would cost every notification.
  const answers =
    'Answers 200 `{status, id}` once the notification is committed (`discarded` for a deactivated webhook), else a problem: 401 (credentials), 415 (not JSON), 413 (over 256 KiB), 400 (not `{id, type, href}`), 422 (href outside the company API), 503 with Retry-After (nothing could be stored).';
  for (const [url, summary, description] of [
    ['/hooks/:endpointKey', "Receive a notification on a webhook's own targetURI", 'The marketplace posts here for one webhook, named by its endpoint key; credentials as the webhook was registered (Basic, or OAuth 1.0a with oauth_body_hash).'],
    ['/hooks', 'Receive a notification on the shared targetURI', 'The marketplace posts here for any webhook registered with sharedTarget; the webhook is found by the clientIdentifier of the credentials (the Basic user name or oauth_consumer_key).'],
  ] as const) {
    app.post(url, { ...routeOptions, schema: { tags: ['receiver'], summary, description: `${description} ${answers}` } }, receive);
  }
}
