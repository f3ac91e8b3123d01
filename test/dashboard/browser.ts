// The browser of the dashboard suites: Debian's Chromium (scripts/install-browser.sh) driven by
// playwright-core through executablePath; Playwright's own browser download is never used.
// Without Chromium or without the built dashboard (web/dist) the suites skip, unless
// SLIPWAY_REQUIRE_BROWSER=1 (CI) makes them fail.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
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

/** Opens `path` and signs in with `token` (the sign-in form shows on any page without a key). */
export async function signIn(page: Page, baseUrl: string, token: string, path = '/') {
  await page.goto(`${baseUrl}${path}`);
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('[data-testid="who"]').waitFor();
}

/** Screenshots of the page at laptop and phone widths, `<name>.png` and `<name>-phone.png`. */
export async function shots(page: Page, name: string) {
  const size = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 900 });
  await shot(page, name);
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, `${name}-phone`);
  if (size) await page.setViewportSize(size);
}

const AXE = readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8');

/**
 * Runs axe-core in the page (evaluated through the DevTools protocol, which the page's CSP does
 * not govern, so the page's own policy stays as served) and returns its serious and critical
 * violations as `rule: selectors` lines.
 */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: any[] }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n: { target: string[] }) => n.target.join(' ')).join(', ')}`);
  });
  return violations;
}

/**
 * One browser for a suite, opened before its tests and closed after them, with a laptop-size page
 * whose requests and console are watched; `open()` gives a further page in its own context (another
 * key's session). Pages accept confirm dialogs and wait `timeout` ms for what they look for.
 */
export function useBrowser(timeout = 30_000) {
  const h = {} as { browser: Browser; page: Page; seen: ReturnType<typeof watch>; open: () => Promise<{ page: Page; close: () => Promise<void> }> };
  h.open = async () => {
    const ctx = await h.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(timeout);
    page.on('dialog', (d) => void d.accept());
    return { page, close: () => ctx.close() };
  };
  before(async () => {
    h.browser = await launch();
    h.page = (await h.open()).page;
    h.seen = watch(h.page);
  });
  after(async () => {
    await h.browser?.close();
  });
  return h;
}
