// Permissions and tenancy on the application routes: a Viewer key reads but cannot create
// (403 naming APP:CREATE) or deploy (403 naming APP:UPDATE); another company's key gets 404 on
// every route of the application; a key scoped to application A (APP:READ with id_resource A)
// sees A, gets 404 for B, and lists only A.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { TRAFFIC_METRICS } from '../helpers/simulation.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll } from '../helpers/util.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, appPath, createApp, deploy, deploymentPath, deploymentsPath, window } from './support.js';

/** Every route of one application (with bodies that pass validation), for tenancy checks. */
function appRoutes(appId: string, deploymentId: string): [string, string, unknown?][] {
  return [
    ['GET', appPath(appId)],
    ['PATCH', appPath(appId), { display_name: 'taken over' }],
    ['POST', `${appPath(appId)}/suspend`],
    ['POST', `${appPath(appId)}/activate`],
    ['POST', `${appPath(appId)}/clone`, { display_name: 'stolen copy' }],
    ['GET', deploymentsPath(appId)],
    ['POST', deploymentsPath(appId), {}],
    ['POST', `${deploymentsPath(appId)}/rollback`],
    ['GET', deploymentPath(appId, deploymentId)],
    ['POST', `${deploymentPath(appId, deploymentId)}/cancel`],
    ['GET', `${deploymentPath(appId, deploymentId)}/logs`],
    ['GET', `${appPath(appId)}/runtime-logs`],
    ['GET', `${appPath(appId)}/deployment-hook`],
    ['POST', `${appPath(appId)}/deployment-hook`],
    ['PUT', `${appPath(appId)}/deployment-hook`],
    ['DELETE', `${appPath(appId)}/deployment-hook`],
    ...TRAFFIC_METRICS.map((m): [string, string] => ['GET', `${appPath(appId)}/metrics/${m}?${window()}`]),
    ['GET', `${appPath(appId)}/env-vars`],
    ['GET', `${appPath(appId)}/processes`],
    ['DELETE', appPath(appId)],
  ];
}

for (const kind of DB_KINDS) {
  describe(`applications: permissions and tenancy [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let viewer: string;
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });
    before(async () => {
      viewer = (await s.newKey({ role: 'Company Viewer' })).token;
    });

    it('a Viewer key reads applications, deployments, logs, metrics and the hook', async () => {
      const a = await createApp(s);
      const d = await deploy(s, a.id);
      expectStatus(await s.post(`${appPath(a.id)}/deployment-hook`), 201);
      for (const path of [
        appPath(a.id),
        '/applications',
        deploymentsPath(a.id),
        deploymentPath(a.id, d.id),
        `${deploymentPath(a.id, d.id)}/logs`,
        `${appPath(a.id)}/runtime-logs`,
        `${appPath(a.id)}/deployment-hook`,
        ...TRAFFIC_METRICS.map((m) => `${appPath(a.id)}/metrics/${m}?${window()}`),
      ]) {
        const r = await s.get(path, { token: viewer });
        assert.equal(r.status, 200, `${path}: ${r.text}`);
      }
      assert.ok((await listAll(s, '/applications', viewer)).some((x) => x.id === a.id));
    });

    it('a Viewer key cannot create or clone an application: 403 naming APP:CREATE', async () => {
      const a = await createApp(s);
      const body = { display_name: 'viewer app', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1' };
      const m1 = expectError(await s.post('/applications', body, { token: viewer }), 403);
      assert.ok(m1.includes('APP:CREATE'), m1);
      const m2 = expectError(await s.post(`${appPath(a.id)}/clone`, { display_name: 'viewer clone' }, { token: viewer }), 403);
      assert.ok(m2.includes('APP:CREATE'), m2);
      assert.ok(!(await listAll(s, '/applications')).some((x) => x.display_name === 'viewer app' || x.display_name === 'viewer clone'));
    });

    it('a Viewer key cannot deploy, roll back, cancel or change an application: 403 naming APP:UPDATE (APP:DELETE for delete)', async () => {
      const a = await createApp(s);
      const d = await deploy(s, a.id);
      for (const [method, path, body] of [
        ['POST', deploymentsPath(a.id), {}],
        ['POST', `${deploymentsPath(a.id)}/rollback`, undefined],
        ['POST', `${deploymentPath(a.id, d.id)}/cancel`, undefined],
        ['PATCH', appPath(a.id), { display_name: 'viewer rename' }],
        ['POST', `${appPath(a.id)}/suspend`, undefined],
        ['POST', `${appPath(a.id)}/activate`, undefined],
        ['POST', `${appPath(a.id)}/deployment-hook`, undefined],
      ] as [string, string, unknown][]) {
        const m = expectError(await s.request(method, path, { body, token: viewer }), 403);
        assert.ok(m.includes('APP:UPDATE'), `${method} ${path}: ${m}`);
      }
      const del = expectError(await s.delete(appPath(a.id), { token: viewer }), 403);
      assert.ok(del.includes('APP:DELETE'), del);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 1, 'nothing was deployed');
      const g = expectStatus(await s.get(appPath(a.id)), 200);
      assert.equal(g.display_name, a.display_name);
      assert.equal(g.is_suspended, false);
    });

    it("another company's key gets 404 on every route of the application, and changes nothing", async () => {
      const a = await createApp(s);
      const d = await deploy(s, a.id);
      const other = await s.newCompany();
      for (const [method, path, body] of appRoutes(a.id, d.id)) {
        const r = await s.request(method, path, { body, token: other.token });
        assert.equal(r.status, 404, `${method} ${path}: ${r.status} ${r.text}`);
        assert.equal(r.body.status, 404);
      }
      assert.ok(!(await listAll(s, '/applications', other.token)).some((x) => x.id === a.id));
      const g = expectStatus(await s.get(appPath(a.id)), 200);
      assert.equal(g.display_name, a.display_name);
      assert.equal(g.status, 'deploymentSuccess');
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 1);
      expectError(await s.get(`${appPath(a.id)}/deployment-hook`), 404, /not enabled/);
    });

    it('a key scoped to application A (APP:READ on A) sees A, gets 404 for B, and lists only A', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const da = await deploy(s, a.id);
      const db = await deploy(s, b.id);
      const { token } = await s.newKey({ capabilities: [{ permission: 'APP:READ', id_resource: a.id }] });
      assert.equal(expectStatus(await s.get(appPath(a.id), { token }), 200).id, a.id);
      expectStatus(await s.get(deploymentPath(a.id, da.id), { token }), 200);
      expectStatus(await s.get(`${appPath(a.id)}/metrics/top-pages?${window()}`, { token }), 200);
      for (const path of [
        appPath(b.id),
        deploymentsPath(b.id),
        deploymentPath(b.id, db.id),
        `${appPath(b.id)}/runtime-logs`,
        `${appPath(b.id)}/metrics/top-pages?${window()}`,
      ]) {
        const r = await s.get(path, { token });
        assert.equal(r.status, 404, `${path}: ${r.text}`);
      }
      const list = expectStatus(await s.get('/applications', { token }), 200);
      assert.deepEqual(
        list.data.map((x: { id: string }) => x.id),
        [a.id],
      );
      assert.equal(list.total, 1);
      // Reading is all it may do.
      const m = expectError(await s.post(deploymentsPath(a.id), {}, { token }), 403);
      assert.ok(m.includes('APP:UPDATE'), m);
      expectError(
        await s.post('/applications', { display_name: 'scoped', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'x' }, { token }),
        403,
      );
    });

    it('a key scoped to A with APP:UPDATE deploys A but gets 404 for B', async () => {
      const a = await createApp(s, { kind: 'image' });
      const b = await createApp(s, { kind: 'image' });
      const { token } = await s.newKey({
        capabilities: [
          { permission: 'APP:READ', id_resource: a.id },
          { permission: 'APP:UPDATE', id_resource: a.id },
        ],
      });
      expectStatus(await s.post(deploymentsPath(a.id), {}, { token }), 200);
      expectError(await s.post(deploymentsPath(b.id), {}, { token }), 404);
      expectError(await s.patch(appPath(b.id), { display_name: 'not mine' }, { token }), 404);
      assert.equal(expectStatus(await s.get(deploymentsPath(b.id)), 200).total, 0);
    });
  });
}
