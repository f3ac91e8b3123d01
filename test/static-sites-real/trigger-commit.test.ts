// The commit a static site deployment names (SLIPWAY_RUNTIME=local): a trigger names a branch, and
// the answer names that branch's real head or no commit yet (null), never an invented one; once
// checked out, the deployment names the commit it built.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { LOCAL_ENV } from '../apps-real/support.js';
import { finalDeployment, gitMissing, makeSiteRepo } from './support.js';

const missing = gitMissing();

for (const kind of DB_KINDS) {
  describe(`real static sites: the commit of a triggered deployment (${kind})`, { skip: missing || (await skipUnless(kind)) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV, rateLimits: GENEROUS });

    it('the trigger answers the branch head or null, never a made-up commit; the deployment then names the commit it built', async () => {
      const repo = makeSiteRepo();
      const site = expectStatus(
        await s.post('/static-sites', {
          display_name: `commit ${kind}`,
          repo_url: repo.url,
          default_branch: 'main',
          source: 'publicGit',
          published_directory: 'dist',
        }),
        201,
      );
      const [created] = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data;
      // The deployment creating the site started, and one triggered now waits behind it.
      const t = expectStatus(await s.post(`/static-sites/${site.id}/deployments`, {}), 201);
      for (const d of [created, t]) {
        assert.ok(d.commit_sha === null || d.commit_sha === repo.first, `commit_sha ${d.commit_sha}: not the head of main (${repo.first})`);
        assert.ok(d.commit_message === null || d.commit_message === 'version v1', `commit_message ${d.commit_message}: not the head's message`);
      }
      for (const id of [created.id, t.id]) {
        const d = await finalDeployment(s, site.id, id);
        assert.equal(d.status, 'success');
        assert.equal(d.commit_sha, repo.first);
        assert.equal(d.commit_message, 'version v1');
      }
    });
  });
}
