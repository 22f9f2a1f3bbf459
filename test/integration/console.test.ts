/**
 * The operator console's security (SPEC §13), over HTTP against a real Skyhook: sign-in for a session
 * cookie (HttpOnly, SameSite=Strict, 12 h, Secure behind https), failed sign-ins in the failed-
 * authentication limiter, sign-out ending the session, CSRF refusals as a 403 page, the
 * Content-Security-Policy, static files cached for a year, errors as pages, and a hostile notification
 * body shown as text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createSessionStore, SESSION_TTL_MS } from '../../src/access/sessions.js';
import { CONTENT_SECURITY_POLICY } from '../../src/console/plugin.js';
import type { DbHandle } from '../../src/db/client.js';
import { encryptSecret } from '../../src/lib/crypto.js';
import { Gate } from '../../src/gate/gate.js';
import { TABLE_PAGE_SIZE } from '../../src/services/overview.service.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { basicAuthorization, connectFixtures, postNotification, seedCompany, seedWebhook, type SeededWebhook } from '../helpers/fixtures.js';
import { consoleClient } from '../helpers/console-client.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

let db: TestDatabase;
let skyhook: TestSkyhook;
let fixtures: DbHandle;
let webhook: SeededWebhook;
let apiBaseUrl: string;

/** A request to the console that follows no redirect; signIn for a session (helpers/console-client.ts). */
const { get, post, signIn } = consoleClient(() => skyhook.url);

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

  it('shows the snapshot a notification led to, not a later version of its resource', async () => {
    const href = `${apiBaseUrl}/rfqs/led-to`;
    const id = await storeNotification({ id: 'led-to', type: 'rfqs', href });
    const { rows } = await fixtures.pool.query<{ company_id: string }>('SELECT company_id FROM notifications WHERE id = $1', [id]);
    const companyId = rows[0]!.company_id;
    // Version 1 is what it led to; a later notification's fetch stored version 2 since.
    await fixtures.pool.query('UPDATE notifications SET snapshot_version = 1 WHERE id = $1', [id]);
    await fixtures.pool.query(`INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, body) VALUES ($1, $2, 'rfqs', 'led-to', 2, now(), '{"seats": "version two"}')`, [companyId, href]);
    await fixtures.pool.query(
      `INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, snapshot) VALUES ($1, 9001, 'rfqs', 'led-to', $2, 1, '{"seats": "version one"}'), ($1, 9002, 'rfqs', 'led-to', $2, 2, '{"seats": "version two"}')`,
      [companyId, href],
    );
    const { cookie } = await signIn();
    const shown = await (await get(`/notifications/${id}`, cookie)).text();
    expect(shown).toContain('Version 1 of');
    expect(shown).toContain('version one');
    expect(shown).not.toContain('version two');
    // Its version no longer kept: the latest, said so.
    await fixtures.pool.query("DELETE FROM events WHERE company_id = $1 AND href = $2 AND snapshot_version = 1", [companyId, href]);
    const latest = await (await get(`/notifications/${id}`, cookie)).text();
    expect(latest).toContain('version two');
    expect(latest).toContain('covered by version 1, which is no longer kept');
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

/**
 * A deployment of 150 companies (SPEC §13: the overview "whatever their number"): its own database and an
 * `api` Skyhook (nothing fetches), companies and notifications written in SQL, a hold at a company's gate.
 */
describe('the overview and the companies page with many companies', () => {
  const COMPANIES = 150;
  let many: TestDatabase;
  let sky: TestSkyhook;
  let sql: DbHandle;
  let redis: Redis;
  let ids: string[];
  /** Ids in the order of the names ("Many 001" first), and in the order of the ids. */
  let byId: string[];
  let paused: string;
  let throttled: string;
  let oldBacklog: string;
  let failing: string[];
  const name = (i: number) => `Many ${String(i + 1).padStart(3, '0')}`;
  const nameOf = (id: string) => name(ids.indexOf(id));
  const at = (path: string) => `${sky.url}/console${path}`;
  let cookie: string;
  let csrf: string;
  const page = async (path: string, expectStatus = 200) => {
    const res = await fetch(at(path), { redirect: 'manual', headers: { cookie } });
    expect(res.status, path).toBe(expectStatus);
    return res.text();
  };
  const section = (text: string, id: string) => {
    const from = text.indexOf(`<section aria-labelledby="${id}"`);
    expect(from, `section ${id}`).toBeGreaterThan(-1);
    return text.slice(from, text.indexOf('</section>', from));
  };
  /** The names in a table's first column, in order. */
  const names = (part: string) => [...part.matchAll(/<tr><td><a href="[^"]*">([^<]+)<\/a><\/td>/g)].map((m) => m[1]!);
  /** A fact's value (`<dt>label</dt><dd>value</dd>`) as text. */
  const fact = (text: string, label: string) => [...text.matchAll(/<dt>([^<]+)<\/dt><dd>(.*?)<\/dd>/g)].find((m) => m[1] === label)?.[2]?.replace(/<[^>]+>/g, '');
  const cards = (text: string) => [...text.matchAll(/<article class="card" aria-labelledby="c-([0-9a-f-]+)"/g)].map((m) => m[1]!);

  /** `n` notifications of a company, received `agoS` seconds ago, in one status. */
  async function notificationsOf(companyId: string, status: 'queued' | 'failed' | 'processed', n: number, agoS: number) {
    await sql.pool.query(
      `INSERT INTO notifications (company_id, webhook_id, received_at, resource_id, type, href, body, authenticated_by, status, attempts, last_error, queued_at, processed_at, finished_at)
       SELECT w.company_id, w.id, now() - $3 * interval '1 second', r, 'rfqs', 'http://127.0.0.1:9/api/rfqs/' || r, jsonb_build_object('id', r), 'basic', $2::notification_status,
              CASE WHEN $2 = 'queued' THEN 0 ELSE 1 END, CASE WHEN $2 = 'failed' THEN 'gave up after 14 attempts: HTTP 503' END,
              now() - $3 * interval '1 second', CASE WHEN $2 = 'processed' THEN now() - $3 * interval '1 second' + interval '30 ms' END,
              CASE WHEN $2 <> 'queued' THEN now() - $3 * interval '1 second' + interval '30 ms' END
       FROM webhooks w CROSS JOIN LATERAL (SELECT 'r-' || md5(random()::text) AS r FROM generate_series(1, $4)) g WHERE w.company_id = $1`,
      [companyId, status, agoS, n],
    );
  }

  beforeAll(async () => {
    many = await createTestDatabase();
    const prefix = testQueuePrefix();
    sky = await startSkyhook({ databaseUrl: many.url, queuePrefix: prefix, role: 'api' });
    sql = connectFixtures(many.url);
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    await sql.pool.query(
      `INSERT INTO companies (name, api_base_url, api_token_encrypted, credentials_status)
       SELECT 'Many ' || lpad(c::text, 3, '0'), 'http://127.0.0.1:9/api', $1, 'accepted' FROM generate_series(1, ${COMPANIES}) c`,
      [encryptSecret(sky.config.secretKey, 'a-token')],
    );
    await sql.pool.query(
      `INSERT INTO webhooks (company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, secret_sha256, event_types, display_name)
       SELECT id, 'wh-' || id, 'key-' || id, 'http://127.0.0.1:9/hooks/key-' || id, 'client-' || id, 'BASIC', sha256(id::text::bytea), ARRAY['TripRequest'], name FROM companies`,
    );
    // The names follow the order of insertion; the ids (random UUIDs) do not: order by name to address them.
    ids = (await sql.pool.query<{ id: string }>('SELECT id FROM companies ORDER BY name')).rows.map((r) => r.id);
    byId = [...ids].sort();
    [paused, throttled, oldBacklog] = [byId[120]!, byId[130]!, byId[110]!];
    failing = byId.slice(140, 150);
    const res = await fetch(at('/sign-in'), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${ADMIN_TOKEN}` });
    cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
    csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(await page('/companies'))?.[1] ?? '';
    expect(csrf).not.toBe('');
  }, 60_000);

  afterAll(async () => {
    redis?.disconnect();
    await sky?.stop();
    await sql?.pool.end();
    await many?.drop();
  });

  it('shows every company needing attention, a paused one after the first 100 by id included, and the totals', async () => {
    await sql.pool.query(`UPDATE companies SET connection_status = 'unauthorized', connection_error = 'marketplace answered 401: <b>token</b> refused', paused_at = now() - interval '1 hour' WHERE id = $1`, [paused]);
    const gate = new Gate(redis, sky.config.queuePrefix, 'company', { defaultMax: 8, leaseMs: 60_000 });
    await gate.hold(throttled, 120_000, 'marketplace answered 429: slow down');
    for (const id of failing) await notificationsOf(id, 'failed', 1, 300);
    await notificationsOf(paused, 'queued', 2, 1200);
    await notificationsOf(oldBacklog, 'queued', 3, 600);
    await notificationsOf(byId[0]!, 'processed', 4, 120);

    const text = await page('/');
    // The deployment, across every company.
    expect(fact(text, 'Companies')).toBe('150');
    expect(fact(text, 'Received, last hour')).toBe('19'); // 10 failed, 4 processed, 3 + 2 queued
    expect(fact(text, 'Processed, last hour')).toBe('4');
    expect(fact(text, 'Failed, last hour')).toBe('10');
    expect(fact(text, 'Backlog, pending')).toBe('5');
    expect(fact(text, 'Oldest pending')).toBe('20 min');
    expect(fact(text, 'Paused')).toBe('1');
    expect(fact(text, 'Throttled')).toBe('1');
    expect(fact(text, 'Unreachable')).toBe('0');
    // The deployment's chart puts each notification in the minute it arrived, and each failure in the minute it finished.
    const counts = /data-chart="([^"]+)"[^>]*aria-label="Every company: notifications received/.exec(text)?.[1];
    expect(counts).toBeDefined();
    const chart = JSON.parse(counts!.replaceAll('&quot;', '"')) as { x: number[]; series: [string, number[]][] };
    const perMinute = (times: number[]) => chart.x.map((x) => times.filter((t) => t >= x && t < x + 60).length);
    const { rows: stamps } = await sql.pool.query<{ received: number; failed: number | null }>(
      `SELECT extract(epoch FROM received_at)::float8 AS received, CASE WHEN status = 'failed' THEN extract(epoch FROM finished_at)::float8 END AS failed FROM notifications`,
    );
    expect(chart.series.find(([n]) => n === 'received')![1]).toEqual(perMinute(stamps.map((r) => r.received)));
    expect(chart.series.find(([n]) => n === 'failed')![1]).toEqual(perMinute(stamps.flatMap((r) => (r.failed === null ? [] : [r.failed]))));

    // Needs attention: all 13, most urgent first; their cards ten to a page.
    const attention = section(text, 'attention');
    const listed = names(attention);
    expect(listed.slice(0, 2)).toEqual([nameOf(paused), nameOf(throttled)]);
    expect(new Set(listed)).toEqual(new Set([paused, throttled, ...failing, oldBacklog].map(nameOf)));
    expect(listed.at(-1)).toBe(nameOf(oldBacklog));
    expect(attention).toContain('marketplace answered 401: &lt;b&gt;token&lt;/b&gt; refused');
    expect(attention).toContain('marketplace answered 429: slow down');
    expect(attention).toContain('<td class="wrap">HTTP 503</td>'); // the top failure reason, without its retry count
    const first = cards(text);
    expect(first).toHaveLength(10);
    expect(first.slice(0, 2)).toEqual([paused, throttled]);
    expect(attention).toContain('data-chart=');
    const second = cards(await page('/?page=2'));
    expect(second).toHaveLength(3);
    expect(new Set([...first, ...second])).toEqual(new Set([paused, throttled, ...failing, oldBacklog]));
    // The list links each company to its card, on the page that has it.
    expect(attention).toContain(`href="#c-${paused}"`);
    expect(attention).toContain(`href="/console?page=2#c-${second[0]}"`);

    // Every other company, one row each, fifty to a page (sorted and paged by the server); none of the 13.
    const firstRows = names(section(text, 'others'));
    expect(firstRows).toHaveLength(TABLE_PAGE_SIZE);
    expect(section(text, 'others')).toContain(`Every other company <span class="muted">(${COMPANIES - 13})</span>`);
    expect(section(text, 'others')).toContain('Companies 1–50 of 137 (page 1 of 3)');
    expect(section(text, 'others')).toContain('href="/console?tablePage=2#others" rel="next"');
    const third = section(await page('/?tablePage=3'), 'others');
    expect(third).toContain('Companies 101–137 of 137 (page 3 of 3)');
    const others = [...firstRows, ...names(section(await page('/?tablePage=2'), 'others')), ...names(third)];
    expect(new Set(others).size).toBe(COMPANIES - 13);
    expect(others).not.toContain(nameOf(paused));
    expect(others).toContain(nameOf(byId[0]!));
    // Past the last page: the last; not a page number: refused, naming the field.
    expect(names(section(await page('/?tablePage=99'), 'others'))).toEqual(names(third));
    expect(await page('/?tablePage=0', 400)).toContain('<code>tablePage</code>');
  });

  it('searches (name or id) and sorts (state, backlog, oldest pending, name) the table through the query string', async () => {
    // Fresh backlogs (under a minute: no attention) of different sizes and ages, at three quiet companies.
    const noticed = new Set([paused, throttled, oldBacklog, ...failing]);
    const quiet = ids.filter((id) => !noticed.has(id));
    const [big, small, older] = quiet as [string, string, string];
    await notificationsOf(big, 'queued', 4, 5);
    await notificationsOf(small, 'queued', 1, 5);
    await notificationsOf(older, 'queued', 2, 40);
    const table = async (path: string) => names(section(await page(path), 'others'));

    expect(await table('/?q=many%2000')).toEqual(quiet.map(nameOf).filter((n) => n.startsWith('Many 00')));
    expect(await table(`/?q=${quiet[42]!.slice(0, 8)}`)).toEqual([nameOf(quiet[42]!)]);
    expect((await table('/?sort=backlog')).slice(0, 3)).toEqual([big, older, small].map(nameOf));
    expect((await table('/?sort=oldest')).slice(0, 3)).toEqual([older, big, small].map(nameOf));
    expect((await table('/?sort=backlog&dir=asc&tablePage=3')).slice(-3)).toEqual([small, older, big].map(nameOf));
    // The search is the server's: a name on the third page by name is found from the first.
    expect(await table(`/?q=${encodeURIComponent(nameOf(quiet.at(-1)!))}`)).toEqual([nameOf(quiet.at(-1)!)]);
    expect(await page('/?q=%00', 400)).toContain('a value the database cannot store');
    const byName = await table('/?sort=name&dir=desc');
    expect(byName.slice(0, 2)).toEqual([...byName].sort().reverse().slice(0, 2));
    // The search applies to the companies needing attention too, and the totals stay the deployment's.
    const searched = await page('/?q=zzz');
    expect(section(searched, 'attention')).toContain('No company needing attention matches.');
    expect(section(searched, 'others')).toContain('No other company matches.');
    expect(fact(searched, 'Companies')).toBe('150');
    // A sort that does not exist is refused, naming the field.
    expect(await page('/?sort=size', 400)).toContain('<code>sort</code>');

    // The companies page: every company, the same search and sorts.
    const list = async (path: string) => names(await page(path));
    expect(await list('/companies?q=MANY%2015')).toEqual(['Many 150']);
    expect((await list('/companies?sort=backlog')).slice(0, 2)).toEqual([nameOf(big), nameOf(oldBacklog)]);
    const byState = await list('/companies?sort=state');
    expect(byState).toHaveLength(TABLE_PAGE_SIZE);
    expect(byState.slice(0, 2)).toEqual([nameOf(paused), nameOf(throttled)]);
    expect(await page('/companies')).toContain('Companies 1–50 of 150 (page 1 of 3)');
    expect((await list('/companies?sort=state&dir=desc&tablePage=3')).slice(-2)).toEqual([nameOf(throttled), nameOf(paused)]);
  });

  it("shows a company's state, backlog and fetches, and sets its limit through a form as the admin API does, refusing 0 naming the field", async () => {
    const pausedPage = await page(`/companies/${paused}`);
    expect(fact(pausedPage, 'State')).toMatch(/^paused since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(1 h 0 min\)$/);
    expect(pausedPage).toContain('<strong>Paused</strong>');
    expect(pausedPage).toContain('marketplace answered 401: &lt;b&gt;token&lt;/b&gt; refused');
    expect(fact(pausedPage, 'Backlog')).toBe('2 pending');
    expect(fact(pausedPage, 'Oldest pending')).toBe('20 min');
    expect(fact(await page(`/companies/${throttled}`), 'State')).toMatch(/^throttled until \d{4}-/);

    const id = ids[60]!;
    const fetches = async () => (await sky.admin('GET', `/companies/${id}`)).body.fetches;
    const before = await fetches();
    expect(before.ownLimit).toBeNull();
    const text = await page(`/companies/${id}`);
    expect(fact(text, 'Limit')).toBe(`${before.limit} at once (the default)`);
    expect(fact(text, 'Queued or running')).toBe('0');
    const post = (form: Record<string, string>) =>
      fetch(at(`/companies/${id}/limit`), { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });

    const set = await post({ _csrf: csrf, fetchConcurrency: '7' });
    expect(set.status).toBe(303);
    expect(set.headers.get('location')).toBe(`/console/companies/${id}?done=limitChanged`);
    expect(await fetches()).toMatchObject({ limit: 7, ownLimit: 7 });
    const shown = await page(`/companies/${id}?done=limitChanged`);
    expect(shown).toContain('The fetch limit was changed');
    expect(fact(shown, 'Limit')).toBe('7 at once (its own)');

    for (const given of ['0', '10001', '2.5', 'many', '']) {
      const refused = await post({ _csrf: csrf, fetchConcurrency: given });
      expect(refused.status, given).toBe(400);
      const body = await refused.text();
      expect(body, given).toContain('<code>fetchConcurrency</code> must be a whole number from 1 to 10000');
      expect(body, given).toContain('aria-invalid="true"');
    }
    expect(await fetches()).toMatchObject({ limit: 7, ownLimit: 7 });
    // Without the session's token: refused, nothing changed.
    expect((await post({ fetchConcurrency: '9' })).status).toBe(403);
    expect((await fetches()).ownLimit).toBe(7);
    // Back to the default.
    expect((await post({ _csrf: csrf, fetchConcurrency: 'default' })).status).toBe(303);
    expect(await fetches()).toMatchObject({ limit: before.limit, ownLimit: null });
  });

  it("replays what the list's filter matches, not only a page of it, whatever the page size", async () => {
    const id = byId[5]!;
    await notificationsOf(id, 'failed', 30, 60);
    const list = await page(`/notifications?companyId=${id}&status=failed&limit=25`);
    const link = /href="([^"]*\/notifications\/replay[^"]*)">Replay the matching ones/.exec(list)?.[1]?.replaceAll('&amp;', '&');
    expect(link).toBeDefined();
    expect(link).not.toContain('limit=');
    const confirm = await page(link!.replace('/console', ''));
    expect(confirm).toContain('<strong>30</strong> notifications match');
    expect(confirm).toContain('Replay 30 notifications');
    expect(confirm).not.toContain('Only the oldest');
  });
});
