// A read-only key's view of dashboard pages: each page opened in a fresh browser context, checked
// for write controls (none marked `data-write`, no button named like a write) and by axe-core.
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { seriousA11yViolations, shots, signIn } from './browser.js';

const WRITE_BUTTON = /^(Create|Delete|Add|Deploy|Rename|Save|Upload|Rotate|Promote|Remove|Edit|Turn|Disable|Enable|Restore|Back up|Grow)/;

/** Opens each `[path, ready selector, screenshot name?]` with `token` and asserts it offers no write. */
export async function expectReadOnly(browser: Browser, baseUrl: string, token: string, pages: [path: string, ready: string, shot?: string][]) {
  const viewer = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const v = await viewer.newPage();
    v.setDefaultTimeout(30_000);
    await signIn(v, baseUrl, token);
    for (const [path, ready, name] of pages) {
      await v.goto(`${baseUrl}${path}`);
      await v.locator(ready).first().waitFor();
      await v.locator('.loading').first().waitFor({ state: 'detached' });
      assert.equal(await v.locator('[data-write]').count(), 0, path);
      assert.equal(await v.getByRole('button', { name: WRITE_BUTTON }).count(), 0, path);
      assert.deepEqual(await seriousA11yViolations(v), [], path);
      if (name) await shots(v, name);
    }
  } finally {
    await viewer.close();
  }
}
