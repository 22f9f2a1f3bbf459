/**
 * Destinations and deliveries in the console, in a real browser (SPEC §5.2, §13): headless Chromium driven
 * by playwright-core against the simulator and Skyhook really started, delivering to a real receiver that
 * verifies each request with the reference Standard Webhooks library. Creates a destination on its
 * company's page (the secret shown once, and it is the one that verifies), sends it a test event, fires an
 * event through the simulator, sees its delivery on the destination's page, opens it, sees its attempt and
 * replays it; the pages fit a phone's width. Throughout: no request to another origin, no error in the
 * browser's console (a CSP violation would be one).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultCompany } from '../faults/support.js';
import { chromiumAvailable, CHROMIUM, launchBrowser, watchedPage } from '../helpers/browser.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { ADMIN_TOKEN } from '../helpers/skyhook.js';

// CI installs Chromium (.ci/run); elsewhere a machine without it skips this file, saying so.
const available = chromiumAvailable();
if (!available && process.env.CI) throw new Error(`Chromium is required in CI: ${CHROMIUM} is missing`);
if (!available) console.warn(`skipping the console's destination browser tests: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

describe.skipIf(!available)("a company's destinations and deliveries in Chromium", () => {
  let scenario: Scenario;
  let company: FaultCompany;
  let receiver: TestReceiver;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let page: Page;
  let origin: string;
  let destinationUrl: string;
  let deliveryUrl: string;
  const consoleErrors: string[] = [];
  const otherOrigins: string[] = [];

  beforeAll(async () => {
    scenario = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0' } });
    company = await scenario.company('console-destinations-co');
    receiver = await startReceiver();
    receiver.answer = (r) => ({ status: 200, body: r.event.type === 'test' ? 'test <b>seen</b>' : `stored ${r.event.resource?.id}` });
    origin = scenario.skyhook.url;
    browser = await launchBrowser({ width: 1280, height: 800 });
    page = await watchedPage(browser.context, origin, { consoleErrors, otherOrigins });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await scenario?.close();
  });

  /** Waits until `check` holds on the page, reloading it between looks (the destination's page is not live). */
  async function reloadUntil(check: () => Promise<boolean>, what: string) {
    await expect.poll(async () => (await check()) || (await page.reload(), false), { timeout: 15_000, interval: 300, message: what }).toBe(true);
  }

  it('creates a destination on the company page and shows its secret once', { timeout: 60_000 }, async () => {
    await page.goto(`${origin}/console/companies/${company.companyId}`);
    await page.waitForURL(/\/console\/sign-in\?next=/);
    await page.getByLabel('Key').fill(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/console/companies/${company.companyId}`);
    const section = page.locator('section[aria-labelledby="destinations"]');
    expect(await section.textContent()).toContain('No destination yet.');

    const form = section.locator('form.destination-form');
    await form.getByLabel('URL').fill(receiver.url);
    await form.getByLabel('Description (optional)').fill('Our CRM');
    await form.getByLabel('rfqs').check();
    await form.getByLabel('Timeout (ms)').fill('5000');
    await form.getByRole('button', { name: 'Add the destination' }).click();
    await page.waitForLoadState('load');

    const secret = (await page.locator('.secret-box code.secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await page.locator('.secret-box').textContent()).toContain('shown only this once');
    receiver.secrets = [secret];
    const row = section.locator('table.destinations tbody tr', { hasText: 'Our CRM' });
    expect(await row.locator('.badge').textContent()).toBe('ok');
    expect(await row.textContent()).not.toContain('whsec_');

    await page.locator('.secret-box').getByRole('link', { name: 'Our CRM' }).click();
    await page.waitForURL(/\/destinations\/[0-9a-f-]{36}$/);
    destinationUrl = page.url();
    expect(await page.locator('h1').textContent()).toBe('Our CRM');
    expect(await page.locator('main').textContent()).not.toContain('whsec_');
    expect(await page.locator('dl.facts').textContent()).toContain('rfqs; any event type');
  });

  it("sends a test event and shows the destination's answer as text", { timeout: 30_000 }, async () => {
    await page.goto(destinationUrl);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.waitForLoadState('load');
    const shown = page.locator('.notice', { hasText: 'Test event' });
    expect(await shown.textContent()).toContain('Test event delivered');
    expect(await shown.locator('.badge').textContent()).toBe('HTTP 200');
    // The answer's markup is text on the page, not an element.
    expect(await shown.locator('pre.answer').textContent()).toBe('test <b>seen</b>');
    expect(await shown.locator('pre.answer b').count()).toBe(0);
    expect(receiver.attempts.find((r) => r.event.type === 'test')?.verifiedWith).toBe(0);
  });

  it('shows a delivery of an event fired through the simulator, opens it and replays it', { timeout: 60_000 }, async () => {
    const [fired] = await scenario.sim.fire({ companyId: company.simId, eventType: 'TripRequest', count: 1 });
    const resourceId = fired!.notification.id;
    await page.goto(destinationUrl);
    const row = page.locator('table.deliveries tbody tr', { hasText: resourceId });
    await reloadUntil(async () => (await row.count()) === 1 && (await row.locator('.badge').first().textContent()) === 'delivered', 'the delivery, delivered');
    expect(receiver.received.find((r) => r.event.resource?.id === resourceId)?.verifiedWith).toBe(0);

    // Opened by keyboard: focus its link, Enter.
    await row.getByRole('link').focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/deliveries\/\d+$/);
    deliveryUrl = page.url();
    expect(await page.locator('h1').textContent()).toMatch(/^Delivery msg_\d+$/);
    const attempts = page.locator('table.attempts tbody tr');
    expect(await attempts.count()).toBe(1);
    expect(await attempts.first().locator('td[data-label="Result"]').textContent()).toBe('HTTP 200');
    expect(await attempts.first().locator('td[data-label="URL"]').textContent()).toBe(receiver.url);
    expect(await attempts.first().locator('pre.answer').textContent()).toBe(`stored ${resourceId}`);

    await page.getByRole('button', { name: 'Replay' }).click();
    await page.waitForURL(/\?done=replayed$/);
    expect(await page.locator('#flash').textContent()).toContain('Replayed');
    await reloadUntil(async () => (await attempts.count()) === 2, 'the replayed attempt');
    const ids = receiver.received.filter((r) => r.event.resource?.id === resourceId).map((r) => r.webhookId);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(ids[0]);
  });

  it("fits a phone's width: no page scrolls sideways", { timeout: 30_000 }, async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // The overview, the lists and a notification's page too (SPEC §13: at phone width).
    const { rows } = await scenario.sql.query('SELECT id FROM notifications WHERE company_id = $1 ORDER BY id DESC LIMIT 1', [company.companyId]);
    const pages = ['/console/', '/console/companies', '/console/notifications', `/console/notifications/${rows[0].id}`, '/console/outbound', '/console/audit'].map((p) => `${origin}${p}`);
    for (const url of [...pages, `${origin}/console/companies/${company.companyId}`, destinationUrl, deliveryUrl]) {
      expect((await page.goto(url))?.status(), url).toBe(200);
      const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, url).toBe(0);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('made no request to another origin, and the browser logged no error', () => {
    expect(otherOrigins).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
