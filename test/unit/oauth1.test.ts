/**
 * OAuth 1.0a verification (RFC 5849) as pure functions: the RFC's own example, header parsing, URL
 * normalisation, and round trips against the oauth-1.0a signer the marketplace simulator uses.
 */
import { createHash, hash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  bodyHashMatches,
  computeSignature,
  OAuthHeaderError,
  parseOAuthHeader,
  readOAuthHeader,
  verifyOAuthHeader,
  type OAuthHeaderCheck,
  type SignatureMethod,
} from '../../src/receiver/oauth1.js';
import { normaliseBaseUrl } from '../../src/lib/oauth1-base-url.js';
import { oauthAuthorization, type OAuthSigning } from '../helpers/fixtures.js';

const SKEW = 300;
/** `oauth_body_hash`: a plain (not keyed) digest of the raw body, in base64. */
const bodyHash = (algorithm: 'sha1' | 'sha256', body: Buffer | string) => hash(algorithm, body, 'base64');

describe('RFC 5849 §3.4.1.1 example', () => {
  const input = {
    method: 'POST',
    url: new URL('http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b'),
    params: {
      oauth_consumer_key: '9djdj82h48djs9d2',
      oauth_token: 'kkk9d7dh3k39sjv7',
      oauth_signature_method: 'HMAC-SHA1',
      oauth_timestamp: '137131201',
      oauth_nonce: '7d8f3e4a',
      // The form-encoded body's parameters.
      c2: '',
      a3: '2 q',
    },
  };

  it('signs the example with HMAC-SHA1 to the errata-corrected signature', () => {
    expect(computeSignature(input, 'HMAC-SHA1', 'j49sk3j29djd', 'dh893hdasih9')).toBe('r6/TJjbCOr97/+UU0NsvSne7s5g=');
  });

  it('does not mutate the parameters it is given', () => {
    const before = JSON.stringify(input.params);
    computeSignature(input, 'HMAC-SHA1', 'j49sk3j29djd', 'dh893hdasih9');
    expect(JSON.stringify(input.params)).toBe(before);
  });
});

describe('parseOAuthHeader', () => {
  it('reads a well-formed header into decoded parameters', () => {
    expect({
      ...parseOAuthHeader('OAuth oauth_consumer_key="key", oauth_nonce="n1", oauth_signature="c2ln%2Bbg%3D%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1700000000", oauth_version="1.0"'),
    }).toEqual({
      oauth_consumer_key: 'key',
      oauth_nonce: 'n1',
      oauth_signature: 'c2ln+bg==',
      oauth_signature_method: 'HMAC-SHA1',
      oauth_timestamp: '1700000000',
      oauth_version: '1.0',
    });
  });

  it('accepts any case of the scheme, commas with or without spaces, and an empty value', () => {
    expect({ ...parseOAuthHeader('oauth oauth_consumer_key="k",oauth_nonce="",  oauth_timestamp = "1"') }).toEqual({
      oauth_consumer_key: 'k',
      oauth_nonce: '',
      oauth_timestamp: '1',
    });
  });

  it('keeps realm (it is never signed) and accepts it anywhere', () => {
    expect({ ...parseOAuthHeader('OAuth realm="Example", oauth_consumer_key="k"') }).toEqual({ realm: 'Example', oauth_consumer_key: 'k' });
    expect({ ...parseOAuthHeader('OAuth oauth_consumer_key="k", realm="Example"') }).toEqual({ realm: 'Example', oauth_consumer_key: 'k' });
  });

  it('percent-decodes values, and leaves "+" as a plus (header values are not form-encoded)', () => {
    const params = parseOAuthHeader('OAuth oauth_consumer_key="a%20b%2Bc%3D%25", oauth_nonce="x+y", oauth_token="%C3%A9"');
    expect(params.oauth_consumer_key).toBe('a b+c=%');
    expect(params.oauth_nonce).toBe('x+y');
    expect(params.oauth_token).toBe('é');
  });

  it.each([
    ['a duplicate parameter', 'OAuth oauth_consumer_key="a", oauth_consumer_key="b"'],
    ['a duplicate realm', 'OAuth realm="a", realm="b", oauth_consumer_key="k"'],
    ['an unquoted value', 'OAuth oauth_consumer_key=abc'],
    ['an unquoted value after a good one', 'OAuth oauth_consumer_key="k", oauth_nonce=abc'],
    ['junk after the parameters', 'OAuth oauth_consumer_key="k" junk'],
    ['a missing comma', 'OAuth oauth_consumer_key="k" oauth_nonce="n"'],
    ['an unknown non-oauth parameter', 'OAuth oauth_consumer_key="k", foo="bar"'],
    ['an xoauth parameter', 'OAuth oauth_consumer_key="k", xoauth_requestor_id="x"'],
    // The parameters are kept in a plain object: no name Object.prototype has may get in.
    ['a parameter named __proto__', 'OAuth __proto__="x", oauth_consumer_key="k"'],
    ['a parameter named constructor', 'OAuth oauth_consumer_key="k", constructor="x"'],
    ['a parameter without a value', 'OAuth oauth_consumer_key'],
    ['an unterminated quote', 'OAuth oauth_consumer_key="k'],
    ['a bad percent-encoding', 'OAuth oauth_consumer_key="%E0%A4%A"'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['the scheme with nothing after it', 'OAuth'],
    ['a header longer than 4 KiB', `OAuth oauth_consumer_key="${'k'.repeat(5000)}"`],
  ])('rejects %s', (_what, header) => {
    expect(() => parseOAuthHeader(header)).toThrow(OAuthHeaderError);
    expect(readOAuthHeader(header)).toBeNull();
  });

  it('readOAuthHeader names the consumer key, and refuses a header without one', () => {
    expect(readOAuthHeader('OAuth oauth_consumer_key="skh_abc", oauth_nonce="n"')).toEqual({
      clientIdentifier: 'skh_abc',
      params: expect.objectContaining({ oauth_consumer_key: 'skh_abc', oauth_nonce: 'n' }),
    });
    expect(readOAuthHeader('OAuth oauth_nonce="n"')).toBeNull();
    expect(readOAuthHeader('OAuth oauth_consumer_key="", oauth_nonce="n"')).toBeNull();
  });
});

describe('normaliseBaseUrl (RFC 5849 §3.4.1.2)', () => {
  it.each([
    ['HTTP://EXAMPLE.COM:80/r%20v/X?id=123', 'http://example.com/r%20v/X'],
    ['https://www.example.net:8080/?q=1', 'https://www.example.net:8080/'],
    ['https://Example.COM:443/Hooks/AbC', 'https://example.com/Hooks/AbC'],
    ['http://example.com:443/a', 'http://example.com:443/a'],
    ['https://example.com:80/a', 'https://example.com:80/a'],
    ['http://127.0.0.1:3000/hooks/key?x=1#frag', 'http://127.0.0.1:3000/hooks/key'],
    ['http://example.com', 'http://example.com/'],
  ])('%s -> %s', (input, expected) => {
    expect(normaliseBaseUrl(new URL(input))).toBe(expected);
  });
});

/** Signs with oauth-1.0a (as the simulator does), then verifies as the receiver does. */
function roundTrip(
  signing: Partial<OAuthSigning> & { signatureMethod?: SignatureMethod },
  verify: { url?: string; method?: string; secrets?: string[]; now?: number; editHeader?: (h: string) => string } = {},
) {
  const signed: OAuthSigning = {
    clientIdentifier: 'skh_client',
    secret: 'current-secret',
    url: 'https://skyhook.example.com/hooks/key123?b=2&a=1&a=0&z=x%20y',
    rawBody: '{"id":"1","type":"rfqs","href":"https://api.example.com/api/rfqs/1","note":"Zürich ✈"}',
    ...signing,
  };
  let header = oauthAuthorization(signed);
  if (verify.editHeader) header = verify.editHeader(header);
  const parsed = readOAuthHeader(header);
  expect(parsed).not.toBeNull();
  const nowSeconds = verify.now ?? Math.floor(Date.now() / 1000);
  const result = verifyOAuthHeader(parsed!, { method: verify.method ?? 'POST', url: new URL(verify.url ?? signed.url) }, verify.secrets ?? ['current-secret'], {
    nowSeconds,
    skewSeconds: SKEW,
  });
  return { result, header, parsed: parsed!, signed };
}

const accepted = (result: ReturnType<typeof verifyOAuthHeader>): OAuthHeaderCheck => {
  expect(result).toMatchObject({ ok: true });
  return result as OAuthHeaderCheck;
};

describe.each(['HMAC-SHA1', 'HMAC-SHA256'] as const)('round trip with oauth-1.0a, %s with oauth_body_hash', (signatureMethod) => {
  // The fixture's default body hash: the signature method's own digest.
  const digest = signatureMethod === 'HMAC-SHA256' ? 'sha256' : 'sha1';
  it('accepts the signed request (query parameters included) and its body', () => {
    const { result, parsed, signed } = roundTrip({ signatureMethod });
    const check = accepted(result);
    expect(check.clientIdentifier).toBe('skh_client');
    expect(check.method).toBe(signatureMethod);
    expect(check.nonce).toBe(parsed.params.oauth_nonce);
    expect(check.timestamp).toBe(Number(parsed.params.oauth_timestamp));
    expect(check.bodyHash).toBe(bodyHash(digest, signed.rawBody));
    expect(bodyHashMatches(check, Buffer.from(signed.rawBody))).toBe(true);
  });

  it('accepts a header that carries a realm', () => {
    const { result, parsed } = roundTrip({ signatureMethod, realm: 'skyhook' });
    expect(parsed.params.realm).toBe('skyhook');
    accepted(result);
  });

  it('refuses a tampered body through the body hash', () => {
    const { result, signed } = roundTrip({ signatureMethod });
    const check = accepted(result);
    expect(bodyHashMatches(check, Buffer.from(signed.rawBody.replace('"id":"1"', '"id":"2"')))).toBe(false);
    expect(bodyHashMatches(check, Buffer.from(`${signed.rawBody} `))).toBe(false);
    expect(bodyHashMatches(check, Buffer.alloc(0))).toBe(false);
  });

  it('refuses a body hash swapped for the hash of another body (the signature covers it)', () => {
    const other = bodyHash(digest, '{"id":"evil"}');
    const { result } = roundTrip(
      { signatureMethod },
      { editHeader: (h) => h.replace(/oauth_body_hash="[^"]*"/, `oauth_body_hash="${encodeURIComponent(other)}"`) },
    );
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a wrong secret', () => {
    const { result } = roundTrip({ signatureMethod, secret: 'not-the-secret' });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('accepts the previous secret only when it is given', () => {
    expect(roundTrip({ signatureMethod, secret: 'old-secret' }, { secrets: ['current-secret', 'old-secret'] }).result).toMatchObject({ ok: true });
    expect(roundTrip({ signatureMethod, secret: 'old-secret' }, { secrets: ['current-secret'] }).result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses the signature for another URL, another query, another method', () => {
    const url = 'https://skyhook.example.com/hooks/key123?b=2&a=1&a=0&z=x%20y';
    expect(roundTrip({ signatureMethod, url }, { url: url.replace('key123', 'key124') }).result).toEqual({ ok: false, reason: 'bad_signature' });
    expect(roundTrip({ signatureMethod, url }, { url: url.replace('b=2', 'b=3') }).result).toEqual({ ok: false, reason: 'bad_signature' });
    expect(roundTrip({ signatureMethod, url }, { url: url.replace('https:', 'http:') }).result).toEqual({ ok: false, reason: 'bad_signature' });
    expect(roundTrip({ signatureMethod, url }, { method: 'PUT' }).result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('verifies against the normalised URL (case of scheme and host, default port)', () => {
    const { result } = roundTrip(
      { signatureMethod, url: 'https://skyhook.example.com/hooks/key123?a=1' },
      { url: 'HTTPS://SKYHOOK.EXAMPLE.COM:443/hooks/key123?a=1' },
    );
    accepted(result);
  });

  it('accepts a timestamp up to 300 s either side of now, and refuses 301 s', () => {
    const timestamp = 1_700_000_000;
    expect(roundTrip({ signatureMethod, timestamp }, { now: timestamp }).result).toMatchObject({ ok: true, timestamp });
    expect(roundTrip({ signatureMethod, timestamp }, { now: timestamp + SKEW }).result).toMatchObject({ ok: true });
    expect(roundTrip({ signatureMethod, timestamp }, { now: timestamp - SKEW }).result).toMatchObject({ ok: true });
    expect(roundTrip({ signatureMethod, timestamp }, { now: timestamp + SKEW + 1 }).result).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(roundTrip({ signatureMethod, timestamp }, { now: timestamp - SKEW - 1 }).result).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('tells "stale" only to the holder of the secret', () => {
    const timestamp = 1_700_000_000;
    expect(roundTrip({ signatureMethod, timestamp, secret: 'wrong' }, { now: timestamp + 10_000 }).result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses an oauth_token (the marketplace signs without one)', () => {
    const { result } = roundTrip({ signatureMethod, token: { key: 'kkk9d7dh3k39sjv7', secret: 'dh893hdasih9' } });
    expect(result).toEqual({ ok: false, reason: 'token_not_expected' });
  });
});

describe('the body hash each signature method takes (SPEC §4: SHA-1 always, SHA-256 with HMAC-SHA256 too)', () => {
  const matches = (check: OAuthHeaderCheck, body: string) => bodyHashMatches(check, Buffer.from(body));

  it('accepts a request signed by oauthlib 3.2.2 itself: HMAC-SHA256 with a SHA-1 body hash', () => {
    // Client('skh_client', client_secret='current-secret', signature_method=SIGNATURE_HMAC_SHA256, nonce=..., timestamp=...)
    //   .sign(url, 'POST', body, {'Content-Type': 'application/json'}), as requests-oauthlib calls it.
    const url = 'https://skyhook.example.com/hooks/key123?b=2&a=1';
    const body = '{"id":"rfq-1","type":"rfqs","href":"https://api.example.com/api/rfqs/rfq-1","note":"Zürich ✈"}';
    const header =
      'OAuth oauth_nonce="170000000012345678901234567", oauth_timestamp="1700000000", oauth_version="1.0", oauth_signature_method="HMAC-SHA256", oauth_consumer_key="skh_client", oauth_body_hash="mhw1UsFPFI%2B4so31PyKRLa8jeLY%3D", oauth_signature="JWDR8ERABoiuulGxPTKGw6hzf9xw4DpqtyIu3jnbrYU%3D"';
    const check = accepted(verifyOAuthHeader(readOAuthHeader(header)!, { method: 'POST', url: new URL(url) }, ['current-secret'], { nowSeconds: 1_700_000_000, skewSeconds: SKEW }));
    expect(check.method).toBe('HMAC-SHA256');
    expect(check.bodyHash).toBe(bodyHash('sha1', body));
    expect(matches(check, body)).toBe(true);
    expect(matches(check, body.replace('rfq-1', 'rfq-2'))).toBe(false);
  });

  it('accepts HMAC-SHA256 with a SHA-1 body hash signed as oauthlib does, and refuses another body', () => {
    const { result, signed } = roundTrip({ signatureMethod: 'HMAC-SHA256', bodyHashAlgorithm: 'sha1' });
    const check = accepted(result);
    expect(check.bodyHash).toBe(bodyHash('sha1', signed.rawBody));
    expect(matches(check, signed.rawBody)).toBe(true);
    expect(matches(check, `${signed.rawBody} `)).toBe(false);
  });

  it('still accepts HMAC-SHA256 with a SHA-256 body hash', () => {
    const { result, signed } = roundTrip({ signatureMethod: 'HMAC-SHA256', bodyHashAlgorithm: 'sha256' });
    const check = accepted(result);
    expect(check.bodyHash).toBe(bodyHash('sha256', signed.rawBody));
    expect(matches(check, signed.rawBody)).toBe(true);
  });

  it('refuses HMAC-SHA1 with a SHA-256 body hash, even over the right body', () => {
    const { result, signed } = roundTrip({ signatureMethod: 'HMAC-SHA1', bodyHashAlgorithm: 'sha256' });
    const check = accepted(result);
    expect(matches(check, signed.rawBody)).toBe(false);
  });

  it.each(['HMAC-SHA1', 'HMAC-SHA256'] as const)('refuses a wrong body hash with %s, whatever its length', (signatureMethod) => {
    const { result, signed } = roundTrip({ signatureMethod });
    const check = accepted(result);
    const body = Buffer.from(signed.rawBody);
    const sha256 = createHash('sha256').update(body).digest();
    for (const wrong of [
      bodyHash('sha1', 'another body'),
      bodyHash('sha256', 'another body'),
      // The right body's SHA-256 cut to SHA-1's length, and its SHA-1 cut short or padded.
      sha256.subarray(0, 20).toString('base64'),
      createHash('sha1').update(body).digest().subarray(0, 19).toString('base64'),
      Buffer.concat([createHash('sha1').update(body).digest(), Buffer.alloc(12)]).toString('base64'),
      createHash('sha512').update(body).digest('base64'),
      '',
      'not base64 at all',
    ]) {
      expect(bodyHashMatches({ ...check, bodyHash: wrong }, body), wrong).toBe(false);
    }
  });
});

describe('verifyOAuthHeader refuses', () => {
  it('a request signed without a body hash is accepted and its body is not checked', () => {
    const { result } = roundTrip({ includeBodyHash: false, rawBody: '' });
    const check = accepted(result);
    expect(check.bodyHash).toBeUndefined();
    expect(bodyHashMatches(check, Buffer.from('anything'))).toBe(true);
  });

  it.each(['PLAINTEXT', 'RSA-SHA1', 'HMAC-SHA512', 'hmac-sha1'])('the unsupported signature method %s', (method) => {
    const { result } = roundTrip({}, { editHeader: (h) => h.replace('oauth_signature_method="HMAC-SHA1"', `oauth_signature_method="${method}"`) });
    expect(result).toEqual({ ok: false, reason: 'unsupported_signature_method' });
  });

  // Names inherited from Object.prototype must not pass for supported methods (`in` sees them).
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])('the signature method %s without throwing', (method) => {
    const { header } = roundTrip({});
    const parsed = readOAuthHeader(header.replace('oauth_signature_method="HMAC-SHA1"', `oauth_signature_method="${method}"`))!;
    const verify = () =>
      verifyOAuthHeader(parsed, { method: 'POST', url: new URL('https://skyhook.example.com/hooks/key123?b=2&a=1&a=0&z=x%20y') }, ['current-secret'], {
        nowSeconds: Math.floor(Date.now() / 1000),
        skewSeconds: SKEW,
      });
    expect(verify).not.toThrow();
    expect(verify()).toEqual({ ok: false, reason: 'unsupported_signature_method' });
  });

  it.each([
    ['without oauth_signature', (h: string) => h.replace(/, oauth_signature="[^"]*"/, '')],
    ['without oauth_nonce', (h: string) => h.replace(/, oauth_nonce="[^"]*"/, '')],
    ['without oauth_timestamp', (h: string) => h.replace(/, oauth_timestamp="[^"]*"/, '')],
    ['without oauth_signature_method', (h: string) => h.replace(/, oauth_signature_method="[^"]*"/, '')],
    ['with a non-numeric timestamp', (h: string) => h.replace(/oauth_timestamp="[^"]*"/, 'oauth_timestamp="12e9"')],
    ['with another oauth_version', (h: string) => h.replace('oauth_version="1.0"', 'oauth_version="2.0"')],
    ['with a nonce longer than 256 characters', (h: string) => h.replace(/oauth_nonce="[^"]*"/, `oauth_nonce="${'n'.repeat(257)}"`)],
  ])('a header %s as malformed', (_what, edit) => {
    expect(roundTrip({}, { editHeader: edit }).result).toEqual({ ok: false, reason: 'malformed' });
  });

  it('an added parameter that was not signed', () => {
    const { result } = roundTrip({}, { editHeader: (h) => `${h}, oauth_callback="oob"` });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('a garbled signature', () => {
    const { result } = roundTrip({}, { editHeader: (h) => h.replace(/oauth_signature="[^"]*"/, 'oauth_signature="%21%21%21"') });
    expect(result).toEqual({ ok: false, reason: 'bad_signature' });
  });
});
