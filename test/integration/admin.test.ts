/**
 * The admin API of issue 2: companies and webhooks against the simulator, bad bodies answered with
 * problems naming the field and leaving no row, secret rotation, the singular-path fallback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization, connectFixtures, notificationBody, postNotification, seedCompany, seedWebhook } from '../helpers/fixtures.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN } from '../helpers/skyhook.js';

let s: Scenario;
beforeAll(async () => {
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
});
afterAll(async () => s?.close());

const count = async (table: string) => Number((await s.sql.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

describe('admin authentication', () => {
  it('refuses every admin route without the bearer token', async () => {
    for (const [method, path] of [['GET', '/admin/companies'], ['POST', '/admin/companies'], ['GET', '/admin/notifications'], ['GET', '/admin/resources']]) {
      const res = await fetch(`${s.skyhook.url}${path}`, { method, headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    const ok = await fetch(`${s.skyhook.url}/admin/companies`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(ok.status).toBe(200);
  });
});

describe('companies', () => {
  it('creates a company without ever returning its token, and stores the token encrypted', async () => {
    s.sim.addCompany({ id: 'acme-jets', token: 'super-secret-token' });
    const res = await s.skyhook.admin('POST', '/companies', { name: 'Acme Jets', apiBaseUrl: `${s.sim.apiBaseUrl}/`, apiToken: 'super-secret-token' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Acme Jets', apiBaseUrl: s.sim.apiBaseUrl, state: { status: 'ok' }, connectionStatus: 'ok' });
    expect(JSON.stringify(res.body)).not.toContain('super-secret-token');
    const raw = await s.sql.query('SELECT api_token_encrypted FROM companies WHERE id = $1', [res.body.id]);
    expect(raw.rows[0].api_token_encrypted).not.toContain('super-secret-token');
    const list = await s.skyhook.admin('GET', '/companies');
    expect(list.body.items.map((c: { id: string }) => c.id)).toContain(res.body.id);
    expect(list.body).toHaveProperty('nextCursor');
  });

  it.each([
    [{ apiBaseUrl: 'http://x/api', apiToken: 't' }, 'body.name'],
    [{ name: 'n', apiToken: 't' }, 'body.apiBaseUrl'],
    [{ name: 'n', apiBaseUrl: 'http://x/api' }, 'body.apiToken'],
    [{ name: 'n', apiBaseUrl: 'http://x/api', apiToken: 't', extra: 1 }, 'body'],
    [{ name: 42, apiBaseUrl: 'http://x/api', apiToken: 't' }, 'body.name'],
    [{ name: 'n', apiBaseUrl: 'ftp://x/api', apiToken: 't' }, 'apiBaseUrl'],
    [{ name: 'n', apiBaseUrl: 'not a url', apiToken: 't' }, 'apiBaseUrl'],
  ])('refuses %j with a 400 naming %s, storing nothing', async (body, field) => {
    const before = await count('companies');
    const res = await s.skyhook.admin('POST', '/companies', body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).join(' ')).toContain(field);
    expect(await count('companies')).toBe(before);
  });

  it('answers 404 for an unknown company and 400 for a malformed id', async () => {
    expect((await s.skyhook.admin('GET', '/companies/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await s.skyhook.admin('GET', '/companies/nope')).status).toBe(400);
  });

  it('pages companies with an opaque cursor, and answers one it did not return with a 400 naming cursor', async () => {
    for (const name of ['Pager One', 'Pager Two']) await s.skyhook.admin('POST', '/companies', { name, apiBaseUrl: s.sim.apiBaseUrl, apiToken: 't' });
    const first = await s.skyhook.admin('GET', '/companies?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await s.skyhook.admin('GET', `/companies?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.status).toBe(200);
    expect(second.body.items[0].id > first.body.items[0].id).toBe(true);
    for (const cursor of ['garbage', first.body.items[0].id.slice(0, 8)]) {
      const res = await s.skyhook.admin('GET', `/companies?cursor=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('cursor');
    }
  });

  it('refuses a body that is not JSON with a problem', async () => {
    const res = await fetch(`${s.skyhook.url}/admin/companies`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{"name":' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('webhooks', () => {
  it('registers the webhook on the marketplace with credentials Skyhook generated', async () => {
    const { companyId, webhookId } = await s.company('wh-create');
    const w = (await s.skyhook.admin('GET', `/companies/${companyId}/webhooks/${webhookId}`)).body;
    expect(w).toMatchObject({ authType: 'BASIC', active: true, eventTypes: ['TripRequest', 'ClientLeads', 'TripChatFromBuyer', 'EmptyLegs'] });
    expect(w.targetURI).toMatch(new RegExp(`^${s.skyhook.url}/hooks/[A-Za-z0-9_-]{32}$`));
    expect(w.remoteId).toMatch(/^wh_/);
    expect(Object.keys(w).filter((k) => /^(client)?secret/i.test(k))).toEqual([]);
    const row = (await s.sql.query('SELECT secret_sha256, secret_encrypted FROM webhooks WHERE id = $1', [webhookId])).rows[0];
    expect(row.secret_sha256).toHaveLength(32); // BASIC: only a hash is kept
    expect(row.secret_encrypted).toBeNull();
  });

  it.each([
    [{ eventTypes: [], authType: 'BASIC' }, 'body.eventTypes'],
    [{ eventTypes: ['NoSuchEvent'], authType: 'BASIC' }, 'body.eventTypes'],
    [{ eventTypes: ['TripRequest', 'TripRequest'], authType: 'BASIC' }, 'body.eventTypes'],
    [{ eventTypes: ['TripRequest'], authType: 'DIGEST' }, 'body.authType'],
    [{ eventTypes: ['TripRequest'] }, 'body.authType'],
  ])('refuses %j with a 400 naming %s, registering nothing', async (body, field) => {
    const { companyId } = await s.company(`wh-bad-${Math.random().toString(36).slice(2, 8)}`);
    const before = await count('webhooks');
    const res = await s.skyhook.admin('POST', `/companies/${companyId}/webhooks`, body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).join(' ')).toContain(field);
    expect(await count('webhooks')).toBe(before);
  });

  it('stores nothing when the marketplace refuses the token (502 naming the marketplace answer)', async () => {
    const created = await s.skyhook.admin('POST', '/companies', { name: 'Ghost', apiBaseUrl: s.sim.apiBaseUrl, apiToken: 'unknown-to-the-marketplace' });
    const before = await count('webhooks');
    const res = await s.skyhook.admin('POST', `/companies/${created.body.id}/webhooks`, { eventTypes: ['TripRequest'], authType: 'BASIC' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('401');
    expect(await count('webhooks')).toBe(before);
  });

  it('deactivates: the marketplace stops delivering; a late notification is acknowledged and discarded', async () => {
    const { companyId, webhookId } = await s.company('wh-deact');
    const off = await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/${webhookId}`, { active: false });
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    const fired = await s.sim.fire({ companyId: 'wh-deact', eventType: 'TripRequest' });
    expect(fired[0]!.webhookIds).toEqual([]); // inactive on the marketplace too

    const on = await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/${webhookId}`, { active: true, eventTypes: ['EmptyLegs'] });
    expect(on.body).toMatchObject({ active: true, eventTypes: ['EmptyLegs'] });
    expect((await s.sim.fire({ companyId: 'wh-deact', eventType: 'EmptyLegs' }))[0]!.webhookIds).toHaveLength(1);
  });

  it('rotates the secret: new deliveries use the new one, the previous one is accepted during the grace period', async () => {
    const { companyId, webhookId } = await s.company('wh-rotate');
    const before = (await s.sql.query('SELECT secret_sha256 FROM webhooks WHERE id = $1', [webhookId])).rows[0].secret_sha256;
    const rotated = await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/${webhookId}`, { rotateSecret: true });
    expect(rotated.status).toBe(200);
    expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const row = (await s.sql.query('SELECT secret_sha256, previous_secret_sha256 FROM webhooks WHERE id = $1', [webhookId])).rows[0];
    expect(row.previous_secret_sha256).toEqual(before);
    expect(row.secret_sha256).not.toEqual(before);

    // The simulator now signs with the new secret, and Skyhook accepts it.
    const fired = await s.sim.fire({ companyId: 'wh-rotate', eventType: 'TripRequest' });
    await s.sim.idle();
    expect(s.sim.report().notifications.find((n) => n.id === fired[0]!.notification.id)?.status).toBe('delivered');
  });

  it('falls back to the singular settings path when the plural answers 404, and remembers it', async () => {
    const { companyId, webhookId } = await s.company('wh-singular');
    s.sim.setFaults({ pluralPutMissing: true });
    try {
      const res = await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/${webhookId}`, { displayName: 'renamed' });
      expect(res.status).toBe(200);
      expect(res.body.displayName).toBe('renamed');
      const company = await s.sql.query('SELECT settings_path_form FROM companies WHERE id = $1', [companyId]);
      expect(company.rows[0].settings_path_form).toBe('singular');
    } finally {
      s.sim.setFaults({ pluralPutMissing: false });
    }
  });

  it('refuses an empty PATCH and an unknown webhook', async () => {
    const { companyId, webhookId } = await s.company('wh-patch');
    expect((await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/${webhookId}`, {})).status).toBe(400);
    expect((await s.skyhook.admin('PATCH', `/companies/${companyId}/webhooks/00000000-0000-4000-8000-000000000000`, { active: false })).status).toBe(404);
  });
});

describe('notifications and resources', () => {
  it('lists notifications newest first with filters and a cursor, shows one with its body, lists resources', async () => {
    const { companyId } = await s.company('lister');
    await s.sim.fire({ companyId: 'lister', eventType: 'TripRequest', count: 5, extra: { tag: 'kept' } });
    await s.settled(5);
    const page1 = await s.skyhook.admin('GET', `/notifications?companyId=${companyId}&limit=3`);
    expect(page1.status).toBe(200);
    expect(page1.body.items).toHaveLength(3);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await s.skyhook.admin('GET', `/notifications?companyId=${companyId}&limit=3&cursor=${page1.body.nextCursor}`);
    expect(page2.body.items).toHaveLength(2);
    expect(page2.body.nextCursor).toBeNull();
    const ids = [...page1.body.items, ...page2.body.items].map((n: { id: string }) => Number(n.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));

    const one = await s.skyhook.admin('GET', `/notifications/${ids[0]}`);
    expect(one.body).toMatchObject({ companyId, status: 'processed', type: 'rfqs', attempts: 1, lastError: null });
    expect(one.body.body).toMatchObject({ tag: 'kept' });

    expect((await s.skyhook.admin('GET', `/notifications?status=bogus`)).status).toBe(400);
    expect((await s.skyhook.admin('GET', `/notifications?cursor=garbage`)).status).toBe(400);
    expect((await s.skyhook.admin('GET', `/notifications/999999999`)).status).toBe(404);

    const resources = await s.skyhook.admin('GET', `/resources?companyId=${companyId}&type=rfqs`);
    expect(resources.body.items).toHaveLength(5);
    expect(resources.body.items[0]).toMatchObject({ companyId, type: 'rfqs', version: 1 });
  });
});

describe('resource pages', () => {
  it('answer a cursor whose company is not a UUID, or whose href PostgreSQL cannot take, with a 400 naming cursor', async () => {
    const cursor = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
    for (const key of [['acme', 'http://x/api/rfqs/1'], ['00000000-0000-4000-8000-000000000000', 'http://x/\u0000']]) {
      const res = await s.skyhook.admin('GET', `/resources?cursor=${cursor(key)}`);
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('cursor');
    }
  });
});

describe('failed authentication is rate-limited per client address (SPEC §10)', () => {
  it('answers refusals 429 with Retry-After past the limit, for the receiver and the admin API alike, and still serves valid credentials', async () => {
    const { startSkyhook } = await import('../helpers/skyhook.js');
    const limited = await startSkyhook({ databaseUrl: s.db.url, queuePrefix: s.prefix, role: 'api', env: { AUTH_FAILURE_LIMIT: '5' } });
    try {
      const fx = connectFixtures(s.db.url);
      const company = await seedCompany(fx.db, limited.config.secretKey, { apiBaseUrl: s.sim.apiBaseUrl });
      const webhook = await seedWebhook(fx.db, limited.config.secretKey, { companyId: company.id, authType: 'BASIC', publicBaseUrl: limited.url });
      await fx.pool.end();
      const wrong = { method: 'POST', headers: { authorization: `Basic ${Buffer.from('nobody:wrong').toString('base64')}`, 'content-type': 'application/json' }, body: '{}' };
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await fetch(`${limited.url}/hooks`, wrong)).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);

      // Refusals from the address stay 429, with Retry-After, as problems: the admin API and the dashboard too.
      const badAdmin = await fetch(`${limited.url}/admin/companies`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      expect(badAdmin.status).toBe(429);
      expect(Number(badAdmin.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(badAdmin.headers.get('content-type')).toContain('application/problem+json');
      const dashboard = await fetch(`${limited.url}/admin/queues/api/queues`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      expect(dashboard.status).toBe(429);
      expect(Number(dashboard.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(dashboard.headers.get('content-type')).toContain('application/problem+json');
      expect(await dashboard.json()).toMatchObject({ status: 429, code: 'too_many_auth_failures' });

      // Valid credentials from the same address are served: the admin token, the dashboard, a real notification.
      expect((await fetch(`${limited.url}/admin/companies`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
      expect((await fetch(`${limited.url}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
      const notification = await postNotification(limited.url, webhook.path, {
        authorization: basicAuthorization(webhook.clientIdentifier, webhook.secret),
        body: JSON.stringify(notificationBody(company.apiBaseUrl)),
      });
      expect(notification.status, notification.text).toBe(200);
      // Probes and scrapes keep answering: a load balancer or Prometheus behind that address is not locked out.
      for (const path of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${limited.url}${path}`)).status, path).toBe(200);
    } finally {
      await limited.stop();
    }
  });
});
