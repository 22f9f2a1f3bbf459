/**
 * What a trace may show of an href (SPEC §15, §10): `url.full` is the href as received, but credentials and
 * the values of token and signature parameters never leave the process (the semantic conventions' REDACTED).
 */
import { describe, expect, it } from 'vitest';
import { urlForSpan } from '../../src/lib/tracing-otel.js';

describe('an href in a span', () => {
  it('is the href exactly as received when it holds nothing secret', () => {
    const href = 'https://api.example.com/api/rfqs/r-1?expand=legs&page=2';
    expect(urlForSpan(href)).toBe(href);
  });

  it('loses its credentials and the values of OAuth, token and signature parameters', () => {
    expect(urlForSpan('https://user:pass@api.example.com/api/rfqs/1')).toBe('https://REDACTED:REDACTED@api.example.com/api/rfqs/1');
    const redacted = urlForSpan('https://api.example.com/api/rfqs/1?oauth_signature=abc&oauth_token=t0k&access_token=xyz&X-Amz-Signature=s1g&expand=legs');
    expect(redacted).not.toMatch(/abc|t0k|xyz|s1g/);
    expect(new URL(redacted).searchParams.get('oauth_signature')).toBe('REDACTED');
    expect(new URL(redacted).searchParams.get('expand')).toBe('legs');
  });

  it('is not shown at all when it is not a URL', () => {
    expect(urlForSpan('not a url with a secret')).toBe('REDACTED');
  });
});
