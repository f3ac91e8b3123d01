// The dashboard's services in headless Chromium against a real server: a project created in the
// settings and picked when creating an application from a git repository (branch, build type,
// Dockerfile path) and a static site through the overview's create menu; the site's deployment
// watched to success with its log; a custom domain with its DNS instructions; statuses in words;
// the favicon; axe-core finds no serious violation on these pages; screenshots at laptop and phone
// widths go to test-artifacts/dashboard/.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';

const skip = browserSkip();

describe('dashboard: overview, projects, applications from git, static sites, domains', { skip }, () => {
  // Static site deployments take a moment, so the page shows one running and its log growing.
  const s = useServer({
    // Domain checks complete on every second refresh (Check DNS), so each status can be seen.
    env: { SLIPWAY_SIM_PROGRESSION: '*=immediate,static_site_deployment=duration:2500,domain_verification=reads:2', SLIPWAY_JOB_POLL_MS: '20' },
    rateLimits: GENEROUS,
  });
  const b = useBrowser();
  let page: Page;
  let projectId = '';
  let siteId = '';
  before(() => {
    page = b.page;
  });

  const a11y = async (what: string) => assert.deepEqual(await seriousA11yViolations(page), [], `accessibility of ${what}`);

  it('serves a favicon and links it from the page', async () => {
    const r = await fetch(`${s.baseUrl}/favicon.ico`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/x-icon');
    const body = Buffer.from(await r.arrayBuffer());
    assert.deepEqual([...body.subarray(0, 4)], [0, 0, 1, 0], 'an ICO header');
    const svg = await fetch(`${s.baseUrl}/favicon.svg`);
    assert.equal(svg.status, 200);
    assert.match(svg.headers.get('content-type')!, /^image\/svg\+xml/);
    await page.goto(`${s.baseUrl}/`);
    assert.equal(await page.locator('link[rel="icon"][href="/favicon.ico"]').count(), 1);
  });

  it('creates a project in the company settings', async () => {
    await signIn(page, s.baseUrl, s.token);
    await page.getByText('No services yet').waitFor();
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Company settings' }).waitFor();
    await page.getByLabel('Project name').fill('Shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.locator('[data-project="Shop"]').waitFor();
    const list = expectStatus(await s.get('/projects'), 200);
    assert.deepEqual(
      list.data.map((p: { display_name: string }) => p.display_name),
      ['Shop'],
    );
    projectId = list.data[0].id;
  });

  it('creates an application from a git repository in the picked project', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator('#project-' + projectId + '-h').waitFor();
    await page.getByRole('button', { name: 'Create', exact: false }).first().click();
    await page.getByRole('button', { name: 'New application' }).click();
    const form = page.getByRole('form', { name: 'New application' });
    await form.getByLabel('Name').fill('shop api');
    await form.getByLabel('Project').selectOption({ label: 'Shop' });
    await form.getByLabel('Repository URL').fill('https://github.com/example/shop-api');
    await form.getByLabel('Branch').fill('release');
    await form.getByLabel('Build type').selectOption('dockerfile');
    await form.getByLabel('Dockerfile path').fill('docker/Dockerfile.prod');
    await form.getByRole('button', { name: 'Create application' }).click();
    await page.getByRole('heading', { name: 'shop api', level: 1 }).waitFor();
    const appId = page.url().split('/apps/')[1]!;
    const app = expectStatus(await s.get(`/applications/${appId}`), 200);
    assert.equal(app.source, 'publicGit');
    assert.equal(app.repo_url, 'https://github.com/example/shop-api');
    assert.equal(app.default_branch, 'release');
    assert.equal(app.build_type, 'dockerfile');
    assert.equal(app.dockerfile_path, 'docker/Dockerfile.prod');
    const project = expectStatus(await s.get(`/projects/${projectId}`), 200);
    assert.deepEqual(
      project.services.map((x: { id: string }) => x.id),
      [appId],
    );
    await page.locator('#domains-h').waitFor();
    await a11y('the application page');
    // Its build settings stay editable on its page.
    const settings = page.getByRole('form', { name: 'app settings' });
    assert.equal(await settings.getByLabel('Dockerfile path').inputValue(), 'docker/Dockerfile.prod');
    await settings.getByLabel('Dockerfile path').fill('Dockerfile');
    await settings.getByLabel(/^Deploy only when/).fill('src/**\npackage.json');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').getByText('Saved').waitFor();
    const saved = expectStatus(await s.get(`/applications/${appId}`), 200);
    assert.equal(saved.dockerfile_path, 'Dockerfile');
    assert.deepEqual(saved.allow_deploy_paths, ['src/**', 'package.json']);
  });

  it('creates a static site from the overview and watches its deployment and log', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    const section = page.locator(`[data-section="project-${projectId}"]`);
    await section.locator('[data-kind="applications"]', { hasText: 'shop api' }).waitFor();
    // The project's own create menu presets the project.
    await section.getByRole('button', { name: 'Create in Shop' }).click();
    await section.getByRole('button', { name: 'New static site' }).click();
    const form = page.getByRole('form', { name: 'New static site' });
    assert.equal(await form.getByLabel('Project').inputValue(), projectId);
    await form.getByLabel('Name').fill('shop docs');
    await form.getByLabel('Repository URL').fill('https://github.com/example/shop-docs');
    await form.getByRole('button', { name: 'Create static site' }).click();
    await page.getByRole('heading', { name: 'shop docs', level: 1 }).waitFor();
    siteId = page.url().split('/static-sites/')[1]!;
    assert.match(siteId, /^[0-9a-f-]{36}$/);
    // A deployment starts with the site; if not, deploy by hand.
    const row = page.locator('[data-deployment]').first();
    if (!(await row.isVisible())) {
      await page.getByText('No deployments yet.').waitFor();
      await page.getByRole('form', { name: 'Deploy' }).getByRole('button', { name: 'Deploy' }).click();
    }
    await row.waitFor();
    await row.locator('[data-status="success"]').waitFor();
    await page.locator('.page-head [data-status="deploymentSuccess"]', { hasText: 'Deployed' }).waitFor();
    const deps = expectStatus(await s.get(`/static-sites/${siteId}/deployments`), 200);
    assert.equal(deps.data[0].status, 'success');
    assert.equal(await row.getAttribute('data-deployment'), deps.data[0].id);
    const lines = expectStatus(await s.get(`/static-sites/${siteId}/deployments/${deps.data[0].id}/logs`), 200);
    assert.ok(lines.length > 1);
    const log = page.locator('[data-logs="build"] pre.logs');
    for (const l of [lines[0], lines.at(-1)]) await log.getByText(l.message, { exact: false }).first().waitFor();
  });

  it("changes the site's build settings", async () => {
    const settings = page.getByRole('form', { name: 'site settings' });
    await settings.getByLabel('Build command').fill('npm run docs');
    await settings.getByLabel('Error file').fill('404.html');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').getByText('Saved').waitFor();
    const site = expectStatus(await s.get(`/static-sites/${siteId}`), 200);
    assert.equal(site.build_command, 'npm run docs');
    assert.equal(site.error_file, '404.html');
    await settings.getByRole('button', { name: 'Switch pretty URLs' }).click();
    await settings.locator('[data-pretty-urls="on"]').waitFor();
  });

  it('deploys a branch again and follows the running deployment', async () => {
    const form = page.getByRole('form', { name: 'Deploy' });
    await form.getByLabel('Branch').fill('main');
    await form.getByRole('button', { name: 'Deploy' }).click();
    await page.locator('[data-deployment]').nth(1).waitFor();
    const running = page.locator('[data-deployment]').first();
    // It is shown running (in words), then done, without a reload.
    await running.locator('[data-status="inProgress"], [data-status="waiting"]').first().waitFor();
    await running.locator('[data-status="success"]', { hasText: 'Succeeded' }).waitFor();
  });

  it('deploys a preview of another branch and shows the deployments by lane', async () => {
    // The switch saves at once and shows the saved state.
    await page.getByLabel('Preview deployments for other branches').click();
    await page.getByLabel('Preview deployments for other branches').and(page.locator(':checked')).waitFor();
    const form = page.getByRole('form', { name: 'Deploy' });
    await form.getByLabel('Preview').and(page.locator(':enabled')).waitFor();
    await form.getByLabel('Branch').fill('feature-x');
    await form.getByLabel('Preview').check();
    await form.getByRole('button', { name: 'Deploy' }).click();
    const preview = page.locator('[data-deployment]', { hasText: 'Preview · feature-x' });
    await preview.locator('[data-status="success"]').waitFor();
    const deps = expectStatus(await s.get(`/static-sites/${siteId}/deployments`), 200);
    const mine = deps.data.filter((d: { is_preview: boolean; branch: string }) => d.is_preview && d.branch === 'feature-x');
    assert.equal(mine.length, 1);
    assert.equal(await preview.getAttribute('data-deployment'), mine[0].id);
    await page.getByLabel('Which deployments to show').selectOption({ label: 'Previews of feature-x' });
    assert.equal(await page.locator('[data-deployment]').count(), 1);
    await page.getByLabel('Which deployments to show').selectOption({ label: 'Production' });
    assert.equal(await page.locator('[data-deployment]').count(), deps.data.length - 1);
    await page.getByLabel('Which deployments to show').selectOption({ label: 'All' });
  });

  it('adds a custom domain and shows the DNS records to create', async () => {
    const domains = page.locator('[data-section="domains"]');
    await domains.getByRole('textbox', { name: 'Domain' }).fill('docs.shop.example');
    await domains.getByRole('button', { name: 'Add domain' }).click();
    const item = domains.locator('[data-domain="docs.shop.example"]');
    await item.locator('[data-status="VERIFICATION"]', { hasText: 'Awaiting DNS' }).waitFor();
    const listed = expectStatus(await s.get(`/static-sites/${siteId}/domains`), 200);
    const dom = listed.data.find((d: { name: string }) => d.name === 'docs.shop.example');
    assert.ok(dom.dns_records.length >= 2);
    for (const r of dom.dns_records) {
      const tr = item.locator('[data-dns-records] tr', { hasText: r.value });
      await tr.getByText(r.type, { exact: true }).waitFor();
      await tr.getByRole('button', { name: `Copy ${r.type} record value` }).waitFor();
    }
    // The system domain is listed too, serving and primary.
    await domains.locator('[data-domain]', { hasText: 'system domain' }).locator('[data-status="primary"]').waitFor();
    await a11y('the static site page');
    await shots(page, 'static-site');
    // Each check advances the simulated DNS: ownership, then pointing, then active (records hidden).
    for (const next of ['POINTING', 'ACTIVE']) {
      await item.getByRole('button', { name: 'Check DNS' }).click();
      await item.getByRole('button', { name: 'Check DNS' }).click();
      await item.locator(`[data-status="${next}"]`).waitFor();
    }
    assert.equal(await item.locator('[data-dns-records]').count(), 0);
    await item.getByRole('button', { name: 'Make primary' }).click();
    await item.locator('[data-status="primary"]').waitFor();
    const after = expectStatus(await s.get(`/static-sites/${siteId}/domains`), 200);
    assert.equal(after.data.find((d: { is_primary: boolean }) => d.is_primary).name, 'docs.shop.example');
  });

  it('shows every service on the overview with its status in words', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    const site = page.locator('[data-kind="static-sites"]', { hasText: 'shop docs' });
    await site.locator('[data-status="deploymentSuccess"]', { hasText: 'Deployed' }).waitFor();
    const words = await page.locator('.badge').allTextContents();
    assert.ok(words.length > 0);
    for (const w of words) assert.doesNotMatch(w, /^[a-z]+[A-Z]|^[A-Z_]{3,}$/, `a raw status: ${w}`);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    for (const kind of ['application', 'database', 'static site', 'bucket', 'load balancer', 'pipeline'])
      await page.getByRole('button', { name: `New ${kind}` }).waitFor();
    // The keyboard closes it and keeps the focus on its button.
    await page.getByRole('button', { name: 'New bucket' }).focus();
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'New bucket' }).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-expanded')), 'false');
    await a11y('the overview');
    await shots(page, 'overview-projects');
  });

  it('kept every request on the server', () => {
    for (const u of b.seen.urls) assert.ok(u.startsWith(`${s.baseUrl}/`) || u.startsWith('data:'), u);
    assert.deepEqual(
      b.seen.console.filter((l) => l.startsWith('pageerror')),
      [],
    );
  });
});
