/**
 * The receiver's checks (SPEC §4) in the fast tier: buildApp over in-memory fakes, requests injected.
 * Each refusal is checked for its status, its problem, its challenge, and for storing nothing; the
 * integration tier (test/integration/receiver.test.ts) runs the same table against PostgreSQL and Redis.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { MAX_NOTIFICATION_BYTES } from '../../src/receiver/routes.js';
import { basicAuthorization, oauthAuthorization } from '../helpers/fixtures.js';
import { API_BASE_URL, PUBLIC_BASE_URL, unitApp, type Backstage, type FakeWebhook } from './support/app.js';

const BASIC_CHALLENGE = 'Basic realm="skyhook"';
const OAUTH_CHALLENGE = 'OAuth realm="skyhook"';

const basic: FakeWebhook = {
  webhookId: '11111111-1111-4111-8111-111111111111',
  companyId: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  clientIdentifier: 'basic-client',
  endpointKey: 'basic-key',
  authType: 'BASIC',
  secret: 'basic-secret-0123456789',
};
const oauth: FakeWebhook = {
  webhookId: '22222222-2222-4222-8222-222222222222',
  companyId: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  clientIdentifier: 'oauth-client',
  endpointKey: 'oauth-key',
  authType: 'OAUTH',
  secret: 'oauth-secret-0123456789',
};
const inactive: FakeWebhook = { ...basic, webhookId: '33333333-3333-4333-8333-333333333333', clientIdentifier: 'inactive-client', endpointKey: 'inactive-key', active: false };
const rotated: FakeWebhook = {
  ...basic,
  webhookId: '44444444-4444-4444-8444-444444444444',
  clientIdentifier: 'rotated-client',
  endpointKey: 'rotated-key',
  previousSecret: 'the-previous-secret-01',
  previousSecretExpiresAt: Date.now() + 60_000,
};
const expired: FakeWebhook = { ...rotated, webhookId: '55555555-5555-4555-8555-555555555555', clientIdentifier: 'expired-client', endpointKey: 'expired-key', previousSecretExpiresAt: Date.now() - 1 };

const notification = (extra: Record<string, unknown> = {}) => ({ id: 'rfq-1', type: 'rfqs', href: `${API_BASE_URL}/rfqs/rfq-1`, ...extra });

let app: FastifyInstance;
let backstage: Backstage;

beforeEach(async () => {
  ({ app, backstage } = await unitApp({ webhooks: [basic, oauth, inactive, rotated, expired] }));
});
afterEach(async () => app.close());

function post(path: string, opts: { authorization?: string; body?: string | Buffer; contentType?: string | null }) {
  const headers: Record<string, string> = {};
  if (opts.authorization) headers.authorization = opts.authorization;
  if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/json';
  return app.inject({ method: 'POST', url: path, headers, payload: opts.body ?? '' });
}

const sendBasic = (w: FakeWebhook, body: unknown, opts: { secret?: string; path?: string; contentType?: string | null; raw?: string | Buffer } = {}) =>
  post(opts.path ?? `/hooks/${w.endpointKey}`, {
    authorization: basicAuthorization(w.clientIdentifier, opts.secret ?? w.secret),
    body: opts.raw ?? JSON.stringify(body),
    contentType: opts.contentType,
  });

const sendOAuth = (w: FakeWebhook, body: unknown, opts: { path?: string; signedPath?: string; secret?: string; timestamp?: number; rawBody?: string; contentType?: string } = {}) => {
  const path = opts.path ?? `/hooks/${w.endpointKey}`;
  const signed = opts.rawBody ?? JSON.stringify(body);
  const authorization = oauthAuthorization({
    clientIdentifier: w.clientIdentifier,
    secret: opts.secret ?? w.secret,
    url: PUBLIC_BASE_URL + (opts.signedPath ?? path),
    rawBody: signed,
    timestamp: opts.timestamp,
  });
  return post(path, { authorization, body: JSON.stringify(body), contentType: opts.contentType });
};

function expectProblem(res: LightMyRequestResponse, status: number, challenge?: string): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json\b/);
  const body = res.json<Record<string, unknown>>();
  expect(body).toMatchObject({ type: 'about:blank', status, title: expect.any(String) });
  if (challenge) expect(res.headers['www-authenticate']).toBe(challenge);
  expect(backstage.rows, 'nothing stored').toEqual([]);
  return body;
}

describe('authentication comes first', () => {
  it('an unknown endpoint key, an unknown clientIdentifier and a wrong secret get the same 401', async () => {
    const answers = [
      await sendBasic({ ...basic, endpointKey: 'nobody' }, notification()),
      await sendBasic(basic, notification(), { secret: 'wrong' }),
      await sendBasic({ ...basic, clientIdentifier: 'nobody' }, notification(), { path: '/hooks' }),
    ];
    for (const res of answers) expect(expectProblem(res, 401, BASIC_CHALLENGE)).toMatchObject({ detail: 'The credentials were not accepted.', code: 'unauthorized' });
  });

  it('no credentials at all is a 401 asking for them', async () => {
    expect(expectProblem(await post('/hooks/basic-key', { body: JSON.stringify(notification()) }), 401, BASIC_CHALLENGE).detail).toBe('Credentials are required.');
  });

  it('a wrong secret with a text/plain body over 256 KiB is still a 401: credentials before the body', async () => {
    const res = await sendBasic(basic, undefined, { secret: 'wrong', raw: 'x'.repeat(MAX_NOTIFICATION_BYTES + 10), contentType: 'text/plain' });
    expectProblem(res, 401, BASIC_CHALLENGE);
  });

  it("another webhook's clientIdentifier with its right secret on this endpoint key is a 401", async () => {
    expectProblem(await sendBasic({ ...rotated, endpointKey: basic.endpointKey }, notification()), 401, BASIC_CHALLENGE);
  });

  it('a Basic webhook receiving OAuth, and an OAuth webhook receiving Basic, are 401s', async () => {
    expectProblem(await sendOAuth({ ...basic, authType: 'OAUTH' }, notification()), 401, OAUTH_CHALLENGE);
    expectProblem(await sendBasic(oauth, notification()), 401, BASIC_CHALLENGE);
  });

  it('the previous secret counts inside its grace period only', async () => {
    expect((await sendBasic(rotated, notification(), { secret: rotated.previousSecret })).statusCode).toBe(200);
    backstage.rows.length = 0;
    expectProblem(await sendBasic(expired, notification(), { secret: expired.previousSecret }), 401, BASIC_CHALLENGE);
  });

  it('webhooks are looked up once, then served from the cache', async () => {
    await sendBasic(basic, notification());
    await sendBasic(basic, notification());
    expect(backstage.lookups).toBe(1);
  });
});

describe('OAuth 1.0a', () => {
  it('a request signed as the marketplace signs it is stored, on the own and the shared targetURI', async () => {
    expect((await sendOAuth(oauth, notification())).statusCode).toBe(200);
    expect((await sendOAuth(oauth, notification(), { path: '/hooks' })).statusCode).toBe(200);
    expect(backstage.rows.map((r) => [r.webhookId, r.authenticatedBy])).toEqual([
      [oauth.webhookId, 'oauth'],
      [oauth.webhookId, 'oauth'],
    ]);
  });

  it('a signature over another URL, or with another secret, is a 401 with the OAuth challenge', async () => {
    expectProblem(await sendOAuth(oauth, notification(), { signedPath: '/hooks' }), 401, OAUTH_CHALLENGE);
    expectProblem(await sendOAuth(oauth, notification(), { secret: 'not-the-secret' }), 401, OAUTH_CHALLENGE);
  });

  it('a timestamp more than 300 s away is a 401 that says so', async () => {
    const res = await sendOAuth(oauth, notification(), { timestamp: Math.floor(Date.now() / 1000) - 400 });
    expect(expectProblem(res, 401, OAUTH_CHALLENGE).detail).toBe('The OAuth timestamp is outside the accepted window.');
  });

  it('a replayed request (same header) is refused the second time', async () => {
    const raw = JSON.stringify(notification());
    const authorization = oauthAuthorization({ clientIdentifier: oauth.clientIdentifier, secret: oauth.secret, url: `${PUBLIC_BASE_URL}/hooks/${oauth.endpointKey}`, rawBody: raw });
    expect((await post('/hooks/oauth-key', { authorization, body: raw })).statusCode).toBe(200);
    backstage.rows.length = 0;
    expect(expectProblem(await post('/hooks/oauth-key', { authorization, body: raw }), 401, OAUTH_CHALLENGE).detail).toBe('The OAuth nonce was already used.');
  });

  it('a body other than the one signed is a 401, before its Content-Type is looked at', async () => {
    expectProblem(await sendOAuth(oauth, notification({ id: 'changed' }), { rawBody: JSON.stringify(notification()) }), 401, OAUTH_CHALLENGE);
    expectProblem(await sendOAuth(oauth, notification({ id: 'changed' }), { rawBody: JSON.stringify(notification()), contentType: 'text/plain' }), 401, OAUTH_CHALLENGE);
  });

  it('a malformed OAuth header is a 401 that says so', async () => {
    expect(expectProblem(await post('/hooks/oauth-key', { authorization: 'OAuth garbage', body: '{}' }), 401, OAUTH_CHALLENGE).detail).toBe('The OAuth header is malformed.');
  });

  it('without the nonce store, a signed request is a 503 with Retry-After (a replay cannot be ruled out)', async () => {
    backstage.nonceStoreDown = true;
    const res = await sendOAuth(oauth, notification());
    expect(expectProblem(res, 503)).toMatchObject({ code: 'nonce_store_unavailable' });
    expect(res.headers['retry-after']).toBe('5');
    // Said once, with its cause, and counted.
    expect(backstage.logLines.filter((l) => l.kind === 'nonce_store')).toEqual([expect.objectContaining({ err: expect.stringContaining('Redis'), level: 40 })]);
    expect((await backstage.metrics.registry.getSingleMetric('skyhook_errors_total')!.get()).values).toContainEqual(expect.objectContaining({ labels: { kind: 'nonce_store' }, value: 1 }));
  });
});

describe('the body', () => {
  it('a Content-Type other than JSON is a 415, a missing one too; a charset parameter is fine', async () => {
    expectProblem(await sendBasic(basic, notification(), { contentType: 'text/plain' }), 415);
    expectProblem(await sendBasic(basic, notification(), { contentType: null }), 415);
    expect((await sendBasic(basic, notification(), { contentType: 'application/json; charset=utf-8' })).statusCode).toBe(200);
  });

  it('over 256 KiB is a 413; exactly 256 KiB is stored', async () => {
    const padded = (bytes: number) => {
      const base = JSON.stringify(notification({ pad: '' }));
      return JSON.stringify(notification({ pad: 'x'.repeat(bytes - Buffer.byteLength(base)) }));
    };
    expectProblem(await sendBasic(basic, undefined, { raw: padded(MAX_NOTIFICATION_BYTES + 1) }), 413);
    expect((await sendBasic(basic, undefined, { raw: padded(MAX_NOTIFICATION_BYTES) })).statusCode).toBe(200);
  });

  it.each([
    ['empty', '', /empty/],
    ['not JSON', '{"id":', /not valid JSON/i],
    ['an array', '[]', /JSON object/],
    ['without href', JSON.stringify({ id: 'r', type: 'rfqs' }), /not valid/],
    ['with a NUL character', JSON.stringify(notification({ note: 'a\u0000b' })), /NUL|stor/i],
  ])('a body %s is a 400 problem naming what is wrong', async (_name, raw, detail) => {
    const body = expectProblem(await sendBasic(basic, undefined, { raw }), 400);
    expect(String(body.detail)).toMatch(detail);
  });

  it('the 400 lists each field that is wrong', async () => {
    const body = expectProblem(await sendBasic(basic, { id: '', type: 7 }), 400);
    expect(body.errors).toEqual([
      { field: 'id', message: 'must be a non-empty string' },
      { field: 'type', message: 'must be a non-empty string' },
      { field: 'href', message: 'must be a non-empty string' },
    ]);
  });

  it("an href off the company's API (host, path, scheme, credentials) is a 422, after the body is found valid", async () => {
    for (const href of ['https://evil.example/v1/rfqs/1', 'https://api.marketplace.example/v2/rfqs/1', 'http://api.marketplace.example/v1/rfqs/1', 'https://u:p@api.marketplace.example/v1/rfqs/1']) {
      expect(expectProblem(await sendBasic(basic, notification({ href })), 422)).toMatchObject({ code: 'href_out_of_scope', errors: [{ field: 'href' }] });
    }
    expectProblem(await sendBasic(basic, { id: '', type: 'rfqs', href: 'https://evil.example/' }), 400);
  });
});

describe('storing', () => {
  it('answers 200 {status: received, id} with the row committed as sent, and its job asked for', async () => {
    const sent = notification({ extra: { kept: true } });
    const res = await sendBasic(basic, sent);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'received', id: '1' });
    expect(backstage.rows).toEqual([
      expect.objectContaining({ id: 1, status: 'queued', companyId: basic.companyId, webhookId: basic.webhookId, resourceId: 'rfq-1', type: 'rfqs', authenticatedBy: 'basic', bodyJson: JSON.stringify(sent) }),
    ]);
    expect(backstage.queued).toEqual([1]);
  });

  it('a deactivated webhook is acknowledged 200 discarded, and nothing is fetched', async () => {
    const res = await sendBasic(inactive, notification());
    expect(res.json()).toEqual({ status: 'discarded', id: '1' });
    expect(backstage.rows.map((r) => r.status)).toEqual(['discarded']);
    expect(backstage.queued).toEqual([]);
  });

  it('a database that cannot commit is a 503 with Retry-After, never a 200', async () => {
    await sendBasic(basic, notification()); // cached: the failure is the commit's
    backstage.rows.length = 0;
    backstage.databaseDown = true;
    const res = await sendBasic(basic, notification());
    expect(expectProblem(res, 503)).toMatchObject({ code: 'database_unavailable' });
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('a database that cannot look the webhook up is a 503 too, not a 401', async () => {
    backstage.databaseDown = true;
    expectProblem(await sendBasic(basic, notification()), 503);
    expectProblem(await sendOAuth(oauth, notification()), 503);
  });

  it('counts each answer by outcome, across companies (no series per company)', async () => {
    await sendBasic(basic, notification());
    await sendBasic(basic, notification(), { secret: 'wrong' });
    const counted = (await backstage.metrics.received.get()).values.map((v) => [v.labels, v.value]);
    expect(counted).toEqual(expect.arrayContaining([[{ outcome: 'stored' }, 1], [{ outcome: '401' }, 1]]));
  });
});

describe('before the database is ready', () => {
  it('a notification is a 503 `starting`, with Retry-After', async () => {
    backstage.started = false;
    const res = await sendBasic(basic, notification());
    expect(expectProblem(res, 503)).toMatchObject({ code: 'starting' });
    expect(backstage.lookups).toBe(0);
  });
});
