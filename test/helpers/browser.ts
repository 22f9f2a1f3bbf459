/**
 * Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, for the console's browser
 * tests and screenshots. The flags keep it from calling anything outside this machine (no updates, sync,
 * background networking, QUIC), and each launch gets a new empty profile.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumAvailable = (): boolean => existsSync(CHROMIUM);

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--metrics-recording-only',
  '--no-default-browser-check',
];

/** A fresh browser with its own profile directory; close() removes both. */
export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'skyhook-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The context's first page, with what a test checks of every page: errors in its console, and any request to another origin than `origin`. */
export async function watchedPage(context: BrowserContext, origin: string, seen: { consoleErrors: string[]; otherOrigins: string[] }): Promise<Page> {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') seen.consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => seen.consoleErrors.push(`${page.url()}: uncaught ${err.message}`));
  context.on('request', (r) => {
    if (new URL(r.url()).origin !== origin) seen.otherOrigins.push(r.url());
  });
  return page;
}
