// Pipelines: list, create, get, update, delete; stages create and delete; applications in a stage
// add and remove (one stage per application, also under concurrent requests); removal of an
// application drops it from its stage; projects; scoped keys and other companies.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, UUID_RE, expectError, expectStatus, listAll, waitFor } from '../helpers/util.js';
import { IMMEDIATE_ENV, addToStage, createApp, createPipeline, getPipeline, pipelinePath, stageNamed, stagePath } from './support.js';

const DETAIL_STAGE_FIELDS = [
  'app_ids',
  'auto_create_app',
  'branch',
  'created_at',
  'delete_stale_apps',
  'display_name',
  'id',
  'order',
  'pipeline_id',
  'stale_app_days',
  'type',
  'updated_at',
];

for (const kind of DB_KINDS) {
  describe(`pipelines [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('create answers 201 with the pipeline and its default stages Dev (standard) and Production (prod)', async () => {
      const p = await createPipeline(s, { display_name: 'Web shop', type: 'branch' });
      assert.deepEqual(Object.keys(p).sort(), ['company_id', 'created_at', 'display_name', 'id', 'project_id', 'stages', 'type', 'updated_at']);
      assert.match(p.id, UUID_RE);
      assert.equal(p.company_id, s.companyId);
      assert.equal(p.project_id, null);
      assert.equal(p.display_name, 'Web shop');
      assert.equal(p.type, 'branch');
      assert.deepEqual(
        p.stages.map((x: any) => [x.display_name, x.type, x.order]),
        [
          ['Dev', 'standard', 0],
          ['Production', 'prod', 1],
        ],
      );
      for (const st of p.stages) assert.deepEqual(Object.keys(st).sort(), ['display_name', 'id', 'order', 'type']);

      const g = await getPipeline(s, p.id);
      assert.equal(g.display_name, 'Web shop');
      assert.equal(g.company_id, s.companyId);
      assert.deepEqual(
        g.stages.map((x: any) => x.id),
        p.stages.map((x: any) => x.id),
      );
      for (const st of g.stages) {
        assert.deepEqual(Object.keys(st).sort(), DETAIL_STAGE_FIELDS);
        assert.equal(st.pipeline_id, p.id);
        assert.equal(st.branch, null);
        assert.equal(st.auto_create_app, false);
        assert.equal(st.delete_stale_apps, false);
        assert.equal(st.stale_app_days, 5);
      }
    });

    it('create validates its body and project (400), list pages through the company pipelines with their stage summaries', async () => {
      expectError(await s.post('/pipelines', { display_name: 'x', type: 'ring' }), 400);
      expectError(await s.post('/pipelines', { type: 'trunk' }), 400);
      expectError(await s.post('/pipelines', { display_name: '', type: 'trunk' }), 400);
      expectError(await s.post('/pipelines', { display_name: 'x', type: 'trunk', extra: 1 }), 400);
      // A project that names nothing is answered like a path id.
      expectError(await s.post('/pipelines', { display_name: 'x', type: 'trunk', project_id: MISSING }), 404);

      const a = await createPipeline(s, { display_name: 'list one' });
      const b = await createPipeline(s, { display_name: 'list two' });
      const all = await listAll(s, '/pipelines');
      const mine = all.filter((x) => [a.id, b.id].includes(x.id));
      assert.equal(mine.length, 2);
      for (const item of mine) {
        assert.deepEqual(Object.keys(item).sort(), ['created_at', 'display_name', 'id', 'stages', 'type', 'updated_at']);
        assert.equal(item.stages.length, 2);
      }
      const page = expectStatus(await s.get('/pipelines?limit=1&offset=0'), 200);
      assert.equal(page.limit, 1);
      assert.equal(page.data.length, 1);
      assert.equal(page.total, all.length);
    });

    it('update changes name, type and project, and reorders stages (400 for foreign or duplicate stages and clashing orders)', async () => {
      const p = await createPipeline(s);
      const [dev, prod] = p.stages;
      const proj = expectStatus(await s.post('/projects', { display_name: 'pipeline project' }), 201);

      const u = expectStatus(await s.patch(pipelinePath(p.id), { display_name: 'Renamed', type: 'branch', project_id: proj.id }), 200);
      assert.equal(u.display_name, 'Renamed');
      assert.equal(u.type, 'branch');
      assert.equal(u.project_id, proj.id);
      const project = expectStatus(await s.get(`/projects/${proj.id}`), 200);
      assert.deepEqual(
        project.services.map((x: any) => [x.id, x.type]),
        [[p.id, 'pipeline']],
      );

      const swapped = expectStatus(
        await s.patch(pipelinePath(p.id), {
          stage_order: [
            { stage_id: dev.id, order: 1 },
            { stage_id: prod.id, order: 0 },
          ],
        }),
        200,
      );
      assert.deepEqual(
        swapped.stages.map((x: any) => [x.id, x.order]),
        [
          [prod.id, 0],
          [dev.id, 1],
        ],
      );
      assert.equal(swapped.display_name, 'Renamed', 'fields not named keep their values');

      const other = await createPipeline(s);
      expectError(await s.patch(pipelinePath(p.id), { stage_order: [{ stage_id: other.stages[0].id, order: 0 }] }), 400, new RegExp(other.stages[0].id));
      expectError(await s.patch(pipelinePath(p.id), { stage_order: [{ stage_id: prod.id, order: 1 }] }), 400, /both have order 1/);
      expectError(
        await s.patch(pipelinePath(p.id), {
          stage_order: [
            { stage_id: dev.id, order: 2 },
            { stage_id: dev.id, order: 3 },
          ],
        }),
        400,
        /more than once/,
      );
      expectError(await s.patch(pipelinePath(p.id), { project_id: MISSING }), 404);
      assert.deepEqual(
        (await getPipeline(s, p.id)).stages.map((x: any) => x.id),
        [prod.id, dev.id],
        'a refused update changes nothing',
      );

      const cleared = expectStatus(await s.patch(pipelinePath(p.id), { project_id: null }), 200);
      assert.equal(cleared.project_id, null);
      assert.deepEqual(expectStatus(await s.get(`/projects/${proj.id}`), 200).services, []);
      expectError(await s.patch(pipelinePath(MISSING), { display_name: 'x' }), 404);
    });

    it('stages: insert at a position shifts the later ones up; delete renumbers; an order past the end appends', async () => {
      const p = await createPipeline(s);
      const st = expectStatus(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'Staging', insert_before: 1, branch: 'release' }), 201);
      assert.deepEqual(Object.keys(st).sort(), DETAIL_STAGE_FIELDS);
      assert.equal(st.type, 'standard');
      assert.equal(st.order, 1);
      assert.equal(st.branch, 'release');
      assert.equal(st.pipeline_id, p.id);
      let g = await getPipeline(s, p.id);
      assert.deepEqual(
        g.stages.map((x: any) => [x.display_name, x.order]),
        [
          ['Dev', 0],
          ['Staging', 1],
          ['Production', 2],
        ],
      );

      const last = expectStatus(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'Canary', insert_before: 50 }), 201);
      assert.equal(last.order, 3);
      assert.equal(last.branch, null);

      expectStatus(await s.delete(stagePath(p.id, st.id)), 200);
      g = await getPipeline(s, p.id);
      assert.deepEqual(
        g.stages.map((x: any) => [x.display_name, x.order]),
        [
          ['Dev', 0],
          ['Production', 1],
          ['Canary', 2],
        ],
      );
      expectError(await s.delete(stagePath(p.id, st.id)), 404);
      expectError(await s.delete(stagePath(MISSING, st.id)), 404);
      expectError(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'x', insert_before: 51 }), 400);
      expectError(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'x' }), 400);
      expectError(await s.post(`${pipelinePath(MISSING)}/stages`, { display_name: 'x', insert_before: 0 }), 404);
    });

    it('a pipeline holds at most 51 stages (orders 0..50): the 52nd is 400', async () => {
      const p = await createPipeline(s);
      for (let i = 0; i < 49; i++) expectStatus(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: `S${i}`, insert_before: 50 }), 201);
      const g = await getPipeline(s, p.id);
      assert.equal(g.stages.length, 51);
      assert.deepEqual(
        g.stages.map((x: any) => x.order),
        [...Array(51).keys()],
      );
      expectError(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'one too many', insert_before: 0 }), 400, /at most 51 stages/);
      assert.equal((await getPipeline(s, p.id)).stages.length, 51);
    });

    it('an application joins one stage; adding it to any stage again is 400; remove unlinks it; unknown ids are 404', async () => {
      const p = await createPipeline(s);
      const q = await createPipeline(s);
      const dev = stageNamed(p, 'Dev');
      const prod = stageNamed(p, 'Production');
      const a = await createApp(s);
      const r = await addToStage(s, p.id, dev.id, a.id);
      assert.equal(typeof r.message, 'string');
      expectError(await s.post(`${stagePath(p.id, dev.id)}/apps`, { app_id: a.id }), 400, /already in a pipeline stage/);
      expectError(await s.post(`${stagePath(p.id, prod.id)}/apps`, { app_id: a.id }), 400, new RegExp(`stage ${dev.id} of pipeline ${p.id}`));
      expectError(await s.post(`${stagePath(q.id, q.stages[0].id)}/apps`, { app_id: a.id }), 400, /at most one stage/);

      expectError(await s.delete(`${stagePath(p.id, prod.id)}/apps/${a.id}`), 404);
      expectStatus(await s.delete(`${stagePath(p.id, dev.id)}/apps/${a.id}`), 200);
      expectError(await s.delete(`${stagePath(p.id, dev.id)}/apps/${a.id}`), 404);
      await addToStage(s, q.id, q.stages[1].id, a.id);

      expectError(await s.post(`${stagePath(p.id, dev.id)}/apps`, { app_id: MISSING }), 404);
      expectError(await s.post(`${stagePath(p.id, MISSING)}/apps`, { app_id: a.id }), 404);
      expectError(await s.post(`${stagePath(MISSING, dev.id)}/apps`, { app_id: a.id }), 404);
      expectError(await s.post(`${stagePath(p.id, q.stages[0].id)}/apps`, { app_id: a.id }), 404, 'Pipeline stage not found');
      expectError(await s.post(`${stagePath(p.id, dev.id)}/apps`, {}), 400);
    });

    it('an application added to a stage joins the pipeline project', async () => {
      const proj = expectStatus(await s.post('/projects', { display_name: 'inherit project' }), 201);
      const p = await createPipeline(s, { project_id: proj.id });
      assert.equal(p.project_id, proj.id);
      const a = await createApp(s);
      await addToStage(s, p.id, p.stages[0].id, a.id);
      assert.equal(expectStatus(await s.get(`/applications/${a.id}`), 200).project_id, proj.id);
      const services = expectStatus(await s.get(`/projects/${proj.id}`), 200)
        .services.map((x: any) => x.id)
        .sort();
      assert.deepEqual(services, [a.id, p.id].sort());
    });

    it('deleting a stage unlinks its applications; deleting the pipeline unlinks all and removes its stages', async () => {
      const p = await createPipeline(s);
      const a = await createApp(s);
      const b = await createApp(s);
      await addToStage(s, p.id, p.stages[0].id, a.id);
      await addToStage(s, p.id, p.stages[1].id, b.id);
      expectStatus(await s.delete(stagePath(p.id, p.stages[0].id)), 200);
      const q = await createPipeline(s);
      await addToStage(s, q.id, q.stages[0].id, a.id);
      expectError(await s.post(`${stagePath(q.id, q.stages[0].id)}/apps`, { app_id: b.id }), 400, /already/);

      expectStatus(await s.delete(pipelinePath(p.id)), 200);
      expectError(await s.get(pipelinePath(p.id)), 404);
      expectError(await s.delete(pipelinePath(p.id)), 404);
      await addToStage(s, q.id, q.stages[1].id, b.id);
      expectStatus(await s.get(`/applications/${b.id}`), 200);
    });

    it('a deleted application leaves its stage (application.removed)', async () => {
      const p = await createPipeline(s);
      const a = await createApp(s);
      await addToStage(s, p.id, p.stages[0].id, a.id);
      expectStatus(await s.delete(`/applications/${a.id}`), 200);
      await waitFor('the application to be removed', async () => (await s.get(`/applications/${a.id}`)).status === 404);
      const left = await s.app.database.db.selectFrom('pipeline_apps').select('app_id').where('app_id', '=', a.id).execute();
      assert.deepEqual(left, []);
      expectError(await s.delete(`${stagePath(p.id, p.stages[0].id)}/apps/${a.id}`), 404);
    });

    it('another company sees none of it (404), and cannot place its applications in this pipeline', async () => {
      const p = await createPipeline(s);
      const a = await createApp(s);
      const other = await s.newCompany();
      expectError(await s.get(pipelinePath(p.id), { token: other.token }), 404);
      expectError(await s.patch(pipelinePath(p.id), { display_name: 'x' }, { token: other.token }), 404);
      expectError(await s.delete(pipelinePath(p.id), { token: other.token }), 404);
      expectError(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'x', insert_before: 0 }, { token: other.token }), 404);
      assert.ok(!(await listAll(s, '/pipelines', other.token)).some((x) => x.id === p.id));
      const theirs = await createPipeline(s, {}, other.token);
      expectError(await s.post(`${stagePath(theirs.id, theirs.stages[0].id)}/apps`, { app_id: a.id }, { token: other.token }), 404, 'Application not found');
    });

    it('permissions: a viewer reads but cannot write (403); a key scoped to one pipeline sees only it, and only the applications it may see', async () => {
      const p = await createPipeline(s);
      const other = await createPipeline(s);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectStatus(await s.get(pipelinePath(p.id), { token: viewer.token }), 200);
      expectError(await s.post('/pipelines', { display_name: 'x', type: 'trunk' }, { token: viewer.token }), 403, /PIPELINE:CREATE/);
      expectError(await s.patch(pipelinePath(p.id), { display_name: 'x' }, { token: viewer.token }), 403, /PIPELINE:UPDATE/);

      const a = await createApp(s);
      const b = await createApp(s);
      const scoped = await s.newKey({
        capabilities: [
          { permission: 'PIPELINE:READ', id_resource: p.id },
          { permission: 'PIPELINE:UPDATE', id_resource: p.id },
          { permission: 'APP:READ', id_resource: a.id },
        ],
      });
      expectStatus(await s.get(pipelinePath(p.id), { token: scoped.token }), 200);
      expectError(await s.get(pipelinePath(other.id), { token: scoped.token }), 404);
      assert.deepEqual(
        (await listAll(s, '/pipelines', scoped.token)).map((x) => x.id),
        [p.id],
      );
      await addToStage(s, p.id, p.stages[0].id, a.id, scoped.token);
      expectError(await s.post(`${stagePath(p.id, p.stages[0].id)}/apps`, { app_id: b.id }, { token: scoped.token }), 404, 'Application not found');
      expectError(await s.post('/pipelines', { display_name: 'x', type: 'trunk' }, { token: scoped.token }), 403);
    });

    it('pipeline writes count toward the general write tier; reads toward the read tier', async () => {
      const r = await s.post('/pipelines', { display_name: 'tiers', type: 'trunk' });
      expectStatus(r, 201);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(GENEROUS.general_write));
      const g = await s.get(pipelinePath(r.body.id));
      assert.equal(g.headers.get('x-ratelimit-limit'), String(GENEROUS.read));
    });

    if (kind === 'postgres') {
      it('20 concurrent adds of one application to different stages: exactly one succeeds, the others are 400', async () => {
        const pipes = await Promise.all([0, 1, 2, 3].map(() => createPipeline(s)));
        const stages = pipes.flatMap((p) => p.stages.map((st: any) => ({ p: p.id, st: st.id })));
        const a = await createApp(s);
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => {
            const t = stages[i % stages.length]!;
            return s.post(`${stagePath(t.p, t.st)}/apps`, { app_id: a.id });
          }),
        );
        const ok = results.filter((r) => r.status === 200);
        assert.equal(ok.length, 1, results.map((r) => `${r.status} ${r.text}`).join('\n'));
        for (const r of results.filter((x) => x.status !== 200)) expectError(r, 400, /at most one stage/);
        const rows = await s.app.database.db.selectFrom('pipeline_apps').select('app_id').where('app_id', '=', a.id).execute();
        assert.equal(rows.length, 1);
      });
    }
  });
}
