// The dashboard end to end in headless Chromium against a real server: sign in, create an
// application, deploy it and watch the deployment succeed, read its log, create a database and a
// backup, create a webhook and see a delivery, create and rotate a key; a Viewer key sees no write
// controls and a key without a permission sees the 403; the operator pages. One browser for the
// file; screenshots go to test-artifacts/dashboard/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DB_KINDS, GENEROUS, OPERATOR_TOKEN, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { Receiver } from '../webhooks/support.js';
import { browserSkip, launch, shot, watch } from './browser.js';

const skip = browserSkip();
const pgSkip = await skipUnless('postgres');

// Deployments take a moment (so the page shows them running), everything else is immediate;
// webhook deliveries go out at once.
const ENV = {
  SLIPWAY_SIM_PROGRESSION: '*=immediate,deployment=duration:1500',
  SLIPWAY_WEBHOOK_TIMEOUT_MS: '2000',
  SLIPWAY_JOB_POLL_MS: '20',
};
const TIMEOUT = 30_000;

describe('dashboard in a browser', { skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
  });

  for (const kind of DB_KINDS) {
    describe(`dashboard [${kind}]`, { skip: kind === 'postgres' ? pgSkip : false }, () => {
      const rx = new Receiver();
      before(() => rx.start());
      after(() => rx.close());
      const s = useServer({ db: kind, env: ENV, rateLimits: GENEROUS });
      let ctx: BrowserContext;
      let page: Page;
      let seen: ReturnType<typeof watch>;
      let appId = '';
      const secrets: string[] = [];
      before(async () => {
        ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.baseUrl });
        page = await ctx.newPage();
        page.setDefaultTimeout(TIMEOUT);
        page.on('dialog', (d) => void d.accept());
        seen = watch(page);
        secrets.push(s.token);
      });
      after(async () => {
        await ctx?.close();
      });
      const shotName = (n: string) => `${n}-${kind}`;

      it('signs in with an API key kept in the session only', async () => {
        await page.goto(`${s.baseUrl}/`);
        await page.getByLabel('API key').fill(s.token);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Overview' }).waitFor();
        assert.equal(await page.evaluate(() => sessionStorage.getItem('slipway.apiKey')), s.token);
        assert.equal(await page.evaluate(() => localStorage.length), 0);
        await page.getByText('No services yet').waitFor();
      });

      it('creates an application, deploys it and watches the deployment reach success', async () => {
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        await page.getByRole('button', { name: 'New application' }).click();
        const form = page.getByRole('form', { name: 'New application' });
        await form.getByLabel('Name').fill('shop web');
        await form.getByRole('radio', { name: 'Docker image' }).check();
        await form.getByRole('textbox', { name: 'Docker image' }).fill('nginx:1.27');
        await form.getByRole('button', { name: 'Create application' }).click();
        await page.getByRole('heading', { name: 'shop web', level: 1 }).waitFor();
        appId = page.url().split('/apps/')[1]!;
        assert.match(appId, /^[0-9a-f-]{36}$/);
        await page.getByText('No deployments yet.').waitFor();
        await page.getByRole('button', { name: 'Deploy', exact: true }).click();
        const row = page.locator('[data-deployment]').first();
        await row.waitFor();
        await row.locator('[data-status="success"]').waitFor();
        // The API agrees.
        const list = expectStatus(await s.get(`/applications/${appId}/deployments`), 200);
        assert.equal(list.data[0].status, 'success');
        assert.equal(await row.getAttribute('data-deployment'), list.data[0].id);
      });

      it("reads the deployment's log", async () => {
        const log = page.locator('[data-logs="build"] pre.logs');
        await log.waitFor();
        const lines = expectStatus(
          await s.get(`/applications/${appId}/deployments/${await page.locator('[data-deployment]').first().getAttribute('data-deployment')}/logs`),
          200,
        );
        assert.ok(lines.length > 0);
        await log.getByText(lines[0].message, { exact: false }).first().waitFor();
        for (const chart of ['Requests per minute', 'Response time']) await page.locator(`[data-chart="${chart}"]`).waitFor();
        assert.equal(await page.getByRole('alert').count(), 0);
        await shot(page, shotName('application'));
        await page.setViewportSize({ width: 390, height: 844 });
        await shot(page, shotName('application-phone'));
        await page.setViewportSize({ width: 1280, height: 900 });
      });

      it('lists the application on the overview with its status', async () => {
        await page.getByRole('link', { name: 'Overview' }).click();
        const item = page.locator('[data-kind="applications"]', { hasText: 'shop web' });
        await item.locator('[data-status="deploymentSuccess"]').waitFor();
      });

      it('creates a database and a backup of it', async () => {
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        await page.getByRole('button', { name: 'New database' }).click();
        await page.getByRole('form', { name: 'New database' }).getByLabel('Name').fill('orders db');
        await page.getByRole('button', { name: 'Create database' }).click();
        await page.getByRole('heading', { name: 'orders db', level: 1 }).waitFor();
        const dbId = page.url().split('/databases/')[1]!;
        await page.locator('.page-head [data-status="ready"]').waitFor();
        await page.getByText('No backups yet.').waitFor();
        await page.getByRole('button', { name: 'Create backup' }).click();
        await page.locator('[data-backup]').first().waitFor();
        const backups = expectStatus(await s.get(`/databases/${dbId}/backups`), 200);
        assert.equal(backups.length, 1);
        assert.equal(await page.locator('[data-backup]').first().getAttribute('data-backup'), backups[0].id);
        await page.locator('.page-head [data-status="ready"]').waitFor();
        for (const chart of ['CPU usage', 'Memory usage', 'Storage usage']) await page.locator(`[data-chart="${chart}"]`).waitFor();
        assert.equal(await page.getByRole('alert').count(), 0);
        await shot(page, shotName('database'));
        await page.getByRole('link', { name: 'Overview' }).click();
        await page.locator('[data-kind="databases"]', { hasText: 'orders db' }).waitFor();
        await shot(page, shotName('overview'));
      });

      it('creates a webhook and shows a delivery with its request and response', async () => {
        await page.getByRole('link', { name: 'Webhooks' }).click();
        await page.getByText('No webhooks yet.').waitFor();
        await page.getByLabel('Endpoint URL').fill(rx.url);
        await page.getByLabel('APP_UPDATE').check();
        await page.getByRole('button', { name: 'Create webhook' }).click();
        await page.getByRole('heading', { name: rx.url }).waitFor();
        // An application change makes an APP_UPDATE event.
        expectStatus(await s.patch(`/applications/${appId}`, { display_name: 'shop web 2' }), 200);
        await page.getByRole('button', { name: 'Deliveries' }).click();
        const delivery = page.locator('[data-delivery]').first();
        await delivery.locator('[data-status="delivered"]').waitFor();
        await delivery.locator('summary').click();
        await delivery.getByText('"APP_UPDATE"').first().waitFor();
        await delivery.getByText('ok', { exact: true }).waitFor();
        assert.ok(rx.received.length >= 1);
        await shot(page, shotName('webhooks'));
      });

      let viewerToken = '';
      it('creates a key (token shown once) and rotates it', async () => {
        await page.getByRole('link', { name: 'API keys' }).click();
        await page.getByLabel('Name').fill('viewer key');
        await page.getByLabel('Role').selectOption({ label: 'Company Viewer' });
        await page.getByRole('button', { name: 'Create key' }).click();
        const first = (await page.locator('[data-token]').textContent())!;
        assert.match(first, /^svl_/);
        await page.locator('[data-token-once]').getByRole('button', { name: 'Copy' }).click();
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), first);
        await page.getByRole('button', { name: 'Done' }).click();
        assert.equal(await page.locator('[data-token]').count(), 0);
        const row = page.locator('[data-key="viewer key"]');
        await row.getByText('Company Viewer').waitFor();
        await row.getByRole('button', { name: 'Rotate' }).click();
        await page.locator('[data-token]').waitFor();
        const second = (await page.locator('[data-token]').textContent())!;
        assert.notEqual(second, first);
        assert.equal((await s.get('/api-keys/me', { token: first })).status, 401);
        assert.equal((await s.get('/api-keys/me', { token: second })).status, 200);
        await shot(page, shotName('api-keys'));
        viewerToken = second;
        secrets.push(first, second);
      });

      it('shows a Viewer key no write controls', async () => {
        const viewer = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        try {
          const v = await viewer.newPage();
          v.setDefaultTimeout(TIMEOUT);
          await v.goto(`${s.baseUrl}/apps/${appId}`);
          await v.getByLabel('API key').fill(viewerToken);
          await v.getByRole('button', { name: 'Sign in' }).click();
          await v.getByRole('heading', { name: 'shop web 2', level: 1 }).waitFor();
          await v.locator('[data-deployment] [data-status="success"]').first().waitFor();
          await v.locator('[data-logs="build"] pre.logs').waitFor();
          assert.equal(await v.locator('[data-write]').count(), 0);
          assert.equal(await v.getByRole('button', { name: 'Deploy', exact: true }).count(), 0);
          for (const path of ['/', '/webhooks', '/api-keys']) {
            await v.getByRole('link', { name: path === '/' ? 'Overview' : path === '/webhooks' ? 'Webhooks' : 'API keys' }).click();
            await v.locator('.card').first().waitFor();
            await v.locator('.loading').first().waitFor({ state: 'detached' });
            assert.equal(await v.locator('[data-write]').count(), 0, path);
          }
          assert.equal(await v.getByRole('button', { name: /Rotate|Delete|Disable/ }).count(), 0);
          await shot(v, shotName('viewer'));
        } finally {
          await viewer.close();
        }
      });

      it('shows a 403 from the API plainly (signed in with the keyboard alone)', async () => {
        const { token } = await s.newKey({ capabilities: [{ permission: 'APP:READ' }] });
        secrets.push(token);
        const limited = await browser.newContext();
        try {
          const p = await limited.newPage();
          p.setDefaultTimeout(TIMEOUT);
          await p.goto(`${s.baseUrl}/webhooks`);
          // Keyboard only: the key field is the first stop, Enter submits.
          await p.getByLabel('API key').waitFor();
          await p.keyboard.press('Tab');
          assert.equal(await p.evaluate(() => document.activeElement?.id), 'api-key');
          await p.keyboard.type(token);
          await p.keyboard.press('Enter');
          await p.getByRole('alert').filter({ hasText: '403' }).first().waitFor();
        } finally {
          await limited.close();
        }
      });

      it('opens the operator pages with the operator token', async () => {
        await page.getByRole('link', { name: 'Operator' }).click();
        await page.getByLabel('Operator token').fill(OPERATOR_TOKEN);
        await page.getByRole('button', { name: 'Open operator pages' }).click();
        await page.getByRole('heading', { name: 'Companies' }).waitFor();
        await page.locator('#companies-h').waitFor();
        await page.getByText('over 1500 ms').waitFor();
        await page.getByRole('form', { name: 'Add fault rule' }).getByRole('button', { name: 'Add rule' }).click();
        await page.getByRole('button', { name: 'Remove' }).waitFor();
        const sim = expectStatus(await s.admin('GET', '/simulation'), 200);
        assert.equal(sim.faults.length, 1);
        assert.equal(sim.faults[0].operation, 'deployment');
        await shot(page, shotName('operator'));
        await page.getByRole('button', { name: 'Remove' }).click();
        await page.getByText('No fault rules.').waitFor();
      });

      it('kept every request on the server and every key out of URLs and the console', () => {
        assert.ok(seen.urls.length > 10);
        for (const u of seen.urls) assert.ok(u.startsWith(`${s.baseUrl}/`) || u.startsWith('data:'), u);
        for (const secret of secrets) {
          assert.ok(!seen.urls.some((u) => u.includes(secret)));
          assert.ok(!seen.console.some((l) => l.includes(secret)));
        }
        assert.deepEqual(
          seen.console.filter((l) => l.startsWith('pageerror')),
          [],
        );
      });
    });
  }
});
