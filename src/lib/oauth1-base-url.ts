/**
 * The base string URI of an OAuth 1.0a signature (RFC 5849): a notification's signer and its verifier must
 * normalise the URL alike, so both use this one, the receiver (receiver/oauth1.ts) and the marketplace
 * simulator (simulator/sign.ts).
 */

/** RFC 5849 §3.4.1.2: lower-case scheme and host, default port dropped, no query or fragment. */
export function normaliseBaseUrl(url: URL): string {
  const scheme = url.protocol.toLowerCase();
  const defaultPort = (scheme === 'http:' && url.port === '80') || (scheme === 'https:' && url.port === '443');
  const port = url.port && !defaultPort ? `:${url.port}` : '';
  return `${scheme}//${url.hostname.toLowerCase()}${port}${url.pathname}`;
}
