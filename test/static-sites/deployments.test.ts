// Static site deployments: trigger, list, get, cancel, logs, rollback, on the simulated runtime
// (operation static_site_deployment: checkout, build, publish) under `reads` progression, so every
// transition is driven by the test's own reads. The lane rules of the specification each have a
// test: production one at a time; one preview branch one after another; different preview branches
// in parallel; previews never change the site's status; a new deployment is waiting or inProgress;
// cancel only while not final.
import { describe, it, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { DEPLOYMENT_FINAL } from '../helpers/status.js';
import { MISSING, UUID_RE, expectError, expectStatus, waitFor } from '../helpers/util.js';
import {
  IMMEDIATE_ENV,
  OP,
  addFault,
  deployedSite,
  deploymentLogs,
  deploymentPath,
  deployments,
  readDeployment,
  readSite,
  setProgression,
  trigger,
  waitForFinal,
} from './support.js';

const LIST_FIELDS = [
  'author_img',
  'author_login',
  'branch',
  'build_error',
  'cloud_build_id',
  'commit_message',
  'commit_sha',
  'created_at',
  'finished_at',
  'id',
  'is_preview',
  'repo_url',
  'started_at',
  'static_site_id',
  'status',
  'type',
  'updated_at',
].sort();
const GET_FIELDS = LIST_FIELDS.filter((f) => f !== 'build_error' && f !== 'cloud_build_id');

for (const kind of DB_KINDS) {
  describe(`static sites: deployments [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });
    beforeEach(async () => setProgression(s, OP, { mode: 'immediate' }));

    const reads = (n: number) => setProgression(s, OP, { mode: 'reads', reads: n });
    /** Reads the deployment until it is final; returns the statuses seen. */
    const drive = async (siteId: string, id: string) => {
      const seen: string[] = [];
      for (let i = 0; i < 50; i++) {
        const d = await readDeployment(s, siteId, id);
        seen.push(d.status);
        if (DEPLOYMENT_FINAL.has(d.status)) return seen;
      }
      throw new Error(`deployment ${id} did not finish: ${seen.join(',')}`);
    };

    it('a new deployment is returned as inProgress (201) when its lane is free, as waiting behind a running one; shapes of trigger, list and get', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const d = await trigger(s, site.id);
      assert.deepEqual(Object.keys(d).sort(), LIST_FIELDS);
      assert.match(d.id, UUID_RE);
      assert.equal(d.static_site_id, site.id);
      assert.equal(d.status, 'inProgress');
      assert.equal(d.type, 'manual');
      assert.equal(d.is_preview, false);
      assert.equal(d.branch, 'main');
      assert.equal(d.repo_url, site.repo_url);
      assert.match(d.commit_sha, /^[0-9a-f]{40}$/);
      // The simulated runtime's commit is a stand-in: it has no message to claim.
      assert.equal(d.commit_message, null);
      assert.match(d.cloud_build_id, /^build-[0-9a-f]{16}$/);
      assert.equal(d.build_error, null);
      assert.ok(d.started_at);
      assert.equal(d.finished_at, null);
      const w = await trigger(s, site.id, { branch: 'release' });
      assert.equal(w.status, 'waiting');
      assert.equal(w.started_at, null);
      assert.equal(w.branch, 'release');
      const got = await readDeployment(s, site.id, w.id);
      assert.deepEqual(Object.keys(got).sort(), GET_FIELDS);
      // Newest first.
      const list = await deployments(s, site.id);
      assert.deepEqual(
        list.slice(0, 2).map((x) => x.id),
        [w.id, d.id],
      );
      assert.deepEqual(Object.keys(list[0]).sort(), LIST_FIELDS);
      expectError(await s.post(`/static-sites/${MISSING}/deployments`, {}), 404);
      expectError(await s.get(deploymentPath(site.id, MISSING)), 404);
      expectError(await s.post(`/static-sites/${site.id}/deployments`, { branch: 'bad branch' }), 400, /branch/);
      expectError(await s.post(`/static-sites/${site.id}/deployments`, { is_preview: 'yes' }), 400);
      await drive(site.id, d.id);
      await drive(site.id, w.id);
    });

    it('reads:2 — a production deployment completes a phase (checkout, build, publish) every second read; the site status follows it', async () => {
      const site = await deployedSite(s);
      await reads(2);
      const d = await trigger(s, site.id);
      const seen: string[] = [];
      for (let i = 0; i < 6; i++) seen.push((await readDeployment(s, site.id, d.id)).status);
      assert.deepEqual(seen, ['inProgress', 'inProgress', 'inProgress', 'inProgress', 'inProgress', 'success']);
      // Reads of the site count toward its running production deployment too.
      const e = await trigger(s, site.id);
      assert.equal((await readSite(s, site.id)).status, 'deploymentInProgress');
      const seenE: string[] = [];
      for (let i = 0; i < 5; i++) seenE.push((await readDeployment(s, site.id, e.id)).status);
      assert.deepEqual(seenE, ['inProgress', 'inProgress', 'inProgress', 'inProgress', 'success']);
      assert.equal((await readSite(s, site.id)).status, 'deploymentSuccess');
      const done = await readDeployment(s, site.id, d.id);
      assert.ok(done.finished_at && done.finished_at >= done.started_at);
      const logs = await deploymentLogs(s, site.id, d.id);
      const phases = logs.map((l) => l.attributes.phase).filter(Boolean);
      assert.deepEqual(
        phases.filter((p, i) => p !== phases[i - 1]),
        ['checkout', 'build', 'publish'],
      );
      assert.ok(
        logs.some((l) => l.message === 'Fetching Git LFS objects'),
        'git_lfs_enabled defaults to true',
      );
      assert.ok(logs.some((l) => l.message === `Published at https://${site.hostname}`));
      assert.ok(logs.every((l) => l.tags.deployment_id === d.id && l.tags.kind === 'build'));
      assert.equal((await deploymentLogs(s, site.id, d.id, 'limit=2')).length, 2);
      assert.ok((await deploymentLogs(s, site.id, d.id, 'filters=publish')).every((l) => /publish/i.test(l.message)));
    });

    it('rule: production deployments of one site run one at a time, oldest first', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const d1 = await trigger(s, site.id);
      const d2 = await trigger(s, site.id);
      const d3 = await trigger(s, site.id);
      assert.deepEqual([d1.status, d2.status, d3.status], ['inProgress', 'waiting', 'waiting']);
      // Reads of a waiting deployment do not move it.
      for (let i = 0; i < 3; i++) assert.equal((await readDeployment(s, site.id, d2.id)).status, 'waiting');
      assert.deepEqual(await drive(site.id, d1.id), ['inProgress', 'inProgress', 'success']);
      const started = await waitFor('d2 to start', async () => {
        const x = await readDeployment(s, site.id, d2.id);
        return x.status !== 'waiting' ? x : undefined;
      });
      assert.equal(started.status, 'inProgress');
      assert.equal((await readDeployment(s, site.id, d3.id)).status, 'waiting', 'the third still waits');
      await drive(site.id, d2.id);
      await waitFor('d3 to start', async () => (await readDeployment(s, site.id, d3.id)).status !== 'waiting');
      await drive(site.id, d3.id);
      const [x1, x2, x3] = await Promise.all([d1, d2, d3].map((d) => readDeployment(s, site.id, d.id)));
      assert.ok(x2.started_at >= x1.finished_at && x3.started_at >= x2.finished_at, 'never overlapping');
    });

    it('rule: pushes to the same preview branch run one after another; the production lane is separate', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const p1 = await trigger(s, site.id, { branch: 'feature-a', is_preview: true });
      const p2 = await trigger(s, site.id, { branch: 'feature-a', is_preview: true });
      const prod = await trigger(s, site.id);
      assert.deepEqual([p1.status, p2.status, prod.status], ['inProgress', 'waiting', 'inProgress']);
      assert.equal(p1.is_preview, true);
      await drive(site.id, p1.id);
      await waitFor('p2 to start', async () => (await readDeployment(s, site.id, p2.id)).status !== 'waiting');
      const [a, b] = await Promise.all([readDeployment(s, site.id, p1.id), readDeployment(s, site.id, p2.id)]);
      assert.ok(b.started_at >= a.finished_at);
      await drive(site.id, p2.id);
      await drive(site.id, prod.id);
    });

    it('rule: previews on different branches run in parallel', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const a = await trigger(s, site.id, { branch: 'feature-a', is_preview: true });
      const b = await trigger(s, site.id, { branch: 'feature-b', is_preview: true });
      const c = await trigger(s, site.id, { branch: 'feature-c', is_preview: true });
      assert.deepEqual([a.status, b.status, c.status], ['inProgress', 'inProgress', 'inProgress']);
      // b finishes while a and c are still running.
      await drive(site.id, b.id);
      assert.equal((await readDeployment(s, site.id, a.id)).status, 'inProgress');
      await drive(site.id, a.id);
      await drive(site.id, c.id);
      const logs = await deploymentLogs(s, site.id, b.id);
      assert.ok(
        logs.some((l) => l.message === `Published at https://feature-b--${site.hostname}`),
        'a preview has its own URL',
      );
    });

    it('rule: preview builds never change the site status; production deployments do', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const p = await trigger(s, site.id, { branch: 'feature-a', is_preview: true });
      assert.equal((await readSite(s, site.id)).status, 'deploymentSuccess');
      await addFault(s, { operation: OP, target_id: site.id, phase: 'build', remaining: 1 });
      assert.equal((await drive(site.id, p.id)).at(-1), 'failed');
      assert.equal((await readSite(s, site.id)).status, 'deploymentSuccess', 'a failed preview leaves the status alone');
      const q = await trigger(s, site.id, { branch: 'feature-b', is_preview: true });
      expectStatus(await s.post(`${deploymentPath(site.id, q.id)}/cancel`), 200);
      assert.equal((await readSite(s, site.id)).status, 'deploymentSuccess', 'a cancelled preview leaves the status alone');
      const prod = await trigger(s, site.id);
      assert.equal((await readSite(s, site.id)).status, 'deploymentInProgress');
      expectStatus(await s.post(`${deploymentPath(site.id, prod.id)}/cancel`), 200);
      assert.equal((await readSite(s, site.id)).status, 'deploymentCancelled');
      const again = await trigger(s, site.id);
      await addFault(s, { operation: OP, target_id: site.id, phase: 'publish', remaining: 1 });
      assert.equal((await drive(site.id, again.id)).at(-1), 'failed');
      assert.equal((await readSite(s, site.id)).status, 'deploymentFailed');
    });

    it('a fault in a phase fails the deployment with the reason in build_error and the log', async () => {
      const site = await deployedSite(s);
      await addFault(s, { operation: OP, target_id: site.id, phase: 'build', remaining: 1, message: 'npm ERR! missing script: build' });
      const d = await trigger(s, site.id);
      const done = await waitForFinal(s, site.id, d.id);
      assert.equal(done.status, 'failed');
      const listed = (await deployments(s, site.id)).find((x) => x.id === d.id);
      assert.equal(listed.build_error, 'npm ERR! missing script: build');
      const logs = await deploymentLogs(s, site.id, d.id);
      assert.ok(logs.some((l) => l.message === 'npm ERR! missing script: build' && l.severity === 'error'));
      // The rule fired once: the next deployment succeeds.
      assert.equal((await waitForFinal(s, site.id, (await trigger(s, site.id)).id)).status, 'success');
    });

    it('rule: cancel only while not final — waiting and inProgress are cancelled, a final deployment answers 400', async () => {
      const site = await deployedSite(s);
      await reads(1);
      const running = await trigger(s, site.id);
      const waiting = await trigger(s, site.id);
      expectStatus(await s.post(`${deploymentPath(site.id, waiting.id)}/cancel`), 200);
      assert.equal((await readDeployment(s, site.id, waiting.id)).status, 'cancelled');
      const c = expectStatus(await s.post(`${deploymentPath(site.id, running.id)}/cancel`), 200);
      assert.equal(typeof c.message, 'string');
      const x = await readDeployment(s, site.id, running.id);
      assert.equal(x.status, 'cancelled');
      assert.ok(x.finished_at);
      expectError(await s.post(`${deploymentPath(site.id, running.id)}/cancel`), 400, /already cancelled/);
      const ok = await trigger(s, site.id);
      await drive(site.id, ok.id);
      expectError(await s.post(`${deploymentPath(site.id, ok.id)}/cancel`), 400, /already success/);
      expectError(await s.post(`${deploymentPath(site.id, MISSING)}/cancel`), 404);
      assert.ok((await deploymentLogs(s, site.id, running.id)).some((l) => /Cancelled on request/.test(l.message)));
    });

    it('deployment_id republishes an earlier successful build (publish only); anything else is 400', async () => {
      const site = await deployedSite(s);
      const other = await deployedSite(s);
      const [first] = await deployments(s, site.id);
      const second = await waitForFinal(s, site.id, (await trigger(s, site.id, { branch: 'release' })).id);
      assert.equal(second.status, 'success');
      const rb = await trigger(s, site.id, { deployment_id: first.id, branch: 'ignored' });
      assert.equal(rb.branch, first.branch);
      assert.equal(rb.commit_sha, first.commit_sha);
      assert.equal(rb.cloud_build_id, first.cloud_build_id);
      assert.equal((await waitForFinal(s, site.id, rb.id)).status, 'success');
      const phases = (await deploymentLogs(s, site.id, rb.id)).map((l) => l.attributes.phase).filter(Boolean);
      assert.deepEqual([...new Set(phases)], ['publish']);
      expectError(await s.post(`/static-sites/${site.id}/deployments`, { deployment_id: MISSING }), 400, /not a deployment/);
      await reads(1);
      const running = await trigger(s, site.id);
      expectError(await s.post(`/static-sites/${site.id}/deployments`, { deployment_id: running.id }), 400, /did not succeed/);
      expectError(await s.post(`/static-sites/${other.id}/deployments`, { deployment_id: first.id }), 400);
      await drive(site.id, running.id);
    });
  });
}

// On PostgreSQL several requests really run at once: the lane lock must keep one production
// deployment running per site, whatever the interleaving.
describe('static sites: concurrent production triggers [postgres]', { skip: await skipUnless('postgres') }, () => {
  const s = useServer({ db: 'postgres', rateLimits: GENEROUS, env: IMMEDIATE_ENV });

  it('10 parallel production triggers on a free lane: exactly one inProgress at any time, all run in turn', async () => {
    const site = await deployedSite(s);
    await setProgression(s, OP, { mode: 'reads', reads: 1 });
    const created = await Promise.all(Array.from({ length: 10 }, () => trigger(s, site.id)));
    assert.equal(created.filter((d) => d.status === 'inProgress').length, 1, JSON.stringify(created.map((d) => d.status)));
    assert.equal(created.filter((d) => d.status === 'waiting').length, 9);
    const ids = new Set(created.map((d) => d.id));
    for (let round = 0; round < 10; round++) {
      const now = (await deployments(s, site.id)).filter((d) => ids.has(d.id));
      const running = now.filter((d) => d.status === 'inProgress');
      assert.ok(running.length <= 1, `round ${round}: ${running.length} running`);
      const next =
        running[0] ?? (await waitFor('the next to start', async () => (await deployments(s, site.id)).find((d) => ids.has(d.id) && d.status === 'inProgress')));
      for (let i = 0; i < 10 && (await readDeployment(s, site.id, next.id)).status === 'inProgress'; i++);
      assert.equal((await readDeployment(s, site.id, next.id)).status, 'success');
    }
    const all = (await deployments(s, site.id)).filter((d) => ids.has(d.id)).sort((a, b) => a.started_at.localeCompare(b.started_at));
    assert.ok(all.every((d) => d.status === 'success'));
    for (let i = 1; i < all.length; i++) assert.ok(all[i].started_at >= all[i - 1].finished_at, 'no two overlapped');
  });
});
