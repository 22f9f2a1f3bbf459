/** The Authorization header the marketplace puts on each notification it delivers (seed §5.2). */
import { createHash, createHmac } from 'node:crypto';
import OAuth from 'oauth-1.0a';
import { normaliseBaseUrl } from '../lib/oauth1-base-url.js';
import type { StoredWebhookSetting } from './state.js';

/**
 * Signs one delivery attempt to the webhook's targetURI. OAuth signs the exact `rawBody` string through
 * `oauth_body_hash`, so the caller must send those very bytes; every call makes a fresh nonce and timestamp.
 */
export function deliveryAuthorization(webhook: StoredWebhookSetting, rawBody: string): string {
  const { clientIdentifier, clientSecret, targetURI } = webhook;
  if (webhook.clientAuthenticationType === 'BASIC') {
    return `Basic ${Buffer.from(`${clientIdentifier}:${clientSecret}`).toString('base64')}`;
  }
  const oauth = new OAuth({
    consumer: { key: clientIdentifier, secret: clientSecret },
    signature_method: 'HMAC-SHA1',
    hash_function: (baseString, key) => createHmac('sha1', key).update(baseString).digest('base64'),
    // The OAuth body-hash extension hashes the body itself: plain SHA-1, not an HMAC with the signing key.
    body_hash_function: (body) => createHash('sha1').update(body).digest('base64'),
  });
  // oauth-1.0a builds the base string from the URL as given, but the receiver normalises it (RFC 5849
  // §3.4.1.2: lower-case scheme and host, no default port), so sign the normalised form; the query stays,
  // as its pairs are signed parameters.
  const url = new URL(targetURI);
  const signedUrl = `${normaliseBaseUrl(url)}${url.search}`;
  const signed = oauth.authorize({ url: signedUrl, method: 'POST', data: rawBody, includeBodyHash: true });
  return oauth.toHeader(signed).Authorization;
}
