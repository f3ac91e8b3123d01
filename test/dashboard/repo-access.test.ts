// The dashboard's "Repository access" section (beside "Deploy on push" on a service's page) in
// headless Chromium against a real server: a Company Admin adds a private repository's access token
// (typed in a password field), sees it listed with its address and dates but the token nowhere in
// the page or in any response the page received, replaces it (the server then holds the new one)
// and deletes it; a Company Viewer sees the list without any write control; axe-core finds no
// serious violation; no horizontal scrolling on a phone. A repository the poll cannot reach shows in
// the service's "Deploy on push" deliveries as one failed poll, with git's answer.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Page, Response } from 'playwright-core';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createApp } from '../pipelines/support.js';
import { gitMissing, uniqueRepo } from '../git-hooks/support.js';
import { browserSkip, seriousA11yViolations, shots, signIn, useBrowser } from './browser.js';

const skip = browserSkip();
const FIRST = 'glpat-first-0123456789abcdef';
const SECOND = 'glpat-second-fedcba9876543210';

describe('dashboard: repository access tokens', { skip }, () => {
  const s = useServer({
    env: { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate', SLIPWAY_GIT_POLL_SECONDS: '1', SLIPWAY_JOB_POLL_MS: '20' },
    rateLimits: GENEROUS,
  });
  const b = useBrowser();
  let page: Page;
  /** The bodies of every response the page received from the server. */
  const bodies: Promise<string>[] = [];
  before(() => {
    page = b.page;
    const origin = s.baseUrl;
    page.on('response', (r: Response) => {
      if (r.url().startsWith(origin)) bodies.push(r.text().catch(() => ''));
    });
  });
  const a11y = async (what: string) => assert.deepEqual(await seriousA11yViolations(page), [], `accessibility of ${what}`);
  const section = () => page.locator('[data-section="repo-access"]');
  /** Asserts that no token shows in the page (text, attributes, input values) or in a response it received. */
  async function tokenNowhere(...tokens: string[]) {
    const html = await page.content();
    const values = await page.evaluate(() => [...document.querySelectorAll('input')].map((i) => i.value).join('\n'));
    const received = (await Promise.all(bodies)).join('\n');
    for (const t of tokens) {
      assert.ok(!html.includes(t), `the token is in the page: ${t}`);
      assert.ok(!values.includes(t), `the token stays in a field: ${t}`);
      assert.ok(!received.includes(t), `the token is in a response: ${t}`);
    }
  }
  /** The token the server holds (sealed) for the credential of `repo`. */
  const held = async (repo: string) => {
    const row = await s.app.database.db.selectFrom('git_repo_credentials').selectAll().where('repo_url', '=', repo).executeTakeFirstOrThrow();
    return s.app.secrets.decrypt(row.token);
  };

  let appId = '';
  const repo = `${uniqueRepo('gitlab.example.com')}.git`;

  it('adds a token from a password field and lists the repository without the token', async () => {
    appId = (await createApp(s, { extra: { repo_url: repo, default_branch: 'main' } })).id;
    await signIn(page, s.baseUrl, s.token, `/apps/${appId}`);
    await section().getByText('No repository access token').waitFor();
    assert.equal(await section().locator('#repo-access-token').getAttribute('type'), 'password');

    await section().getByLabel('Repository address', { exact: true }).fill(repo);
    await section()
      .getByLabel(/^User name/)
      .fill('oauth2');
    await section().getByLabel('Access token', { exact: true }).fill(FIRST);
    await section().getByRole('button', { name: 'Save token' }).click();
    const row = section().locator(`li[data-credential="${repo}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', new RegExp(`${repo.replace(/[.]/g, '\\.')} as oauth2.*Added .*changed`));
    // The form is emptied: the token was sent once.
    await page.waitForFunction(() => (document.querySelector('#repo-access-token') as HTMLInputElement).value === '');
    const [listed] = expectStatus(await s.get('/git/credentials'), 200).data;
    assert.equal(listed.repo_url, repo);
    assert.equal(listed.token, undefined);
    assert.equal(await held(repo), FIRST);
    await tokenNowhere(FIRST);
    await a11y('the section with a token listed');
    await shots(page, 'repo-access');
  });

  it("replaces the repository's token: still one row, the server holds the new token, neither shows", async () => {
    const before = expectStatus(await s.get('/git/credentials'), 200).data[0];
    await section()
      .getByRole('button', { name: `Replace token of ${repo}` })
      .click();
    assert.equal(await section().getByLabel('Repository address', { exact: true }).inputValue(), repo);
    assert.equal(
      await section()
        .getByLabel(/^User name/)
        .inputValue(),
      'oauth2',
    );
    await section().getByLabel('Access token', { exact: true }).fill(SECOND);
    await section().getByRole('button', { name: 'Save token' }).click();
    await page.waitForFunction(() => (document.querySelector('#repo-access-token') as HTMLInputElement).value === '');
    const after = expectStatus(await s.get('/git/credentials'), 200).data;
    assert.equal(after.length, 1);
    assert.equal(after[0].id, before.id);
    assert.notEqual(after[0].updated_at, before.updated_at);
    assert.equal(await held(repo), SECOND);
    assert.equal(await section().locator('li[data-credential]').count(), 1);
    await tokenNowhere(FIRST, SECOND);
    // Nothing of the section widens the page on a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(200);
    const wide = await page.evaluate(() =>
      document.documentElement.scrollWidth > 390
        ? [...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right > 391)
            .map((e) => `${e.tagName}.${e.className}#${e.id}`)
            .slice(0, 8)
        : [],
    );
    assert.deepEqual(wide, [], 'no horizontal scrolling at 390 px');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('shows a Company Viewer the list without the form or any write button (it may read, not set, tokens)', async () => {
    const { token } = await s.newKey({ role: 'Company Viewer' });
    const viewer = await b.open();
    try {
      const v = viewer.page;
      await signIn(v, s.baseUrl, token, `/apps/${appId}`);
      const sec = v.locator('[data-section="repo-access"]');
      await sec.locator(`li[data-credential="${repo}"]`).waitFor();
      assert.equal(await sec.locator('[data-write]').count(), 0);
      assert.equal(await sec.locator('form').count(), 0);
      assert.equal(await sec.locator('input').count(), 0);
      assert.equal((await s.put('/git/credentials', { repo_url: repo, token: 'x' }, { token })).status, 403);
      assert.ok(!(await v.content()).includes(SECOND));
      assert.deepEqual(await seriousA11yViolations(v), [], "accessibility of the viewer's section");
    } finally {
      await viewer.close();
    }
  });

  it('deletes the token', async () => {
    await section()
      .getByRole('button', { name: `Delete token of ${repo}` })
      .click();
    await section().getByText('No repository access token').waitFor();
    assert.equal(expectStatus(await s.get('/git/credentials'), 200).data.length, 0);
    await tokenNowhere(FIRST, SECOND);
    await a11y('the section after the delete');
  });

  it("shows a repository the poll cannot reach as one failed poll in the service's deliveries", { skip: gitMissing() }, async () => {
    const missing = join(tmpdir(), `slipway-missing-${randomUUID()}`);
    const id = (await createApp(s, { extra: { repo_url: `file://${missing}`, default_branch: 'main' } })).id;
    await page.goto(`${s.baseUrl}/apps/${id}`);
    const row = page.locator('[data-section="git-deliveries"] li[data-delivery]');
    await waitFor('the failed poll to be listed', async () => {
      await page.reload();
      await page.locator('[data-section="git-deliveries"] h3').waitFor();
      return (await row.count()) > 0;
    });
    assert.equal(await row.first().locator('.badge').getAttribute('data-status'), 'error');
    assert.equal((await row.first().locator('.badge').textContent())?.trim(), 'Poll failed');
    assert.match(
      (await row.first().textContent()) ?? '',
      new RegExp(`poll ls-remote .*repository unreachable: Polling cannot list the branches of file://${missing}: fatal:`),
    );
    await a11y('a failed poll in the deliveries');
  });
});
