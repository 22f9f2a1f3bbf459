/** Admin API schemas: written once, used for validation, types and the OpenAPI document. */
import { z } from 'zod';
import { outboundStatus } from '../db/schema/index.js';
import { notificationStatus } from '../services/views.js';
import { storableText } from '../lib/json-body.js';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES, marketplaceId } from '../marketplace/contract.js';
import { quoteSubmissionSchema } from '../marketplace/quotes.js';

export { clientLeadSchema as createLeadBody } from '../marketplace/leads.js';
// The answers' shapes, written once beside the services that build them.
export {
  companyViewSchema as companySchema,
  leadViewSchema as leadSchema,
  notificationStatus,
  notificationViewSchema as notificationSchema,
  quoteViewSchema,
  replayedNotificationSchema,
  resourceVersionViewSchema as resourceVersionSchema,
  resourceViewSchema as resourceSchema,
  timelineEntrySchema,
  webhookViewSchema as webhookSchema,
} from '../services/views.js';

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
export const webhookParams = z.object({ companyId: z.uuid(), webhookId: z.uuid() });
export const notificationParams = z.object({ id: z.coerce.number().int().positive() });

/** Free text that reaches the database: a NUL character or a lone surrogate is a 400 naming the field, not a 500. */
const text = (max: number) => z.string().max(max).refine(storableText, 'must not contain a NUL character or a lone surrogate');

const name = text(200).trim().min(1);
const apiToken = text(4096).min(1);

export const createCompanyBody = z.strictObject({ name, apiBaseUrl: text(2048).min(1), apiToken });
export const patchCompanyBody = z
  .strictObject({ name: name.optional(), apiToken: apiToken.optional() })
  .refine((b) => b.name !== undefined || b.apiToken !== undefined, { message: 'give name or apiToken' });

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

/** The filters of the notification list and of a bulk replay (SPEC §7). */
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

export const createQuoteBody = z.strictObject({
  requestId: marketplaceId.describe('a lift id (reply to that requested lift) or an RFQ id (an additional quote)'),
  actAsAccount: text(200).trim().min(1).optional().describe('user login sent as X-Service-ActAsAccount'),
  allowPriceMismatch: z.boolean().optional(),
  resendUnknown: z
    .boolean()
    .optional()
    .describe('send again a quote whose earlier submission may have reached the marketplace (status unknown); check there first'),
  submission: quoteSubmissionSchema,
});

export const quotesQuery = z.object({
  liftId: text(200).optional(),
  status: z.enum(outboundStatus.enumValues).optional(),
  limit,
  cursor: text(100).optional(),
});
