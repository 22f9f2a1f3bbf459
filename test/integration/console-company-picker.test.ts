/**
 * The console's company picker (src/console/company-picker.ts) at more companies than a list could hold: a
 * deployment of 1,000 companies, written in SQL, behind an `api` Skyhook. Whatever its place by id, a company
 * is found by part of its name (in any case; `%` and `_` are letters) or by its id, through the console's
 * search route; the notifications and the leads & quotes pages show the company their `?companyId=` names,
 * and read the text a browser without script sends (`company`); bad text is a 400, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { encryptSecret } from '../../src/lib/crypto.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures } from '../helpers/fixtures.js';
import { consoleClient } from '../helpers/console-client.js';
import { startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const COMPANIES = 1000;

describe('the company picker with 1,000 companies', () => {
  let db: TestDatabase;
  let sky: TestSkyhook;
  let sql: DbHandle;
  let cookie: string;
  /** The id of the `n`th company by id (from 1): ids in the order of the series, as the old 500-company list kept them. */
  const nth = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  /** The 751st company by id: past anything the list of 500 showed. */
  const late = nth(751);
  const other = nth(11);
  const { get, signIn } = consoleClient(() => sky.url);

  /** A page's text, asserting its status. */
  const page = async (path: string, status = 200) => {
    const res = await get(path, cookie);
    expect(res.status, path).toBe(status);
    expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
    return res.text();
  };
  /** The suggestions for a text: [id, name] of each option, in order. */
  const suggestions = async (text: string) =>
    [...(await page(`/companies/search?company=${encodeURIComponent(text)}`)).matchAll(/<li role="option" aria-selected="false" data-id="([^"]+)" data-name="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]);
  /** What a page's picker holds: its text field's value and its hidden companyId. */
  const picker = (text: string, field: string) => ({
    text: new RegExp(`<input id="${field}" name="company" value="([^"]*)"`).exec(text)?.[1],
    companyId: /<input type="hidden" name="companyId" value="([^"]*)">/.exec(text)?.[1],
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    sky = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix(), role: 'api' });
    sql = connectFixtures(db.url);
    // One statement for all of them: "Fleet 0001" to "Fleet 1000", but the 751st, and four whose names hold
    // LIKE's wildcards, its escape character, or start with digits.
    await sql.pool.query(
      `INSERT INTO companies (id, name, api_base_url, api_token_encrypted, credentials_status)
       SELECT ('00000000-0000-4000-8000-' || lpad(c::text, 12, '0'))::uuid,
              CASE c WHEN 751 THEN 'Northwind Aviation' WHEN 901 THEN '100% Charter' WHEN 902 THEN 'Jet_Set' WHEN 903 THEN 'Back\\slash Air' WHEN 904 THEN '99 Wings'
                     ELSE 'Fleet ' || lpad(c::text, 4, '0') END,
              'http://127.0.0.1:9/api', $1, 'accepted'
       FROM generate_series(1, ${COMPANIES}) c`,
      [encryptSecret(sky.config.secretKey, 'a-token')],
    );
    // Two companies of the same name, and a name that is also the start of another.
    await sql.pool.query(
      `INSERT INTO companies (id, name, api_base_url) VALUES ($1, 'Twin Air', 'http://127.0.0.1:9/api'), ($2, 'Twin Air', 'http://127.0.0.1:9/api'), ($3, 'Solo', 'http://127.0.0.1:9/api'), ($4, 'Solo Jets', 'http://127.0.0.1:9/api')`,
      [nth(1001), nth(1002), nth(1003), nth(1004)],
    );
    // A notification of the late company and one of another, each through a webhook of its own.
    await sql.pool.query(
      `INSERT INTO webhooks (company_id, remote_id, endpoint_key, target_uri, client_identifier, auth_type, secret_sha256, event_types, display_name)
       SELECT id, 'wh-' || id, 'key-' || id, 'http://127.0.0.1:9/hooks/key-' || id, 'client-' || id, 'BASIC', sha256(id::text::bytea), ARRAY['TripRequest'], name FROM companies WHERE id IN ($1, $2)`,
      [late, other],
    );
    await sql.pool.query(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, attempts)
       SELECT w.company_id, w.id, 'rfq-of-' || c.name, 'rfqs', 'http://127.0.0.1:9/api/rfqs/' || w.company_id, '{}', 'basic', 'queued', 0
       FROM webhooks w JOIN companies c ON c.id = w.company_id`,
    );
    ({ cookie } = await signIn());
  }, 60_000);

  afterAll(async () => {
    await sky?.stop();
    await sql?.pool.end();
    await db?.drop();
  });

  it('finds a company past the 500th by id by part of its name, in any case, or by its id', async () => {
    const { rows } = await sql.pool.query<{ n: string }>('SELECT count(*) AS n FROM companies WHERE id < $1', [late]);
    expect(Number(rows[0]!.n)).toBe(750);
    expect(await suggestions('northwind')).toEqual([[late, 'Northwind Aviation']]);
    expect(await suggestions('WIND AVI')).toEqual([[late, 'Northwind Aviation']]);
    expect(await suggestions(late)).toEqual([[late, 'Northwind Aviation']]);
    expect(await suggestions(late.toUpperCase())).toEqual([[late, 'Northwind Aviation']]);
    // At most 20, by name; the names starting with the text first.
    const fleet = await suggestions('fleet 0');
    expect(fleet.map(([, name]) => name)).toEqual(Array.from({ length: 20 }, (_, i) => `Fleet ${String(i + 1).padStart(4, '0')}`));
    const nines = ['0099', '0199', '0299', '0399', '0499', '0599', '0699', '0799', '0899', '0990', '0991', '0992', '0993', '0994', '0995', '0996', '0997', '0998', '0999'];
    expect((await suggestions('99')).map(([, name]) => name)).toEqual(['99 Wings', ...nines.map((n) => `Fleet ${n}`)]);
    expect(await suggestions('')).toHaveLength(20);
    // No match: said as such, not an option one could pick.
    expect(await suggestions('zeppelin')).toEqual([]);
    expect(await page('/companies/search?company=zeppelin')).toContain('aria-disabled="true" class="picker-none">No company matches.');
  });

  it("matches % and _ and the backslash as themselves, not as LIKE's wildcards", async () => {
    expect(await suggestions('%')).toEqual([[nth(901), '100% Charter']]);
    expect(await suggestions('0% c')).toEqual([[nth(901), '100% Charter']]);
    expect(await suggestions('_')).toEqual([[nth(902), 'Jet_Set']]);
    expect(await suggestions('\\')).toEqual([[nth(903), 'Back\\slash Air']]);
  });

  it('answers bad text with a 400 naming the field, never a 500', async () => {
    for (const [what, query] of [
      ['a NUL character', 'company=a%00b'],
      ['too long a text', `company=${'x'.repeat(201)}`],
      ['two values', 'company=a&company=b'],
    ]) {
      const text = await page(`/companies/search?${query}`, 400);
      expect(text, what).toContain('<code>company</code>');
    }
    // Bytes that are not UTF-8 are text like any other: no company has them.
    expect(await suggestions('%FF%FE')).toEqual([]);
    // The pages that read the text say so too, with their form.
    const notifications = await page('/notifications?company=a%00b', 400);
    expect(notifications).toContain('<code>company</code> must not contain a NUL character');
    expect(notifications).toContain('<form method="get"');
    expect(await page('/outbound?company=a%00b', 400)).toContain('<code>company</code> must not contain a NUL character');
  });

  it('shows the company of ?companyId= in the notifications page, and only its notifications', async () => {
    const text = await page(`/notifications?companyId=${late}`);
    expect(picker(text, 'f-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    expect(text).toContain('rfq-of-Northwind Aviation');
    expect(text).not.toContain('rfq-of-Fleet');
    // The page lists no company: its picker asks the server as the operator types.
    expect(text).not.toContain('Fleet 0001');
    expect(text).toContain(`hx-get="/console/companies/search"`);
    // Without a company: every company's, the field empty.
    const all = await page('/notifications');
    expect(picker(all, 'f-company')).toEqual({ text: '', companyId: '' });
    expect(all).toContain('rfq-of-Northwind Aviation');
    expect(all).toContain('rfq-of-Fleet');
  });

  it('reads the text a browser without script sends: a pasted id, a name, the picked name kept, an empty field', async () => {
    // A pasted id.
    expect(picker(await page(`/notifications?company=${late}&companyId=`), 'f-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    // Part of a name that only one company has; a whole name in another case.
    expect(picker(await page('/notifications?company=northw&companyId='), 'f-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    expect(picker(await page('/notifications?company=fleet+0011&companyId='), 'f-company')).toMatchObject({ text: 'Fleet 0011' });
    // The form sent again as it came: the name shown and the id it holds.
    const kept = await page(`/notifications?company=Northwind+Aviation&companyId=${late}&status=queued`);
    expect(picker(kept, 'f-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    expect(kept).not.toContain('rfq-of-Fleet');
    // The field emptied: every company, whatever the hidden id held.
    expect(picker(await page(`/notifications?company=&companyId=${late}`), 'f-company')).toEqual({ text: '', companyId: '' });
    // A whole name wins over the names it starts.
    expect(picker(await page('/notifications?company=SOLO&companyId='), 'f-company')).toEqual({ text: 'Solo', companyId: nth(1003) });
    // Text naming no single company: the form as sent, and why (with the ids to paste).
    const twins = await page('/notifications?company=twin+air', 400);
    expect(twins).toContain('2 companies are named “twin air”: paste the id of the one you mean.');
    expect(twins).toContain(`<code>company</code> Twin Air: ${nth(1001)}`);
    expect(twins).toContain(`<code>company</code> Twin Air: ${nth(1002)}`);
    const many = await page('/notifications?company=fleet+0&companyId=', 400);
    expect(many).toContain('More than 20 companies match “fleet 0”');
    expect(picker(many, 'f-company')).toEqual({ text: 'fleet 0', companyId: '' });
    expect(await page('/notifications?company=zeppelin', 400)).toContain('No company&#39;s name contains “zeppelin”');
  });

  it('shows the company of ?companyId= in the leads & quotes page, and reads its text the same way', async () => {
    expect(picker(await page(`/outbound?companyId=${late}`), 'o-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    expect(picker(await page('/outbound?company=northwind'), 'o-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
    // No company picked: the first by id, as before.
    expect(picker(await page('/outbound'), 'o-company')).toEqual({ text: 'Fleet 0001', companyId: nth(1) });
    expect(await page('/outbound?company=zeppelin', 400)).toContain('No company');
  });

  it('says when more quotes are of unknown outcome than the leads & quotes page shows', async () => {
    const unknownQuotes = (n: number) =>
      sql.pool.query(
        `INSERT INTO quotes (company_id, seller_unique_quote_identifier, request_id, status, submission, error)
         SELECT $1, 'q-unknown-' || g || '-' || $2, 'rfq-' || g, 'unknown', '{}', 'no answer' FROM generate_series(1, $2) g`,
        [other, n],
      );
    await unknownQuotes(100);
    expect(await page(`/outbound?companyId=${other}`)).not.toContain('More are unknown than');
    await unknownQuotes(1);
    const more = await page(`/outbound?companyId=${other}`);
    expect(more).toContain('More are unknown than the 100 of each shown here');
    expect([...more.matchAll(/q-unknown-/g)].length).toBeGreaterThanOrEqual(100);
  });

  it("a company key's picker names no other company: not by a name, a part of one, or an id", async () => {
    const key = await sky.admin('POST', '/keys', { name: 'northwind app', role: 'company', companyId: late });
    const own = (await signIn(key.body.key)).cookie;
    const text = async (path: string) => (await get(path, own)).text();
    // Others' names appear nowhere, nor ids it did not send: not as candidates, not in the field (the
    // 'Fleet' names all start so); another's id it pasted is as if no company had it.
    for (const path of ['/notifications?company=fleet', '/notifications?company=twin+air', '/outbound?company=fleet']) {
      const shown = await text(path);
      expect(shown, path).not.toMatch(/Fleet \d{4}|Twin Air/);
      expect(shown, path).not.toMatch(/00000000-0000-4000-8000-0000000(?!00751)\d{5}/);
    }
    for (const path of [`/notifications?company=${other}`, `/notifications?companyId=${other}`, `/outbound?company=${other}`]) {
      const res = await get(path, own);
      expect(res.status, path).toBe(404);
      expect(await res.text(), path).not.toMatch(/Fleet \d{4}/);
    }
    // Its suggestions: its own company, for part of its name, and nothing else for any other text.
    const suggested = async (q: string) => [...(await text(`/companies/search?company=${encodeURIComponent(q)}`)).matchAll(/data-id="([^"]+)"/g)].map((m) => m[1]);
    expect(await suggested('wind')).toEqual([late]);
    expect(await suggested('')).toEqual([late]);
    expect(await suggested('fleet')).toEqual([]);
    // Its own company it still picks by its name.
    expect(picker(await text('/notifications?company=northwind&companyId='), 'f-company')).toEqual({ text: 'Northwind Aviation', companyId: late });
  });
});
