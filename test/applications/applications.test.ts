// Applications: list, create, get, update, suspend and activate. Generated unique `name`,
// assigned `namespace`, build_type (reference values plus railpack), git_lfs_enabled (default
// true, settable), cluster_id not changeable in place, and deploying a suspended application.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, uniqueName, UUID_RE, whileRowsHeld } from '../helpers/util.js';
import {
  DEFAULT_CLUSTER,
  IMMEDIATE_ENV,
  OTHER_CLUSTER,
  appPath,
  createApp,
  deploy,
  deploymentsPath,
  runtimeLogs,
  setProgression,
  trigger,
  waitForFinal,
} from './support.js';

/** Fields of the representation returned by create, update and clone. */
const APP_FIELDS = [
  'allow_deploy_paths',
  'auto_deploy',
  'build_cache_enabled',
  'build_path',
  'build_type',
  'company_id',
  'created_at',
  'created_by',
  'default_branch',
  'display_name',
  'docker_context',
  'docker_image',
  'dockerfile_path',
  'git_lfs_enabled',
  'git_type',
  'hibernate_after_seconds',
  'hibernation_enabled',
  'id',
  'ignore_deploy_paths',
  'is_suspended',
  'name',
  'namespace',
  'nixpacks_version',
  'pack_builder',
  'project_id',
  'repo_url',
  'source',
  'status',
  'type',
  'updated_at',
].sort();
/** GET adds the cluster, buildpacks and registry credential. */
const DETAIL_FIELDS = [...APP_FIELDS, 'buildpacks', 'cluster_id', 'docker_registry_credential_id'].sort();

for (const kind of DB_KINDS) {
  describe(`applications: resource [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('create returns 201 with the application: id, generated name, assigned namespace, defaults', async () => {
      const a = await createApp(s, { display_name: 'Create Check Shop' });
      assert.deepEqual(Object.keys(a).sort(), APP_FIELDS);
      assert.match(a.id, UUID_RE);
      assert.equal(a.company_id, s.companyId);
      assert.equal(a.display_name, 'Create Check Shop');
      assert.equal(a.name, 'create-check-shop');
      assert.equal(typeof a.namespace, 'string');
      assert.ok(a.namespace.length > 0, 'a namespace is assigned');
      assert.equal(a.source, 'publicGit');
      assert.equal(a.type, 'app');
      assert.equal(a.status, null, 'no deployment yet');
      assert.equal(a.is_suspended, false);
      assert.equal(a.git_lfs_enabled, true, 'git_lfs_enabled defaults to true');
      assert.equal(a.repo_url, 'https://github.com/example/shop');
      assert.equal(a.default_branch, 'main');
      assert.deepEqual(a.allow_deploy_paths, []);
      assert.deepEqual(a.ignore_deploy_paths, []);

      const img = await createApp(s, { kind: 'image' });
      assert.equal(img.source, 'dockerImage');
      assert.equal(img.docker_image, 'nginx:1.27');
      assert.equal(img.git_lfs_enabled, true);
    });

    it('name is generated from the display name and unique within the company; namespaces differ', async () => {
      const display = uniqueName('Same Display');
      const a = await createApp(s, { display_name: display });
      const b = await createApp(s, { display_name: display });
      const c = await createApp(s, { display_name: display });
      const slug = display.toLowerCase().replace(/[^a-z0-9]+/g, '-');
      assert.equal(a.name, slug);
      assert.notEqual(a.name, b.name);
      assert.notEqual(b.name, c.name);
      assert.notEqual(a.name, c.name);
      for (const x of [b, c]) assert.ok(x.name.startsWith(slug), `${x.name} derives from ${slug}`);
      assert.equal(new Set([a.namespace, b.namespace, c.namespace]).size, 3, 'each application has its own namespace');
      // Another company may use the same name.
      const other = await s.newCompany();
      const o = await createApp(s, { display_name: display, token: other.token });
      assert.equal(o.name, slug);
    });

    it('create refuses an unknown cluster, a missing source detail and a schema mismatch (400), an unknown project (404)', async () => {
      const base = { display_name: uniqueName('bad'), cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1' };
      expectError(await s.post('/applications', { ...base, cluster_id: MISSING }), 400, /cluster/i);
      expectError(await s.post('/applications', { ...base, docker_image: undefined }), 400, /docker_image/);
      expectError(await s.post('/applications', { ...base, source: 'publicGit', docker_image: undefined }), 400, /repo_url/);
      expectError(await s.post('/applications', { ...base, project_id: MISSING }), 404);
      expectError(await s.post('/applications', { ...base, nope: true }), 400, /does not match the schema/);
      expectError(await s.post('/applications', { ...base, display_name: 'x' }), 400, /does not match the schema/);
    });

    it("list returns the company's applications in the pagination envelope", async () => {
      const { token } = await s.newCompany();
      const made: any[] = [];
      for (let i = 0; i < 3; i++) made.push(await createApp(s, { token }));
      const page = expectStatus(await s.get('/applications?limit=2&offset=0', { token }), 200);
      assert.equal(page.total, 3);
      assert.equal(page.limit, 2);
      assert.equal(page.offset, 0);
      assert.equal(page.data.length, 2);
      const all = await listAll(s, '/applications', token);
      assert.deepEqual(all.map((a) => a.id).sort(), made.map((a) => a.id).sort());
      const item = all.find((a) => a.id === made[0].id)!;
      assert.equal(item.name, made[0].name);
      assert.equal(item.display_name, made[0].display_name);
      assert.equal(item.is_suspended, false);
      // Other companies' applications are not listed.
      const mine = await listAll(s, '/applications');
      assert.ok(!mine.some((a) => made.some((m) => m.id === a.id)));
    });

    it('get returns the detail representation with cluster_id and buildpacks; unknown id is 404', async () => {
      const a = await createApp(s);
      const g = expectStatus(await s.get(appPath(a.id)), 200);
      assert.deepEqual(Object.keys(g).sort(), DETAIL_FIELDS);
      assert.equal(g.cluster_id, DEFAULT_CLUSTER.id);
      assert.deepEqual(g.buildpacks, []);
      assert.equal(g.name, a.name);
      assert.equal(g.namespace, a.namespace);
      expectError(await s.get(appPath(MISSING)), 404);
    });

    it('update changes the given fields and leaves the others', async () => {
      const a = await createApp(s);
      const u = expectStatus(
        await s.patch(appPath(a.id), {
          display_name: 'Renamed App',
          auto_deploy: false,
          default_branch: 'release',
          build_path: 'services/web',
          dockerfile_path: 'Dockerfile.prod',
          docker_context: '.',
          build_cache_enabled: false,
          hibernation_enabled: true,
          hibernate_after_seconds: 600,
          pack_builder: 'heroku/builder:24',
          nixpacks_version: '1.39',
          allow_deploy_paths: ['src/**'],
          ignore_deploy_paths: ['docs/**'],
          buildpacks: [{ order: 0, source: 'heroku/nodejs' }],
        }),
        200,
      );
      assert.deepEqual(Object.keys(u).sort(), APP_FIELDS);
      assert.equal(u.display_name, 'Renamed App');
      assert.equal(u.name, a.name, 'the name does not follow the display name');
      assert.equal(u.auto_deploy, false);
      assert.equal(u.default_branch, 'release');
      assert.equal(u.build_path, 'services/web');
      assert.equal(u.build_cache_enabled, false);
      assert.equal(u.hibernation_enabled, true);
      assert.equal(u.hibernate_after_seconds, 600);
      assert.deepEqual(u.allow_deploy_paths, ['src/**']);
      assert.deepEqual(u.ignore_deploy_paths, ['docs/**']);
      assert.equal(u.repo_url, a.repo_url, 'untouched fields stay');
      const g = expectStatus(await s.get(appPath(a.id)), 200);
      assert.equal(g.pack_builder, 'heroku/builder:24');
      assert.equal(g.nixpacks_version, '1.39');
      assert.equal(g.buildpacks.length, 1);
      assert.equal(g.buildpacks[0].source, 'heroku/nodejs');
      assert.equal(g.buildpacks[0].order, 0);
      assert.match(g.buildpacks[0].id, UUID_RE);
      assert.ok(g.updated_at >= a.updated_at);
    });

    it('build_type accepts the reference values and railpack; anything else is 400', async () => {
      const a = await createApp(s);
      assert.equal(a.build_type, 'nixpacks', 'git applications build with nixpacks by default');
      for (const bt of ['dockerfile', 'pack', 'nixpacks', 'railpack']) {
        const u = expectStatus(await s.patch(appPath(a.id), { build_type: bt }), 200);
        assert.equal(u.build_type, bt);
        assert.equal(expectStatus(await s.get(appPath(a.id)), 200).build_type, bt);
      }
      expectError(await s.patch(appPath(a.id), { build_type: 'buildah' }), 400, /does not match the schema/);
    });

    it('git_lfs_enabled defaults to true and is settable on update', async () => {
      const a = await createApp(s);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).git_lfs_enabled, true);
      assert.equal(expectStatus(await s.patch(appPath(a.id), { git_lfs_enabled: false }), 200).git_lfs_enabled, false);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).git_lfs_enabled, false);
      // Another update that does not name it leaves it.
      assert.equal(expectStatus(await s.patch(appPath(a.id), { display_name: 'lfs still off' }), 200).git_lfs_enabled, false);
      assert.equal(expectStatus(await s.patch(appPath(a.id), { git_lfs_enabled: true }), 200).git_lfs_enabled, true);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).git_lfs_enabled, true);
    });

    it('an update writes only what it changes: a status or suspension committed meanwhile stays (PostgreSQL)', { skip: kind !== 'postgres' }, async () => {
      const a = await createApp(s);
      const db = s.app.database.db;
      // Another writer holds the row with changes the update will not have read.
      const patched = await whileRowsHeld(
        s,
        (tx) => tx.updateTable('applications').set({ status: 'deploymentFailed', is_suspended: 1 }).where('id', '=', a.id).execute(),
        () => s.patch(appPath(a.id), { display_name: 'Renamed meanwhile' }),
      );
      // The answer is the row as it was written, with the other writer's changes.
      const body = expectStatus(patched, 200);
      assert.deepEqual([body.display_name, body.status, body.is_suspended], ['Renamed meanwhile', 'deploymentFailed', true]);
      const row = await db.selectFrom('applications').select(['display_name', 'status', 'is_suspended']).where('id', '=', a.id).executeTakeFirstOrThrow();
      assert.deepEqual({ ...row, is_suspended: Number(row.is_suspended) }, { display_name: 'Renamed meanwhile', status: 'deploymentFailed', is_suspended: 1 });
    });

    it('cluster_id cannot be changed in place: update with cluster_id is 400 and the cluster stays', async () => {
      const a = await createApp(s);
      expectError(await s.patch(appPath(a.id), { cluster_id: OTHER_CLUSTER.id }), 400, /does not match the schema/);
      expectError(await s.patch(appPath(a.id), { cluster_id: OTHER_CLUSTER.id, display_name: 'with another field' }), 400);
      const g = expectStatus(await s.get(appPath(a.id)), 200);
      assert.equal(g.cluster_id, DEFAULT_CLUSTER.id);
      assert.equal(g.display_name, a.display_name, 'a refused update changes nothing');
    });

    it('update refuses unknown fields, an empty display name and inconsistent sources (400); unknown app is 404', async () => {
      const a = await createApp(s);
      expectError(await s.patch(appPath(a.id), { name: 'renamed' }), 400);
      expectError(await s.patch(appPath(a.id), { display_name: '' }), 400);
      expectError(await s.patch(appPath(a.id), { source: 'dockerImage' }), 400, /docker_image/);
      expectError(await s.patch(appPath(MISSING), { display_name: 'nobody' }), 404);
    });

    it('suspend and activate toggle is_suspended; repeating either says it already is', async () => {
      const a = await createApp(s);
      assert.match(expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200).message, /suspended/i);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).is_suspended, true);
      assert.match(expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200).message, /already/i);
      const listed = (await listAll(s, '/applications')).find((x) => x.id === a.id);
      assert.equal(listed.is_suspended, true);
      assert.match(expectStatus(await s.post(`${appPath(a.id)}/activate`), 200).message, /activated/i);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).is_suspended, false);
      assert.match(expectStatus(await s.post(`${appPath(a.id)}/activate`), 200).message, /already/i);
      expectError(await s.post(`${appPath(MISSING)}/suspend`), 404);
      expectError(await s.post(`${appPath(MISSING)}/activate`), 404);
    });

    it('a suspended application cannot be deployed or rolled back (400) until it is activated', async () => {
      const a = await createApp(s, { kind: 'image' });
      await deploy(s, a.id);
      await deploy(s, a.id);
      expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200);
      expectError(await s.post(deploymentsPath(a.id), {}), 400, /suspended/i);
      expectError(await s.post(`${deploymentsPath(a.id)}/rollback`), 400, /suspended/i);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 2, 'no deployment was created');
      expectStatus(await s.post(`${appPath(a.id)}/activate`), 200);
      await deploy(s, a.id);
    });

    it('suspending stops the processes and activating a deployed application starts them again (runtime log)', async () => {
      const a = await createApp(s, { kind: 'image' });
      await deploy(s, a.id);
      expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200);
      expectStatus(await s.post(`${appPath(a.id)}/activate`), 200);
      const logs = expectStatus(await s.get(`/applications/${a.id}/runtime-logs`), 200) as { message: string }[];
      const messages = logs.map((l) => l.message);
      const started = messages.map((m, i) => (/^Started process web/.test(m) ? i : -1)).filter((i) => i >= 0);
      const suspended = messages.findIndex((m) => /suspended/i.test(m));
      const activated = messages.findIndex((m) => /activated/i.test(m));
      assert.ok(suspended >= 0 && activated > suspended, messages.join('\n'));
      assert.equal(started.length, 2, `started once per rollout and once on activation:\n${messages.join('\n')}`);
      assert.ok(started[1]! > activated);
    });

    it('suspending during a deployment: it completes but starts no process until the application is activated', async () => {
      await setProgression(s, 'deployment', { mode: 'reads', reads: 1 });
      try {
        const a = await createApp(s, { kind: 'image' });
        const d = await trigger(s, a.id);
        expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200);
        assert.equal((await waitForFinal(s, a.id, d.id)).status, 'success');
        const started = async () => (await runtimeLogs(s, a.id)).filter((l) => /^Started process/.test(l.message)).length;
        assert.equal(await started(), 0, 'no process starts while the application is suspended');
        const g = expectStatus(await s.get(appPath(a.id)), 200);
        assert.equal(g.is_suspended, true);
        assert.equal(g.status, 'deploymentSuccess');
        expectStatus(await s.post(`${appPath(a.id)}/activate`), 200);
        assert.equal(await started(), 1, 'activation starts the deployed release');
      } finally {
        await setProgression(s, 'deployment', { mode: 'immediate' });
      }
    });
  });
}
