// The browser of the dashboard suites: Debian's Chromium (scripts/install-browser.sh) driven by
// playwright-core through executablePath; Playwright's own browser download is never used.
// Without Chromium or without the built dashboard (web/dist) the suites skip, unless
// SLIPWAY_REQUIRE_BROWSER=1 (CI) makes them fail.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { findDashboardDir } from '../../src/shared/http/dashboard.js';

export const CHROMIUM = process.env.SLIPWAY_CHROMIUM ?? '/usr/bin/chromium';
const REQUIRE = process.env.SLIPWAY_REQUIRE_BROWSER === '1';

/** Where the suites save screenshots (git-ignored). */
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/dashboard/', import.meta.url));

/** `{ skip }` for node:test: a reason when the browser or the build is missing (throws when required). */
export function browserSkip(): string | false {
  const missing = !existsSync(CHROMIUM)
    ? `Chromium not found at ${CHROMIUM} (run scripts/install-browser.sh)`
    : !existsSync(join(findDashboardDir() ?? '', 'index.html'))
      ? 'the dashboard is not built (run npm run build)'
      : undefined;
  if (!missing) return false;
  if (REQUIRE) throw new Error(`${missing}; the browser suites are required (SLIPWAY_REQUIRE_BROWSER=1)`);
  console.warn(`# ${missing}: dashboard browser suites are skipped (set SLIPWAY_REQUIRE_BROWSER=1 to fail instead)`);
  return missing;
}

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright gives each launch a fresh, empty profile; these keep Chromium off the network.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export async function shot(page: Page, name: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * Records what a page asks of the network and prints to its console, to check that nothing
 * leaves the server's origin and that the API key shows up in no URL and no console line.
 */
export function watch(page: Page) {
  const urls: string[] = [];
  const console: string[] = [];
  page.on('request', (r) => urls.push(r.url()));
  page.on('console', (m) => console.push(m.text()));
  page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  return { urls, console };
}
