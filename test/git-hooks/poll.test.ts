// Polling (SLIPWAY_GIT_POLL_SECONDS=1 here): a push to a `file://` repository that sends no
// webhook deploys the application that follows it at the new head, once; the first look at the
// repository deploys nothing; a push already delivered by a webhook is not deployed again by the
// poll. (Static sites take a `file://` repository only on the local runtime; they are polled the
// same way, through the same list of watched repositories.)
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { git } from '../apps-real/support.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createApp } from '../pipelines/support.js';
import { makeSiteRepo } from '../static-sites-real/support.js';
import { deliver, gitMissing, hookSecret, pollWaits, providerHeaders } from './support.js';

const ENV = {
  SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,app_delete=immediate,static_site_deployment=immediate,static_site_delete=immediate',
  SLIPWAY_GIT_POLL_SECONDS: '1',
  SLIPWAY_JOB_POLL_MS: '20',
};

for (const kind of DB_KINDS) {
  describe(`git hooks: polling [${kind}]`, { skip: (await skipUnless(kind)) || gitMissing() }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: ENV });
    const { pollAfter, headsRecorded } = pollWaits(s);
    const list = async (path: string): Promise<any[]> => expectStatus(await s.get(`${path}?limit=100`), 200).data;
    /** The deliveries the poll recorded for a service. */
    const polled = async (serviceId: string) =>
      expectStatus(await s.get(`/git/deliveries?service_id=${serviceId}`), 200).data.filter((d: any) => d.provider === 'poll');

    it('a push to a file:// repository is deployed by the poll at its new head, once', async () => {
      const repo = makeSiteRepo();
      const a = await createApp(s, { extra: { repo_url: repo.url, default_branch: 'main' } });
      const before = (await list(`/applications/${a.id}/deployments`)).length;
      // The first look records the heads only.
      await waitFor('the poll to look at the repository', () => headsRecorded(repo.dir));
      await pollAfter(Date.now());
      assert.equal((await list(`/applications/${a.id}/deployments`)).length, before);

      const sha = repo.commit({ 'src/version.txt': 'v2' });
      const d = await waitFor('the poll to deploy the new head', async () =>
        (await list(`/applications/${a.id}/deployments`)).find((x) => x.commit_sha === sha),
      );
      assert.equal(d.trigger, 'push');
      assert.equal(d.branch, 'main');
      assert.equal((await polled(a.id)).length, 1);
      // Later polls see the same head: nothing more.
      await pollAfter(Date.now());
      assert.equal((await list(`/applications/${a.id}/deployments`)).length, before + 1);
    });

    it('a push delivered by a webhook first is not deployed again by the poll', async () => {
      const repo = makeSiteRepo();
      const a = await createApp(s, { extra: { repo_url: repo.url, default_branch: 'main' } });
      await waitFor('the poll to look at the repository', () => headsRecorded(repo.dir));
      const sha = repo.commit({ 'src/version.txt': 'v3' });
      const { secret, webhook_urls } = await hookSecret(s);
      const body = JSON.stringify({ ref: 'refs/heads/main', after: sha, commits: [], repository: { clone_url: repo.url } });
      const r = await deliver(webhook_urls.gitea, providerHeaders('gitea', 'push', body, secret), body);
      assert.equal(r.body.result, 'deployed');
      // A poll later, still one deployment of that commit and no polled delivery.
      await pollAfter(Date.now());
      assert.equal((await list(`/applications/${a.id}/deployments`)).filter((x) => x.commit_sha === sha).length, 1);
      assert.equal((await polled(a.id)).length, 0);
    });

    it('a repository address that reads as a git option is never passed to git as one', async () => {
      // In a directory whose repository has a remote (a server run from a clone), git would run this
      // "upload-pack" through a shell and create the marker file there.
      const cwd = process.cwd();
      const here = makeSiteRepo();
      git(here.dir, 'remote', 'add', 'origin', here.url);
      const marker = join(here.dir, 'ran');
      process.chdir(here.dir);
      try {
        const evil = '--upload-pack=touch${IFS}ran;:x';
        const a = await createApp(s, { extra: { default_branch: 'main' } });
        // The API refuses such an address (400); one stored before it did is still never an option.
        assert.equal((await s.patch(`/applications/${a.id}`, { repo_url: evil })).status, 400);
        await s.app.database.db.updateTable('applications').set({ repo_url: evil }).where('id', '=', a.id).execute();
        await pollAfter(Date.now());
        assert.equal(existsSync(marker), false, 'git ran the address as --upload-pack');
        assert.equal((await list(`/applications/${a.id}/deployments`)).filter((d) => d.trigger === 'push').length, 0);
      } finally {
        process.chdir(cwd);
      }
    });
  });
}
