/**
 * Screenshots of every console page at 1280×800 and at phone width (390×844), to look at what the
 * console shows: `npx tsx scripts/console-screenshots.ts <consoleUrl> <adminToken> [outDir]`, against a
 * running Skyhook (`npm run demo -- --keep` prints both). docs/console.png is the overview's.
 */
import { mkdirSync } from 'node:fs';
import { launchBrowser } from '../test/helpers/browser.js';

const [consoleUrl, token, outDir = '/tmp/skyhook-console-shots'] = process.argv.slice(2);
if (!consoleUrl || !token) {
  console.error('usage: npx tsx scripts/console-screenshots.ts <consoleUrl> <adminToken> [outDir]');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

for (const [label, viewport] of [
  ['desktop', { width: 1280, height: 800 }],
  ['phone', { width: 390, height: 844 }],
] as const) {
  const { context, close } = await launchBrowser(viewport);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => m.type() === 'error' && console.error(`console error on ${page.url()}: ${m.text()}`));
  await page.goto(`${consoleUrl}/sign-in`);
  await page.screenshot({ path: `${outDir}/${label}-sign-in.png` });
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/console\/?$/);
  await page.waitForTimeout(500);
  await page.screenshot({ path: `${outDir}/${label}-overview.png`, fullPage: label === 'phone' });
  await page.goto(`${consoleUrl}/notifications`);
  await page.screenshot({ path: `${outDir}/${label}-notifications.png` });
  const first = await page.locator('table.notifications a').first().getAttribute('href');
  if (first) {
    await page.goto(new URL(first, consoleUrl).toString());
    await page.screenshot({ path: `${outDir}/${label}-notification.png`, fullPage: true });
    const history = await page.locator('a', { hasText: 'Its versions' }).first().getAttribute('href').catch(() => null);
    if (history) {
      await page.goto(new URL(history, consoleUrl).toString());
      await page.screenshot({ path: `${outDir}/${label}-resource.png`, fullPage: true });
    }
  }
  await page.goto(`${consoleUrl}/notifications/replay?status=processed`);
  await page.screenshot({ path: `${outDir}/${label}-bulk-replay.png` });
  await page.goto(`${consoleUrl}/companies`);
  await page.screenshot({ path: `${outDir}/${label}-companies.png`, fullPage: true });
  // A company's link (not a sortable heading's).
  const company = await page.locator('table.companies tbody a').first().getAttribute('href');
  if (company) {
    await page.goto(new URL(company, consoleUrl).toString());
    await page.screenshot({ path: `${outDir}/${label}-company.png`, fullPage: true });
    const destination = page.locator('table.destinations tbody a').first();
    if ((await destination.count()) > 0) {
      await page.goto(new URL((await destination.getAttribute('href'))!, consoleUrl).toString());
      await page.screenshot({ path: `${outDir}/${label}-destination.png`, fullPage: true });
      const delivery = page.locator('table.deliveries tbody a').first();
      if ((await delivery.count()) > 0) {
        await page.goto(new URL((await delivery.getAttribute('href'))!, consoleUrl).toString());
        await page.screenshot({ path: `${outDir}/${label}-delivery.png`, fullPage: true });
      }
    }
  }
  await page.goto(`${consoleUrl}/outbound`);
  await page.screenshot({ path: `${outDir}/${label}-outbound.png`, fullPage: true });
  await close();
}
console.log(`screenshots in ${outDir}`);
