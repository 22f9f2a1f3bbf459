/**
 * The shapes the admin surfaces answer with, written once: the services build them (their types are
 * these schemas' z.infer), the admin API documents and serialises them, the CLI prints them. Enums come
 * from the database schema's.
 */
import { z } from 'zod';
import { declineSchema } from '../marketplace/declines.js';
import { COMPANY_STATES } from '../companies/transitions.js';
import { DELIVERY_STATUSES, DESTINATION_STATES } from '../destinations/transitions.js';
import {
  authenticatedBy,
  authType,
  connectionProfile,
  connectionStatus,
  credentialsStatus,
  fetchAttemptOutcome,
  fetchOutcome,
  rfqActionTarget,
  notificationStatus as notificationStatusEnum,
  outboundStatus,
} from '../db/schema/index.js';

/** A view field as its row's column may hold it: a time as a Date where the view has ISO 8601 text. */
type Stored<V> = V extends string ? V | Date : V extends string | null ? V | Date | null : V;

/**
 * A view read off its row: each of the schema's fields from the row's column of the same name, times as
 * ISO 8601 text, in the schema's order (the CLI prints them so); `own` gives the fields that are not a column.
 */
export function viewOf<S extends z.ZodObject, O extends Partial<z.infer<S>> = Record<never, never>>(
  schema: S,
  row: { [K in Exclude<keyof z.infer<S>, keyof O>]: Stored<z.infer<S>[K]> },
  own?: O,
): z.infer<S> {
  const columns = row as Record<string, unknown>;
  const view = Object.fromEntries(Object.keys(schema.shape).map((k) => [k, columns[k] instanceof Date ? columns[k].toISOString() : columns[k]]));
  return { ...view, ...own } as z.infer<S>;
}

/** received -> queued -> processed | failed | discarded, as the database's enum has them. */
export const notificationStatus = z.enum(notificationStatusEnum.enumValues);

/** A company's connection without its secrets: which are stored is said, never what they are. */
const connectionViewSchema = z.object({
  profile: z.enum(connectionProfile.enumValues),
  product: z.string().nullable().describe('avinode: X-Avinode-Product (null: the default, "Skyhook <version>")'),
  apiVersion: z.string().nullable().describe('avinode: X-Avinode-ApiVersion (null: not sent)'),
  tokenUrl: z.string().nullable().describe('OAuth 2.0 client credentials: the token endpoint (null: a fixed token)'),
  clientId: z.string().nullable(),
  clientSecretExpiresAt: z.string().nullable().describe('OAuth 2.0: when the client secret expires, when recorded'),
  baseUrls: z.array(z.string()).describe("further base URLs the token may be sent to besides apiBaseUrl (an href under none is stored, never fetched)"),
  storedSecrets: z.array(z.enum(['apiToken', 'authToken', 'clientSecret'])).describe('which secrets are stored (encrypted); their values are never returned'),
});

/** What the harmless call made when the credentials were set or replaced found (SPEC §14). */
const credentialsViewSchema = z.object({
  status: z
    .enum(credentialsStatus.enumValues)
    .describe('accepted: the marketplace answered the settings list; refused: it (or the token endpoint) said no; unreachable: no answer, a 5xx or 429; unchecked: never checked'),
  checkedAt: z.string().nullable(),
  error: z.string().nullable().describe("the marketplace's reason, with its codes, when refused or unreachable"),
});

/** A company's one state (SPEC §5.1 F5; companies/transitions.ts works it out). */
export const companyStateSchema = z.object({
  status: z
    .enum(COMPANY_STATES)
    .describe(
      'paused: the marketplace refused its credentials (a fetch, a check or a probe), its notifications wait for new ones; throttled: the marketplace asked it to slow down (429), its calls wait until `until`; unreachable: its last check or fetches found no answer; unchecked: its credentials were never checked; ok',
    ),
  since: z.string().nullable().describe('paused or unreachable: since when'),
  until: z.string().nullable().describe('throttled: until when'),
  reason: z.string().nullable().describe("the marketplace's words (paused, throttled), or what found no answer (unreachable)"),
});

/** A company's fetches at once (SPEC §5.1 F2), and what waits. */
const companyFetchesSchema = z.object({
  limit: z.number().int().describe('at most this many fetches at once across every worker: its own limit, or COMPANY_FETCH_CONCURRENCY'),
  ownLimit: z.number().int().nullable().describe('the limit set for this company (null: the default)'),
  limitNow: z.number().int().nullable().describe('what it runs at now: lower for a while after the marketplace asked it to slow down (null: not known, no fetch yet)'),
  running: z.number().int().describe('its fetches queued or running now'),
  parked: z.number().int().describe('its resources waiting for a free place, or (paused) for new credentials'),
});

export const companyViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  apiBaseUrl: z.string(),
  state: companyStateSchema,
  fetches: companyFetchesSchema,
  connectionStatus: z
    .enum(connectionStatus.enumValues)
    .describe('Deprecated: read `state` (unauthorized is state paused). Kept until version 0.3 for existing scripts.'),
  connectionError: z.string().nullable().describe('Deprecated: read `state.reason`.'),
  connection: connectionViewSchema,
  credentials: credentialsViewSchema,
  connectionLastUsedAt: z
    .string()
    .nullable()
    .describe('the last successful marketplace call with its credentials (written at most once a minute); the marketplace deactivates a connection unused for 60 days'),
  connectionWarnings: z
    .array(
      z.object({
        kind: z.enum(['connection_unused', 'client_secret_expiring']).describe('connection_unused: unused for 50 days or more; client_secret_expiring: the OAuth client secret expires within 14 days (or did)'),
        at: z.string().describe('when the marketplace deactivates the connection, or the secret expires'),
        message: z.string(),
      }),
    )
    .describe('what needs an operator soon (SPEC §14); empty when nothing does'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type CompanyView = z.infer<typeof companyViewSchema>;

export const webhookViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  remoteId: z.string(),
  targetURI: z.string(),
  clientIdentifier: z.string(),
  authType: z.enum(authType.enumValues),
  eventTypes: z.array(z.string()),
  displayName: z.string(),
  active: z.boolean(),
  previousSecretExpiresAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type WebhookView = z.infer<typeof webhookViewSchema>;

/** One difference between a local webhook row and the marketplace's settings (SPEC §14 reconciliation). */
const driftSchema = z.object({
  kind: z
    .enum(['missing_remotely', 'remote_id_changed', 'differs', 'unknown_remotely'])
    .describe(
      'missing_remotely: the marketplace has no setting for a local webhook (a sandbox reset); remote_id_changed: it has the webhook\'s clientIdentifier under another id; differs: event types, target or another field differ; unknown_remotely: a setting no local webhook knows (left alone)',
    ),
  webhookId: z.string().nullable(),
  remoteId: z.string().nullable().describe('the id the marketplace knows the setting by (for missing_remotely, the lost one)'),
  clientIdentifier: z.string().nullable(),
  differences: z.array(z.object({ field: z.string(), local: z.unknown(), remote: z.unknown() })).describe('for differs (and remote_id_changed)'),
  action: z
    .enum(['none', 'recreated', 'remote_id_updated', 'failed'])
    .describe('what apply did: recreated (new remoteId), remote_id_updated, failed (see error); none without apply, for differences and unknown settings'),
  newRemoteId: z.string().nullable(),
  error: z.string().nullable(),
});

export const reconciliationViewSchema = z.object({
  companyId: z.string(),
  applied: z.boolean().describe('whether apply was asked'),
  inSync: z.number().describe('local webhooks that match their setting on the marketplace'),
  remoteSettings: z.number().describe('settings the marketplace listed'),
  drift: z.array(driftSchema),
});
export type ReconciliationView = z.infer<typeof reconciliationViewSchema>;
export type Drift = z.infer<typeof driftSchema>;

/** One entry of a notification's history (SPEC §7.1), oldest first. */
export const timelineEntrySchema = z.discriminatedUnion('kind', [
  z.object({ at: z.string(), kind: z.enum(['received', 'queued', 'replayed', 'processed', 'discarded']) }),
  z.object({ at: z.string(), kind: z.literal('failed'), error: z.string().nullable() }),
  z.object({
    at: z.string(),
    kind: z.literal('fetch'),
    startedAt: z.string(),
    finishedAt: z.string(),
    durationMs: z.number(),
    httpStatus: z.number().nullable().describe('null for a network error or a timeout'),
    outcome: z.enum(fetchAttemptOutcome.enumValues),
    error: z.string().nullable(),
    snapshotVersion: z.number().nullable().describe('the version it stored, when it stored one'),
  }),
]);
export type TimelineEntry = z.infer<typeof timelineEntrySchema>;

export const notificationViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  webhookId: z.string(),
  type: z.string(),
  resourceId: z.string(),
  href: z.string(),
  status: notificationStatus,
  attempts: z.number(),
  lastError: z.string().nullable(),
  outcome: z.enum(fetchOutcome.enumValues).nullable(),
  snapshotVersion: z.number().nullable(),
  authenticatedBy: z.enum(authenticatedBy.enumValues),
  receivedAt: z.string(),
  processedAt: z.string().nullable().describe('set only when it was processed'),
  finishedAt: z.string().nullable().describe('when it reached its final status: processed, failed or discarded'),
  body: z.unknown().optional(),
  timeline: z.array(timelineEntrySchema).optional(),
});

export type NotificationView = z.infer<typeof notificationViewSchema>;

/** What a replay of one notification answers: the notification, and why its fetch will wait, if it will. */
export const replayedNotificationSchema = notificationViewSchema.extend({
  note: z.string().nullable().describe('why the fetch will wait, if it will (its company is paused)'),
});
export type ReplayedView = z.infer<typeof replayedNotificationSchema>;

export const resourceViewSchema = z.object({
  companyId: z.string(),
  href: z.string(),
  type: z.string(),
  resourceId: z.string(),
  version: z.number(),
  fetchedAt: z.string(),
  gone: z.boolean(),
  body: z.unknown(),
});
export type ResourceView = z.infer<typeof resourceViewSchema>;

export const resourceVersionViewSchema = z.object({
  version: z.number(),
  fetchedAt: z.string(),
  eventId: z.string(),
  changes: z.unknown().describe('RFC 6902 JSON Patch from the version before; null for the first'),
});
export type ResourceVersionView = z.infer<typeof resourceVersionViewSchema>;

export const leadViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  clientIdentifier: z.string(),
  kind: z.string(),
  remoteId: z.string().nullable(),
  status: z.enum(outboundStatus.enumValues).exclude(['unknown']).describe('a lead is never held unknown: it is safe to send again'),
  request: z.unknown(),
  response: z.unknown(),
  resourceHref: z.string().nullable(),
  snapshotVersion: z.number().nullable(),
  createdAt: z.string(),
});
export type LeadView = z.infer<typeof leadViewSchema>;

/** Where a quote or a decline was sent: the stored RFQ's action href, or the assumed path (services/rfq-answers.ts). */
const rfqActionTargetSchema = z
  .enum(rfqActionTarget.enumValues)
  .describe("snapshot_href: the action href of the RFQ snapshot Skyhook stored; assumed_path: no snapshot carried one, so the assumed path under the company's API base URL");

/** A stored quote, as the admin API shows it (the submission's schema is the marketplace's `quoteSchema`). */
export const quoteViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  requestId: z.string(),
  sellerUniqueQuoteIdentifier: z.string(),
  actAsAccount: z.string().nullable(),
  status: z
    .enum(outboundStatus.enumValues)
    .describe('unknown: the submission may have reached the marketplace, but no success was read; a repeat is refused until resendUnknown'),
  error: z.string().nullable().describe('why the status is unknown'),
  tripMessageId: z.string().nullable(),
  sellerQuoteId: z.string().nullable(),
  liftId: z.string().nullable(),
  target: rfqActionTargetSchema.nullable().describe('null for a quote submitted before Skyhook recorded where it went'),
  targetUrl: z.string().nullable().describe('the URL the quote was sent to'),
  resourceHref: z.string().nullable(),
  snapshotVersion: z.number().nullable(),
  createdAt: z.string(),
});
export type QuoteView = z.infer<typeof quoteViewSchema>;

/** A stored decline of a requested lift or an RFQ, as the admin API shows it. */
export const declineViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  requestId: z.string().describe('the lift id or RFQ id declined'),
  actAsAccount: z.string().nullable(),
  status: z
    .enum(outboundStatus.enumValues)
    .describe('unknown: the decline may have reached the marketplace, but no success was read; a repeat is refused until resendUnknown'),
  error: z.string().nullable().describe('why the status is unknown'),
  decline: declineSchema.describe('the body sent'),
  tripMessageId: z.string().nullable().describe("the trip message the marketplace answered, when it named one"),
  target: rfqActionTargetSchema,
  targetUrl: z.string().describe('the URL the decline was sent to'),
  resourceHref: z.string().nullable().describe('the trip message as Skyhook stored it (its href), once fetched'),
  snapshotVersion: z.number().nullable().describe("the trip message's stored version it is linked to"),
  createdAt: z.string(),
});
export type DeclineView = z.infer<typeof declineViewSchema>;

/** A destination's one state (SPEC §5.2; destinations/transitions.ts works it out). */
export const destinationStateSchema = z.object({
  status: z.enum(DESTINATION_STATES).describe('failing: five attempts in a row failed, its deliveries wait behind a probe; throttled: it asked to slow down (429) until `until`; disabled: see `reason` and `by`; ok'),
  since: z.string().nullable(),
  until: z.string().nullable(),
  reason: z.string().nullable(),
  by: z.string().nullable().describe('disabled: who (a key, or `skyhook` for a 410 or days without a success)'),
});

export const destinationViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  url: z.string(),
  description: z.string(),
  filter: z.object({ resourceTypes: z.array(z.string()).nullable(), eventTypes: z.array(z.string()).nullable() }),
  active: z.boolean(),
  state: destinationStateSchema,
  limits: z.object({ maxConcurrency: z.number().nullable(), ratePerSecond: z.number().nullable(), timeoutMs: z.number().nullable() }),
  stats: z
    .object({
      pending: z.number(),
      oldestPendingAt: z.string().nullable(),
      delivered24h: z.number(),
      failed24h: z.number(),
      successRate24h: z.number().nullable().describe("share of the last 24 h's attempts answered 2xx (null: none)"),
      latencyP50Ms24h: z.number().nullable().describe('stored -> delivered, median over the last 24 h'),
      lastAttemptAt: z.string().nullable(),
      lastSuccessAt: z.string().nullable(),
    })
    .describe('what its deliveries did'),
  previousSecretExpiresAt: z.string().nullable().describe('a rotation: the previous secret signs beside the new one until then'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type DestinationView = z.infer<typeof destinationViewSchema>;
/** Creation and rotation answer the secret, once; GET .../secret answers it again to whoever may manage the destination. */
export const destinationWithSecretSchema = destinationViewSchema.extend({ secret: z.string().describe('whsec_...: verify the signatures with it (Standard Webhooks)') });
export const destinationSecretSchema = z.object({ secret: z.string(), previousSecret: z.string().nullable(), previousSecretExpiresAt: z.string().nullable() });

export const deliveryAttemptViewSchema = z.object({
  at: z.string(),
  durationMs: z.number(),
  url: z.string(),
  httpStatus: z.number().nullable(),
  error: z.string().nullable(),
  response: z.string().nullable().describe("the answer's first 4 KB"),
  probe: z.boolean().describe('sent while the circuit was open'),
});

export const deliveryViewSchema = z.object({
  id: z.number(),
  webhookId: z.string().describe('the `webhook-id` it is sent with, on every attempt and replay'),
  companyId: z.string(),
  destinationId: z.string(),
  eventId: z.number(),
  resource: z.object({ type: z.string(), id: z.string(), href: z.string(), version: z.number() }),
  status: z.enum(DELIVERY_STATUSES),
  replay: z.boolean(),
  attempts: z.number(),
  nextAttemptAt: z.string().nullable().describe('pending: when its next attempt is due'),
  lastError: z.string().nullable(),
  lastStatus: z.number().nullable(),
  createdAt: z.string(),
  deliveredAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  attemptsList: z.array(deliveryAttemptViewSchema).optional().describe('GET .../deliveries/{id}: every attempt, oldest first'),
});
export type DeliveryView = z.infer<typeof deliveryViewSchema>;

export const testAttemptSchema = z.object({
  webhookId: z.string(),
  httpStatus: z.number().nullable(),
  durationMs: z.number(),
  response: z.string().nullable(),
  error: z.string().nullable(),
  delivered: z.boolean(),
});

/** An event as deliveries carry it (SPEC §5.2), with the cursor that follows it in the pull feed. */
export const eventViewSchema = z.object({
  cursor: z.string().describe('pass it as `after` (or Last-Event-ID) to read what follows'),
  id: z.number(),
  type: z.string(),
  companyId: z.string(),
  occurredAt: z.string(),
  resource: z.object({ type: z.string(), id: z.string(), href: z.string(), version: z.number(), previousVersion: z.number().nullable() }),
  eventTypes: z.array(z.string()),
  changes: z.array(z.unknown()).nullable(),
  snapshot: z.unknown(),
});
export type EventView = z.infer<typeof eventViewSchema>;
export const eventsPageSchema = z.object({ items: z.array(eventViewSchema), nextCursor: z.string().nullable().describe('null: none yet; ask again with the last cursor') });

/** What a resync queued (SPEC §14; services/notifications.service.ts). */
export const resyncViewSchema = z.object({
  companyId: z.string(),
  resources: z.number().int().describe('resources Skyhook stored for the company'),
  queued: z.number().int().describe("fetched again: one notification of Skyhook's own each (authenticatedBy resync), through the company's gate and limits"),
  outOfScope: z.number().int().describe("left out: their href is under none of the company's base URLs now, so the token never goes there"),
});
export type ResyncView = z.infer<typeof resyncViewSchema>;
