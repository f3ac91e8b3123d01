// The commit a deployment names (SLIPWAY_RUNTIME=local): a trigger names a branch, and the answer
// names that branch's real head or no commit yet (null), never an invented one; once checked out,
// the deployment names the commit it built.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { createRealApp, deploy, LOCAL_ENV, makeRepo } from './support.js';

for (const kind of DB_KINDS) {
  describe(`local runtime: the commit of a triggered deployment (${kind})`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV });

    it('the trigger answers the branch head or null, never a made-up commit; the deployment then names the commit it built', async () => {
      const repo = makeRepo('v1');
      const a = await createRealApp(s, repo.url, `commit-${kind}`);
      const t = expectStatus(await s.post(`/applications/${a.id}/deployments`, {}), 200);
      assert.ok(t.commit_sha === null || t.commit_sha === repo.first, `commit_sha ${t.commit_sha}: not the head of main (${repo.first})`);
      assert.ok(t.commit_message === null || t.commit_message === 'version v1', `commit_message ${t.commit_message}: not the head's message`);
      const listed = expectStatus(await s.get(`/applications/${a.id}/deployments`), 200).data.find((x: { id: string }) => x.id === t.id);
      assert.ok(listed.commit_sha === null || listed.commit_sha === repo.first, `listed commit_sha ${listed.commit_sha}`);

      const d = await deploy(s, a.id);
      assert.equal(d.status, 'success');
      assert.equal(d.commit_sha, repo.first);
      assert.equal(d.commit_message, 'version v1');
    });
  });
}
