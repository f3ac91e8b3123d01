// A stage's applications read back (x-decided `app_ids` on the stages of GET /pipelines/{id} and
// of a created stage): placed and removed applications, their order, a deleted stage's or
// application's, preview apps in the preview stage, only those the key may read; the other
// representations keep the contract's stage summary.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, listAll, waitFor } from '../helpers/util.js';
import { IMMEDIATE_ENV, addToStage, createApp, createPipeline, getPipeline, pipelinePath, stageNamed, stagePath } from './support.js';

type Stage = { id: string; display_name: string; type: string; app_ids: string[] };
/** display name (or type) of each stage -> its app_ids, in stage order. */
const membership = (p: { stages: Stage[] }) => Object.fromEntries(p.stages.map((st) => [st.display_name, st.app_ids]));

for (const kind of DB_KINDS) {
  describe(`pipelines: a stage's applications [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('GET lists each stage its applications in the order they were placed; removing one drops it', async () => {
      const p = await createPipeline(s);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [], Production: [] });
      const [a, b, c] = [await createApp(s), await createApp(s), await createApp(s)];
      await addToStage(s, p.id, stageNamed(p, 'Production').id, c.id);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, a.id);
      await addToStage(s, p.id, stageNamed(p, 'Production').id, b.id);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [a.id], Production: [c.id, b.id] });

      expectStatus(await s.delete(`${stagePath(p.id, stageNamed(p, 'Production').id)}/apps/${c.id}`), 200);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [a.id], Production: [b.id] });
      // Now free, it can go to another stage, and shows there.
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, c.id);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [a.id, c.id], Production: [b.id] });
    });

    it("a new stage answers app_ids []; a deleted stage's applications are free again; a deleted application leaves its stage", async () => {
      const p = await createPipeline(s);
      const st = expectStatus(await s.post(`${pipelinePath(p.id)}/stages`, { display_name: 'Staging', insert_before: 1 }), 201);
      assert.deepEqual(st.app_ids, []);
      const [a, b] = [await createApp(s), await createApp(s)];
      await addToStage(s, p.id, st.id, a.id);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, b.id);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [b.id], Staging: [a.id], Production: [] });

      expectStatus(await s.delete(stagePath(p.id, st.id)), 200);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [b.id], Production: [] });
      await addToStage(s, p.id, stageNamed(p, 'Production').id, a.id);

      expectStatus(await s.delete(`/applications/${b.id}`), 200);
      await waitFor('the deleted application to leave Dev', async () => (await getPipeline(s, p.id)).stages[0].app_ids.length === 0);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [], Production: [a.id] });
    });

    it('preview apps are listed in the preview stage, and go with it', async () => {
      const p = await createPipeline(s);
      const src = await createApp(s);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, src.id);
      expectStatus(await s.post(`${pipelinePath(p.id)}/preview/enable`, { repo_url: 'https://github.com/example/shop' }), 200);
      const one = expectStatus(await s.post(`/applications/${src.id}/preview-apps`, { branch: 'feature-a' }), 201);
      const two = expectStatus(await s.post(`/applications/${src.id}/preview-apps`, { branch: 'feature-b', pull_request_number: 7 }), 201);
      const g = await getPipeline(s, p.id);
      assert.deepEqual(membership(g), { Preview: [one.id, two.id], Dev: [src.id], Production: [] });
      expectStatus(await s.post(`${pipelinePath(p.id)}/preview/disable`), 200);
      assert.deepEqual(membership(await getPipeline(s, p.id)), { Dev: [src.id], Production: [] });
    });

    it('a key sees only the applications it may read; a viewer sees them all', async () => {
      const p = await createPipeline(s);
      const [a, b] = [await createApp(s), await createApp(s)];
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, a.id);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, b.id);
      const scoped = await s.newKey({
        capabilities: [
          { permission: 'PIPELINE:READ', id_resource: p.id },
          { permission: 'APP:READ', id_resource: a.id },
        ],
      });
      assert.deepEqual(membership(await getPipeline(s, p.id, scoped.token)), { Dev: [a.id], Production: [] });
      const pipelineOnly = await s.newKey({ capabilities: [{ permission: 'PIPELINE:READ' }] });
      assert.deepEqual(membership(await getPipeline(s, p.id, pipelineOnly.token)), { Dev: [], Production: [] });
      const viewer = await s.newKey({ role: 'Company Viewer' });
      assert.deepEqual(membership(await getPipeline(s, p.id, viewer.token)), { Dev: [a.id, b.id], Production: [] });
    });

    it('list, create and update keep the stage summary; the served document marks app_ids x-decided', async () => {
      const p = await createPipeline(s);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, (await createApp(s)).id);
      for (const st of p.stages) assert.deepEqual(Object.keys(st).sort(), ['display_name', 'id', 'order', 'type']);
      const listed = (await listAll(s, '/pipelines')).find((x) => x.id === p.id);
      for (const st of listed.stages) assert.deepEqual(Object.keys(st).sort(), ['display_name', 'id', 'order', 'type']);
      const updated = expectStatus(await s.patch(pipelinePath(p.id), { display_name: 'Renamed' }), 200);
      for (const st of updated.stages) assert.deepEqual(Object.keys(st).sort(), ['display_name', 'id', 'order', 'type']);

      const doc = expectStatus(await s.get('/openapi.json'), 200);
      const resolve = (x: any): any => (x.$ref ? resolve(doc.components.schemas[x.$ref.split('/').pop()]) : x);
      const stageOf = (path: string, method: string, code: string, inStages: boolean) => {
        const body = resolve(doc.paths[path][method].responses[code].content['application/json'].schema);
        return resolve(inStages ? body.properties.stages.items : body);
      };
      for (const st of [stageOf('/pipelines/{id}', 'get', '200', true), stageOf('/pipelines/{id}/stages', 'post', '201', false)]) {
        assert.equal(st.properties.app_ids['x-decided'], true);
        assert.equal(st.properties.app_ids.type, 'array');
        assert.ok(st.required.includes('app_ids'));
      }
      assert.equal(stageOf('/pipelines', 'post', '201', true).properties.app_ids, undefined);
    });
  });
}
