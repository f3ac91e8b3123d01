// Webhook pushes whose payload does not list their files (Bitbucket names none; GitHub, Gitea and
// GitLab cut the list at 20 commits) read them from the repository (SLIPWAY_RUNTIME=local, where a
// static site builds a `file://` repository; polling off): the push's old and new heads are
// fetched into the repository's mirror and diffed, so a static site's deploy paths apply — a push
// of ignored files only is a `skipped` deployment. A new branch, or a repository that cannot be
// fetched, counts as changing every file, and the delivery says why.
import assert from 'node:assert/strict';
import { renameSync } from 'node:fs';
import { describe, it } from 'node:test';
import { git, LOCAL_ENV } from '../apps-real/support.js';
import { GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { finalDeployment, makeSiteRepo } from '../static-sites-real/support.js';
import { deliver, gitMissing, hookSecret, pathFilteredSite, providerHeaders } from './support.js';

describe('git hooks: changed files of webhook pushes read from the repository (local runtime)', { skip: (await skipUnless('sqlite')) || gitMissing() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...LOCAL_ENV, SLIPWAY_GIT_POLL_SECONDS: '0' } });

  /** A bare repository (`file://`) fed from a working clone of makeSiteRepo's site. */
  function bareSiteRepo() {
    const work = makeSiteRepo();
    const bare = `${work.dir}.git`;
    git(work.dir, 'clone', '-q', '--bare', work.dir, bare);
    const push = (branch = 'main') => git(work.dir, 'push', '-q', bare, `HEAD:refs/heads/${branch}`);
    return { ...work, bare, url: `file://${bare}`, push };
  }

  async function send(provider: 'github' | 'bitbucket', event: string, body: unknown) {
    const { secret, webhook_urls } = await hookSecret(s);
    const text = JSON.stringify(body);
    const res = await deliver(webhook_urls[provider], providerHeaders(provider, event, text, secret), text);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  /** A Bitbucket push of `branch` from `old` (null: a new branch) to `next`; Bitbucket names no files. */
  const bitbucketPush = (url: string, branch: string, old: string | null, next: string) =>
    send('bitbucket', 'repo:push', {
      push: {
        changes: [
          {
            new: { type: 'branch', name: branch, target: { hash: next, message: 'change', author: { raw: 'Dev <dev@example.com>' } } },
            old: old && { type: 'branch', name: branch, target: { hash: old } },
          },
        ],
      },
      repository: { links: { html: { href: url } } },
    });

  /** A GitHub push of `shas` (oldest first) listing only the last 20 commits, as GitHub does, with `listed` as their files. */
  const githubPush = (url: string, before: string, shas: string[], listed: string[]) => {
    const commits = shas
      .slice(-20)
      .map((id) => ({ id, message: 'change', added: [], modified: listed, removed: [], author: { name: 'Dev', username: 'dev' } }));
    return send('github', 'push', {
      ref: 'refs/heads/main',
      before,
      after: shas[shas.length - 1],
      deleted: false,
      commits,
      head_commit: commits[commits.length - 1],
      repository: { clone_url: url },
    });
  };

  const entryOf = (delivery: any, siteId: string) => delivery.triggered.find((t: any) => t.service_id === siteId);
  const deployment = async (siteId: string, id: string) => expectStatus(await s.get(`/static-sites/${siteId}/deployments/${id}`), 200);

  it('a Bitbucket push of ignored files only is skipped; a GitHub push of more than 20 commits gets its files from git; a new branch or an unreachable repository deploys and says why', async () => {
    const repo = bareSiteRepo();
    const site = await pathFilteredSite(s, repo.url, 'webhook paths');

    // Bitbucket, ignored files only: skipped when received, from the files git names.
    const docs = repo.commit({ 'docs/guide.txt': 'guide\n', 'README.md': '# site, again\n' }, 'docs only');
    repo.push();
    const bb = await bitbucketPush(repo.url, 'main', repo.first, docs);
    const bbEntry = entryOf(bb, site.id);
    assert.equal(bbEntry.action, 'skipped', JSON.stringify(bb));
    assert.equal(bbEntry.detail, null);
    assert.equal((await deployment(site.id, bbEntry.deployment_id)).status, 'skipped');

    // Bitbucket, a deployed file among them: it builds.
    const page = repo.commit({ 'src/version.txt': 'v2' }, 'version v2');
    repo.push();
    const built = entryOf(await bitbucketPush(repo.url, 'main', docs, page), site.id);
    assert.equal(built.action, 'deployed');
    assert.equal((await finalDeployment(s, site.id, built.deployment_id)).status, 'success');

    // GitHub, 21 commits of ignored files (the payload lists 20): the files come from git, so it is skipped.
    const shas: string[] = [];
    for (let i = 0; i < 21; i++) shas.push(repo.commit({ [`docs/page-${i}.txt`]: `${i}\n` }, `docs ${i}`));
    repo.push();
    const gh = entryOf(await githubPush(repo.url, page, shas, ['docs/page.txt']), site.id);
    assert.equal(gh.action, 'skipped', JSON.stringify(gh));
    assert.equal((await deployment(site.id, gh.deployment_id)).status, 'skipped');

    // A new branch (Bitbucket names no old head): every file counts, its preview builds, and the delivery says why.
    repo.branch('feature/docs');
    const feature = repo.commit({ 'docs/feature.txt': 'feature\n' }, 'feature docs');
    repo.push('feature/docs');
    const preview = entryOf(await bitbucketPush(repo.url, 'feature/docs', null, feature), site.id);
    assert.equal(preview.action, 'preview');
    assert.match(preview.detail, /new branch/);
    assert.equal((await finalDeployment(s, site.id, preview.deployment_id)).status, 'success');

    // The repository cannot be fetched: every file counts, and the delivery says why.
    git(repo.dir, 'checkout', '-q', 'main');
    const after = repo.commit({ 'docs/after.txt': '1\n' }, 'docs after');
    repo.push();
    renameSync(repo.bare, `${repo.bare}.gone`);
    const unreachable = entryOf(await bitbucketPush(repo.url, 'main', shas[shas.length - 1]!, after), site.id);
    assert.match(unreachable.detail, /could not be fetched/);
    assert.notEqual(unreachable.action, 'skipped');
  });
});
