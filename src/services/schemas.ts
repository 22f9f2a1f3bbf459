/**
 * The admin API's schemas, beside the services that take them (the admin routes, the console and the CLI use
 * them too): written once, used for validation, types and the OpenAPI document.
 */
import { z } from 'zod';
import { outboundStatus } from '../db/schema/index.js';
import { notificationStatus } from './views.js';
import { ROLES } from '../access/roles.js';
import { storableText } from '../lib/json-body.js';
import { CONNECTION_PROFILES } from '../marketplace/connection.js';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES, marketplaceId } from '../marketplace/contract.js';
import { declineSchema } from '../marketplace/declines.js';
import { quoteSubmissionSchema } from '../marketplace/quotes.js';

export { clientLeadSchema as createLeadBody } from '../marketplace/leads.js';
// The answers' shapes, written once beside the services that build them.
export * from './views.js';

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string().optional(),
    code: z.string().optional(),
    errors: z.array(z.object({ field: z.string(), message: z.string(), code: z.string().optional() })).optional(),
  })
  .describe('RFC 9457 problem details');

export const companyIdParams = z.object({ companyId: z.uuid() });
export const declineParams = z.object({ companyId: z.uuid(), declineId: z.uuid() });
export const webhookParams = z.object({ companyId: z.uuid(), webhookId: z.uuid() });
export const notificationParams = z.object({ id: z.coerce.number().int().positive() });

/** Free text that reaches the database: a NUL character or a lone surrogate is a 400 naming the field, not a 500. */
const text = (max: number) => z.string().max(max).refine(storableText, 'must not contain a NUL character or a lone surrogate');

const name = text(200).trim().min(1);
/** A value sent in an HTTP header (a token, a product name): printable ASCII, as a header can carry it. */
const headerText = (max: number) => z.string().min(1).max(max).regex(/^[\x20-\x7E]+$/, 'must be printable ASCII (it is sent in an HTTP header)');
const apiToken = headerText(4096);

/** Where the bearer token and the avinode headers come from (SPEC §14; marketplace/connection.ts sends them). */
export const connectionBody = z
  .strictObject({
    profile: z.enum(CONNECTION_PROFILES).describe("`bearer` (the default: `Authorization: Bearer <apiToken>`) or `avinode` (the real marketplace's headers)"),
    authToken: headerText(4096).optional().describe('avinode: the fixed `Authorization: Bearer` token; or give OAuth client credentials instead. Stored encrypted, never returned'),
    product: headerText(200).optional().describe('avinode: `X-Avinode-Product`, your product name and version (default: "Skyhook <version>")'),
    apiVersion: headerText(50).optional().describe('avinode: `X-Avinode-ApiVersion`, sent when set'),
    tokenUrl: text(2048).min(1).optional().describe('OAuth 2.0: the token endpoint of the client-credentials grant, e.g. https://sandbox.avinode.com/api/oauth/token'),
    clientId: headerText(500).optional().describe('OAuth 2.0: the client id'),
    clientSecret: headerText(4096).optional().describe('OAuth 2.0: the client secret. Stored encrypted, never returned'),
    clientSecretExpiresAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe('OAuth 2.0: when the client secret expires, as the marketplace said when it issued it (ISO 8601); Skyhook warns two weeks before'),
    baseUrls: z
      .array(text(2048).min(1))
      .max(10)
      .optional()
      .describe("further base URLs the company's token may be sent to besides apiBaseUrl (the scheduling product's host, say); an href under none of them is stored, never fetched"),
  })
  .superRefine((c, ctx) => {
    const oauth = (['tokenUrl', 'clientId', 'clientSecret'] as const).filter((k) => c[k] !== undefined);
    if (c.clientSecretExpiresAt !== undefined && c.clientSecret === undefined) {
      ctx.addIssue({ code: 'custom', path: ['clientSecretExpiresAt'], message: 'is the expiry of clientSecret: give it with the client secret' });
    }
    if (oauth.length > 0 && oauth.length < 3) {
      for (const k of (['tokenUrl', 'clientId', 'clientSecret'] as const).filter((k) => c[k] === undefined)) {
        ctx.addIssue({ code: 'custom', path: [k], message: 'is required with the other OAuth client credentials (tokenUrl, clientId, clientSecret)' });
      }
    }
    if (c.profile === 'bearer') {
      for (const k of (['authToken', 'product', 'apiVersion'] as const).filter((k) => c[k] !== undefined)) {
        ctx.addIssue({ code: 'custom', path: [k], message: 'is only sent by the avinode profile' });
      }
    } else if (c.authToken !== undefined && oauth.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'give authToken or OAuth client credentials, not both' });
    } else if (c.authToken === undefined && oauth.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'is required by the avinode profile (or give OAuth client credentials: tokenUrl, clientId, clientSecret)' });
    }
  })
  .describe("How Skyhook authenticates to the marketplace. Replaces the whole connection: give every secret it needs. The API token stays `apiToken`");

/** Whether a connection takes the bearer profile's token from OAuth: then no API token is sent at all. */
const apiTokenUnused = (connection: { profile: string; tokenUrl?: string } | undefined): boolean => connection?.profile === 'bearer' && connection.tokenUrl !== undefined;

export const createCompanyBody = z
  .strictObject({
    name,
    apiBaseUrl: text(2048).min(1),
    apiToken: apiToken.optional().describe('the company API token; required unless a bearer connection takes its token from OAuth client credentials. Stored encrypted, never returned'),
    connection: connectionBody.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.apiToken === undefined && !apiTokenUnused(b.connection)) ctx.addIssue({ code: 'invalid_type', expected: 'string', input: undefined, path: ['apiToken'], message: 'is required (unless a bearer connection has OAuth client credentials)' });
    if (b.apiToken !== undefined && apiTokenUnused(b.connection)) ctx.addIssue({ code: 'custom', path: ['apiToken'], message: 'is not sent by a bearer connection with OAuth client credentials: leave it out' });
  });

const FETCH_LIMIT = 'must be a whole number from 1 to 10000';
/** A company's fetch limit (SPEC §5.1 F2), as the admin API, the CLI and the console's form take it. */
export const fetchConcurrency = z.number({ error: FETCH_LIMIT }).int(FETCH_LIMIT).min(1, FETCH_LIMIT).max(10_000, FETCH_LIMIT);

export const patchCompanyBody = z
  .strictObject({
    name: name.optional(),
    apiToken: apiToken.optional(),
    connection: connectionBody.optional(),
    fetchConcurrency: fetchConcurrency
      .nullable()
      .optional()
      .describe("at most this many of the company's fetches at once, across every worker (SPEC §5.1 F2); null: the default (COMPANY_FETCH_CONCURRENCY)"),
  })
  .refine((b) => b.name !== undefined || b.apiToken !== undefined || b.connection !== undefined || b.fetchConcurrency !== undefined, {
    message: 'give name, apiToken, connection or fetchConcurrency',
  });

/** The body is optional: a POST without one only reports. */
export const reconcileBody = z
  .strictObject({ apply: z.boolean().optional().describe('re-create the settings the marketplace lost (default false: only report)') })
  .nullish();
export const reconcileQuery = z.object({ apply: z.stringbool().optional().describe('the same as the body\'s `apply`') });

const eventTypes = z.array(z.enum(EVENT_TYPES)).min(1).max(EVENT_TYPES.length).refine((a) => new Set(a).size === a.length, { message: 'must not repeat an event type' });

export const createWebhookBody = z.strictObject({
  eventTypes,
  authType: z.enum(CLIENT_AUTHENTICATION_TYPES),
  displayName: name.optional(),
  /** true: the shared targetURI `/hooks` (attribution by clientIdentifier); default: the webhook's own URL. */
  sharedTarget: z.boolean().optional(),
});
export const patchWebhookBody = z
  .strictObject({ active: z.boolean().optional(), eventTypes: eventTypes.optional(), displayName: name.optional(), rotateSecret: z.boolean().optional() })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one of active, eventTypes, displayName, rotateSecret' });

const limit = z.coerce.number().int().min(1).max(500).default(50);
const instant = z.iso.datetime({ offset: true }).describe('an ISO 8601 date-time with its offset, such as 2026-11-24T10:00:00Z');

export const listQuery = z.object({ limit, cursor: text(500).optional() });

/** The filters of the notification list and of a bulk replay (SPEC §7), by name, in the order flags and links list them. */
export const NOTIFICATION_FILTER_KEYS = ['companyId', 'webhookId', 'status', 'type', 'resourceId', 'href', 'receivedAfter', 'receivedBefore'] as const;

const notificationFilter = {
  companyId: z.uuid().optional(),
  webhookId: z.uuid().optional(),
  type: text(128).optional(),
  resourceId: text(512).optional().describe("the notification's id: the id of the resource that changed"),
  href: text(2048).optional(),
  receivedAfter: instant.optional().describe('received at or after this time'),
  receivedBefore: instant.optional().describe('received before this time'),
};

export const notificationsQuery = z.object({ ...notificationFilter, status: notificationStatus.optional(), limit, cursor: text(500).optional() });
export const resourcesQuery = z.object({ companyId: z.uuid().optional(), type: text(128).optional(), limit, cursor: text(2000).optional() });
export const resourceHistoryQuery = z.object({ companyId: z.uuid(), href: text(2048).min(1), limit, cursor: text(100).optional() });

export const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** The statuses a replay selects by: every one but `discarded`, which is never replayed. */
export const replayableStatus = notificationStatus.exclude(['discarded']);

export const replayBody = z.strictObject({
  ...notificationFilter,
  /** Default: the failed ones. */
  status: replayableStatus.default('failed'),
  limit: z.number().int().min(1).max(10_000).default(1000),
  dryRun: z.boolean().optional().describe('only count what would be replayed'),
});

/** The answer of POST /admin/notifications/replay. */
export const replayedSchema = z.object({
  matched: z.number().describe('notifications matching the filter (discarded ones excluded)'),
  replayed: z.number().describe('how many were replayed (at most `limit`; 0 for a dry run)'),
});

export const streamQuery = z.object({ companyId: z.uuid().optional() });

export const deleteQuery = z.object({
  force: z.stringbool().optional().describe('delete locally even if the marketplace refuses to deactivate the webhook settings'),
});

/** The answer of a forced DELETE that left settings active on the marketplace. */
export const deletedSchema = z.object({
  remainingRemoteSettings: z.array(z.object({ webhookId: z.string(), remoteId: z.string(), error: z.string() })),
});

/** The act-as login of a quote or a decline. */
const actAsAccount = text(200)
  .trim()
  .min(1)
  .optional()
  .describe("user login sent in the act-as header of the company's profile (bearer: X-Service-ActAsAccount, avinode: X-Avinode-ActAsAccount)");

const resendUnknown = (what: string) =>
  z
    .boolean()
    .optional()
    .describe(`send again ${what} may have reached the marketplace (status unknown); check there first`);

export const createQuoteBody = z.strictObject({
  requestId: marketplaceId.describe('a lift id (reply to that requested lift) or an RFQ id (an additional quote)'),
  actAsAccount,
  allowPriceMismatch: z.boolean().optional(),
  resendUnknown: resendUnknown('a quote whose earlier submission'),
  submission: quoteSubmissionSchema,
});

export const createDeclineBody = z.strictObject({
  requestId: marketplaceId.describe('a lift id (decline that requested lift) or an RFQ id (decline the whole RFQ)'),
  actAsAccount,
  resendUnknown: resendUnknown('a decline whose earlier call'),
  decline: declineSchema,
});

/** The list of a company's quotes or declines: by status, a page at a time. */
const outboundPage = { status: z.enum(outboundStatus.enumValues).optional(), limit, cursor: text(100).optional() };
export const declinesQuery = z.object({ requestId: text(200).optional().describe('the decline of this lift or RFQ'), ...outboundPage });
export const quotesQuery = z.object({ liftId: text(200).optional(), ...outboundPage });

// Destinations, deliveries and the pull feed (SPEC §5.2).

export const destinationParams = z.object({ companyId: z.uuid(), destinationId: z.uuid() });
export const deliveryParams = z.object({ companyId: z.uuid(), deliveryId: z.coerce.number().int().positive() });
export const eventParams = z.object({ companyId: z.uuid(), eventId: z.coerce.number().int().positive() });

const typeName = text(100).regex(/^[A-Za-z0-9_.:-]+$/, 'must be letters, digits, _ . : or -');
const typeList = (what: string) =>
  z.array(typeName).min(1).max(50).refine((a) => new Set(a).size === a.length, { message: `must not repeat a ${what}` });
const destinationFilter = z
  .strictObject({
    resourceTypes: typeList('resource type').nullable().optional().describe('resource types delivered (`rfqs`, `tripmsgs`, ...); absent or null: all'),
    eventTypes: typeList('event type').nullable().optional().describe('marketplace event types behind a change (`TripRequest`, ...), any of which makes it delivered; absent or null: all'),
  })
  .describe('both lists must match, within a list any entry does');
const destinationLimits = {
  maxConcurrency: z.number().int().min(1).max(1000).nullable().optional().describe('its requests at once across every worker (null: DESTINATION_CONCURRENCY)'),
  ratePerSecond: z.number().int().min(1).max(10_000).nullable().optional().describe('its requests per second at most (null: no limit of its own)'),
  timeoutMs: z.number().int().min(100).max(60_000).nullable().optional().describe('a request unanswered by then failed (null: DESTINATION_TIMEOUT_MS)'),
};

export const createDestinationBody = z.strictObject({
  url: text(2048).min(1).describe('where deliveries are POSTed: https and a public address outside development (DESTINATION_ALLOW admits others)'),
  description: text(500).optional(),
  filter: destinationFilter.optional(),
  active: z.boolean().optional().describe('default true; false: created disabled'),
  ...destinationLimits,
});
export const patchDestinationBody = z
  .strictObject({
    url: text(2048).min(1).optional().describe('applies to pending deliveries too (each attempt records where it went)'),
    description: text(500).optional(),
    filter: destinationFilter.optional().describe('applies to later events (a replay since a time fills what the old filter left out); a list left out keeps its value, null matches all'),
    active: z.boolean().optional().describe('false: disabled (its deliveries wait); true: enabled (what waits is sent, or skipped before skipBefore)'),
    rotateSecret: z
      .strictObject({ graceSeconds: z.number().int().min(0).max(30 * 86_400).optional().describe('how long the previous secret signs beside the new one (default 86400; 0 after a leak)') })
      .optional(),
    skipBefore: instant.optional().describe('with active: true, deliveries created before this end skipped instead of being sent'),
    ...destinationLimits,
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' })
  .refine((b) => b.skipBefore === undefined || b.active === true, { message: 'skipBefore goes with active: true', path: ['skipBefore'] });

export const destinationReplayBody = z
  .strictObject({
    since: instant.optional().describe("deliveries created at or after this; without `status`, also the events stored since then that the destination's filter matches now but have no delivery (the old filter left them out): their deliveries are created"),
    before: instant.optional().describe('deliveries created before this'),
    status: z.enum(['delivered', 'failed', 'skipped', 'expired']).optional().describe('only these (e.g. failed after an outage); with a status nothing is created'),
    resourceId: text(200).optional().describe("only this resource's"),
    dryRun: z.boolean().optional().describe('only count'),
  })
  .nullish();

/** The answer of POST .../destinations/{destinationId}/replay: `replayedSchema`'s two counts, and those created. */
export const destinationReplayedSchema = z.object({
  matched: z.number().describe('deliveries matching the filter (final ones: a pending one is on its way), and those it creates'),
  replayed: z.number().describe('how many are sent (0 for a dry run)'),
  created: z.number().describe("of `matched`, the deliveries created (a dry run: that would be): events stored since `since` that the destination's filter matches now and that had none (only with `since` and no `status`)"),
});

export const deliveriesQuery = z.object({
  destinationId: z.uuid().optional(),
  status: z.enum(['pending', 'delivered', 'failed', 'skipped', 'expired']).optional(),
  resourceId: text(200).optional(),
  after: instant.optional().describe('created after'),
  before: instant.optional().describe('created before'),
  limit,
  cursor: text(200).optional(),
});

/** The pull feed: `after` is a cursor it answered (opaque); its `limit` has a maximum. */
export const eventsQuery = z.object({ after: text(200).optional().describe('a cursor an earlier page or event answered; absent: from the oldest kept'), limit: z.coerce.number().int().min(1).max(500).default(100) });

// Keys and the audit log (SPEC §10.1).
export const createKeyBody = z.strictObject({
  name,
  role: z.enum(ROLES).describe('`admin`, `operator`, `viewer`, or `company` (bound to `companyId`)'),
  companyId: z.uuid().optional().describe('The company a `company` key is bound to (only for that role)'),
  expiresAt: instant.optional().describe('When the key stops working (none: until revoked)'),
});
export const keyParams = z.object({ keyId: z.uuid() });
export const keyViewSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  role: z.enum(ROLES),
  companyId: z.uuid().nullable(),
  hint: z.string().describe("The key's first characters, to tell keys apart"),
  state: z.enum(['active', 'expired', 'revoked']),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  lastUsedAt: z.string().nullable().describe('Written at most once a minute'),
  createdAt: z.string(),
});
export const keyWithSecretSchema = keyViewSchema.extend({ key: z.string().describe('The key itself: shown here once, never again') });
export const auditQuery = z.object({
  actor: text(200).optional().describe("A key's id, or a name: a key's, `ADMIN_TOKEN`, `cli:<user>`"),
  companyId: z.uuid().optional(),
  action: text(200).optional().describe('Part of the action: `DELETE /admin/companies`, `replay`, `skyhook keys`'),
  after: instant.optional(),
  before: instant.optional(),
  limit,
  cursor: text(100).optional(),
});
export const auditEntrySchema = z.object({
  id: z.number(),
  at: z.string(),
  actor: z.object({ kind: z.string().describe('`key`, `bootstrap` (ADMIN_TOKEN), `local` (the CLI on the database) or `system` (Skyhook on its own: retention ending deliveries `expired`)'), id: z.string().nullable(), name: z.string() }),
  address: z.string().nullable(),
  action: z.string(),
  companyId: z.string().nullable(),
  targets: z.record(z.string(), z.union([z.string(), z.number()])),
  fields: z.array(z.string()).describe('The names of the fields the change changed (a create: those it set), never their values'),
  outcome: z.string().describe('`ok`, `refused`, `failed`, or `started` (a call to the marketplace under way, or the process stopped during it)'),
  settledAt: z.string().nullable(),
  details: z.record(z.string(), z.unknown()).nullable().describe("A bulk action's filter and count; a refusal's `status` and the names of the fields it was `sent`; never a secret"),
});
