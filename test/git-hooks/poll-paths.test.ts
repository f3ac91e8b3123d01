// Polling tells what a push changed (SLIPWAY_RUNTIME=local, where a static site takes a `file://`
// repository; SLIPWAY_GIT_POLL_SECONDS=1): the poller fetches the moved branch into its mirror and
// diffs it with the head it knew, so a static site's deploy paths apply to a polled push as to a
// webhook one — a push of ignored files only is a `skipped` deployment at once, one touching a
// deployed file builds, a force-push (the old head not an ancestor) and a new branch count as
// changing everything. One mirror per repository.
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { git, LOCAL_ENV } from '../apps-real/support.js';
import { GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { finalDeployment, makeSiteRepo } from '../static-sites-real/support.js';
import { gitMissing, pathFilteredSite } from './support.js';

describe('git hooks: polled pushes and deploy paths (local runtime)', { skip: (await skipUnless('sqlite')) || gitMissing() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...LOCAL_ENV, SLIPWAY_GIT_POLL_SECONDS: '1', SLIPWAY_JOB_POLL_MS: '20' } });

  /** The polled delivery that triggered something for the site at commit `sha`: its triggered entry and the deployment. */
  async function polledPush(siteId: string, sha: string) {
    return waitFor(
      `the poll to act on ${sha.slice(0, 7)}`,
      async () => {
        const deployments = expectStatus(await s.get(`/static-sites/${siteId}/deployments?limit=100`), 200).data as any[];
        const d = deployments.find((x) => x.commit_sha === sha);
        if (!d) return undefined;
        const deliveries = expectStatus(await s.get(`/git/deliveries?service_id=${siteId}&limit=100`), 200).data as any[];
        const delivery = deliveries.find((x) => x.triggered.some((t: any) => t.deployment_id === d.id));
        if (!delivery) return undefined;
        return { delivery, triggered: delivery.triggered.find((t: any) => t.deployment_id === d.id), deployment: d };
      },
      30_000,
    );
  }

  it('a polled push of ignored files only is skipped at once; a deployed file builds; a force-push and a new branch deploy', async () => {
    const repo = makeSiteRepo();
    const site = await pathFilteredSite(s, repo.url, 'polled paths');
    await waitFor('the poll to look at the repository', async () =>
      (await s.app.database.db.selectFrom('git_heads').select('repo').execute()).some((r) => r.repo === `file:${repo.dir}`),
    );

    // Ignored files only: skipped when the push is received, not after a build.
    const docs = repo.commit({ 'docs/guide.txt': 'guide\n', 'README.md': '# site, again\n' }, 'docs only');
    const skipped = await polledPush(site.id, docs);
    assert.equal(skipped.delivery.provider, 'poll');
    assert.equal(skipped.triggered.action, 'skipped', JSON.stringify(skipped.delivery));
    assert.equal(skipped.deployment.status, 'skipped');
    assert.equal(skipped.deployment.commit_message, 'docs only');
    assert.equal(skipped.delivery.result, 'ignored');

    // A deployed file among the changed ones (since the head the poll knew, the skipped commit): it builds.
    const page = repo.commit({ 'src/version.txt': 'v2', 'docs/more.txt': 'more\n' }, 'version v2');
    const built = await polledPush(site.id, page);
    assert.equal(built.triggered.action, 'deployed', JSON.stringify(built.delivery));
    assert.equal(built.delivery.result, 'deployed');
    assert.equal((await finalDeployment(s, site.id, built.deployment.id)).status, 'success');

    // A force-push: the head rewritten (amended with an ignored file). The diff with the old head names
    // only that file, but the old head is not an ancestor of the new one: everything counts.
    writeFileSync(join(repo.dir, 'docs', 'amend.txt'), 'amended\n');
    git(repo.dir, 'add', '.');
    git(repo.dir, 'commit', '-q', '--amend', '-m', 'version v2, rewritten');
    const rewritten = git(repo.dir, 'rev-parse', 'HEAD');
    const forced = await polledPush(site.id, rewritten);
    assert.equal(forced.triggered.action, 'deployed', JSON.stringify(forced.delivery));
    assert.equal(forced.deployment.commit_message, 'version v2, rewritten');
    // The build compares with the lane's release and may still skip; either way it ends.
    assert.ok(['success', 'skipped'].includes((await finalDeployment(s, site.id, forced.deployment.id)).status));

    // A branch the poll had not seen: everything counts, so its preview builds though it changes only docs.
    repo.branch('feature/docs');
    const feature = repo.commit({ 'docs/feature.txt': 'feature\n' }, 'feature docs');
    const preview = await polledPush(site.id, feature);
    assert.equal(preview.triggered.action, 'preview', JSON.stringify(preview.delivery));
    assert.equal(preview.deployment.is_preview, true);
    assert.equal(preview.deployment.branch, 'feature/docs');
    assert.equal((await finalDeployment(s, site.id, preview.deployment.id)).status, 'success');

    // One mirror for the repository.
    assert.equal(readdirSync(join(s.app.config.dataDir, 'git-mirrors')).length, 1);
  });
});
