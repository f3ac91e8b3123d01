// Hibernation on the local runtime: an idle application's processes stop; the next request starts
// it again and is held until it answers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { alive, createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo } from './support.js';

const noGit = spawnSync('git', ['--version']).status === 0 ? false : 'git is not available';

for (const kind of DB_KINDS) {
  describe(`hibernation (${kind})`, { skip: noGit || (await skipUnless(kind)) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV });
    let port: number;
    before(() => {
      port = s.app.runtimes.edge!.port;
    });

    it('stops an idle application and serves the next request once it has started again', async () => {
      const a = await createRealApp(s, makeRepo('zz').url, `sleepy-${kind}`);
      const host = `${a.name}.localhost`;
      assert.equal((await deploy(s, a.id)).status, 'success');
      const first = await edgeGet(port, host);
      assert.equal(first.status, 200);
      const pid = Number(first.body.split(' ')[1]);
      assert.ok(alive(pid));

      expectStatus(await s.patch(`/applications/${a.id}`, { hibernation_enabled: true, hibernate_after_seconds: 1 }), 200);
      await waitFor('the idle application to stop', () => !alive(pid), 20_000);
      const logs = async () => JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/runtime-logs`), 200));
      await waitFor('the hibernation log line', async () => /Hibernating: no request for 1 s/.test(await logs()));

      // The next request wakes it and is answered by a new process.
      const woken = await edgeGet(port, host);
      assert.equal(woken.status, 200);
      assert.match(woken.body, /^zz \d+$/);
      assert.notEqual(Number(woken.body.split(' ')[1]), pid);
      assert.match(await logs(), /Waking from hibernation/);
    });
  });
}
