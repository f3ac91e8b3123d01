// Clone: an identical copy of an application (processes, environment variables with their values,
// build settings and configuration) under a new name and namespace, optionally in another region,
// without the generated temporary domain, and with an initial deployment (trigger `clone`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, uniqueName, UUID_RE } from '../helpers/util.js';
import { PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, OTHER_CLUSTER, appPath, createApp, deploy, deploymentsPath, waitForAppStatus, waitForFinal } from './support.js';

const RT = Object.fromEntries(PROCESS_RESOURCE_TYPES.map((t) => [t.name, t]));

/** The process fields a clone must reproduce (everything but identity and timestamps). */
const copied = (p: Record<string, unknown>) => {
  const { id: _i, app_id: _a, created_at: _c, updated_at: _u, internal_hostname: _h, ...rest } = p;
  return rest;
};

for (const kind of DB_KINDS) {
  describe(`applications: clone [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    /** A git application with build settings, configuration, two extra processes and three variables. */
    async function richSource() {
      const a = await createApp(s);
      expectStatus(
        await s.patch(appPath(a.id), {
          build_type: 'railpack',
          build_path: 'apps/api',
          dockerfile_path: 'docker/Dockerfile',
          docker_context: 'apps',
          build_cache_enabled: false,
          auto_deploy: false,
          default_branch: 'production',
          hibernation_enabled: true,
          hibernate_after_seconds: 900,
          git_lfs_enabled: false,
          allow_deploy_paths: ['apps/api/**'],
          ignore_deploy_paths: ['**/*.md'],
          buildpacks: [
            { order: 1, source: 'heroku/python' },
            { order: 2, source: 'heroku/procfile' },
          ],
        }),
        200,
      );
      expectStatus(
        await s.post(`${appPath(a.id)}/processes`, {
          display_name: 'queue worker',
          type: 'worker',
          entrypoint: 'node worker.js',
          resource_type_id: RT.s2!.id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 3 } },
        }),
        200,
      );
      expectStatus(
        await s.post(`${appPath(a.id)}/processes`, {
          display_name: 'nightly report',
          type: 'cron',
          entrypoint: 'node report.js',
          schedule: '0 3 * * *',
          time_zone: 'Europe/Berlin',
          concurrency_policy: 'Replace',
          max_run_time_seconds: 600,
          resource_type_id: RT.hobby!.id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 1 } },
        }),
        200,
      );
      for (const v of [
        { key: 'DATABASE_URL', value: 'postgres://db.internal:5432/shop', is_runtime: true, is_buildtime: false },
        { key: 'API_TOKEN', value: 's3cr3t-value', is_runtime: true, is_buildtime: true },
        { key: 'GREETING', value: 'hello ${API_TOKEN}', is_runtime: false, is_buildtime: true },
      ])
        expectStatus(await s.post(`${appPath(a.id)}/env-vars`, v), 201);
      return expectStatus(await s.get(appPath(a.id)), 200);
    }

    it('clone copies processes, environment variables (with values and flags), build settings and configuration', async () => {
      const src = await richSource();
      const c = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('Clone Of Rich') }), 201);
      const g = expectStatus(await s.get(appPath(c.id)), 200);
      for (const f of [
        'source',
        'type',
        'git_type',
        'repo_url',
        'default_branch',
        'docker_image',
        'build_type',
        'build_path',
        'dockerfile_path',
        'docker_context',
        'build_cache_enabled',
        'auto_deploy',
        'hibernation_enabled',
        'hibernate_after_seconds',
        'git_lfs_enabled',
        'allow_deploy_paths',
        'ignore_deploy_paths',
        'pack_builder',
        'nixpacks_version',
        'docker_registry_credential_id',
        'project_id',
      ])
        assert.deepEqual(g[f], src[f], `${f} is copied`);
      assert.equal(g.build_type, 'railpack');
      assert.equal(g.git_lfs_enabled, false);
      assert.deepEqual(
        g.buildpacks.map((b: { source: string; order: number }) => ({ source: b.source, order: b.order })),
        src.buildpacks.map((b: { source: string; order: number }) => ({ source: b.source, order: b.order })),
      );
      for (const b of g.buildpacks) assert.ok(!src.buildpacks.some((x: { id: string }) => x.id === b.id), 'buildpack entries get new ids');

      const srcProcs = await listAll(s, `${appPath(src.id)}/processes`);
      const cloneProcs = await listAll(s, `${appPath(c.id)}/processes`);
      assert.equal(srcProcs.length, 3, 'web + worker + cron');
      assert.deepEqual(cloneProcs.map(copied), srcProcs.map(copied), 'the same processes in the same order');
      for (const p of cloneProcs) {
        assert.equal(p.app_id, c.id);
        assert.ok(!srcProcs.some((x) => x.id === p.id), 'processes get new ids');
      }

      const srcVars = await listAll(s, `${appPath(src.id)}/env-vars`);
      const cloneVars = await listAll(s, `${appPath(c.id)}/env-vars`);
      const plain = (v: { key: string; value: string; is_runtime: boolean; is_buildtime: boolean }) => ({
        key: v.key,
        value: v.value,
        is_runtime: v.is_runtime,
        is_buildtime: v.is_buildtime,
      });
      assert.deepEqual(cloneVars.map(plain), srcVars.map(plain));
      assert.deepEqual(
        cloneVars.map(plain).find((v) => v.key === 'API_TOKEN'),
        { key: 'API_TOKEN', value: 's3cr3t-value', is_runtime: true, is_buildtime: true },
        'values are readable on the clone',
      );
      for (const v of cloneVars) {
        assert.equal(v.app_id, c.id);
        assert.ok(!srcVars.some((x) => x.id === v.id));
      }
      // The copies are independent: changing the clone's variable leaves the source's.
      const tok = cloneVars.find((v) => v.key === 'API_TOKEN')!;
      expectStatus(await s.put(`${appPath(c.id)}/env-vars/${tok.id}`, { value: 'changed' }), 200);
      assert.equal((await listAll(s, `${appPath(src.id)}/env-vars`)).find((v) => v.key === 'API_TOKEN').value, 's3cr3t-value');
    });

    it('the clone has its own id, a new name generated from its display name, a new namespace, and is active', async () => {
      const src = await createApp(s, { kind: 'image' });
      expectStatus(await s.post(`${appPath(src.id)}/suspend`), 200);
      const display = uniqueName('Fresh Copy');
      const c = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: display }), 201);
      assert.match(c.id, UUID_RE);
      assert.notEqual(c.id, src.id);
      assert.equal(c.display_name, display);
      assert.equal(c.name, display.toLowerCase().replace(/[^a-z0-9]+/g, '-'));
      assert.notEqual(c.name, src.name);
      assert.ok(c.namespace && c.namespace !== src.namespace, 'a namespace of its own');
      assert.equal(c.company_id, src.company_id);
      assert.equal(c.is_suspended, false);
      // Cloning twice with the same display name still gives unique names.
      const c2 = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: display }), 201);
      assert.notEqual(c2.name, c.name);
      assert.ok((await listAll(s, '/applications')).some((x) => x.id === c.id));
    });

    it('clone triggers an initial deployment (trigger "clone") that runs to success; the clone\'s status follows it', async () => {
      const src = await createApp(s);
      await deploy(s, src.id);
      const before = expectStatus(await s.get(deploymentsPath(src.id)), 200).total;
      const c = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('deployed clone') }), 201);
      assert.ok(['deploymentInProgress', 'deploymentSuccess'].includes(c.status), `status ${c.status}`);
      const deps = await listAll(s, deploymentsPath(c.id));
      assert.equal(deps.length, 1, 'exactly one initial deployment');
      const d = deps[0];
      assert.equal(d.trigger, 'clone');
      assert.equal(d.type, 'automatic');
      assert.equal(d.app_id, c.id);
      assert.deepEqual(d.steps, ['checkout', 'build', 'rollout'], 'a clone builds its own image');
      assert.equal((await waitForFinal(s, c.id, d.id)).status, 'success');
      await waitForAppStatus(s, c.id, 'deploymentSuccess');
      assert.equal(expectStatus(await s.get(deploymentsPath(src.id)), 200).total, before, 'the source gets no deployment');
    });

    it('clone into another cluster is allowed (cluster_id in the clone body); the source keeps its cluster', async () => {
      const src = await createApp(s);
      const c = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('moved clone'), cluster_id: OTHER_CLUSTER.id }), 201);
      assert.equal(expectStatus(await s.get(appPath(c.id)), 200).cluster_id, OTHER_CLUSTER.id);
      assert.equal(expectStatus(await s.get(appPath(src.id)), 200).cluster_id, DEFAULT_CLUSTER.id);
      // Without cluster_id the clone stays in the source's region.
      const same = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('same region') }), 201);
      assert.equal(expectStatus(await s.get(appPath(same.id)), 200).cluster_id, DEFAULT_CLUSTER.id);
      expectError(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('nowhere'), cluster_id: MISSING }), 400, /cluster/i);
    });

    it('the generated temporary domain and the deployment hook are not carried over', async () => {
      const src = await createApp(s);
      expectStatus(await s.post(`${appPath(src.id)}/deployment-hook`), 201);
      const c = expectStatus(await s.post(`${appPath(src.id)}/clone`, { display_name: uniqueName('no domain') }), 201);
      const rows = await s.app.database.db.selectFrom('applications').select(['id', 'temp_domain']).where('id', 'in', [src.id, c.id]).execute();
      const domain = Object.fromEntries(rows.map((r) => [r.id, r.temp_domain]));
      assert.ok(domain[src.id] && domain[c.id]);
      assert.notEqual(domain[c.id], domain[src.id], 'the clone gets its own generated domain');
      assert.ok(domain[c.id]!.startsWith(`${c.name}-`), "generated from the clone's own name");
      expectError(await s.get(`${appPath(c.id)}/deployment-hook`), 404);
      expectStatus(await s.get(`${appPath(src.id)}/deployment-hook`), 200);
    });

    it('clone validates: unknown source 404, display name too short or unknown fields 400', async () => {
      const src = await createApp(s);
      expectError(await s.post(`${appPath(MISSING)}/clone`, { display_name: 'orphan clone' }), 404);
      expectError(await s.post(`${appPath(src.id)}/clone`, { display_name: 'x' }), 400);
      expectError(await s.post(`${appPath(src.id)}/clone`, { display_name: 'with name', name: 'forced' }), 400);
      expectError(await s.post(`${appPath(src.id)}/clone`, {}), 400);
    });
  });
}
