// The dashboard's "Deploy on push" section in headless Chromium against a real server: deliveries
// posted to the company's webhook URLs show on the application's and the static site's pages with
// their result and what they did (a deployment, a push skipped by deploy paths, a branch not
// followed); one with a bad signature (401) and a redelivery (duplicate) add no row; "Connect a
// repository" shows the payload URLs and the secret (revealed on request) and rotates it; a
// Company Viewer sees the section without the rotate button; axe-core finds no serious violation;
// no horizontal scrolling on a phone; screenshots.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { createApp } from '../pipelines/support.js';
import { createSite } from '../static-sites/support.js';
import { deliver, hookSecret, providerHeaders, pushPayload, uniqueRepo } from '../git-hooks/support.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';

const skip = browserSkip();

describe('dashboard: deploy on push (git deliveries)', { skip }, () => {
  const s = useServer({
    env: { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,static_site_deployment=immediate', SLIPWAY_JOB_POLL_MS: '20' },
    rateLimits: GENEROUS,
  });
  const b = useBrowser();
  let page: Page;
  before(() => {
    page = b.page;
  });
  const a11y = async (what: string) => assert.deepEqual(await seriousA11yViolations(page), [], `accessibility of ${what}`);
  const section = () => page.locator('[data-section="git-deliveries"]');

  /** Posts a GitHub push of `files` to `repo`'s main branch; the status, body and delivery id. */
  async function push(repo: string, o: { secret?: string; deliveryId?: string; files?: string[]; branch?: string } = {}) {
    const { secret, webhook_urls } = await hookSecret(s);
    const p = pushPayload('github', repo, o.branch ?? 'main', undefined, o.files);
    const body = JSON.stringify(p.body);
    const deliveryId = o.deliveryId ?? randomUUID();
    const r = await deliver(webhook_urls.github, providerHeaders('github', 'push', body, o.secret ?? secret, deliveryId), body);
    return { ...r, deliveryId, after: p.after };
  }

  let appId = '';

  it("shows an application's deliveries: a signed push deployed; a bad signature and a redelivery add nothing", async () => {
    const repo = uniqueRepo();
    appId = (await createApp(s, { extra: { repo_url: repo, default_branch: 'main' } })).id;
    await signIn(page, s.baseUrl, s.token, `/apps/${appId}`);
    await section().getByText('No push or pull request has concerned this service yet').waitFor();

    const ok = await push(repo);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.result, 'deployed');
    const deploymentId: string = ok.body.triggered[0].deployment_id;
    assert.equal((await push(repo, { secret: 'ghsec_not-the-secret' })).status, 401);
    const again = await push(repo, { deliveryId: ok.deliveryId });
    assert.equal(again.body.result, 'duplicate');

    await page.reload();
    const row = section().locator(`li[data-delivery="${ok.deliveryId}"]`);
    await row.waitFor();
    assert.equal(await row.locator('.badge').getAttribute('data-status'), 'deployed');
    assert.equal((await row.locator('.badge').textContent())?.trim(), 'Deployed');
    assert.match((await row.textContent()) ?? '', new RegExp(`github push .*deployed \\(deployment ${deploymentId.slice(0, 8)}\\)`));
    // Only the accepted delivery is listed: the refused one and the redelivery left no record.
    assert.equal(await section().locator('li[data-delivery]').count(), 1);
    assert.equal(expectStatus(await s.get(`/git/deliveries?service_id=${appId}`), 200).total, 1);
    // A push to a branch the application does not follow is listed with the reason.
    const other = await push(repo, { branch: 'feature/x' });
    assert.equal(other.body.result, 'ignored');
    await page.reload();
    const ignored = section().locator(`li[data-delivery="${other.deliveryId}"]`);
    await ignored.waitFor();
    assert.equal((await ignored.locator('.badge').textContent())?.trim(), 'Nothing to do');
    assert.match((await ignored.textContent()) ?? '', /not deployed: Follows branch main, not feature\/x/);
    await a11y('the application page with a delivery');
    await shots(page, 'git-deliveries-app');
  });

  it('reveals the secret with the payload URLs and rotates it; a delivery signed with the old secret is then refused', async () => {
    await page.goto(`${s.baseUrl}/apps/${appId}`);
    await section().getByText('Connect a repository').click();
    const before = await hookSecret(s);
    const github = section().locator('code[data-url="github"]');
    await github.waitFor();
    assert.equal(await github.textContent(), before.webhook_urls.github);
    assert.equal(await section().locator('code[data-url="gitlab"]').textContent(), before.webhook_urls.gitlab);
    const secret = section().locator('code[data-secret]');
    assert.equal(await secret.getAttribute('data-secret'), 'hidden');
    assert.doesNotMatch((await section().textContent()) ?? '', new RegExp(before.secret));
    await section().getByRole('button', { name: 'Reveal the webhook secret' }).click();
    assert.equal(await secret.textContent(), before.secret);
    await a11y('the section with the secret shown');

    await section().getByRole('button', { name: 'Rotate secret' }).click();
    await page.waitForFunction((old) => document.querySelector('[data-section="git-deliveries"] code[data-secret]')?.textContent !== old, before.secret);
    const after = await hookSecret(s);
    assert.notEqual(after.secret, before.secret);
    assert.equal(await secret.textContent(), after.secret);
    const repo = expectStatus(await s.get(`/applications/${appId}`), 200).repo_url;
    assert.equal((await push(repo, { secret: before.secret })).status, 401);
    assert.equal((await push(repo)).status, 200);
    // Nothing of the section widens the page on a phone (the URLs and the secret wrap).
    await page.setViewportSize({ width: 390, height: 844 });
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'no horizontal scrolling at 390 px');
    await page.setViewportSize({ width: 1280, height: 900 });
    await shots(page, 'git-deliveries-connect');
  });

  it("shows a static site's push skipped by its deploy paths, and why", async () => {
    const repo = uniqueRepo();
    const site = await createSite(s, { repo_url: repo, ignore_deploy_paths: ['docs/**'] });
    const skipped = await push(repo, { files: ['docs/guide.md'] });
    assert.equal(skipped.body.triggered[0].action, 'skipped');
    await page.goto(`${s.baseUrl}/static-sites/${site.id}`);
    const row = section().locator(`li[data-delivery="${skipped.deliveryId}"]`);
    await row.waitFor();
    assert.equal(await row.locator('.badge').getAttribute('data-status'), 'ignored');
    assert.match((await row.textContent()) ?? '', /skipped \(deploy paths\)/);
    await a11y('the static site page with a skipped push');
  });

  it('shows a Company Viewer the deliveries, without the secret or the rotate button (the API refuses it the secret)', async () => {
    const { token } = await s.newKey({ role: 'Company Viewer' });
    const viewer = await b.open();
    try {
      const v = viewer.page;
      await signIn(v, s.baseUrl, token, `/apps/${appId}`);
      const sec = v.locator('[data-section="git-deliveries"]');
      await sec.locator('li[data-delivery]').first().waitFor();
      assert.equal(await sec.getByText('Connect a repository').count(), 0);
      assert.equal(await sec.getByRole('button', { name: 'Rotate secret' }).count(), 0);
      assert.equal((await s.get('/git/webhook-secret', { token })).status, 403);
      assert.equal(await sec.locator('[data-write]').count(), 0);
      assert.deepEqual(await seriousA11yViolations(v), [], "accessibility of the viewer's section");
    } finally {
      await viewer.close();
    }
  });
});
