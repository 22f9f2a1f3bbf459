/**
 * What Skyhook and the marketplace agree on. The seed document leaves many of these "not shown";
 * every such decision is marked (assumed) and lives here, once, so it can change when the real
 * answer is known. The simulator imports the same constants, so both sides move together.
 */
import { z } from 'zod';

/** (assumed) How a company's API token is sent on every call. */
export const authorizationHeader = (apiToken: string): string => `Bearer ${apiToken}`;

/** (assumed, the real marketplace's names) Event types a webhook can subscribe to. */
export const EVENT_TYPES = [
  'ClientLeads',
  'EmptyLegs',
  'TripRequest',
  'TripRequestSellerResponse',
  'TripRequestMine',
  'TripRequestSellerResponseMine',
  'TripChatFromBuyer',
  'TripChatFromSeller',
  'TripChatMine',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * (assumed) The notification `type` (seed §2.4: "names a kind of trip resource") that each event type
 * produces. The simulator uses it to build notifications; Skyhook's handlers are keyed by these.
 */
export const NOTIFICATION_TYPE_BY_EVENT: Record<EventType, string> = {
  ClientLeads: 'leads',
  EmptyLegs: 'emptylegs',
  TripRequest: 'rfqs',
  TripRequestMine: 'rfqs',
  TripRequestSellerResponse: 'tripmsgs',
  TripRequestSellerResponseMine: 'tripmsgs',
  TripChatFromBuyer: 'tripmsgs',
  TripChatFromSeller: 'tripmsgs',
  TripChatMine: 'tripmsgs',
};

export const CLIENT_AUTHENTICATION_TYPES = ['BASIC', 'OAUTH'] as const;
export type ClientAuthenticationType = (typeof CLIENT_AUTHENTICATION_TYPES)[number];

/** Paths of the webhook-settings operations (seed §4.3). The seed spells deactivation once in the singular. */
export const WEBHOOK_SETTINGS_PATH = '/webhooks/settings';
export const WEBHOOK_SETTINGS_SINGULAR_PATH = '/webhook/settings';

/**
 * (assumed, following the real marketplace) The body of POST and PUT /webhooks/settings.
 * `clientSecret` is sent on create and on rotation only; a PUT without it keeps the current secret
 * (Skyhook keeps only a hash of a BASIC secret, so it cannot resend it).
 */
export const webhookSettingBody = z.object({
  targetURI: z.url(),
  displayName: z.string().min(1).max(200),
  active: z.boolean(),
  clientIdentifier: z.string().min(1).max(200),
  clientSecret: z.string().min(16).max(500).optional(),
  clientAuthenticationType: z.enum(CLIENT_AUTHENTICATION_TYPES),
  eventTypes: z.array(z.enum(EVENT_TYPES)).min(1),
});
export type WebhookSettingBody = z.infer<typeof webhookSettingBody>;

/** (assumed) What the marketplace answers for a webhook setting: the body plus its id and version. */
export interface WebhookSetting extends Omit<WebhookSettingBody, 'clientSecret'> {
  id: string;
  version: number;
}

/** (assumed, as the real marketplace does) Every response is wrapped in this envelope. */
export interface EnvelopeMessage {
  code?: string;
  message: string;
  field?: string;
}
export interface Envelope<T> {
  meta: { errors: EnvelopeMessage[]; warnings: EnvelopeMessage[]; infos: EnvelopeMessage[] };
  data: T;
}

export const envelope = <T>(data: T, errors: EnvelopeMessage[] = []): Envelope<T> => ({
  meta: { errors, warnings: [], infos: [] },
  data,
});

/** The body of a notification as the marketplace sends it (seed §2.4); extra properties are allowed. */
export interface NotificationBody {
  id: string;
  href: string;
  type: string;
  [extra: string]: unknown;
}
