/**
 * The operator console in a real browser (SPEC §13): headless Chromium (Debian's) driven by
 * playwright-core, against the simulator and Skyhook really started (test/helpers/scenario.ts). Signs in
 * by keyboard, watches a notification arrive live, opens it, replays it and sees the new fetch in its
 * timeline; filters, a company picked by part of its name among the server's matches; a forged form
 * refused; a requested lift declined from its RFQ's page; the overview and a company page, whose fetch
 * limit is set and reset by keyboard; signs out. Throughout: no request to another origin, no error in
 * the browser's console (a CSP violation would be one).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultCompany } from '../faults/support.js';
import { chromiumAvailable, CHROMIUM, launchBrowser, watchedPage } from '../helpers/browser.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN } from '../helpers/skyhook.js';
import { tailQuote } from '../fixtures/requests.js';

// CI installs Chromium (.ci/run); elsewhere a machine without it skips this file, saying so.
const available = chromiumAvailable();
if (!available && process.env.CI) throw new Error(`Chromium is required in CI: ${CHROMIUM} is missing`);
if (!available) console.warn(`skipping the console's browser tests: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

describe.skipIf(!available)('the operator console in Chromium', () => {
  let scenario: Scenario;
  let company: FaultCompany;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let page: Page;
  let origin: string;
  const consoleErrors: string[] = [];
  const otherOrigins: string[] = [];

  beforeAll(async () => {
    // A marketplace answer later than this is lost: how a quote's outcome becomes unknown.
    scenario = await startScenario({ env: { MARKETPLACE_TIMEOUT_MS: '500' } });
    company = await scenario.company('console-co');
    origin = scenario.skyhook.url;
    browser = await launchBrowser({ width: 1280, height: 800 });
    page = await watchedPage(browser.context, origin, { consoleErrors, otherOrigins });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await scenario?.close();
  });

  const timelineFetches = () => page.locator('table.timeline tr.k-fetch').count();

  it('signs in by keyboard, shows a notification arriving live, opens it, replays it and shows the new fetch', { timeout: 90_000 }, async () => {
    await page.goto(`${origin}/console/notifications?companyId=${company.companyId}`);
    // Not signed in: the sign-in page, with the token field focused.
    await page.waitForURL(/\/console\/sign-in\?next=/);
    // Typed only once the field has the focus: on a loaded machine autofocus can come after 'load'.
    await expect.poll(() => page.evaluate('document.activeElement?.id')).toBe('token');
    await page.keyboard.type(ADMIN_TOKEN);
    // The live list opens the stream (an EventSource) once the page has loaded.
    const streamOpened = page.waitForResponse((r) => r.url().includes('/console/stream'), { timeout: 15_000 });
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/console/notifications?companyId=${company.companyId}`);
    await expect.poll(() => page.locator('#list').textContent()).toContain('No notification matches');

    // The live list subscribes to the stream; a notification fired now shows without a reload.
    const navigations: string[] = [];
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations.push(f.url()));
    expect((await streamOpened).status()).toBe(200);
    await new Promise((r) => setTimeout(r, 300)); // its LISTEN connection is up
    const [fired] = await scenario.sim.fire({ companyId: company.simId, eventType: 'TripRequest', count: 1 });
    const resourceId = fired!.notification.id;
    const row = page.locator('table.notifications tr', { hasText: resourceId });
    await row.waitFor({ timeout: 15_000 });
    await expect.poll(() => row.locator('.badge').textContent(), { timeout: 15_000 }).toBe('processed');
    expect(navigations).toEqual([]);

    // Opened by keyboard: focus its link, Enter.
    await row.locator('a').focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/notifications\/\d+$/);
    await expect.poll(() => page.locator('h1').textContent()).toMatch(/^Notification \d+$/);
    expect(await page.locator('pre.json').first().textContent()).toContain(resourceId);
    expect(await page.locator('dl.facts').textContent()).toContain('HTTP Basic');
    await expect.poll(timelineFetches).toBe(1);
    expect(await page.locator('#live-part').textContent()).toContain('Version 1 of');

    await page.getByRole('button', { name: 'Replay' }).click();
    await page.waitForURL(/\?replayed=1$/);
    expect(await page.locator('#flash').textContent()).toContain('Replayed');
    // The new fetch appears in the timeline (live, from the stream), after a Replayed entry.
    await expect.poll(timelineFetches, { timeout: 15_000 }).toBe(2);
    await expect.poll(() => page.locator('#live-part .badge').first().textContent(), { timeout: 15_000 }).toBe('processed');
    const kinds = await page.locator('table.timeline tbody tr td:nth-child(2)').allTextContents();
    expect(kinds.indexOf('Replayed')).toBeGreaterThan(kinds.indexOf('Processed'));
    expect(kinds.lastIndexOf('Fetch')).toBeGreaterThan(kinds.indexOf('Replayed'));
  });

  it('filters the list by status and by resource id', { timeout: 60_000 }, async () => {
    const [other] = await scenario.sim.fire({ companyId: company.simId, eventType: 'TripRequest', count: 1 });
    await scenario.settled(2);
    await page.goto(`${origin}/console/notifications`);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=failed/);
    expect(await page.locator('#list').textContent()).toContain('No notification matches');

    await page.getByLabel('Status').selectOption('processed');
    await page.getByLabel('Resource id').fill(other!.notification.id);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/resourceId=/);
    const rows = page.locator('table.notifications tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain(other!.notification.id);
    // The filter stays in the form.
    expect(await page.getByLabel('Resource id').inputValue()).toBe(other!.notification.id);
  });

  it('picks a company by part of its name, by keyboard, among the matches the server finds, and filters the list to it', { timeout: 60_000 }, async () => {
    // More companies than the picker suggests at once, and another company with a notification of its own.
    await scenario.sql.query(`INSERT INTO companies (name, api_base_url) SELECT 'Filler Jets ' || lpad(g::text, 2, '0'), 'http://127.0.0.1:9/api' FROM generate_series(1, 30) g`);
    const other = await scenario.company('skyline-charters');
    const [elsewhere] = await scenario.sim.fire({ companyId: other.simId, eventType: 'TripRequest', count: 1 });
    await scenario.settled(3);
    await page.goto(`${origin}/console/notifications`);
    const list = page.locator('#list');
    await expect.poll(() => list.textContent()).toContain(elsewhere!.notification.id);

    const field = page.getByRole('combobox', { name: 'Company' });
    const options = page.getByRole('listbox', { name: 'Company: suggestions' }).getByRole('option');
    expect(await field.inputValue()).toBe('');
    // The field empty, the down arrow asks for the first names.
    await field.focus();
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => options.count()).toBe(20);
    expect(await options.first().textContent()).toBe(`console-co ${company.companyId}`);
    await page.keyboard.press('Escape');
    await expect.poll(() => options.count()).toBe(0);
    await page.keyboard.type('jets');
    // At most 20 suggestions, by name.
    await expect.poll(() => options.count()).toBe(20);
    expect(await field.getAttribute('aria-expanded')).toBe('true');
    expect(await options.first().textContent()).toMatch(/^Filler Jets 01 [0-9a-f-]{36}$/);
    await page.keyboard.press('Escape');
    await expect.poll(() => options.count()).toBe(0);

    // Part of the name, from its middle: one match; down to it, Enter picks it, Enter again sends the form.
    await page.keyboard.press('Control+A');
    await page.keyboard.type('SOLE-c');
    await expect.poll(() => options.allTextContents()).toEqual([`console-co ${company.companyId}`]);
    await page.keyboard.press('ArrowDown');
    expect(await options.first().getAttribute('aria-selected')).toBe('true');
    expect(await field.getAttribute('aria-activedescendant')).toBe(await options.first().getAttribute('id'));
    await page.keyboard.press('Enter');
    expect(await field.inputValue()).toBe('console-co');
    expect(await field.getAttribute('aria-expanded')).toBe('false');
    await page.keyboard.press('Enter');
    // The form sends the company's id alone.
    await page.waitForURL(new RegExp(`/console/notifications\\?companyId=${company.companyId}&status=`));
    expect(page.url()).not.toContain('company=');
    expect(await page.getByRole('combobox', { name: 'Company' }).inputValue()).toBe('console-co');
    const companies = await page.locator('table.notifications tbody td[data-label="Company"]').allTextContents();
    expect(companies.length).toBeGreaterThan(0);
    expect(new Set(companies)).toEqual(new Set(['console-co']));
    expect(await list.textContent()).not.toContain(elsewhere!.notification.id);
  });

  it('refuses a form without the session CSRF token with a 403 page', async () => {
    const before = consoleErrors.length;
    const status = await page.evaluate(async (base) => {
      const res = await fetch(`${base}/console/notifications/1/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '_csrf=forged',
      });
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    }, origin);
    expect(status.status).toBe(403);
    expect(status.type).toMatch(/^text\/html/);
    expect(status.text).toContain('This form could not be accepted');
    // Chromium logs the refused request itself as a console error: that one is expected.
    expect(consoleErrors.slice(before).every((e) => e.includes('403'))).toBe(true);
    consoleErrors.splice(before);
  });

  it('lists a quote whose outcome is unknown and resends it after a confirmation', { timeout: 60_000 }, async () => {
    scenario.sim.setFaults({ submitLatencyMs: 1500 });
    const held = await scenario.skyhook.admin('POST', `/companies/${company.companyId}/quotes`, { requestId: 'lift-console', submission: tailQuote('console-quote-1') });
    scenario.sim.setFaults({ submitLatencyMs: 0 });
    expect(held.body.code).toBe('outcome_unknown');
    await page.goto(`${origin}/console`);
    await page.getByRole('link', { name: 'Leads & quotes' }).click();
    // The company picked with the mouse: part of its name typed, its suggestion clicked.
    await page.getByLabel('Company', { exact: true }).fill('console');
    await page.getByRole('option', { name: `console-co ${company.companyId}` }).click();
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(new RegExp(`/console/outbound\\?companyId=${company.companyId}$`));
    const unknown = page.locator('section[aria-labelledby="unknown"]');
    expect(await unknown.textContent()).toContain('console-quote-1');
    const asked: string[] = [];
    page.once('dialog', (d) => {
      asked.push(d.message());
      void d.accept();
    });
    await unknown.getByRole('button', { name: 'Resend quote console-quote-1' }).click();
    await page.waitForURL(/done=resent/);
    expect(asked[0]).toContain('Resend quote console-quote-1?');
    expect(await page.locator('#flash').textContent()).toContain('The quote was sent again.');
    expect(await unknown.textContent()).toContain("every quote's and decline's outcome is known");
    expect(await page.locator('section[aria-labelledby="quotes"]').textContent()).toContain('created');
  });

  it("declines a requested lift from its RFQ's page and shows the decline on the Leads & quotes page", { timeout: 60_000 }, async () => {
    const [fired] = await scenario.sim.fire({ companyId: company.simId, eventType: 'TripRequest', count: 1 });
    const href = fired!.notification.href;
    await expect
      .poll(async () => (await scenario.skyhook.admin('GET', `/resources?companyId=${company.companyId}&type=rfqs`)).body.items.some((r: { href: string }) => r.href === href), { timeout: 15_000 })
      .toBe(true);
    const rfq = (await scenario.skyhook.admin('GET', `/resources?companyId=${company.companyId}&type=rfqs`)).body.items.find((r: { href: string }) => r.href === href).body;
    const liftId: string = rfq.sellerLift[1].id;
    await page.goto(`${origin}/console/resources?companyId=${company.companyId}&href=${encodeURIComponent(href)}`);
    await page.locator('summary', { hasText: 'Decline…' }).click();
    const form = page.locator(`form[action$="/rfq-declines"]`);
    await form.getByLabel('Answer').selectOption(liftId);
    // No reason is chosen for the seller: the form is not sent without one.
    expect(await form.getByLabel('Reason').inputValue()).toBe('');
    await form.getByRole('button', { name: 'Decline' }).click();
    expect(await form.getByLabel('Reason').evaluate((el) => (el as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing)).toBe(true);
    expect(page.url()).not.toMatch(/done=declined/);
    await form.getByLabel('Reason').selectOption('UNATTRACTIVE_TRIP');
    await form.getByLabel('Message to the buyer (optional)').fill('Not this time.');
    await form.getByRole('button', { name: 'Decline' }).click();
    await page.waitForURL(/done=declined/);
    expect(await page.locator('#flash').textContent()).toContain('The decline was sent.');
    const declines = page.locator('section[aria-labelledby="declines"]');
    expect(await declines.textContent()).toContain(liftId);
    expect(await declines.textContent()).toContain('UNATTRACTIVE_TRIP');
    expect(scenario.sim.report().declines.find((d) => d.requestId === liftId)?.via).toBe('action_href');
  });

  it('shows the overview and a company page, and sets the fetch limit by keyboard', { timeout: 60_000 }, async () => {
    await page.goto(`${origin}/console`);
    expect(await page.locator('h1').textContent()).toBe('Overview');
    const totals = page.locator('dl.totals');
    expect(await totals.textContent()).toContain('Companies');
    // The deployment's charts are drawn (uPlot, from the page's own script: the CSP allowed it).
    await expect.poll(() => page.locator('section[aria-labelledby="deployment"] .uplot').count()).toBe(2);
    // The company is somewhere: needing attention or in the table; its link opens its page.
    await page.getByRole('link', { name: 'console-co', exact: true }).first().click();
    await page.waitForURL(`${origin}/console/companies/${company.companyId}`);
    expect(await page.locator('h1').textContent()).toBe('console-co');
    expect(await page.locator('dl.facts').first().textContent()).toMatch(/State\s*(ok|unchecked|throttled)/);

    // Keyboard only: the limit field, a new value, Enter.
    const field = page.getByLabel('Fetch limit (fetchConcurrency)');
    await field.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('3');
    await page.keyboard.press('Enter');
    await page.waitForURL(/done=limitChanged$/);
    expect(await page.locator('#flash').textContent()).toContain('The fetch limit was changed');
    expect(await page.locator('section[aria-labelledby="fetches"] dl').textContent()).toContain('3 at once (its own)');
    expect((await scenario.skyhook.admin('GET', `/companies/${company.companyId}`)).body.fetches).toMatchObject({ limit: 3, ownLimit: 3 });

    // Tab from the field past "Set the limit" to "Use the default instead", Enter.
    await field.focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Use the default instead');
    // The address is already ?done=limitChanged: wait for the new page's text, not for the address.
    await page.keyboard.press('Enter');
    await page.locator('section[aria-labelledby="fetches"] dl', { hasText: '(the default)' }).waitFor();
    await page.waitForLoadState('load');
    expect((await scenario.skyhook.admin('GET', `/companies/${company.companyId}`)).body.fetches.ownLimit).toBeNull();
  });

  it('finds a healthy company among more than a page of them, by keyboard: the server searches, and pages the rest', { timeout: 60_000 }, async () => {
    await scenario.sql.query(
      `INSERT INTO companies (name, api_base_url, credentials_status) SELECT 'Quiet Wings ' || lpad(g::text, 2, '0'), 'http://127.0.0.1:9/api', 'accepted' FROM generate_series(1, 60) g`,
    );
    await page.goto(`${origin}/console`);
    const others = page.locator('section[aria-labelledby="others"]');
    const rows = others.locator('table.companies tbody tr');
    expect(await rows.count()).toBe(50);
    // The search: typed in its field, Enter; the server answers the one company, wherever it sorts.
    await page.getByLabel('Name or id').focus();
    await page.keyboard.type('quiet wings 42');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=quiet\+wings\+42/);
    expect(await rows.allTextContents()).toEqual([expect.stringContaining('Quiet Wings 42')]);
    // The pager: a link reached by keyboard, Enter; the next fifty, and the way back.
    await page.goto(`${origin}/console`);
    const first = await rows.allTextContents();
    await others.getByRole('link', { name: /^Next \d+ →$/ }).first().focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/tablePage=2#others$/);
    expect(await others.locator('nav.pager span').first().textContent()).toMatch(/^Companies 51–\d+ of \d+ \(page 2 of 2\)$/);
    const second = await rows.allTextContents();
    expect(second.length).toBeGreaterThan(0);
    expect(second.filter((r) => first.includes(r))).toEqual([]);
    await others.getByRole('link', { name: 'First' }).first().focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console#others$/);
    expect(await rows.allTextContents()).toEqual(first);
  });

  it('signs out: the session ends', async () => {
    await page.goto(`${origin}/console`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in\?signedOut=1$/);
    expect(await page.locator('main').textContent()).toContain('You are signed out');
    await page.goto(`${origin}/console/notifications`);
    await page.waitForURL(/\/console\/sign-in\?next=/);
  });

  it('made no request to another origin, and the browser logged no error', () => {
    expect(otherOrigins).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
