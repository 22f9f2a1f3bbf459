/** Admin API schemas: written once, used for validation, types and the OpenAPI document. */
import { z } from 'zod';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES } from '../marketplace/contract.js';
import { quoteSubmissionSchema } from '../marketplace/quotes.js';

export { clientLeadSchema as createLeadBody } from '../marketplace/leads.js';

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string().optional(),
    code: z.string().optional(),
    errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  })
  .describe('RFC 9457 problem details');

export const companyIdParams = z.object({ companyId: z.uuid() });
export const webhookParams = z.object({ companyId: z.uuid(), webhookId: z.uuid() });
export const notificationParams = z.object({ id: z.coerce.number().int().positive() });

const name = z.string().trim().min(1).max(200);
const apiToken = z.string().min(1).max(4096);

export const createCompanyBody = z.strictObject({ name, apiBaseUrl: z.string().min(1).max(2048), apiToken });
export const patchCompanyBody = z
  .strictObject({ name: name.optional(), apiToken: apiToken.optional() })
  .refine((b) => b.name !== undefined || b.apiToken !== undefined, { message: 'give name or apiToken' });

export const companySchema = z.object({
  id: z.string(),
  name: z.string(),
  apiBaseUrl: z.string(),
  connectionStatus: z.enum(['ok', 'unauthorized']),
  connectionError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

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

export const webhookSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  remoteId: z.string(),
  targetURI: z.string(),
  clientIdentifier: z.string(),
  authType: z.enum(CLIENT_AUTHENTICATION_TYPES),
  eventTypes: z.array(z.string()),
  displayName: z.string(),
  active: z.boolean(),
  previousSecretExpiresAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const limit = z.coerce.number().int().min(1).max(500).default(50);
export const notificationStatus = z.enum(['received', 'queued', 'processed', 'failed', 'discarded']);

export const listQuery = z.object({ limit, cursor: z.string().max(500).optional() });
export const notificationsQuery = z.object({
  companyId: z.uuid().optional(),
  status: notificationStatus.optional(),
  type: z.string().max(128).optional(),
  limit,
  cursor: z.string().max(500).optional(),
});
export const resourcesQuery = z.object({ companyId: z.uuid().optional(), type: z.string().max(128).optional(), limit, cursor: z.string().max(2000).optional() });

export const notificationSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  webhookId: z.string(),
  type: z.string(),
  resourceId: z.string(),
  href: z.string(),
  status: notificationStatus,
  attempts: z.number(),
  lastError: z.string().nullable(),
  outcome: z.enum(['stored', 'gone']).nullable(),
  snapshotVersion: z.number().nullable(),
  authenticatedBy: z.enum(['basic', 'oauth']),
  receivedAt: z.string(),
  processedAt: z.string().nullable(),
  body: z.unknown().optional(),
});

export const resourceSchema = z.object({
  companyId: z.string(),
  href: z.string(),
  type: z.string(),
  resourceId: z.string(),
  version: z.number(),
  fetchedAt: z.string(),
  gone: z.boolean(),
  body: z.unknown(),
});

export const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** The statuses a replay selects by: every one but `discarded`, which is never replayed. */
export const replayableStatus = notificationStatus.exclude(['discarded']);

export const replayBody = z.strictObject({
  companyId: z.uuid().optional(),
  /** Default: the failed ones. */
  status: replayableStatus.default('failed'),
  type: z.string().max(128).optional(),
  limit: z.number().int().min(1).max(10_000).default(1000),
});

/** The answer of POST /admin/notifications/replay. */
export const replayedSchema = z.object({ replayed: z.number() });

export const leadSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  clientIdentifier: z.string(),
  kind: z.string(),
  remoteId: z.string().nullable(),
  status: z.enum(['sending', 'created']),
  request: z.unknown(),
  response: z.unknown(),
  resourceHref: z.string().nullable(),
  snapshotVersion: z.number().nullable(),
  createdAt: z.string(),
});

export const createQuoteBody = z.strictObject({
  requestId: z.string().trim().min(1).max(200).describe('a lift id (reply to that requested lift) or an RFQ id (an additional quote)'),
  actAsAccount: z.string().trim().min(1).max(200).optional().describe('user login sent as X-Service-ActAsAccount'),
  allowPriceMismatch: z.boolean().optional(),
  resendUnknown: z
    .boolean()
    .optional()
    .describe('send again a quote whose earlier submission may have reached the marketplace (status unknown); check there first'),
  submission: quoteSubmissionSchema,
});

/** A stored quote, as the admin API shows it (the submission's schema is the marketplace's `quoteSchema`). */
export const quoteViewSchema = z.object({
  id: z.string(),
  companyId: z.string(),
  requestId: z.string(),
  sellerUniqueQuoteIdentifier: z.string(),
  actAsAccount: z.string().nullable(),
  status: z
    .enum(['sending', 'created', 'unknown'])
    .describe('unknown: the submission may have reached the marketplace, but no success was read; a repeat is refused until resendUnknown'),
  error: z.string().nullable().describe('why the status is unknown'),
  tripMessageId: z.string().nullable(),
  sellerQuoteId: z.string().nullable(),
  liftId: z.string().nullable(),
  resourceHref: z.string().nullable(),
  snapshotVersion: z.number().nullable(),
  createdAt: z.string(),
});

export const quotesQuery = z.object({
  liftId: z.string().max(200).optional(),
  status: z.enum(['sending', 'created', 'unknown']).optional(),
  limit,
  cursor: z.string().max(100).optional(),
});
