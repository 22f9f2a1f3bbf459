/**
 * What Skyhook and the marketplace agree on. The seed document leaves many of these "not shown";
 * every such decision is marked (assumed) and lives here, once, so it can change when the real
 * answer is known. The simulator imports the same constants, so both sides move together.
 */
import { z } from 'zod';
import { MarketplaceError, type EnvelopeEntry } from './errors.js';

/**
 * OAuth 2.0 client credentials (SPEC §14): the token request is a form POST of `grant_type=client_credentials`
 * with `client_id` and `client_secret` in the body (`client_secret_post`, as the real marketplace's example
 * sends them). (assumed) A token answer without `expires_in` is taken to live this long; a 401 before then
 * gets a new one anyway.
 */
export const DEFAULT_ACCESS_TOKEN_LIFETIME_S = 300;

/**
 * The scheduling product's event types (SPEC §14, the real marketplace's names). Their notifications may
 * carry `platformTripId` and name a host of the marketplace other than the API's (a company's
 * `connection.baseUrls` allows it).
 */
export const SCHEDULING_EVENT_TYPES = ['SchedAeroContacts', 'SchedAeroPassengers', 'SchedAeroLogistics'] as const;

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
  ...SCHEDULING_EVENT_TYPES,
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
  // (assumed) The seed names no resource of the scheduling product: one type per event type.
  SchedAeroContacts: 'contacts',
  SchedAeroPassengers: 'passengers',
  SchedAeroLogistics: 'logistics',
};

export const CLIENT_AUTHENTICATION_TYPES = ['BASIC', 'OAUTH'] as const;
export type ClientAuthenticationType = (typeof CLIENT_AUTHENTICATION_TYPES)[number];

/** Paths of the webhook-settings operations (seed §4.3). The seed spells deactivation once in the singular. */
export const WEBHOOK_SETTINGS_PATH = '/webhooks/settings';
export const WEBHOOK_SETTINGS_SINGULAR_PATH = '/webhook/settings';

/**
 * Every path segment built from input or from a marketplace answer goes through here: percent-encoded, and
 * refused when empty, `.` or `..`, which URL parsing drops or climbs with, so the call would reach another path.
 */
export function pathSegment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..') {
    throw new MarketplaceError('invalid_request', `${what} ${JSON.stringify(value)} cannot be a path segment; nothing was sent`);
  }
  return encodeURIComponent(value);
}

/**
 * How a seller answers a requested lift (its lift id) or an RFQ (its id): a quote, or a decline. The RFQ
 * resource names both as actions (`actions.submitQuote.href`, `actions.decline.href`, and per lift
 * `sellerLift[].actions.*`): Skyhook uses those hrefs when it has fetched the RFQ (seed §6.5: use what the
 * marketplace gives), and these paths otherwise.
 * - `submitQuote`: (assumed path, the real marketplace's) `POST /tripmsgs/{requestId}/submitQuote`.
 * - `decline`: (assumed) `POST /tripmsgs/{requestId}/decline`, beside the quote's: the real marketplace's
 *   documentation describes the operation (body, reasons, act-as header) but the seed gives no path.
 */
export const RFQ_ACTIONS = ['submitQuote', 'decline'] as const;
export type RfqAction = (typeof RFQ_ACTIONS)[number];
export const rfqActionPath = (action: RfqAction, requestId: string): string => `/tripmsgs/${pathSegment(requestId, 'requestId')}/${action}`;

/** (assumed) An id the marketplace gave (a lift or an RFQ id) as a caller hands it to Skyhook to put in a path. */
export const marketplaceId = z
  .string()
  .trim()
  .min(1)
  .max(200)
  // Marketplace ids are taken to be RFC 3986 unreserved characters (letters, digits, - . _ ~): one path segment as written.
  .regex(/^[A-Za-z0-9._~-]+$/, "must be a marketplace id: letters, digits, '-', '.', '_' or '~' (no '/' or spaces)")
  .refine((id) => id !== '.' && id !== '..', "must not be '.' or '..', which are not an id but a path step");

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

/**
 * (assumed, as the real marketplace does) Every response is wrapped in this envelope. Its entries come in
 * two shapes: the seed's assumed `{code?, message, field?}` and the real marketplace's `{title, code, path}`
 * (SPEC §14). Skyhook reads an entry only through `readEnvelopeMessage`, whatever shape it came in.
 */
export type EnvelopeMessage = SeedEnvelopeMessage | TitledEnvelopeMessage;
/** (assumed) The seed's reading of an entry; the simulator builds its answers in it. */
export interface SeedEnvelopeMessage {
  code?: string;
  message: string;
  field?: string;
}
/** The real marketplace's error entry (SPEC §14): `path` names the field, when the error is about one. */
export interface TitledEnvelopeMessage {
  title: string;
  code: string;
  path?: string;
}

/** A text read from a marketplace answer is cut here, so an odd answer cannot flood a problem or a log line. */
const MAX_ENTRY_TEXT = 500;
const bounded = (text: string): string => (text.length > MAX_ENTRY_TEXT ? `${text.slice(0, MAX_ENTRY_TEXT)}…` : text);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? bounded(value) : undefined);

/**
 * One entry of either shape, or of none (a string, a number, null, an object without message or title):
 * message ?? title ?? the entry as JSON; field ?? path; the code kept (a numeric one as text).
 */
export function readEnvelopeMessage(entry: unknown): EnvelopeEntry {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    return { message: text(entry) ?? bounded(JSON.stringify(entry) ?? String(entry)) };
  }
  const e = entry as Record<string, unknown>;
  const message = text(e.message) ?? text(e.title) ?? bounded(JSON.stringify(entry));
  const field = text(e.field) ?? text(e.path);
  const code = text(e.code) ?? (typeof e.code === 'number' && Number.isFinite(e.code) ? String(e.code) : undefined);
  return { message, ...(field !== undefined ? { field } : {}), ...(code !== undefined ? { code } : {}) };
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
