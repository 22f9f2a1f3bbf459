/**
 * The operator console's security (SPEC §13), over HTTP against a real Skyhook: sign-in for a session
 * cookie (HttpOnly, SameSite=Strict, 12 h, Secure behind https), failed sign-ins in the failed-
 * authentication limiter, sign-out ending the session, CSRF refusals as a 403 page, the
 * Content-Security-Policy, static files cached for a year, errors as pages, and a hostile notification
 * body shown as text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionStore, SESSION_TTL_MS } from '../../src/console/sessions.js';
import { CONTENT_SECURITY_POLICY } from '../../src/console/plugin.js';
import type { DbHandle } from '../../src/db/client.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, postNotification, seedCompany, seedWebhook, type SeededWebhook } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

let db: TestDatabase;
let skyhook: TestSkyhook;
let fixtures: DbHandle;
let webhook: SeededWebhook;
let apiBaseUrl: string;

/** A request to the console that follows no redirect. */
const get = (path: string, cookie?: string, headers: Record<string, string> = {}) =>
  fetch(`${skyhook.url}/console${path}`, { redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...headers } });
const post = (path: string, form: Record<string, string>, cookie?: string, headers: Record<string, string> = {}) =>
  fetch(`${skyhook.url}/console${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(form).toString(),
  });

/** Signs in; answers the cookie to send and the session's CSRF token (read from a page, as a browser would). */
async function signIn(): Promise<{ cookie: string; setCookie: string; csrf: string }> {
  const res = await post('/sign-in', { token: ADMIN_TOKEN, next: '/' });
  expect(res.status).toBe(303);
  const setCookie = res.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0]!;
  const page = await (await get('/', cookie)).text();
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)?.[1] ?? '';
  expect(csrf).not.toBe('');
  return { cookie, setCookie, csrf };
}

async function storeNotification(body: Record<string, unknown>): Promise<string> {
  const answer = await postNotification(skyhook.url, webhook.path, { authorization: basicAuthorization(webhook.clientIdentifier, webhook.secret), body: JSON.stringify(body) });
  expect(answer.status).toBe(200);
  const { rows } = await fixtures.pool.query<{ id: string }>('SELECT id FROM notifications ORDER BY id DESC LIMIT 1');
  return rows[0]!.id;
}

beforeAll(async () => {
  db = await createTestDatabase();
  skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), env: { AUTH_FAILURE_LIMIT: '3' } });
  fixtures = connectFixtures(db.url);
  const company = await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Hostile <b>Jets</b> & Co' });
  apiBaseUrl = company.apiBaseUrl;
  webhook = await seedWebhook(fixtures.db, skyhook.config.secretKey, { companyId: company.id, authType: 'BASIC', publicBaseUrl: skyhook.url });
});

afterAll(async () => {
  await skyhook?.stop();
  await fixtures?.pool.end();
  await db?.drop();
});

describe('console sign-in and session', () => {
  it('sends a visitor without a session to the sign-in page, and back where they were after it', async () => {
    const res = await get('/notifications?status=failed');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in?next=%2Fnotifications%3Fstatus%3Dfailed');
    const signInPage = await get('/sign-in?next=%2Fnotifications%3Fstatus%3Dfailed');
    expect(signInPage.status).toBe(200);
    expect(signInPage.headers.get('content-type')).toMatch(/^text\/html/);
    const signedIn = await post('/sign-in', { token: ADMIN_TOKEN, next: '/notifications?status=failed' });
    expect(signedIn.headers.get('location')).toBe('/console/notifications?status=failed');
    // Never to another site (no open redirect).
    const elsewhere = await post('/sign-in', { token: ADMIN_TOKEN, next: '//evil.example.com/x' });
    expect(elsewhere.headers.get('location')).toBe('/console');
  });

  it('sets an HttpOnly, SameSite=Strict session cookie for 12 hours, not Secure over http', async () => {
    const { setCookie } = await signIn();
    expect(setCookie).toMatch(/^skyhook_console=[A-Za-z0-9_-]{43}; /);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/console');
    expect(setCookie).toContain(`Max-Age=${SESSION_TTL_MS / 1000}`);
    expect(setCookie).not.toContain('Secure');
  });

  it('marks the cookie Secure behind https, and scopes it and every link to the public path', async () => {
    const https = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'api', env: { PUBLIC_BASE_URL: 'https://console.example.com/skyhook' } });
    try {
      const res = await fetch(`${https.url}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
      });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/skyhook/console');
      const setCookie = res.headers.get('set-cookie') ?? '';
      expect(setCookie).toContain('; Secure');
      expect(setCookie).toContain('Path=/skyhook/console;');
      const page = await (await fetch(`${https.url}/console/sign-in`)).text();
      expect(page).toContain('action="/skyhook/console/sign-in"');
    } finally {
      await https.stop();
    }
  });

  it('keeps only the SHA-256 of a session id, and ends a session after 12 hours', async () => {
    const { cookie } = await signIn();
    const id = cookie.split('=')[1]!;
    const { rows } = await fixtures.pool.query<{ n: string }>('SELECT count(*) AS n FROM console_sessions WHERE id_sha256 = sha256($1::bytea)', [Buffer.from(id)]);
    expect(Number(rows[0]!.n)).toBe(1);
    const sessions = createSessionStore(fixtures.db);
    expect(await sessions.find(id)).toBeDefined();
    expect(await sessions.find(id, new Date(Date.now() + SESSION_TTL_MS + 1000))).toBeUndefined();
  });

  it('refuses a wrong token with the sign-in page (401), counted by the failed-authentication limiter (then 429)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post('/sign-in', { token: `wrong-${i}` });
      statuses.push(res.status);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('set-cookie')).toBeNull();
      const text = await res.text();
      expect(text).toContain('<form method="post"');
      if (res.status === 429) expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    // AUTH_FAILURE_LIMIT=3: the fourth and fifth refusals are 429.
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // Valid credentials are always served (SPEC §10).
    expect((await post('/sign-in', { token: ADMIN_TOKEN })).status).toBe(303);
  });

  it('ends the session at sign-out: the cookie no longer opens anything', async () => {
    const { cookie, csrf } = await signIn();
    expect((await get('/', cookie)).status).toBe(200);
    const out = await post('/sign-out', { _csrf: csrf }, cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console/sign-in?signedOut=1');
    expect(out.headers.get('set-cookie')).toMatch(/^skyhook_console=; .*Max-Age=0/);
    const after = await get('/', cookie);
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('/console/sign-in');
  });
});

describe('console CSRF', () => {
  it('refuses a state-changing request without the session token with a 403 page, and does nothing', async () => {
    const id = await storeNotification({ id: 'csrf-1', type: 'rfqs', href: `${apiBaseUrl}/rfqs/csrf-1` });
    const { cookie, csrf } = await signIn();
    const replays = async () => Number((await fixtures.pool.query('SELECT count(*) AS n FROM notification_replays WHERE notification_id = $1', [id])).rows[0].n);

    for (const [what, form, headers] of [
      ['no token', {}, {}],
      ['a wrong token', { _csrf: 'x'.repeat(43) }, {}],
      ['the right token from another site', { _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      const res = await post(`/notifications/${id}/replay`, form, cookie, headers);
      expect(res.status, what).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('This form could not be accepted');
    }
    expect(await replays()).toBe(0);

    // Another session's token is not this session's.
    const other = await signIn();
    expect((await post(`/notifications/${id}/replay`, { _csrf: other.csrf }, cookie)).status).toBe(403);

    const ok = await post(`/notifications/${id}/replay`, { _csrf: csrf }, cookie);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe(`/console/notifications/${id}?replayed=1`);
    expect(await replays()).toBe(1);
    // htmx sends the token as a header.
    expect((await post(`/notifications/${id}/replay`, {}, cookie, { 'x-csrf-token': csrf })).status).toBe(303);
  });
});

describe('console headers, files and errors', () => {
  it('sends a strict Content-Security-Policy and no-store on every page', async () => {
    const { cookie } = await signIn();
    for (const path of ['/sign-in', '/', '/notifications', '/companies', '/outbound']) {
      const res = await get(path, cookie);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const text = await res.text();
      // No inline script, no inline handler, no style attribute: the policy would block them.
      expect(text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(text).not.toMatch(/\son[a-z]+=/i);
      expect(text).not.toMatch(/\sstyle=/i);
      // Every script and stylesheet comes from Skyhook itself.
      for (const [, src] of text.matchAll(/(?:src|href)="([^"]+)"/g)) expect(src!.startsWith('/console') || src!.startsWith('#'), `${path}: ${src}`).toBe(true);
    }
    expect(CONTENT_SECURITY_POLICY).toContain("default-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
  });

  it('serves htmx, its SSE extension, uPlot and its own files under content-hashed URLs, cached for a year', async () => {
    const page = await (await get('/sign-in')).text();
    const urls = [...page.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(urls.map((u) => u.split('/').pop()).sort()).toEqual(['console.css', 'console.js', 'favicon.svg', 'htmx-sse.js', 'htmx.js']);
    for (const url of urls) {
      const res = await fetch(`${skyhook.url}${url}`);
      expect(res.status, url).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
    const htmx = await fetch(`${skyhook.url}${urls.find((u) => u.endsWith('/htmx.js'))}`);
    expect(htmx.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await htmx.text()).toContain('htmx');
  });

  it('shows errors as pages, never as JSON', async () => {
    const { cookie } = await signIn();
    const missing = await get('/notifications/999999999', cookie);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await missing.text()).toContain('Notification 999999999 was not found');
    const badFilter = await get('/notifications?companyId=not-a-uuid&receivedAfter=yesterday', cookie);
    expect(badFilter.status).toBe(400);
    const text = await badFilter.text();
    expect(text).toContain('<code>companyId</code>');
    expect(text).toContain('<code>receivedAfter</code>');
    const noPage = await get('/no-such-page', cookie);
    expect(noPage.status).toBe(404);
    expect(noPage.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('shows a hostile notification body, id and company name as text, never as markup', async () => {
    const hostileId = '"><img src=x onerror=alert(1)>';
    const id = await storeNotification({
      id: hostileId,
      type: '<script>alert("type")</script>',
      href: `${apiBaseUrl}/rfqs/${encodeURIComponent(hostileId)}`,
      note: '</code></pre><script>alert(document.cookie)</script>',
      nested: { html: '<svg onload=alert(1)>' },
    });
    const { cookie } = await signIn();
    const detail = await (await get(`/notifications/${id}`, cookie)).text();
    const list = await (await get('/notifications', cookie)).text();
    for (const text of [detail, list]) {
      expect(text).not.toContain('<script>alert');
      expect(text).not.toContain('<img src=x');
      expect(text).not.toContain('<b>Jets</b>');
      expect(text).toContain('Hostile &lt;b&gt;Jets&lt;/b&gt; &amp; Co');
    }
    expect(detail).toContain('&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(document.cookie)&lt;/script&gt;');
    expect(detail).toContain('&lt;svg onload=alert(1)&gt;');
    expect(list).toContain('&lt;script&gt;alert(&quot;type&quot;)&lt;/script&gt;');
  });
});

describe('a company page', () => {
  it('shows what the last credentials check found (SPEC §14), its reason as text', async () => {
    const { cookie } = await signIn();
    const page = async () => (await (await get(`/companies/${webhook.companyId}`, cookie)).text()).replace(/\s+/g, ' ');
    expect(await page()).toContain('<dt>Credentials</dt><dd><span class="badge s-queued">unchecked</span> bearer profile');
    await fixtures.pool.query(
      "UPDATE companies SET credentials_status = 'refused', credentials_error = $2, credentials_checked_at = now() WHERE id = $1",
      [webhook.companyId, 'GET /webhooks/settings answered 401: <b>no</b> (unauthorized)'],
    );
    const refused = await page();
    expect(refused).toContain('<span class="badge s-failed">refused</span> bearer profile<br>GET /webhooks/settings answered 401: &lt;b&gt;no&lt;/b&gt; (unauthorized)');
  });
});

describe('the list with a time window (the order its index can serve)', () => {
  it('pages a window newest first by the time received, every row once, with its own cursor', async () => {
    // Five notifications received inside the window (two at the same microsecond), two outside it; ids
    // deliberately out of time order.
    const at = (s: number) => new Date(Date.UTC(2020, 0, 1, 0, 0, s)).toISOString();
    const times = [at(50), at(10), at(30), at(30), at(20), at(5), at(59)];
    const ids: string[] = [];
    for (const [i, t] of times.entries()) {
      const id = await storeNotification({ id: `window-${i}`, type: 'rfqs', href: `${apiBaseUrl}/rfqs/window-${i}` });
      await fixtures.pool.query('UPDATE notifications SET received_at = $2 WHERE id = $1', [id, t]);
      ids.push(id);
    }
    const window = `receivedAfter=${encodeURIComponent(at(10))}&receivedBefore=${encodeURIComponent(at(55))}`;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await skyhook.admin('GET', `/notifications?${window}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((n: { id: string }) => n.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    // 50 s, then the two at 30 s (higher id first), 20 s, 10 s; not 5 s nor 59 s.
    expect(seen).toEqual([ids[0], ids[3], ids[2], ids[4], ids[1]]);
    // An id cursor (from a list without a time bound) is not this order's: refused, naming the field.
    const wrong = await skyhook.admin('GET', `/notifications?${window}&cursor=${Buffer.from('12').toString('base64url')}`);
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0].field).toBe('cursor');
  });
});
