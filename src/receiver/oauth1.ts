/**
 * OAuth 1.0a signature verification (RFC 5849) for notifications signed by the marketplace.
 * `oauth-1.0a` only signs, so this module parses the Authorization header, normalises the URL
 * (§3.4.1.2, lib/oauth1-base-url.ts), puts the query pairs in with the oauth parameters itself (the
 * library drops `request.data` once a body hash is present), and recomputes the signature with the library.
 */
import { createHmac, hash } from 'node:crypto';
import OAuth from 'oauth-1.0a';
import { constantTimeEqual } from '../lib/crypto.js';
import { normaliseBaseUrl } from '../lib/oauth1-base-url.js';

const SIGNATURE_METHODS = { 'HMAC-SHA1': 'sha1', 'HMAC-SHA256': 'sha256' } as const;
export type SignatureMethod = keyof typeof SIGNATURE_METHODS;

const MAX_HEADER_LENGTH = 4096;
/** One `name="value"` pair and the whitespace after it, matched where the last one ended (sticky). */
const PARAM_RE = /([A-Za-z0-9_.~-]+)\s*=\s*"([^"]*)"\s*/y;
const SEPARATOR_RE = /,\s*/y;

export class OAuthHeaderError extends Error {}

/** Parses `OAuth k="v", ...` into decoded parameters; throws OAuthHeaderError on anything malformed. */
export function parseOAuthHeader(header: string): Record<string, string> {
  if (header.length > MAX_HEADER_LENGTH) throw new OAuthHeaderError('header too long');
  const scheme = /^\s*OAuth\s+/i.exec(header);
  if (!scheme) throw new OAuthHeaderError('not an OAuth header');
  // A plain object, safe here: only `oauth_*` names and `realm` are stored (checked before each store), none
  // of which Object.prototype has; a null-prototype object is slower in V8 (docs/performance.md).
  const params: Record<string, string> = {};
  // Read in place with sticky expressions: no copy of the rest of the header per parameter.
  let at = scheme[0].length;
  while (at < header.length) {
    PARAM_RE.lastIndex = at;
    const match = PARAM_RE.exec(header);
    if (!match) throw new OAuthHeaderError('malformed parameter');
    const [, name, encoded] = match as unknown as [string, string, string];
    if (!name.startsWith('oauth_') && name !== 'realm') throw new OAuthHeaderError(`unexpected parameter ${name}`);
    if (params[name] !== undefined) throw new OAuthHeaderError(`duplicate parameter ${name}`);
    try {
      params[name] = encoded.includes('%') ? decodeURIComponent(encoded) : encoded;
    } catch {
      throw new OAuthHeaderError(`bad percent-encoding in ${name}`);
    }
    at = PARAM_RE.lastIndex;
    if (at === header.length) break;
    SEPARATOR_RE.lastIndex = at;
    if (!SEPARATOR_RE.test(header)) throw new OAuthHeaderError('parameters must be separated by commas');
    at = SEPARATOR_RE.lastIndex;
  }
  return params;
}

type Params = Record<string, string | string[]>;

function addParam(out: Params, name: string, value: string | string[]): void {
  const prev = out[name];
  out[name] = prev === undefined ? value : ([] as string[]).concat(prev, value);
}

/**
 * The §3.4.1.3 parameter set: the given parameters plus the query pairs, decoded as
 * application/x-www-form-urlencoded; a name that occurs more than once keeps every value.
 * Always a fresh object, because the library mutates what it is given.
 */
function allParams(input: SignatureInput): Params {
  const out: Params = { ...input.params };
  if (input.url.search) for (const [name, value] of input.url.searchParams) addParam(out, name, value);
  return out;
}

/**
 * RFC 3986 percent-encoding, as the library's own `percentEncode` does it (encodeURIComponent, then
 * `!'()*` encoded too), but without its five global replaces on every name and value, which were most of
 * a signature check's time (docs/performance.md).
 */
const SUB_DELIMS = /[!'()*]/;
const SUB_DELIMS_ALL = /[!'()*]/g;
const percentEncode = (value: string): string => {
  const encoded = encodeURIComponent(value);
  return SUB_DELIMS.test(encoded) ? encoded.replace(SUB_DELIMS_ALL, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`) : encoded;
};

function signer(method: SignatureMethod, consumerSecret: string): OAuth {
  const algorithm = SIGNATURE_METHODS[method];
  const oauth = new OAuth({
    consumer: { key: '', secret: consumerSecret },
    signature_method: method,
    hash_function: (base, key) => createHmac(algorithm, key).update(base).digest('base64'),
  });
  oauth.percentEncode = percentEncode;
  return oauth;
}

interface SignatureInput {
  method: string;
  /** The URL the sender signed: for notifications, PUBLIC_BASE_URL + path + query. */
  url: URL;
  /** oauth_* parameters (without oauth_signature and realm), plus any form-body parameters. */
  params: Params;
}

export function computeSignature(input: SignatureInput, method: SignatureMethod, consumerSecret: string, tokenSecret = ''): string {
  const request = { url: normaliseBaseUrl(input.url), method: input.method, data: {} };
  return signer(method, consumerSecret).getSignature(request, tokenSecret, allParams(input) as unknown as OAuth.Data);
}

/**
 * The digests `oauth_body_hash` may be: SHA-1, which the body-hash extension and the common libraries
 * (oauthlib, hence requests-oauthlib) send whatever the signature method, and SHA-256 with HMAC-SHA256.
 */
type BodyHashAlgorithm = 'sha1' | 'sha256';
const DIGEST_BYTES = { sha1: 20, sha256: 32 } as const;

type OAuthFailure =
  | 'malformed'
  | 'unsupported_signature_method'
  | 'token_not_expected'
  | 'stale_timestamp'
  | 'bad_signature';

export interface OAuthHeaderCheck {
  ok: true;
  clientIdentifier: string;
  nonce: string;
  timestamp: number;
  method: SignatureMethod;
  bodyHash?: string;
}

interface ParsedOAuth {
  clientIdentifier: string;
  params: Record<string, string>;
}

/** Reads the consumer key (our clientIdentifier) so the webhook can be found before verifying. */
export function readOAuthHeader(header: string): ParsedOAuth | null {
  try {
    const params = parseOAuthHeader(header);
    const key = params.oauth_consumer_key;
    return key ? { clientIdentifier: key, params } : null;
  } catch {
    return null;
  }
}

/**
 * Everything that can be checked before the body arrives: parameters, timestamp window and the
 * signature (which covers oauth_body_hash, so the hash itself is compared once the body is read).
 * `secrets` are the current secret and, inside its rotation grace period, the previous one.
 */
export function verifyOAuthHeader(
  parsed: ParsedOAuth,
  request: { method: string; url: URL },
  secrets: string[],
  opts: { nowSeconds: number; skewSeconds: number },
): OAuthHeaderCheck | { ok: false; reason: OAuthFailure } {
  const p = parsed.params;
  const method = p.oauth_signature_method as SignatureMethod | undefined;
  if (!p.oauth_signature || !p.oauth_nonce || !p.oauth_timestamp || !method) return { ok: false, reason: 'malformed' };
  if (!Object.hasOwn(SIGNATURE_METHODS, method)) return { ok: false, reason: 'unsupported_signature_method' };
  if (p.oauth_version !== undefined && p.oauth_version !== '1.0') return { ok: false, reason: 'malformed' };
  if (p.oauth_token) return { ok: false, reason: 'token_not_expected' };
  if (!/^\d{1,12}$/.test(p.oauth_timestamp) || p.oauth_nonce.length > 256) return { ok: false, reason: 'malformed' };
  // Copied by name, not by an object rest (V8 copies a rest through a generic runtime call).
  const signed: Record<string, string> = {};
  for (const name of Object.keys(p)) if (name !== 'oauth_signature' && name !== 'realm') signed[name] = p[name]!;
  const given = Buffer.from(p.oauth_signature, 'base64');
  const input = { method: request.method, url: request.url, params: signed };
  const matches = secrets.some((secret) => constantTimeEqual(Buffer.from(computeSignature(input, method, secret), 'base64'), given));
  if (!matches) return { ok: false, reason: 'bad_signature' };
  // After the signature, so a stale-timestamp answer is only ever given to the secret's holder.
  const timestamp = Number(p.oauth_timestamp);
  if (Math.abs(opts.nowSeconds - timestamp) > opts.skewSeconds) return { ok: false, reason: 'stale_timestamp' };
  return {
    ok: true,
    clientIdentifier: parsed.clientIdentifier,
    nonce: p.oauth_nonce,
    timestamp,
    method,
    ...(p.oauth_body_hash !== undefined ? { bodyHash: p.oauth_body_hash } : {}),
  };
}

/** Whether the body is the one signed: a SHA-1 body hash always, a SHA-256 one with HMAC-SHA256 only. */
export function bodyHashMatches(check: OAuthHeaderCheck, rawBody: Buffer): boolean {
  if (check.bodyHash === undefined) return true;
  const given = Buffer.from(check.bodyHash, 'base64');
  // The given hash's length (no secret) names its digest: only that one is computed, on the hot path.
  const algorithm: BodyHashAlgorithm | undefined =
    given.length === DIGEST_BYTES.sha1 ? 'sha1' : given.length === DIGEST_BYTES.sha256 && check.method === 'HMAC-SHA256' ? 'sha256' : undefined;
  return algorithm !== undefined && constantTimeEqual(hash(algorithm, rawBody, 'buffer'), given);
}
