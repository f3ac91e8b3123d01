// Preview apps: enabling, updating and disabling a pipeline's preview stage; POST
// /applications/{id}/preview-apps making a previewApp copy of an application for a branch and
// deploying it; preview apps removed when preview is disabled, with the pipeline, and once stale
// (a "day" is shortened to 300 ms here); never promoted.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, expectError, expectStatus, listAll, waitFor } from '../helpers/util.js';
import { IMMEDIATE_ENV, addToStage, createApp, createPipeline, deploy, getPipeline, pipelinePath, stageNamed, stagePath, waitForFinal } from './support.js';

const REPO = 'https://github.com/example/shop-previews';

for (const kind of DB_KINDS) {
  describe(`pipelines: preview apps [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: { ...IMMEDIATE_ENV, SLIPWAY_PREVIEW_DAY_MS: '300' } });

    const enable = (id: string, body: Record<string, unknown> = { repo_url: REPO }) => s.post(`${pipelinePath(id)}/preview/enable`, body);
    const preview = (appId: string, body: Record<string, unknown>, token?: string) => s.post(`/applications/${appId}/preview-apps`, body, { token });
    const gone = (appId: string) => waitFor(`application ${appId} to be removed`, async () => (await s.get(`/applications/${appId}`)).status === 404);

    /** A pipeline with preview enabled (settings `extra`) and a git source app in Dev. */
    async function setup(extra: Record<string, unknown> = {}) {
      const p = await createPipeline(s);
      const src = await createApp(s);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, src.id);
      expectStatus(await enable(p.id, { repo_url: REPO, ...extra }), 200);
      return { p, src };
    }

    it('enable needs a repository, adds the preview stage first with its settings; enabling twice is 400', async () => {
      const p = await createPipeline(s);
      expectError(await enable(p.id, {}), 400, /repo_url is required/);
      expectError(await enable(p.id, { repo_url: 'not a url' }), 400);
      expectError(await enable(MISSING), 404);
      const r = expectStatus(await enable(p.id, { repo_url: REPO, auto_create_app: true }), 200);
      assert.equal(typeof r.message, 'string');
      const g = await getPipeline(s, p.id);
      assert.deepEqual(
        g.stages.map((x: any) => [x.type, x.order]),
        [
          ['preview', 0],
          ['standard', 1],
          ['prod', 2],
        ],
      );
      const st = stageNamed(g, 'preview') as any;
      assert.equal(st.auto_create_app, true);
      assert.equal(st.delete_stale_apps, false);
      assert.equal(st.stale_app_days, 5);
      expectError(await enable(p.id), 400, /already enabled/);
      expectError(await s.delete(stagePath(p.id, st.id)), 400, /disabling preview/);
      const a = await createApp(s);
      expectError(await s.post(`${stagePath(p.id, st.id)}/apps`, { app_id: a.id }), 400, /only as preview apps/);
    });

    it('PUT /preview updates the settings (400 while preview is disabled)', async () => {
      const p = await createPipeline(s);
      expectError(await s.put(`${pipelinePath(p.id)}/preview`, { auto_create_app: true }), 400, /not enabled/);
      expectStatus(await enable(p.id), 200);
      expectStatus(await s.put(`${pipelinePath(p.id)}/preview`, { auto_create_app: true, stale_app_days: 9 }), 200);
      const st = stageNamed(await getPipeline(s, p.id), 'preview') as any;
      assert.equal(st.auto_create_app, true);
      assert.equal(st.stale_app_days, 9);
      assert.equal(st.delete_stale_apps, false);
      expectError(await s.put(`${pipelinePath(p.id)}/preview`, { stale_app_days: 0 }), 400);
      expectError(await s.put(`${pipelinePath(p.id)}/preview`, { stale_app_days: 366 }), 400);
      expectError(await s.put(`${pipelinePath(MISSING)}/preview`, {}), 404);
    });

    it('a preview app copies the source (processes, variables, build settings), is of type previewApp, and deploys its branch', async () => {
      const { p, src } = await setup();
      expectStatus(await s.patch(`/applications/${src.id}`, { build_type: 'dockerfile', dockerfile_path: 'docker/Dockerfile' }), 200);
      expectStatus(
        await s.post(`/applications/${src.id}/processes`, {
          display_name: 'worker',
          type: 'worker',
          entrypoint: 'node w.js',
          resource_type_id: PROCESS_RESOURCE_TYPES[0]!.id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 1 } },
        }),
        200,
      );
      expectStatus(await s.post(`/applications/${src.id}/env-vars`, { key: 'FEATURE', value: 'on', is_runtime: true, is_buildtime: true }), 201);

      const pa = expectStatus(await preview(src.id, { branch: 'feature/cart', pull_request_number: 42 }), 201);
      assert.equal(pa.type, 'previewApp');
      assert.notEqual(pa.id, src.id);
      assert.equal(pa.display_name, `${src.display_name} PR #42`);
      assert.equal(pa.default_branch, 'feature/cart');
      assert.equal(pa.repo_url, REPO);
      assert.equal(pa.build_type, 'dockerfile');
      assert.equal(pa.dockerfile_path, 'docker/Dockerfile');
      assert.equal(pa.status, 'deploymentInProgress');

      const deps = await listAll(s, `/applications/${pa.id}/deployments`);
      assert.equal(deps.length, 1);
      assert.equal(deps[0].trigger, 'preview');
      assert.equal(deps[0].branch, 'feature/cart');
      assert.equal(deps[0].repo_url, REPO);
      assert.equal((await waitForFinal(s, pa.id, deps[0].id)).status, 'success');

      const procs = (id: string) => listAll(s, `/applications/${id}/processes`).then((l) => l.map((x) => [x.display_name, x.type]).sort());
      assert.deepEqual(await procs(pa.id), await procs(src.id));
      const vars = await listAll(s, `/applications/${pa.id}/env-vars`);
      assert.deepEqual(
        vars.map((v) => v.key),
        ['FEATURE'],
      );
      assert.equal(expectStatus(await s.get(`/applications/${pa.id}`), 200).type, 'previewApp');

      const named = expectStatus(await preview(src.id, { branch: 'fix/typo', display_name: 'Typo fix' }), 201);
      assert.equal(named.display_name, 'Typo fix');
      const unnamed = expectStatus(await preview(src.id, { branch: 'chore/deps', pull_request_number: null }), 201);
      assert.equal(unnamed.display_name, `${src.display_name} (chore/deps)`);

      // Preview apps stay in the preview stage and are never promoted.
      expectError(await s.delete(`${stagePath(p.id, stageNamed(await getPipeline(s, p.id), 'preview').id)}/apps/${pa.id}`), 400, /preview app/);
      expectError(await s.post(`${stagePath(p.id, stageNamed(p, 'Production').id)}/apps`, { app_id: pa.id }), 400, /preview app/);
      const prod = await createApp(s);
      await addToStage(s, p.id, stageNamed(p, 'Production').id, prod.id);
      expectError(await s.post(`${pipelinePath(p.id)}/promote`, { source_app_id: pa.id, target_app_ids: [prod.id] }), 400, /never promoted/);
      await deploy(s, src.id);
      expectError(
        await s.post(`${pipelinePath(p.id)}/promote`, { source_app_id: src.id, target_app_ids: [pa.id] }),
        400,
        new RegExp(`${pa.id} is a preview app`),
      );
      expectError(await preview(pa.id, { branch: 'x' }), 400, /itself a preview app/);
    });

    it('a preview app needs a source in a pipeline with preview enabled, built from Git; bad input is 400, unknown sources 404', async () => {
      const lone = await createApp(s);
      expectError(await preview(lone.id, { branch: 'x' }), 400, /not in a pipeline/);
      const p = await createPipeline(s);
      await addToStage(s, p.id, p.stages[0].id, lone.id);
      expectError(await preview(lone.id, { branch: 'x' }), 400, /not enabled/);
      const img = await createApp(s, { kind: 'image' });
      await addToStage(s, p.id, p.stages[0].id, img.id);
      expectStatus(await enable(p.id), 200);
      expectError(await preview(img.id, { branch: 'x' }), 400, /Docker image/);
      expectError(await preview(lone.id, {}), 400);
      expectError(await preview(lone.id, { branch: '' }), 400);
      expectError(await preview(lone.id, { branch: 'x', pull_request_number: 0 }), 400);
      expectError(await preview(MISSING, { branch: 'x' }), 404);
      const other = await s.newCompany();
      expectError(await preview(lone.id, { branch: 'x' }, other.token), 404);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectError(await preview(lone.id, { branch: 'x' }, viewer.token), 403, /APP:CREATE/);
    });

    it('a preview app needs APP:CREATE for the whole company, like clone: a capability scoped to the source is 403', async () => {
      const { src } = await setup();
      const read = { permission: 'APP:READ', id_resource: src.id };
      const scoped = await s.newKey({ capabilities: [{ permission: 'APP:CREATE', id_resource: src.id }, read] });
      const before = (await listAll(s, '/applications')).length;
      expectError(await preview(src.id, { branch: 'scoped' }, scoped.token), 403, /APP:CREATE/);
      expectError(await s.post(`/applications/${src.id}/clone`, { display_name: 'scoped copy' }, { token: scoped.token }), 403, /APP:CREATE/);
      assert.equal((await listAll(s, '/applications')).length, before, 'nothing was created');
      // The same key with APP:CREATE for the whole company may.
      const wide = await s.newKey({ capabilities: [{ permission: 'APP:CREATE' }, read] });
      assert.equal(expectStatus(await preview(src.id, { branch: 'wide' }, wide.token), 201).type, 'previewApp');
    });

    it('disabling preview deletes its preview apps and removes the stage; the other stages renumber', async () => {
      const { p, src } = await setup();
      const a = expectStatus(await preview(src.id, { branch: 'one' }), 201);
      const b = expectStatus(await preview(src.id, { branch: 'two' }), 201);
      expectStatus(await s.post(`${pipelinePath(p.id)}/preview/disable`), 200);
      const g = await getPipeline(s, p.id);
      assert.deepEqual(
        g.stages.map((x: any) => [x.type, x.order]),
        [
          ['standard', 0],
          ['prod', 1],
        ],
      );
      await gone(a.id);
      await gone(b.id);
      expectStatus(await s.get(`/applications/${src.id}`), 200);
      expectError(await s.post(`${pipelinePath(p.id)}/preview/disable`), 400, /not enabled/);
      expectError(await preview(src.id, { branch: 'three' }), 400, /not enabled/);
    });

    it('deleting the pipeline deletes its preview apps and unlinks the others', async () => {
      const { p, src } = await setup();
      const a = expectStatus(await preview(src.id, { branch: 'doomed' }), 201);
      expectStatus(await s.delete(pipelinePath(p.id)), 200);
      await gone(a.id);
      expectStatus(await s.get(`/applications/${src.id}`), 200);
    });

    it('with delete_stale_apps, a preview app not deployed for stale_app_days is removed (durable job)', async () => {
      const { src } = await setup({ delete_stale_apps: true, stale_app_days: 1 });
      const a = expectStatus(await preview(src.id, { branch: 'stale' }), 201);
      await gone(a.id);
      expectStatus(await s.get(`/applications/${src.id}`), 200);
    });

    it('turning delete_stale_apps on later applies to the existing preview apps', async () => {
      const { p, src } = await setup({ stale_app_days: 1 });
      const a = expectStatus(await preview(src.id, { branch: 'later' }), 201);
      const jobs = await s.app.database.db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'pipeline.preview-expire')
        .where('subject_id', '=', a.id)
        .execute();
      assert.deepEqual(jobs, [], 'no expiry is scheduled while delete_stale_apps is off');
      expectStatus(await s.put(`${pipelinePath(p.id)}/preview`, { delete_stale_apps: true }), 200);
      await gone(a.id);
    });
  });
}
