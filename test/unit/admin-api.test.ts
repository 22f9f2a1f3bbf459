/**
 * The admin API's own behaviour in the fast tier: the token, input validation (a 400 naming each field,
 * before any service is called), how service answers and refusals become HTTP answers. The services are
 * fakes; the integration tier runs the same routes against PostgreSQL (test/integration/admin.test.ts).
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { Problem } from '../../src/lib/problem.js';
import type { CompanyView } from '../../src/services/views.js';
import { ADMIN_TOKEN, unitApp, type FakeServices } from './support/app.js';

const COMPANY_ID = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const company: CompanyView = {
  id: COMPANY_ID,
  name: 'Acme Charter',
  apiBaseUrl: 'https://api.marketplace.example/v1',
  state: { status: 'ok', since: null, until: null, reason: null },
  fetches: { limit: 64, ownLimit: null, limitNow: 64, running: 0, parked: 0 },
  connectionStatus: 'ok',
  connectionError: null,
  connection: { profile: 'bearer', product: null, apiVersion: null, tokenUrl: null, clientId: null, clientSecretExpiresAt: null, baseUrls: [], storedSecrets: ['apiToken'] },
  credentials: { status: 'accepted', checkedAt: '2026-11-24T10:00:00.000Z', error: null },
  connectionLastUsedAt: null,
  connectionWarnings: [],
  createdAt: '2026-11-24T10:00:00.000Z',
  updatedAt: '2026-11-24T10:00:00.000Z',
};

let app: FastifyInstance | undefined;
afterEach(async () => app?.close());

async function admin(services: FakeServices = {}) {
  ({ app } = await unitApp({ services }));
  return (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = {}) =>
    app!.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers }, ...(body !== undefined ? { payload: body as string } : {}) });
}

const problem = (res: { statusCode: number; headers: Record<string, unknown>; json: () => unknown }, status: number) => {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  return res.json() as { detail: string; code?: string; errors?: { field: string; message: string }[] };
};

describe('the admin token', () => {
  it('is required: none, a wrong one, or Basic credentials are a 401 with the Bearer challenge', async () => {
    const call = await admin({ companies: { list: async () => ({ items: [company], nextCursor: null }) } });
    for (const authorization of ['', 'Bearer wrong', `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}`]) {
      const res = await call('GET', '/admin/companies', undefined, { authorization });
      expect(problem(res, 401).code).toBe('unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="skyhook"');
    }
    expect((await call('GET', '/admin/companies')).json()).toEqual({ items: [company], nextCursor: null });
  });
});

describe('input validation', () => {
  it('a new company with missing and wrong fields is a 400 naming each, and nothing is created', async () => {
    let created = 0;
    const call = await admin({ companies: { create: async () => (created++, company) } });
    const res = await call('POST', '/admin/companies', { name: '', apiToken: 7, extra: true });
    const body = problem(res, 400);
    expect(body.code).toBe('invalid_input');
    expect(body.errors?.map((e) => e.field)).toEqual(expect.arrayContaining(['body.name', 'body.apiBaseUrl', 'body.apiToken']));
    expect(created).toBe(0);
  });

  it('a NUL character is a 400, in a body or in a filter (naming it), not a 500', async () => {
    const call = await admin({ companies: { create: async () => company }, notifications: { list: async () => ({ items: [], nextCursor: null }) } });
    expect(problem(await call('POST', '/admin/companies', { name: 'A\u0000B', apiBaseUrl: 'https://x.example', apiToken: 't' }), 400).detail).toMatch(/NUL/);
    const body = problem(await call('GET', '/admin/notifications?type=a%00b'), 400);
    expect(body.errors).toEqual([{ field: 'querystring.type', message: 'must not contain a NUL character or a lone surrogate' }]);
  });

  it('a path parameter that is not an id is a 400 naming it', async () => {
    const call = await admin();
    expect(problem(await call('GET', '/admin/companies/not-a-uuid'), 400).errors?.[0]?.field).toBe('params.companyId');
    expect(problem(await call('GET', '/admin/notifications/abc'), 400).errors?.[0]?.field).toBe('params.id');
  });

  it('a body that is not JSON is a 400, one of another type a 415', async () => {
    const call = await admin();
    expect(problem(await call('POST', '/admin/companies', '{"name":', { 'content-type': 'application/json' }), 400).detail).toMatch(/JSON/);
    expect(problem(await call('POST', '/admin/companies', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }), 415).code).toBe('fst_err_ctp_invalid_media_type');
  });

  it('an unknown route is a 404 problem naming it', async () => {
    const call = await admin();
    expect(problem(await call('GET', '/admin/nothing-here'), 404).detail).toBe('No route GET /admin/nothing-here.');
  });
});

describe('answers', () => {
  it('a replay of everything matching a filter passes the filter, with its defaults, and answers the counts', async () => {
    const asked: unknown[] = [];
    const call = await admin({ notifications: { replayMatching: async (filter) => (asked.push(filter), { matched: 12, replayed: 0 }) } });
    const res = await call('POST', '/admin/notifications/replay', { companyId: COMPANY_ID, dryRun: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ matched: 12, replayed: 0 });
    expect(asked).toEqual([{ companyId: COMPANY_ID, status: 'failed', limit: 1000, dryRun: true }]);
  });

  it('a reconciliation only reports unless apply is asked, in the body or the query; a bad apply is a 400 naming it', async () => {
    const asked: boolean[] = [];
    const call = await admin({
      webhooks: { reconcile: async (companyId, opts) => (asked.push(opts.apply), { companyId, applied: opts.apply, inSync: 1, remoteSettings: 1, drift: [] }) },
    });
    const path = `/admin/companies/${COMPANY_ID}/webhooks/reconcile`;
    expect((await call('POST', path)).json()).toEqual({ companyId: COMPANY_ID, applied: false, inSync: 1, remoteSettings: 1, drift: [] });
    await call('POST', `${path}?apply=true`);
    await call('POST', path, { apply: true });
    await call('POST', path, { apply: false });
    expect(asked).toEqual([false, true, true, false]);
    expect(problem(await call('POST', `${path}?apply=maybe`), 400).errors?.map((e) => e.field)).toEqual(['querystring.apply']);
    expect(problem(await call('POST', path, { apply: 'yes', force: true }), 400).errors?.map((e) => e.field)).toEqual(expect.arrayContaining(['body.apply']));
    expect(asked).toHaveLength(4);
  });

  it('a delete answers 204, 200 listing the settings left active when forced, and the 502 when the marketplace refused', async () => {
    const remaining = [{ webhookId: 'w1', remoteId: 'r1', error: 'marketplace said no' }];
    const call = await admin({
      deletions: {
        deleteCompany: async (_id, opts) => {
          if (opts.force) return { remainingRemoteSettings: remaining };
          throw new Problem(502, 'Bad Gateway', 'The company was not deleted: the marketplace refused.', { code: 'marketplace_refused' });
        },
        deleteWebhook: async () => ({ remainingRemoteSettings: [] }),
      },
    });
    expect(problem(await call('DELETE', `/admin/companies/${COMPANY_ID}`), 502).code).toBe('marketplace_refused');
    const forced = await call('DELETE', `/admin/companies/${COMPANY_ID}?force=true`);
    expect([forced.statusCode, forced.json()]).toEqual([200, { remainingRemoteSettings: remaining }]);
    const webhook = await call('DELETE', `/admin/companies/${COMPANY_ID}/webhooks/bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb`);
    expect([webhook.statusCode, webhook.body]).toEqual([204, '']);
  });

  it('a service that fails unexpectedly is a 500 problem that says nothing of the cause', async () => {
    const call = await admin({ companies: { get: async () => Promise.reject(new Error('secret detail: token=abc')) } });
    const body = problem(await call('GET', `/admin/companies/${COMPANY_ID}`), 500);
    expect(body).toMatchObject({ code: 'internal', detail: 'Something went wrong; it has been logged.' });
    expect(JSON.stringify(body)).not.toContain('token=abc');
  });
});
