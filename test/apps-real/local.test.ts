// The local runtime end to end: real builds from git, supervised processes, the edge.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo, underLoad } from './support.js';

for (const kind of DB_KINDS) {
  describe(`local runtime (${kind})`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV });
    let port: number;
    before(() => {
      port = s.app.runtimes.edge!.port;
    });

    it('builds from git, serves through the edge, redeploys without a failed request, rolls back without a build', async () => {
      const repo = makeRepo('v1');
      const a = await createRealApp(s, repo.url, `real-${kind}-1`);
      const host = `${a.name}.localhost`;
      const d1 = await deploy(s, a.id);
      assert.equal(d1.status, 'success');
      assert.equal(d1.commit_sha, repo.first);
      assert.equal(d1.commit_message, 'version v1');
      const r1 = await edgeGet(port, host);
      assert.equal(r1.status, 200);
      assert.match(r1.body, /^v1 \d+$/);
      const logs = expectStatus(await s.get(`/applications/${a.id}/deployments/${d1.id}/logs`), 200);
      const text = JSON.stringify(logs);
      assert.match(text, /Cloning file:/);
      assert.match(text, /npm install/);
      // Unknown hosts are 404.
      assert.equal((await edgeGet(port, 'nobody.localhost')).status, 404);

      // Redeploy under continuous requests: none fails, then v2 is served.
      repo.commit('v2');
      const { result: d2, seen, failures } = await underLoad(port, host, () => deploy(s, a.id));
      assert.equal(d2.status, 'success');
      assert.deepEqual(failures, []);
      assert.ok(seen.includes('v1'));
      assert.match((await edgeGet(port, host)).body, /^v2 /);

      // Rollback: the first release serves again, with no build step.
      const d3 = await deploy(s, a.id, 'deployments/rollback');
      assert.equal(d3.status, 'success');
      assert.deepEqual(d3.steps, ['rollout']);
      assert.match((await edgeGet(port, host)).body, /^v1 /);
    });

    it('a release that never accepts HTTP fails the deployment and the previous release keeps serving', async () => {
      const repo = makeRepo('good');
      const a = await createRealApp(s, repo.url, `real-${kind}-2`);
      const host = `${a.name}.localhost`;
      assert.equal((await deploy(s, a.id)).status, 'success');
      repo.commit('bad', true);
      const d = await deploy(s, a.id);
      assert.equal(d.status, 'failed');
      const logs = JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200));
      assert.match(logs, /Health check failed/);
      assert.match((await edgeGet(port, host)).body, /^good /);
    });

    it('maintenance mode answers 503 with Retry-After; an IP deny list answers 403; a killed instance restarts; suspend stops serving', async () => {
      const repo = makeRepo('m1');
      const a = await createRealApp(s, repo.url, `real-${kind}-3`);
      const host = `${a.name}.localhost`;
      assert.equal((await deploy(s, a.id)).status, 'success');

      expectStatus(await s.put(`/applications/${a.id}/maintenance-mode`, { is_enabled: true }), 200);
      const m = await edgeGet(port, host);
      assert.equal(m.status, 503);
      assert.equal(m.headers['retry-after'], '60');
      assert.match(m.body, /maintenance/);
      expectStatus(await s.put(`/applications/${a.id}/maintenance-mode`, { is_enabled: false }), 200);
      assert.equal((await edgeGet(port, host)).status, 200);

      expectStatus(await s.put(`/applications/${a.id}/ip-restriction`, { type: 'deny', is_enabled: true, ip_list: ['127.0.0.0/8'] }), 200);
      assert.equal((await edgeGet(port, host)).status, 403);
      expectStatus(await s.put(`/applications/${a.id}/ip-restriction`, { type: 'allow', is_enabled: true, ip_list: ['127.0.0.1'] }), 200);
      assert.equal((await edgeGet(port, host)).status, 200);
      expectStatus(await s.put(`/applications/${a.id}/ip-restriction`, { type: 'deny', is_enabled: false, ip_list: [] }), 200);

      const pid = Number((await edgeGet(port, host)).body.split(' ')[1]);
      process.kill(pid, 'SIGKILL');
      const next = await waitFor('a restarted instance', async () => {
        const r = await edgeGet(port, host);
        return r.status === 200 && Number(r.body.split(' ')[1]) !== pid ? r : undefined;
      });
      assert.match(next.body, /^m1 /);

      expectStatus(await s.post(`/applications/${a.id}/suspend`), 200);
      await waitFor('suspension to stop serving', async () => (await edgeGet(port, host)).status === 503);
      const gone = (p: number) => {
        try {
          process.kill(p, 0);
          return false;
        } catch {
          return true;
        }
      };
      await waitFor('the instance to exit', () => gone(Number(next.body.split(' ')[1])));
    });
  });
}
