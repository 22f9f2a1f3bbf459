/**
 * The console per role (SPEC §10.1), in a real browser: an admin makes keys on the Keys page (each shown
 * once), then each key signs in and sees only what its role may do: a viewer sees the company but no button
 * that changes it (and a form it posts anyway is refused), an operator sees them but not Keys, a company key
 * sees its own company alone. The audit log page lists what was done, by whom. No request to another origin,
 * no error in the browser's console but the refusals asked for.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { chromiumAvailable, CHROMIUM, launchBrowser, watchedPage } from '../helpers/browser.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import { connectFixtures, seedCompany } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';

const available = chromiumAvailable();
if (!available && process.env.CI) throw new Error(`Chromium is required in CI: ${CHROMIUM} is missing`);
if (!available) console.warn(`skipping the console's role browser tests: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

describe.skipIf(!available)('the console per role in Chromium', () => {
  let db: TestDatabase;
  let skyhook: TestSkyhook;
  let fixtures: DbHandle;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let origin: string;
  let companyA: string;
  let companyB: string;
  const keys: Record<string, string> = {};
  const consoleErrors: string[] = [];
  const otherOrigins: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    skyhook = await startSkyhook({ databaseUrl: db.url, queuePrefix: testQueuePrefix() });
    fixtures = connectFixtures(db.url);
    companyA = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Alpha Charter' })).id;
    companyB = (await seedCompany(fixtures.db, skyhook.config.secretKey, { name: 'Bravo Jets' })).id;
    origin = skyhook.url;
    browser = await launchBrowser({ width: 1280, height: 800 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await skyhook?.stop();
    await fixtures?.pool.end();
    await db?.drop();
  });

  async function signedIn(token: string): Promise<Page> {
    await browser.context.clearCookies();
    const page = await watchedPage(browser.context, origin, { consoleErrors, otherOrigins });
    await page.goto(`${origin}/console/sign-in`);
    await page.getByLabel('Key').fill(token);
    await Promise.all([page.waitForURL((url) => !url.pathname.endsWith('/sign-in')), page.keyboard.press('Enter')]);
    await page.waitForLoadState('load');
    return page;
  }

  const buttons = async (page: Page) => (await page.locator('main button').allTextContents()).map((t) => t.trim());

  it('an admin makes a key for each role on the Keys page, each shown once', { timeout: 60_000 }, async () => {
    const page = await signedIn(ADMIN_TOKEN);
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.waitForURL(`${origin}/console/keys`);
    for (const role of ['operator', 'viewer', 'company']) {
      const form = page.locator('form[action="/console/keys"]');
      await form.getByLabel('Name (who or what holds it)').fill(`${role} key`);
      await form.getByLabel('Role').selectOption(role);
      if (role === 'company') await form.getByLabel('Company id (a company key only)').fill(companyA);
      await form.getByRole('button', { name: 'Make the key' }).click();
      await page.waitForLoadState('load');
      keys[role] = (await page.locator('.secret-box code.secret').textContent()) ?? '';
      expect(keys[role]).toMatch(/^skh_[0-9A-Za-z]{46}$/);
    }
    await page.screenshot({ path: '/tmp/skyhook-console-keys.png', fullPage: true });
    const table = (await page.locator('main table').textContent()) ?? '';
    expect(table).toContain('viewer key');
    for (const key of Object.values(keys)) expect(table).not.toContain(key);
    await page.close();
  });

  it("a viewer sees a company's page with no button that changes it, and a form it posts anyway is refused", { timeout: 60_000 }, async () => {
    const page = await signedIn(keys.viewer!);
    await page.goto(`${origin}/console/companies/${companyA}`);
    expect(await page.locator('h1').textContent()).toBe('Alpha Charter');
    expect(await buttons(page)).toEqual([]);
    expect(await page.locator('nav[aria-label="Console"]').textContent()).not.toContain('Keys');
    // The delete form, posted from the page's own origin with its CSRF token: the server refuses it.
    // A string, run in the page (the test's TypeScript has no DOM types).
    const refused = (await page.evaluate(`(async () => {
      const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute('content');
      const res = await fetch('${origin}/console/companies/${companyA}/delete', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '_csrf=' + encodeURIComponent(csrf) });
      return { status: res.status, text: await res.text() };
    })()`)) as { status: number; text: string };
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('The viewer role may not add, change and delete companies and their webhooks.');
    expect((await fixtures.pool.query('SELECT 1 FROM companies WHERE id = $1', [companyA])).rowCount).toBe(1);
    await page.close();
  });

  it('an operator sees the buttons that change a company, and no Keys page', { timeout: 60_000 }, async () => {
    const page = await signedIn(keys.operator!);
    await page.goto(`${origin}/console/companies/${companyA}`);
    expect(await buttons(page)).toEqual(expect.arrayContaining(['Set the limit', 'Register the webhook', 'Add the destination', 'Save', 'Delete Alpha Charter']));
    expect(await page.locator('nav[aria-label="Console"]').textContent()).not.toContain('Keys');
    const keysPage = await page.goto(`${origin}/console/keys`);
    expect(keysPage?.status()).toBe(403);
    expect(await page.locator('main').textContent()).toContain('The operator role may not create, list and revoke keys.');
    await page.close();
  });

  it('a company key sees its own company alone', { timeout: 60_000 }, async () => {
    const page = await signedIn(keys.company!);
    expect(page.url()).toBe(`${origin}/console/companies/${companyA}`);
    const nav = (await page.locator('nav[aria-label="Console"]').textContent()) ?? '';
    expect(nav).toContain('My company');
    expect(nav).not.toContain('Companies');
    expect(await buttons(page)).toEqual(['Add the destination']);
    await page.screenshot({ path: '/tmp/skyhook-console-company-key.png', fullPage: false });
    const other = await page.goto(`${origin}/console/companies/${companyB}`);
    expect(other?.status()).toBe(404);
    expect(await page.locator('main').textContent()).not.toContain('Bravo Jets');
    await page.goto(`${origin}/console/notifications`);
    expect(await page.locator('main').textContent()).not.toContain('Bravo Jets');
    await page.close();
  });

  it('the audit log page lists the keys made, by whom', { timeout: 60_000 }, async () => {
    const page = await signedIn(ADMIN_TOKEN);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.waitForURL(`${origin}/console/audit`);
    const rows = page.locator('main table tbody tr', { hasText: 'POST /console/keys' });
    expect(await rows.count()).toBe(3);
    expect(await rows.first().textContent()).toContain('ADMIN_TOKEN');
    await page.screenshot({ path: '/tmp/skyhook-console-audit.png', fullPage: true });
    // The refusals these tests asked for are logged by the browser (403, 404); nothing else may be.
    expect(consoleErrors.filter((line) => !/Failed to load resource: the server responded with a status of 40[34]/.test(line))).toEqual([]);
    expect(otherOrigins).toEqual([]);
    await page.close();
  });
});
