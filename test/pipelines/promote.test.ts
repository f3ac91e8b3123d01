// Promotion: the source application's current release (its build: same commit and image, no
// build step) deployed onto each target in a later stage, one deployment per target, with the
// target's own variables; every rule refused with 400 naming the offending application, and a
// refused promotion deploys nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, UUID_RE, expectError, expectStatus, listAll } from '../helpers/util.js';
import {
  IMMEDIATE_ENV,
  addToStage,
  createApp,
  createPipeline,
  deploy,
  deploymentLogs,
  deploymentPath,
  pipelinePath,
  stageNamed,
  waitForFinal,
} from './support.js';

for (const kind of DB_KINDS) {
  describe(`pipelines: promote [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const promote = (id: string, body: Record<string, unknown>, token?: string) => s.post(`${pipelinePath(id)}/promote`, body, { token });
    const deployments = (appId: string) => listAll(s, `/applications/${appId}/deployments`);
    const envCount = (lines: { message: string }[]) =>
      Number(/Runtime environment: (\d+) variables/.exec(lines.map((l) => l.message).find((m) => m.startsWith('Runtime environment'))!)![1]);

    /** A pipeline Dev -> Staging -> Production with a git source in Dev and two targets. */
    async function setup() {
      const p = await createPipeline(s);
      const staging = expectStatus(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'Staging', insert_before: 1 }), 201);
      const src = await createApp(s);
      const stagingApp = await createApp(s);
      const prodApp = await createApp(s);
      const peer = await createApp(s);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, src.id);
      await addToStage(s, p.id, staging.id, stagingApp.id);
      await addToStage(s, p.id, stageNamed(p, 'Production').id, prodApp.id);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, peer.id);
      return { p, src, stagingApp, prodApp, peer };
    }

    it('a source without a successful deployment is 400, and nothing is deployed', async () => {
      const { p, src, prodApp } = await setup();
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id] }), 400, new RegExp(`${src.id} has no successful deployment`));
      assert.deepEqual(await deployments(prodApp.id), []);
    });

    it("promotes the release to every target: one deployment each, same commit, trigger promotion, no build step, the target's own variables", async () => {
      const { p, src, stagingApp, prodApp } = await setup();
      const release = await deploy(s, src.id);
      const srcLogs = await deploymentLogs(s, src.id, release.id);
      expectStatus(await s.post(`/applications/${prodApp.id}/env-vars`, { key: 'ONLY_IN_PROD', value: 'yes', is_runtime: true, is_buildtime: false }), 201);

      const res = expectStatus(await promote(p.id, { source_app_id: src.id, target_app_ids: [stagingApp.id, prodApp.id] }), 200);
      assert.equal(res.length, 2);
      assert.deepEqual(
        res.map((r: any) => r.target_app_id),
        [stagingApp.id, prodApp.id],
      );
      for (const r of res) {
        assert.deepEqual(Object.keys(r).sort(), ['deployment_id', 'target_app_id']);
        assert.match(r.deployment_id, UUID_RE);
        const d = await waitForFinal(s, r.target_app_id, r.deployment_id);
        assert.equal(d.status, 'success');
        assert.equal(d.app_id, r.target_app_id);
        assert.equal(d.trigger, 'promotion');
        assert.equal(d.commit_sha, release.commit_sha);
        assert.equal(d.branch, release.branch);
        assert.equal(d.repo_url, release.repo_url);
        assert.deepEqual(d.steps, ['rollout']);
        const lines = (await deploymentLogs(s, r.target_app_id, r.deployment_id)).map((l) => l.message);
        assert.ok(lines.includes(`Reusing the build of deployment ${release.id}; build step skipped`), lines.join('\n'));
        assert.ok(!lines.some((m) => /^Building with|Running build command|Checked out commit/.test(m)), `no checkout or build: ${lines.join('\n')}`);
        assert.equal((await deployments(r.target_app_id)).length, 1, 'exactly one deployment per target');
      }
      const prodLogs = await deploymentLogs(s, prodApp.id, res[1].deployment_id);
      assert.equal(envCount(prodLogs), envCount(srcLogs) + 1, 'the target rolls out with its own variables');
      assert.equal(expectStatus(await s.get(`/applications/${prodApp.id}`), 200).status, 'deploymentSuccess');

      // Promoting on from Staging to Production carries the same original build.
      const again = expectStatus(await promote(p.id, { source_app_id: stagingApp.id, target_app_ids: [prodApp.id] }), 200);
      const d2 = await waitForFinal(s, prodApp.id, again[0].deployment_id);
      assert.equal(d2.commit_sha, release.commit_sha);
      const l2 = (await deploymentLogs(s, prodApp.id, d2.id)).map((l) => l.message);
      assert.ok(l2.includes(`Reusing the build of deployment ${release.id}; build step skipped`), l2.join('\n'));
    });

    it('a Docker image release carries its image to the target', async () => {
      const p = await createPipeline(s);
      const img = await createApp(s, { kind: 'image' });
      const target = await createApp(s);
      await addToStage(s, p.id, p.stages[0].id, img.id);
      await addToStage(s, p.id, p.stages[1].id, target.id);
      const release = await deploy(s, img.id, { docker_image: 'nginx:1.28' });
      const [r] = expectStatus(await promote(p.id, { source_app_id: img.id, target_app_ids: [target.id] }), 200);
      const d = await waitForFinal(s, target.id, r.deployment_id);
      assert.equal(d.docker_image_url, 'nginx:1.28');
      assert.equal(d.docker_image_url, release.docker_image_url);
      assert.deepEqual(d.steps, ['rollout']);
    });

    it('targets must be later stages of the same pipeline: each refusal is 400 naming the application, and deploys nothing', async () => {
      const { p, src, stagingApp, prodApp, peer } = await setup();
      await deploy(s, src.id);
      await deploy(s, stagingApp.id);
      const outside = await createApp(s);
      const q = await createPipeline(s);
      const elsewhere = await createApp(s);
      await addToStage(s, q.id, q.stages[1].id, elsewhere.id);
      const before = (await deployments(prodApp.id)).length;

      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id, peer.id] }), 400, new RegExp(`${peer.id} is not in a later stage`));
      expectError(
        await promote(p.id, { source_app_id: stagingApp.id, target_app_ids: [prodApp.id, src.id] }),
        400,
        new RegExp(`${src.id} is not in a later stage`),
      );
      expectError(
        await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id, outside.id] }),
        400,
        new RegExp(`${outside.id} is not in pipeline ${p.id}`),
      );
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [elsewhere.id] }), 400, new RegExp(`${elsewhere.id} is not in pipeline`));
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [MISSING] }), 400, new RegExp(MISSING));
      expectError(await promote(p.id, { source_app_id: outside.id, target_app_ids: [prodApp.id] }), 400, new RegExp(`${outside.id} is not in pipeline`));
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id, prodApp.id] }), 400, /more than once/);
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [src.id] }), 400, new RegExp(src.id));
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [] }), 400);
      expectError(await promote(p.id, { source_app_id: src.id }), 400);
      expectError(await promote(MISSING, { source_app_id: src.id, target_app_ids: [prodApp.id] }), 404);
      expectError(await promote(q.id, { source_app_id: src.id, target_app_ids: [elsewhere.id] }), 400, new RegExp(`${src.id} is not in pipeline ${q.id}`));

      expectStatus(await s.post(`/applications/${prodApp.id}/suspend`), 200);
      expectError(
        await promote(p.id, { source_app_id: src.id, target_app_ids: [stagingApp.id, prodApp.id] }),
        400,
        new RegExp(`Application ${prodApp.id} is suspended`),
      );
      assert.equal((await deployments(prodApp.id)).length, before, 'no target got a deployment');
      assert.equal((await deployments(stagingApp.id)).length, 1, 'the valid target of a refused promotion got no deployment either');
    });

    it('promotion needs PIPELINE:UPDATE, and APP:UPDATE on each target', async () => {
      const { p, src, prodApp } = await setup();
      await deploy(s, src.id);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id] }, viewer.token), 403, /PIPELINE:UPDATE/);
      const pipelineOnly = await s.newKey({
        capabilities: [
          { permission: 'PIPELINE:UPDATE', id_resource: null },
          { permission: 'APP:READ', id_resource: null },
        ],
      });
      expectError(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id] }, pipelineOnly.token), 403, /APP:UPDATE/);
      assert.deepEqual(await deployments(prodApp.id), []);
      const both = await s.newKey({
        capabilities: [
          { permission: 'PIPELINE:UPDATE', id_resource: p.id },
          { permission: 'APP:READ', id_resource: null },
          { permission: 'APP:UPDATE', id_resource: prodApp.id },
        ],
      });
      const [r] = expectStatus(await promote(p.id, { source_app_id: src.id, target_app_ids: [prodApp.id] }, both.token), 200);
      expectStatus(await s.get(deploymentPath(prodApp.id, r.deployment_id)), 200);
    });
  });
}
