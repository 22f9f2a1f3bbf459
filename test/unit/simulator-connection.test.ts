/**
 * The simulator's side of the marketplace connection (SPEC §14), over plain HTTP as any client would call
 * it: each company's profile checked on every call, the OAuth token endpoint with short-lived tokens, and
 * the reset that forgets a company's webhook settings (the sandbox wipe).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatorInputError, startSimulator, type Simulator } from '../../src/simulator/index.js';

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let sim: Simulator | undefined;
afterEach(async () => sim?.stop());

const AVINODE = { id: 'acme', profile: 'avinode' as const, token: 'api-acme-0123', authToken: 'auth-acme-0123' };

const avinodeHeaders = (overrides: Record<string, string | undefined> = {}) =>
  Object.fromEntries(
    Object.entries({
      authorization: 'Bearer auth-acme-0123',
      'x-avinode-apitoken': 'api-acme-0123',
      'x-avinode-senttimestamp': new Date().toISOString(),
      'x-avinode-product': 'Test Suite 1.0',
      ...overrides,
    }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );

async function get(path: string, headers: Record<string, string>) {
  const response = await fetch(`${sim!.apiBaseUrl}${path}`, { headers });
  return { status: response.status, body: (await response.json()) as Json };
}

async function token(form: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(`${sim!.apiBaseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

describe('the avinode profile', () => {
  it('accepts a call with every header, and refuses each one missing or wrong as the real marketplace does', async () => {
    sim = await startSimulator({ companies: [AVINODE] });
    expect((await get('/webhooks/settings', avinodeHeaders())).status).toBe(200);
    const refusals: [Record<string, string | undefined>, number, string][] = [
      [{ 'x-avinode-senttimestamp': undefined }, 400, 'missing_sent_timestamp'],
      [{ 'x-avinode-senttimestamp': 'yesterday' }, 400, 'invalid_sent_timestamp'],
      [{ 'x-avinode-senttimestamp': '2026-11-24T10:00:00+01:00' }, 400, 'invalid_sent_timestamp'],
      [{ 'x-avinode-senttimestamp': new Date(Date.now() - 3_600_000).toISOString() }, 400, 'invalid_sent_timestamp'],
      [{ 'x-avinode-product': undefined }, 400, 'missing_product'],
      [{ 'x-avinode-apitoken': 'someone-else' }, 401, 'invalid_api_token'],
      [{ authorization: 'Bearer api-acme-0123' }, 401, 'unauthorized'],
    ];
    for (const [overrides, status, code] of refusals) {
      const answer = await get('/webhooks/settings', avinodeHeaders(overrides));
      expect([answer.status, answer.body.meta.errors[0].code], JSON.stringify(overrides)).toEqual([status, code]);
    }
    // Recorded with the company its bearer token named, so a test can tell what was refused and why.
    expect(sim.report().apiCalls.filter((c) => c.status !== 200).every((c) => c.companyId === 'acme' || c.companyId === null)).toBe(true);
  });

  it('a bearer company is not asked for the avinode headers', async () => {
    sim = await startSimulator({ companies: [{ id: 'globex', token: 'globex-token-0123' }] });
    expect((await get('/webhooks/settings', { authorization: 'Bearer globex-token-0123' })).status).toBe(200);
  });
});

describe('the OAuth token endpoint', () => {
  it('issues short-lived bearer tokens for client credentials, in the form or by HTTP Basic, which stop working when they expire', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', clientId: 'acme-client', clientSecret: 'acme-secret:0123' }], tokenLifetimeS: 1 });
    const inForm = await token({ grant_type: 'client_credentials', client_id: 'acme-client', client_secret: 'acme-secret:0123' });
    expect(inForm).toMatchObject({ status: 200, body: { token_type: 'Bearer', expires_in: 1, access_token: expect.stringMatching(/^at_/) } });
    const basic = `Basic ${Buffer.from(`acme-client:${encodeURIComponent('acme-secret:0123')}`).toString('base64')}`;
    const byBasic = await token({ grant_type: 'client_credentials' }, { authorization: basic });
    expect(byBasic.status).toBe(200);
    const bearer = { authorization: `Bearer ${inForm.body.access_token}` };
    expect((await get('/webhooks/settings', bearer)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const expired = await get('/webhooks/settings', bearer);
    expect([expired.status, expired.body.meta.errors[0].code]).toEqual([401, 'token_expired']);
  });

  it('refuses wrong credentials and grants, with OAuth error answers; records every request; can be revoked or taken down', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', clientId: 'acme-client', clientSecret: 'acme-secret-0123' }] });
    expect(await token({ grant_type: 'client_credentials', client_id: 'acme-client', client_secret: 'nope' })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await token({ grant_type: 'password', client_id: 'acme-client', client_secret: 'acme-secret-0123' })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    const issued = await token({ grant_type: 'client_credentials', client_id: 'acme-client', client_secret: 'acme-secret-0123' });
    expect(sim.revokeTokens('acme')).toEqual({ revoked: 1 });
    expect((await get('/webhooks/settings', { authorization: `Bearer ${issued.body.access_token}` })).status).toBe(401);
    sim.setFaults({ tokenEndpointDown: true });
    expect((await token({ grant_type: 'client_credentials', client_id: 'acme-client', client_secret: 'acme-secret-0123' })).status).toBe(503);
    const report = sim.report();
    expect(report.calls.tokens).toBe(4);
    expect(report.tokens.map((t) => [t.companyId, t.status])).toEqual([
      [null, 401],
      [null, 400],
      ['acme', 200],
      [null, 503],
    ]);
  });

  it('an avinode company asks its token request for the profile headers too', async () => {
    sim = await startSimulator({ companies: [{ id: 'acme', profile: 'avinode', token: 'api-acme-0123', clientId: 'acme-client', clientSecret: 'acme-secret-0123' }] });
    const form = { grant_type: 'client_credentials', client_id: 'acme-client', client_secret: 'acme-secret-0123' };
    expect(await token(form)).toMatchObject({ status: 401, body: { error: 'invalid_request' } });
    const headers = { 'x-avinode-apitoken': 'api-acme-0123', 'x-avinode-senttimestamp': new Date().toISOString(), 'x-avinode-product': 'Test Suite 1.0' };
    const issued = await token(form, headers);
    expect(issued.status).toBe(200);
    expect((await get('/webhooks/settings', { ...headers, authorization: `Bearer ${issued.body.access_token}` })).status).toBe(200);
  });
});

describe('companies and the sandbox wipe', () => {
  it('refuses accounts that cannot authenticate, naming the field', async () => {
    sim = await startSimulator();
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ id: 'a' }, /^token: is required/],
      [{ id: 'a', profile: 'avinode', authToken: 'x' }, /^token: is required by the avinode profile/],
      [{ id: 'a', profile: 'avinode', token: 'x' }, /^authToken: is required by the avinode profile/],
      [{ id: 'a', token: 'x', authToken: 'y' }, /^authToken: is only used by the avinode profile/],
      [{ id: 'a', token: 'x', clientId: 'c' }, /^clientSecret: clientId and clientSecret go together/],
    ];
    for (const [account, message] of bad) {
      const error = (() => {
        try {
          sim!.addCompany(account as never);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error, JSON.stringify(account)).toBeInstanceOf(SimulatorInputError);
      expect((error as Error).message).toMatch(message);
    }
    const control = await fetch(`${sim.url}/_sim/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'b', profile: 'avinode' }) });
    expect(control.status).toBe(400);
  });

  it('reset forgets the company’s webhook settings, and only its own', async () => {
    sim = await startSimulator({ companies: [AVINODE, { id: 'globex', token: 'globex-token-0123' }] });
    const create = (headers: Record<string, string>, clientIdentifier: string) =>
      fetch(`${sim!.apiBaseUrl}/webhooks/settings`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ targetURI: 'http://127.0.0.1:9/hooks/x', displayName: 'x', active: true, clientIdentifier, clientSecret: 'a-client-secret-of-32-characters', clientAuthenticationType: 'BASIC', eventTypes: ['TripRequest'] }),
      });
    expect((await create(avinodeHeaders(), 'acme-1')).status).toBe(200);
    expect((await create({ authorization: 'Bearer globex-token-0123' }, 'globex-1')).status).toBe(200);
    const reset = await fetch(`${sim.url}/_sim/companies/acme/reset`, { method: 'POST' });
    expect(await reset.json()).toEqual({ forgotten: 1 });
    expect((await get('/webhooks/settings', avinodeHeaders())).body.data).toEqual([]);
    expect((await get('/webhooks/settings', { authorization: 'Bearer globex-token-0123' })).body.data).toHaveLength(1);
    // Its clientIdentifier is free again, as on a wiped sandbox.
    expect((await create(avinodeHeaders(), 'acme-1')).status).toBe(200);
    expect((await fetch(`${sim.url}/_sim/companies/nobody/reset`, { method: 'POST' })).status).toBe(400);
  });
});
