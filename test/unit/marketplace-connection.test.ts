/**
 * The marketplace connection (SPEC §14) in the fast tier: the profiles' headers, the OAuth token cache
 * (single-flight, renewal before expiry, one new token per 401), the token endpoint's answers read into
 * errors, and the client against the simulator, which checks the headers of each company's profile.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MarketplaceClient, MarketplaceError, readTokenAnswer } from '../../src/marketplace/client.js';
import { actAsAccountHeader, callHeaders, DEFAULT_PRODUCT, tokenRequestHeaders, type ApiConnection } from '../../src/marketplace/connection.js';
import { rfqActionPath } from '../../src/marketplace/contract.js';
import { LEADS_PATH } from '../../src/marketplace/leads.js';
import { AccessTokens, type OAuthConnection } from '../../src/marketplace/oauth2.js';
import { webhookSettingsApi } from '../../src/marketplace/webhook-settings.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { clientSearchLead, tailQuote } from '../fixtures/requests.js';

const NOW = new Date('2026-11-24T10:00:00.000Z');

describe('the headers of each profile, from one place', () => {
  it('bearer (the default): only Authorization, with the API token', () => {
    expect(callHeaders({ baseUrl: 'x', profile: 'bearer', apiToken: 'api-1' }, 'api-1', NOW)).toEqual({ Authorization: 'Bearer api-1' });
    expect(actAsAccountHeader('bearer')).toBe('X-Service-ActAsAccount');
  });

  it('avinode: the auth token as bearer, the API token, the sent timestamp in UTC, the product, and the API version only when configured', () => {
    const conn: ApiConnection = { baseUrl: 'x', profile: 'avinode', apiToken: 'api-1', authToken: 'auth-1', product: 'Acme Ops 2.1' };
    expect(callHeaders(conn, 'auth-1', NOW)).toEqual({
      Authorization: 'Bearer auth-1',
      'X-Avinode-ApiToken': 'api-1',
      'X-Avinode-SentTimestamp': '2026-11-24T10:00:00.000Z',
      'X-Avinode-Product': 'Acme Ops 2.1',
    });
    expect(callHeaders({ ...conn, product: undefined, apiVersion: 'v1.0' }, 'auth-1', NOW)).toMatchObject({ 'X-Avinode-Product': DEFAULT_PRODUCT, 'X-Avinode-ApiVersion': 'v1.0' });
    expect(DEFAULT_PRODUCT).toMatch(/^Skyhook \d+\.\d+\.\d+$/);
    expect(actAsAccountHeader('avinode')).toBe('X-Avinode-ActAsAccount');
    // The token request of an avinode connection identifies the application too, without Authorization.
    expect(Object.keys(tokenRequestHeaders(conn, NOW)).sort()).toEqual(['X-Avinode-ApiToken', 'X-Avinode-Product', 'X-Avinode-SentTimestamp']);
    expect(tokenRequestHeaders({ baseUrl: 'x', profile: 'bearer' }, NOW)).toEqual({});
  });
});

describe('the OAuth access token cache', () => {
  const conn = (revision = 1, clientSecret = 's3cret'): OAuthConnection => ({
    baseUrl: 'x',
    companyId: 'c1',
    revision,
    profile: 'bearer',
    oauth: { tokenUrl: 'https://auth.example/token', clientId: 'client-1', clientSecret },
  });

  it('gets one token for any number of callers at once (single-flight), then serves it from the cache', async () => {
    const tokens = new AccessTokens();
    let requests = 0;
    let release: () => void = () => {};
    const request = () => {
      requests++;
      return new Promise<{ value: string; lifetimeS: number }>((resolve) => (release = () => resolve({ value: `t${requests}`, lifetimeS: 600 })));
    };
    const waiting = Promise.all(Array.from({ length: 50 }, () => tokens.get(conn(), request)));
    release();
    expect(new Set(await waiting)).toEqual(new Set(['t1']));
    expect(await tokens.get(conn(), request)).toBe('t1');
    expect(requests).toBe(1);
  });

  it('renews a token shortly before it expires: a tenth of its lifetime, at most a minute', async () => {
    let now = 0;
    const tokens = new AccessTokens(() => now);
    let n = 0;
    const request = async () => ({ value: `t${++n}`, lifetimeS: 10 });
    expect(await tokens.get(conn(), request)).toBe('t1');
    now = 8_900;
    expect(await tokens.get(conn(), request)).toBe('t1');
    now = 9_001; // 10 s lifetime, renewed 1 s early
    expect(await tokens.get(conn(), request)).toBe('t2');
    const long = new AccessTokens(() => now);
    await long.get(conn(), async () => ({ value: 'hour', lifetimeS: 3600 }));
    now += 3_539_000;
    expect(await long.get(conn(), async () => ({ value: 'next', lifetimeS: 3600 }))).toBe('hour');
    now += 2_000; // within the last minute
    expect(await long.get(conn(), async () => ({ value: 'next', lifetimeS: 3600 }))).toBe('next');
  });

  it('forgets a refused token once: ten 401s with the same token cost one new token', async () => {
    const tokens = new AccessTokens();
    let n = 0;
    const request = async () => ({ value: `t${++n}`, lifetimeS: 600 });
    const refused = await tokens.get(conn(), request);
    for (let i = 0; i < 10; i++) tokens.invalidate(conn(), refused);
    const fresh = await Promise.all(Array.from({ length: 10 }, () => tokens.get(conn(), request)));
    expect(new Set(fresh)).toEqual(new Set(['t2']));
    tokens.invalidate(conn(), refused); // a late 401 of the old token leaves the new one alone
    expect(await tokens.get(conn(), request)).toBe('t2');
    expect(n).toBe(2);
  });

  it('never serves a token of replaced credentials, and does not cache a failed request', async () => {
    const tokens = new AccessTokens();
    let n = 0;
    const request = async () => ({ value: `t${++n}`, lifetimeS: 600 });
    expect(await tokens.get(conn(1), request)).toBe('t1');
    expect(await tokens.get(conn(2), request)).toBe('t2');
    expect(await tokens.get(conn(2, 'rotated'), request)).toBe('t3');
    await expect(tokens.get(conn(3), async () => Promise.reject(new Error('token endpoint down')))).rejects.toThrow('token endpoint down');
    expect(await tokens.get(conn(3), request)).toBe('t4');
  });
});

describe("the token endpoint's answers", () => {
  const what = 'the token request to https://auth.example/token';
  it('reads a token and its lifetime, with a default when expires_in is missing', () => {
    expect(readTokenAnswer(200, JSON.stringify({ access_token: 'abc', token_type: 'Bearer', expires_in: 1800 }), what)).toEqual({ value: 'abc', lifetimeS: 1800 });
    expect(readTokenAnswer(200, JSON.stringify({ access_token: 'abc', token_type: 'bearer' }), what)).toEqual({ value: 'abc', lifetimeS: 300 });
  });

  it('a refusal keeps the OAuth error code and description; a 5xx or 429 is worth asking again; a 200 without a token is a refusal', () => {
    const refused = readTokenAnswer(401, JSON.stringify({ error: 'invalid_client', error_description: 'unknown client or wrong client secret' }), what) as MarketplaceError;
    expect([refused.kind, refused.status, refused.mayHaveActed]).toEqual(['token_refused', 401, false]);
    expect(refused.message).toBe(`${what} was refused (401): unknown client or wrong client secret (invalid_client)`);
    expect(refused.errors).toEqual([{ message: 'unknown client or wrong client secret', code: 'invalid_client', field: 'connection' }]);
    expect((readTokenAnswer(503, 'down', what) as MarketplaceError).kind).toBe('token_unavailable');
    expect((readTokenAnswer(429, '', what) as MarketplaceError).kind).toBe('token_unavailable');
    expect((readTokenAnswer(200, '<html>login</html>', what) as MarketplaceError).kind).toBe('token_refused');
    expect((readTokenAnswer(200, JSON.stringify({ access_token: 'x', token_type: 'mac' }), what) as MarketplaceError).kind).toBe('token_refused');
  });
});

describe('the client against the simulator, profile by profile', () => {
  let sim: Simulator | undefined;
  afterEach(async () => sim?.stop());

  it('avinode with a fixed auth token: every call is accepted, and a quote acts as the user in the avinode header', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', profile: 'avinode', token: 'api-acme-0123', authToken: 'auth-acme-0123' }] });
    const conn: ApiConnection = { baseUrl: sim.apiBaseUrl, profile: 'avinode', apiToken: 'api-acme-0123', authToken: 'auth-acme-0123', apiVersion: 'v1.0' };
    const client = new MarketplaceClient({ timeoutMs: 2000 });
    expect(await webhookSettingsApi(client).list(conn)).toEqual([]);
    await client.call(conn, 'POST', LEADS_PATH, { body: clientSearchLead('avinode-lead') });
    await client.call(conn, 'POST', rfqActionPath('submitQuote', 'lift-1'), { body: tailQuote('avinode-quote-1'), actAsAccount: 'jane.pilot' });
    const report = sim.report();
    expect(report.quotes.map((q) => q.actAsAccount)).toEqual(['jane.pilot']);
    expect(report.apiCalls.map((c) => [c.companyId, c.status, c.product, c.apiVersion])).toEqual([
      ['acme', 200, DEFAULT_PRODUCT, 'v1.0'],
      ['acme', 200, DEFAULT_PRODUCT, 'v1.0'],
      ['acme', 200, DEFAULT_PRODUCT, 'v1.0'],
    ]);
    // A bearer-profile client (no avinode headers) is refused by this company, as the real marketplace would.
    const bare = await client.call({ baseUrl: sim.apiBaseUrl, profile: 'bearer', apiToken: 'auth-acme-0123' }, 'GET', '/webhooks/settings').catch((e: unknown) => e);
    expect(bare).toMatchObject({ kind: 'http', status: 401 });
  });

  it('OAuth client credentials: one token for many calls at once; a revoked token is replaced once and the call retried', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', clientId: 'acme-client', clientSecret: 'acme-secret-0123' }], tokenLifetimeS: 600 });
    const conn: ApiConnection = { baseUrl: sim.apiBaseUrl, companyId: 'c-acme', revision: 1, profile: 'bearer', oauth: { tokenUrl: `${sim.apiBaseUrl}/oauth/token`, clientId: 'acme-client', clientSecret: 'acme-secret-0123' } };
    const api = webhookSettingsApi(new MarketplaceClient({ timeoutMs: 2000 }));
    await Promise.all(Array.from({ length: 20 }, () => api.list(conn)));
    expect(sim.report().calls.tokens).toBe(1);
    sim.revokeTokens('acme');
    await Promise.all(Array.from({ length: 20 }, () => api.list(conn)));
    expect(sim.report().calls.tokens).toBe(2);
    expect(sim.report().apiCalls.filter((c) => c.status === 401).length).toBeGreaterThan(0);
  });

  it('OAuth client credentials the token endpoint refuses: a token_refused error naming its code; nothing sent to the API', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', clientId: 'acme-client', clientSecret: 'acme-secret-0123' }] });
    const conn: ApiConnection = { baseUrl: sim.apiBaseUrl, profile: 'bearer', oauth: { tokenUrl: `${sim.apiBaseUrl}/oauth/token`, clientId: 'acme-client', clientSecret: 'wrong-secret' } };
    const err = (await new MarketplaceClient({ timeoutMs: 2000 }).call(conn, 'POST', LEADS_PATH, { body: clientSearchLead('x') }).catch((e: unknown) => e)) as MarketplaceError;
    expect([err.kind, err.mayHaveActed, err.errors[0]?.code]).toEqual(['token_refused', false, 'invalid_client']);
    expect(err.message).not.toContain('wrong-secret');
    expect(sim.report().calls.leads).toBe(0);
  });
});
