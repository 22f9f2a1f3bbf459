/**
 * Who may do what (SPEC §10.1), over HTTP against a real Skyhook and PostgreSQL: keys made, listed (never
 * the secret), used and revoked at once; and every route of Fastify's table called with every role, an
 * expired key, a revoked key and no key, against the declared matrix (401, 403 for a permission the role
 * lacks, 404 for another company's ids), the console's pages and forms included; and the audit log.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { looksLikeKey, newKey } from '../../src/access/keys.js';
import { GRANTS, ROLES, type Access, type Role } from '../../src/access/roles.js';
import type { DbHandle } from '../../src/db/client.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, notificationBody, postNotification, seedCompany, seedWebhook } from '../helpers/fixtures.js';
import { consoleClient } from '../helpers/console-client.js';
import { adminClient, eventually, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

let db: TestDatabase;
let skyhook: TestSkyhook;
let fixtures: DbHandle;
/** Company A (a company key is bound to it) and company B (another's). */
let companyA: string;
let companyB: string;
const keys = {} as Record<Role | 'expired' | 'revoked', string>;
const { get, signIn } = consoleClient(() => skyhook.url);

beforeAll(async () => {
  db = await createTestDatabase();
  skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), env: { METRICS_TOKEN: 'metrics-token-0123456789' } });
  fixtures = connectFixtures(db.url);
  companyA = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Company A' })).id;
  companyB = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Company B' })).id;
  for (const role of ROLES) {
    const made = await skyhook.admin('POST', '/keys', { name: `${role} key`, role, ...(role === 'company' ? { companyId: companyA } : {}) });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    keys[role] = made.body.key;
  }
  const expiring = await skyhook.admin('POST', '/keys', { name: 'soon expired', role: 'admin', expiresAt: new Date(Date.now() + 1500).toISOString() });
  keys.expired = expiring.body.key;
  const revoked = await skyhook.admin('POST', '/keys', { name: 'revoked', role: 'admin' });
  keys.revoked = revoked.body.key;
  expect((await skyhook.admin('DELETE', `/keys/${revoked.body.id}`)).status).toBe(200);
  // Past the expiring key's end.
  await new Promise((resolve) => setTimeout(resolve, 1600));
});

afterAll(async () => {
  await skyhook?.stop();
  await fixtures?.pool.end();
  await db?.drop();
});

describe('keys', () => {
  it('are long random strings with a prefix and a checksum: a mistyped one is told from a real one without a lookup', () => {
    const key = newKey();
    expect(key).toMatch(/^skh_[0-9A-Za-z]{46}$/);
    expect(looksLikeKey(key)).toBe(true);
    const typo = `${key.slice(0, 10)}${key[10] === 'a' ? 'b' : 'a'}${key.slice(11)}`;
    expect(looksLikeKey(typo)).toBe(false);
    expect(newKey()).not.toBe(key);
  });

  it('are shown once: stored as a digest, listed with their state and last use, never with the secret', async () => {
    const { rows } = await fixtures.pool.query<{ digest: Buffer; hint: string }>('SELECT digest, hint FROM api_keys WHERE name = $1', ['viewer key']);
    expect(rows[0]!.digest.toString('hex')).not.toContain(Buffer.from(keys.viewer).toString('hex'));
    expect(keys.viewer.startsWith(rows[0]!.hint)).toBe(true);
    expect((await adminClient(skyhook.url, keys.viewer)('GET', '/companies')).status).toBe(200);
    const list = await skyhook.admin('GET', '/keys');
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain(keys.viewer);
    const byName = Object.fromEntries(list.body.items.map((k: { name: string }) => [k.name, k]));
    expect(byName['viewer key']).toMatchObject({ role: 'viewer', state: 'active', companyId: null });
    expect(byName['viewer key'].lastUsedAt).not.toBeNull();
    expect(byName['company key']).toMatchObject({ role: 'company', companyId: companyA });
    expect(byName['soon expired'].state).toBe('expired');
    expect(byName.revoked.state).toBe('revoked');
  });

  it('refuse bad input with the field named, and nothing is written', async () => {
    const before = (await skyhook.admin('GET', '/keys?limit=100')).body.items.length;
    const cases: [unknown, string][] = [
      [{ name: 'x', role: 'company' }, 'companyId'],
      [{ name: 'x', role: 'viewer', companyId: companyA }, 'companyId'],
      [{ name: 'x', role: 'company', companyId: randomUUID() }, 'companyId'],
      [{ name: 'x', role: 'root' }, 'body.role'],
      [{ name: '', role: 'viewer' }, 'body.name'],
      [{ name: 'x', role: 'viewer', expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
    ];
    for (const [body, field] of cases) {
      const res = await skyhook.admin('POST', '/keys', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await skyhook.admin('GET', '/keys?limit=100')).body.items.length).toBe(before);
  });

  it('a revoked key is refused at once, its console session included', async () => {
    const made = await skyhook.admin('POST', '/keys', { name: 'to revoke', role: 'operator' });
    const api = adminClient(skyhook.url, made.body.key);
    expect((await api('GET', '/companies')).status).toBe(200);
    const session = await signIn(made.body.key);
    expect((await get('/notifications', session.cookie)).status).toBe(200);
    expect((await skyhook.admin('DELETE', `/keys/${made.body.id}`)).status).toBe(200);
    const refused = await api('GET', '/companies');
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toBe('That key is revoked.');
    expect((await get('/notifications', session.cookie)).status).toBe(303);
    const { rows } = await fixtures.pool.query('SELECT 1 FROM console_sessions WHERE key_id = $1', [made.body.id]);
    expect(rows).toHaveLength(0);
  });

  it('a revocation holds at once in another process too, which had the key cached', async () => {
    const other = await startSkyhook({ databaseUrl: db.url, queuePrefix: skyhook.config.queuePrefix, role: 'api' });
    try {
      const made = await skyhook.admin('POST', '/keys', { name: 'used by two processes', role: 'viewer' });
      const there = adminClient(other.url, made.body.key);
      for (let i = 0; i < 3; i++) expect((await there('GET', '/companies')).status).toBe(200);
      expect((await skyhook.admin('DELETE', `/keys/${made.body.id}`)).status).toBe(200);
      const revokedAt = Date.now();
      await eventually(async () => (await there('GET', '/companies')).status === 401, 'refused by the other process');
      expect(Date.now() - revokedAt).toBeLessThan(1000);
    } finally {
      await other.stop();
    }
  });

  it("a key revoked while another process's keys listener is down is refused there at once, not only once it listens again", async () => {
    const other = await startSkyhook({ databaseUrl: db.url, queuePrefix: skyhook.config.queuePrefix, role: 'api' });
    // Both processes' keys listeners, by the name db/listen.ts gives their connections.
    const listeners = (what: string) => fixtures.pool.query(`SELECT ${what} FROM pg_stat_activity WHERE application_name = 'skyhook-listen skyhook_keys' AND datname = current_database()`);
    try {
      const made = await skyhook.admin('POST', '/keys', { name: 'revoked in the gap', role: 'viewer' });
      const there = adminClient(other.url, made.body.key);
      await eventually(async () => (await listeners('pid')).rowCount === 2, 'both keys listeners');
      for (let i = 0; i < 3; i++) expect((await there('GET', '/companies')).status).toBe(200);
      await listeners('pg_terminate_backend(pid)');
      await eventually(async () => (await listeners('pid')).rowCount === 0, 'the listeners gone');
      // Straight in the database: no process's own revoke drops its cache, and no listener is there to hear it.
      await fixtures.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [made.body.id]);
      expect((await there('GET', '/companies')).status).toBe(401);
      // That was in the gap (a listener tries again after a second)...
      expect((await listeners('pid')).rowCount).toBe(0);
      // ...and once they listen again, the cache starts empty: still refused.
      await eventually(async () => (await listeners('pid')).rowCount === 2, 'both keys listeners again');
      expect((await there('GET', '/companies')).status).toBe(401);
    } finally {
      await other.stop();
    }
  });

  it("a company key's lists, details, replays and streams hold only its company's notifications", async () => {
    const stored: Record<string, string[]> = { [companyA]: [], [companyB]: [] };
    const hooks = await Promise.all([companyA, companyB].map((companyId) => seedWebhook(fixtures.db, skyhook.config.secretKey, { companyId, authType: 'BASIC', publicBaseUrl: skyhook.url })));
    const notify = async (i: number) => {
      const hook = hooks[i]!;
      const res = await postNotification(skyhook.url, hook.path, { authorization: basicAuthorization(hook.clientIdentifier, hook.secret), body: JSON.stringify(notificationBody('http://127.0.0.1:9/api')) });
      expect(res.status).toBe(200);
    };
    // The company key's live stream, opened before anything arrives.
    const live = await fetch(`${skyhook.url}/admin/stream`, { headers: { authorization: `Bearer ${keys.company}` } });
    expect(live.status).toBe(200);
    for (let i = 0; i < 3; i++) await Promise.all([notify(0), notify(1)]);
    const { rows } = await fixtures.pool.query<{ id: string; company_id: string }>('SELECT id, company_id FROM notifications');
    for (const r of rows) stored[r.company_id]!.push(r.id);
    expect(stored[companyB]!.length).toBe(3);

    const api = adminClient(skyhook.url, keys.company);
    const listed = await api('GET', '/notifications?limit=100');
    expect(listed.body.items.map((n: { id: string }) => String(n.id)).sort()).toEqual([...stored[companyA]!].sort());
    const other = stored[companyB]![0]!;
    expect((await api('GET', `/notifications/${other}`)).status).toBe(404);
    expect((await api('POST', `/notifications/${other}/replay`)).status).toBe(404);
    expect((await api('GET', `/notifications/${stored[companyA]![0]}`)).status).toBe(200);
    const counted = await api('POST', '/notifications/replay', { status: 'queued', dryRun: true });
    const everyone = await skyhook.admin('POST', '/notifications/replay', { status: 'queued', dryRun: true });
    expect(counted.body.matched).toBeLessThan(everyone.body.matched);
    expect((await api('GET', `/resources?companyId=${companyB}`)).status).toBe(404);
    expect((await api('GET', `/companies/${companyB}/events/stream`)).status).toBe(404);

    // What the stream said: changes of company A's notifications only.
    const reader = live.body!.getReader();
    let text = '';
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      const chunk = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), until - Date.now()))]);
      if (!chunk || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    await reader.cancel();
    const companies = [...text.matchAll(/"companyId":"([0-9a-f-]{36})"/g)].map((m) => m[1]);
    expect(companies.length).toBeGreaterThan(0);
    expect(new Set(companies)).toEqual(new Set([companyA]));
  });

  it("a company key sees only its own company's rows, and another's ids answer 404", async () => {
    const api = adminClient(skyhook.url, keys.company);
    const companies = await api('GET', '/companies');
    expect(companies.body.items.map((c: { id: string }) => c.id)).toEqual([companyA]);
    expect((await api('GET', `/companies/${companyB}`)).status).toBe(404);
    expect((await api('GET', `/companies/${companyB}/destinations`)).status).toBe(404);
    expect((await api('GET', `/notifications?companyId=${companyB}`)).status).toBe(404);
    expect((await api('GET', `/companies/${companyA}/destinations`)).status).toBe(200);
    expect((await api('POST', '/keys', { name: 'mine', role: 'admin' })).status).toBe(403);
  });
});

/** Fastify's route table as the guard holds it, each route's parameters filled in. */
function routes(prefix: string): { method: string; url: string; access: Access; path: (company: string) => string }[] {
  return skyhook.runtime
    .app!.accessTable()
    .filter((r) => r.url.startsWith(prefix) && r.method !== 'HEAD')
    .map((r) => ({
      ...r,
      // A wildcard (the queue dashboard's static files) walked with a name of no file.
      path: (company: string) =>
        r.url
          .replace(':companyId', company)
          .replace(/:(\w+)/g, (_m, name: string) => (name === 'id' || name === 'deliveryId' || name === 'hash' ? '1' : randomUUID()))
          .replace('*', 'walked.txt'),
    }));
}

/** A request that gives up once the answer's head arrived (the streams never end). */
async function call(url: string, init: RequestInit): Promise<{ status: number; location: string; text: () => Promise<string> }> {
  const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  const streaming = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streaming) await res.body?.cancel();
  return { status: res.status, location: res.headers.get('location') ?? '', text: async () => (streaming ? '' : res.text()) };
}

describe('every route, every role (SPEC §10.1: deny by default)', () => {
  it('declares its access: the admin API, the dashboard, the docs, the probes, the metrics and the receiver', () => {
    const table = skyhook.runtime.app!.accessTable();
    const access = (method: string, url: string) => table.find((r) => r.method === method && r.url === url)?.access;
    expect(access('POST', '/hooks')).toBe('public');
    expect(access('GET', '/healthz')).toBe('public');
    expect(access('GET', '/metrics')).toBe('metrics');
    expect(access('GET', '/admin/queues/')).toBe('queues');
    expect(access('GET', '/docs/')).toBe('public');
    expect(access('DELETE', '/admin/companies/:companyId')).toBe('companies');
    expect(access('GET', '/admin/companies/:companyId/destinations/:destinationId/secret')).toBe('secrets');
    expect(access('POST', '/admin/keys')).toBe('keys');
    expect(table.every((r) => r.access !== undefined)).toBe(true);
  });

  it('the admin API and the queue dashboard: 401 without a valid key, 403 for a permission the role lacks, 404 for another company', async () => {
    const admin = routes('/admin');
    expect(admin.length).toBeGreaterThan(40);
    const mismatches: string[] = [];
    for (const r of admin) {
      const send = (key: string | undefined, company: string) =>
        call(`${skyhook.url}${r.path(company)}`, {
          method: r.method,
          headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(r.method === 'GET' || r.method === 'DELETE' ? {} : { 'content-type': 'application/json' }) },
          body: r.method === 'GET' || r.method === 'DELETE' ? undefined : '{}',
        });
      const expect_ = (what: string, got: number, ok: (status: number) => boolean) => void (ok(got) || mismatches.push(`${r.method} ${r.url} ${what}: ${got}`));
      for (const bad of [undefined, keys.expired, keys.revoked, 'skh_not-a-key']) expect_(`key ${bad?.slice(0, 8)}`, (await send(bad, companyA)).status, (s) => s === 401);
      for (const role of ROLES) {
        const permitted = GRANTS[role].includes(r.access as never);
        // Another company's id: as if it did not exist for a company key (checked before the permission's use).
        const status = (await send(keys[role], role === 'company' ? companyA : randomUUID())).status;
        if (permitted) expect_(`${role} permitted`, status, (s) => s !== 401 && s !== 403);
        else expect_(`${role} not permitted`, status, (s) => s === 403);
        // Permitted or not: a 403 for another company's id would say that the company exists.
        if (role === 'company' && r.url.includes(':companyId')) expect_('company key, another company', (await send(keys.company, companyB)).status, (s) => s === 404);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("the console's pages and forms: signed in with each role's key, a page or form the role may not use is refused", async () => {
    const pages = routes('/console');
    const sessions = Object.fromEntries(await Promise.all(ROLES.map(async (role) => [role, await signIn(keys[role])] as const)));
    // A session whose key was revoked since, and none at all: both sent to the sign-in page, everywhere.
    const revokedKey = await skyhook.admin('POST', '/keys', { name: 'revoked after sign-in', role: 'admin' });
    const revokedSession = await signIn(revokedKey.body.key);
    expect((await skyhook.admin('DELETE', `/keys/${revokedKey.body.id}`)).status).toBe(200);
    const mismatches: string[] = [];
    for (const r of pages) {
      if (r.access === 'public') continue;
      for (const [who, cookie, csrf] of [['no session', '', ''], ['revoked key', revokedSession.cookie, revokedSession.csrf]] as const) {
        const url = `${skyhook.url}${r.path(companyA)}`;
        const form = { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) };
        const res = r.method === 'GET' ? await call(url, { headers: cookie ? { cookie } : {} }) : await call(url, { method: r.method, headers: form, body: new URLSearchParams({ _csrf: csrf }).toString() });
        // A stream (EventSource follows no redirect to a page) answers 401.
        const signedOut = r.url.endsWith('/stream') ? res.status === 401 : res.status === 303 && res.location.includes('/sign-in');
        if (!signedOut) mismatches.push(`${r.method} ${r.url} ${who}: ${res.status} ${res.location}`);
      }
      if (r.url === '/console/sign-out') continue;
      for (const role of ROLES) {
        const { cookie, csrf } = sessions[role]!;
        // A company key on its own company; the others on a company that does not exist (no form may change a real one here).
        const url = `${skyhook.url}${r.path(role === 'company' ? companyA : randomUUID())}`;
        const res =
          r.method === 'GET'
            ? await call(url, { headers: { cookie } })
            : await call(url, { method: r.method, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }).toString() });
        if (res.status === 401 || res.location.includes('/sign-in')) mismatches.push(`${r.method} ${r.url} ${role}: signed out (${res.status})`);
        const refusedByRole = res.status === 403 && (await res.text()).includes('role may not');
        const permitted = GRANTS[role].includes(r.access as never);
        if (permitted === refusedByRole) mismatches.push(`${r.method} ${r.url} ${role}: ${permitted ? 'refused' : 'allowed'} (${res.status})`);
      }
      if (r.url.includes(':companyId')) {
        const res = await call(`${skyhook.url}${r.path(companyB)}`, { headers: { cookie: sessions.company!.cookie } });
        if (r.method === 'GET' && res.status !== 404) mismatches.push(`${r.method} ${r.url} company key, another company: ${res.status}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("the console shows only the actions the key's role may take", async () => {
    const formsOn = async (role: Role, path: string) => {
      const { cookie } = await signIn(keys[role]);
      const page = await (await get(path, cookie)).text();
      return [...page.matchAll(/<form method="post" action="\/console([^"]*)"/g)].map((m) => m[1]!.replace(companyA, ':id')).filter((a) => a !== '/sign-out');
    };
    const operator = await formsOn('operator', `/companies/${companyA}`);
    expect(operator).toEqual(expect.arrayContaining(['/companies/:id/limit', '/companies/:id/webhooks', '/companies/:id/destinations', '/companies/:id', '/companies/:id/delete']));
    expect(await formsOn('viewer', `/companies/${companyA}`)).toEqual([]);
    expect(await formsOn('company', `/companies/${companyA}`)).toEqual(['/companies/:id/destinations']);
    const { cookie } = await signIn(keys.company);
    const nav = await (await get(`/companies/${companyA}`, cookie)).text();
    expect(nav).toContain('company key · company');
    expect(nav).toContain('>My company</a></li>');
    expect(nav).not.toMatch(/<li><a href="\/console\/companies">Companies<\/a><\/li>/);
    // Its breadcrumbs start at its company: the companies list would only send it back there.
    const destination = (await skyhook.admin('POST', `/companies/${companyA}/destinations`, { url: 'http://127.0.0.1:9/crumbs' })).body;
    const crumbs = /<p class="crumbs">(.*?)<\/p>/.exec(await (await get(`/companies/${companyA}/destinations/${destination.id}`, cookie)).text())?.[1];
    expect(crumbs).toBe(`<a href="/console/companies/${companyA}#destinations">Company A</a>`);
    const asAdmin = await signIn(keys.admin);
    expect(await (await get(`/companies/${companyA}`, asAdmin.cookie)).text()).toContain('<p class="crumbs"><a href="/console/companies">Companies</a> › Company A</p>');
    expect((await skyhook.admin('DELETE', `/companies/${companyA}/destinations/${destination.id}`)).status).toBe(204);
  });

  it('/metrics needs METRICS_TOKEN when it is set', async () => {
    expect((await fetch(`${skyhook.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${skyhook.url}/metrics`, { headers: { authorization: `Bearer ${keys.admin}` } })).status).toBe(401);
    expect((await fetch(`${skyhook.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } })).status).toBe(200);
  });
});

describe('the audit log (SPEC §10.1)', () => {
  it('records each change once, with who, from where, the fields changed (never their values) and the outcome; reads change nothing', async () => {
    // A key of its own: the route walk above made many (refused) changes with the role keys.
    const auditor = await skyhook.admin('POST', '/keys', { name: 'audited operator', role: 'operator' });
    const operator = adminClient(skyhook.url, auditor.body.key);
    const secretToken = 'a-secret-api-token-that-must-not-be-logged';
    const before = (await skyhook.admin('GET', '/audit?limit=500')).body.items.length;
    const rowsBefore = Number((await fixtures.pool.query('SELECT max(id) AS id FROM audit_log')).rows[0].id);
    expect((await operator('GET', `/companies/${companyB}`)).status).toBe(200);
    expect((await operator('PATCH', `/companies/${companyB}`, { name: 'Company B renamed', apiToken: secretToken })).status).toBe(200);
    const missing = randomUUID();
    expect((await operator('DELETE', `/companies/${companyB}/destinations/${missing}`)).status).toBe(404);
    const list = await skyhook.admin('GET', `/audit?actor=${auditor.body.id}`);
    expect(list.status).toBe(200);
    expect(list.body.items.length).toBe(2);
    const [refused, patched] = list.body.items;
    expect(patched).toMatchObject({
      actor: { kind: 'key', id: auditor.body.id, name: 'audited operator' },
      address: '127.0.0.1',
      action: 'PATCH /admin/companies/:companyId',
      companyId: companyB,
      fields: ['name', 'apiToken'],
      outcome: 'ok',
    });
    expect(refused).toMatchObject({ action: 'DELETE /admin/companies/:companyId/destinations/:destinationId', targets: { destinationId: missing }, outcome: 'refused', fields: [], details: { status: 404 } });
    // New credentials are checked with a call to the marketplace: its two rows; the refusal is one.
    const { rows: written } = await fixtures.pool.query<{ outcome: string }>('SELECT outcome FROM audit_log WHERE id > $1 ORDER BY id', [rowsBefore]);
    expect(written.map((r) => r.outcome)).toEqual(['started', 'ok', 'refused']);
    // The GET made no entry; and no entry holds the token.
    expect((await skyhook.admin('GET', '/audit?limit=500')).body.items.length).toBe(before + 2);
    const { rows } = await fixtures.pool.query<{ n: string }>(`SELECT count(*) AS n FROM audit_log WHERE audit_log::text LIKE '%' || $1 || '%'`, [secretToken]);
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('a bulk replay is one entry with its filter and count', async () => {
    const replayed = await skyhook.admin('POST', '/notifications/replay', { companyId: companyA, status: 'failed', limit: 10 });
    expect(replayed.status).toBe(200);
    const [entry] = (await skyhook.admin('GET', '/audit?action=/admin/notifications/replay')).body.items;
    expect(entry).toMatchObject({
      actor: { kind: 'bootstrap', name: 'ADMIN_TOKEN' },
      companyId: companyA,
      outcome: 'ok',
      details: { filter: { companyId: companyA, status: 'failed', limit: 10 }, matched: replayed.body.matched, replayed: replayed.body.replayed },
    });
  });

  it("records the console's changes as the signed-in key's, and not a form refused for its CSRF token", async () => {
    const consoleKey = await skyhook.admin('POST', '/keys', { name: 'console admin', role: 'admin' });
    const { cookie, csrf } = await signIn(consoleKey.body.key);
    const made = await fetch(`${skyhook.url}/console/keys`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf, name: 'made in the console', role: 'viewer' }).toString() });
    expect(made.status).toBe(200);
    expect(await made.text()).toMatch(/<code class="secret"[^>]*>skh_[0-9A-Za-z]{46}<\/code>/);
    const forged = await fetch(`${skyhook.url}/console/keys`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: 'wrong', name: 'forged', role: 'admin' }).toString() });
    expect(forged.status).toBe(403);
    // Newest first: the key made, then the sign-in; nothing of the forged form.
    const entries = (await skyhook.admin('GET', `/audit?actor=${consoleKey.body.id}`)).body.items;
    expect(entries.map((e: { action: string }) => e.action)).toEqual(['POST /console/keys', 'POST /console/sign-in']);
    expect(entries[0]).toMatchObject({ actor: { kind: 'key', name: 'console admin' }, action: 'POST /console/keys', fields: ['name', 'role'], outcome: 'ok' });
  });

  it("a company key reads its company's entries only, without other actors' addresses", async () => {
    const company = adminClient(skyhook.url, keys.company);
    expect((await company('POST', `/companies/${companyA}/destinations`, { url: 'not a url' })).status).toBe(400);
    expect((await company('DELETE', `/companies/${companyA}/destinations/${randomUUID()}`)).status).toBe(404);
    const mine = await company('GET', '/audit');
    expect(mine.status).toBe(200);
    expect(mine.body.items.length).toBeGreaterThan(0);
    for (const e of mine.body.items) {
      expect(e.companyId).toBe(companyA);
      if (e.actor.name !== 'company key') expect(e.address).toBeNull();
    }
    expect(mine.body.items.some((e: { actor: { name: string }; address: string }) => e.actor.name === 'company key' && e.address === '127.0.0.1')).toBe(true);
    expect((await company('GET', `/audit?companyId=${companyB}`)).status).toBe(404);
  });

  it('cannot be changed or emptied: UPDATE, DELETE and TRUNCATE are refused', async () => {
    for (const statement of ["UPDATE audit_log SET outcome = 'ok'", 'DELETE FROM audit_log', 'TRUNCATE audit_log']) {
      await expect(fixtures.pool.query(statement)).rejects.toThrow(/the audit log is append-only/);
    }
  });
});
