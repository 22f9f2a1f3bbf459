/**
 * Signing as Standard Webhooks 1.0 says (SPEC §5.2): a secret is `whsec_` and the base64 of random bytes;
 * a request carries `webhook-id`, `webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`,
 * one `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` per secret signing now, space-separated (two
 * during a rotation's grace period). A receiver verifies with any Standard Webhooks library.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';
/** Random bytes of a new secret (the specification allows 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret. */
export const newSigningSecret = (): string => `${PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;

/** The key a secret stands for: its base64 after the prefix. */
const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** The headers of one attempt: `id` is the delivery's (the same on every attempt and replay), `secrets` those signing now. */
export function signatureHeaders(id: string, body: string, secrets: string[], now: Date = new Date()): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signed = `${id}.${timestamp}.${body}`;
  const signatures = secrets.map((s) => `v1,${createHmac('sha256', keyOf(s)).update(signed).digest('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}

/** A delivery's `webhook-id`: its id, prefixed as Standard Webhooks' examples are (`msg_`). */
export const webhookIdOf = (deliveryId: number): string => `msg_${deliveryId}`;
