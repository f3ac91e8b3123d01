// Company settings in headless Chromium against a real server: projects (create, rename, delete),
// a global environment variable, a usage alert with thresholds, registry credentials picked when
// creating an application from an image; a Company Viewer key sees these pages and the service
// pages without a single write control; axe-core finds no serious violation; screenshots at
// laptop and phone widths go to test-artifacts/dashboard/.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';

const skip = browserSkip();

describe('dashboard: company settings and a Viewer key', { skip }, () => {
  const s = useServer({ env: { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
  const b = useBrowser();
  let page: Page;
  before(() => {
    page = b.page;
  });

  it('creates, renames and deletes projects', async () => {
    await signIn(page, s.baseUrl, s.token, '/settings');
    await page.getByText('No projects yet.').waitFor();
    for (const name of ['Alpha', 'Beta']) {
      await page.getByLabel('Project name').fill(name);
      await page.getByRole('button', { name: 'Create project' }).click();
      await page.locator(`[data-project="${name}"]`).waitFor();
    }
    await page.locator('[data-project="Alpha"]').getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('New name').fill('Alpha shop');
    await page.getByRole('form', { name: 'Rename Alpha' }).getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-project="Alpha shop"]').waitFor();
    await page.locator('[data-project="Beta"]').getByRole('button', { name: 'Delete' }).click();
    await page.locator('[data-project="Beta"]').waitFor({ state: 'detached' });
    const list = expectStatus(await s.get('/projects'), 200);
    assert.deepEqual(
      list.data.map((p: { display_name: string }) => p.display_name),
      ['Alpha shop'],
    );
  });

  it('adds a global environment variable, hidden until revealed', async () => {
    const section = page.locator('[data-section="global-environment-variables"]');
    await section.getByLabel('Key').fill('SENTRY_DSN');
    await section.getByLabel('Value').fill('https://key@sentry.example/1');
    await section.getByRole('button', { name: 'Add' }).click();
    const row = section.locator('[data-env="SENTRY_DSN"]');
    await row.locator('[data-secret="hidden"]').waitFor();
    await row.getByRole('button', { name: 'Reveal value of SENTRY_DSN' }).click();
    await row.getByText('https://key@sentry.example/1').waitFor();
    const vars = expectStatus(await s.get('/applications/global-env-vars'), 200);
    assert.equal(vars.data[0].key, 'SENTRY_DSN');
  });

  it('creates a usage alert with thresholds for a project', async () => {
    await page.getByText('No usage alerts.').waitFor();
    const form = page.getByRole('form', { name: 'New usage alert' });
    await form.getByLabel('Monthly limit (USD)').fill('250');
    await form.getByLabel(/Thresholds/).fill('80, 50, 100');
    await form.getByLabel(/Emails/).fill('ops@shop.example, cto@shop.example');
    await form.getByLabel('Project').selectOption({ label: 'Alpha shop' });
    await form.getByRole('button', { name: 'Create alert' }).click();
    const row = page.locator('[data-alert]').first();
    await row.getByText('$250.00 a month').waitFor();
    await row.getByText('project Alpha shop').waitFor();
    assert.equal(await row.locator('[data-thresholds]').textContent(), 'at 50%, 80%, 100%');
    const alerts = expectStatus(await s.get('/usage-alerts'), 200);
    assert.equal(alerts.data.length, 1);
    assert.equal(alerts.data[0].limit_usd, 250);
    assert.deepEqual(alerts.data[0].triggers.map((t: { percentage: number }) => t.percentage).sort(), [100, 50, 80]);
    assert.deepEqual(alerts.data[0].emails, ['ops@shop.example', 'cto@shop.example']);
  });

  it('adds registry credentials and offers them when creating an application from an image', async () => {
    const form = page.getByRole('form', { name: 'New registry credentials' });
    await form.getByLabel('Name', { exact: true }).fill('ghcr shop');
    await form.getByLabel('Registry').selectOption('github');
    await form.getByLabel('Username').fill('shop-bot');
    await form.getByLabel('Password or token').fill('ghp_secret_value');
    await form.getByRole('button', { name: 'Add credentials' }).click();
    await page.locator('[data-registry="ghcr shop"]').getByText('GitHub Container Registry').waitFor();
    assert.equal(await page.getByText('ghp_secret_value').count(), 0);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('button', { name: 'New application' }).click();
    const app = page.getByRole('form', { name: 'New application' });
    await app.getByLabel('Name').fill('private web');
    await app.getByRole('radio', { name: 'Docker image' }).check();
    await app.getByRole('textbox', { name: 'Docker image' }).fill('ghcr.io/shop/web:1');
    await app.getByLabel('Registry credentials').selectOption({ label: 'ghcr shop' });
    await app.getByRole('button', { name: 'Create application' }).click();
    await page.getByRole('heading', { name: 'private web', level: 1 }).waitFor();
    const created = expectStatus(await s.get(`/applications/${page.url().split('/apps/')[1]}`), 200);
    const creds = expectStatus(await s.get('/docker-registries'), 200);
    assert.equal(created.docker_registry_credential_id, creds.data[0].id);
  });

  it('passes the accessibility check and is screenshotted', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.locator('[data-alert]').first().waitFor();
    assert.deepEqual(await seriousA11yViolations(page), []);
    await shots(page, 'settings');
  });

  it('shows a Company Viewer every page without a write control', async () => {
    const site = expectStatus(
      await s.post('/static-sites', { display_name: 'viewer docs', repo_url: 'https://github.com/example/docs', default_branch: 'main' }),
      201,
    );
    const { token } = await s.newKey({ role: 'Company Viewer' });
    const { page: v, close } = await b.open();
    try {
      await signIn(v, s.baseUrl, token);
      const pages: [path: string, ready: string][] = [
        ['/', '[data-kind="static-sites"]'],
        ['/settings', '[data-alert]'],
        [`/static-sites/${site.id}`, '[data-section="domains"] [data-domain]'],
      ];
      for (const [path, ready] of pages) {
        await v.goto(`${s.baseUrl}${path}`);
        await v.locator(ready).first().waitFor();
        await v.locator('.loading').first().waitFor({ state: 'detached' });
        assert.equal(await v.locator('[data-write]').count(), 0, path);
        assert.equal(await v.getByRole('button', { name: /^(Create|Delete|Add|Deploy|Rename|Save)/ }).count(), 0, path);
        assert.deepEqual(await seriousA11yViolations(v), [], path);
      }
      await shots(v, 'static-site-viewer');
    } finally {
      await close();
    }
  });
});
