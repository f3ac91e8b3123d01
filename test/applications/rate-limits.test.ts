// Rate tiers of the application operations: create and clone in service_creation (per company);
// update, suspend, activate and delete in service_mutation (per company and application);
// trigger, rollback and cancel in deployment (per application); deployment and runtime logs in
// logs; every read in the shared read tier. Each tier gets a different limit here, so the
// x-ratelimit-limit header tells which tier counted a request.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer, type Response } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { IMMEDIATE_ENV, appPath, createApp, deploymentPath, deploymentsPath, trigger, window } from './support.js';
import { awaitFreshWindow } from '../foundation/support.js';

const LIMITS = { service_creation: 3, service_mutation: 4, deployment: 5, logs: 6, general_write: 1000, read: 1000 };

function limitOf(r: Response): number {
  const v = r.headers.get('x-ratelimit-limit');
  assert.ok(v !== null, `x-ratelimit-limit on ${r.status}`);
  return Number(v);
}

function assert429(r: Response, limit: number) {
  assert.equal(r.status, 429, r.text);
  assert.equal(r.body.status, 429);
  assert.equal(limitOf(r), limit);
  assert.equal(r.headers.get('x-ratelimit-remaining'), '0');
  assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
}

for (const kind of DB_KINDS) {
  describe(`applications: rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS, env: IMMEDIATE_ENV });

    /** A fresh company (fresh counters) with `n` applications created through the API. */
    async function company(n: number) {
      const { token } = await s.newCompany();
      const apps: any[] = [];
      for (let i = 0; i < n; i++) apps.push(await createApp(s, { token, kind: 'image' }));
      return { token, apps };
    }

    it('each application operation is counted in its tier (x-ratelimit-limit)', async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(1);
      const a = apps[0];
      const d = await trigger(s, a.id, {}, token);
      const check = async (tier: keyof typeof LIMITS, r: Promise<Response>, label: string) =>
        assert.equal(limitOf(await r), LIMITS[tier], `${label} counts in ${tier}`);
      await check('service_creation', s.post('/applications', { display_name: 'tier probe', cluster_id: a.id }, { token }), 'create');
      await check('service_creation', s.post(`${appPath(a.id)}/clone`, { display_name: 'tier clone' }, { token }), 'clone');
      await check('service_mutation', s.patch(appPath(a.id), { display_name: 'renamed' }, { token }), 'update');
      await check('service_mutation', s.post(`${appPath(a.id)}/suspend`, undefined, { token }), 'suspend');
      await check('service_mutation', s.post(`${appPath(a.id)}/activate`, undefined, { token }), 'activate');
      await check('deployment', s.post(deploymentsPath(a.id), {}, { token }), 'trigger');
      await check('deployment', s.post(`${deploymentsPath(a.id)}/rollback`, undefined, { token }), 'rollback');
      await check('deployment', s.post(`${deploymentPath(a.id, d.id)}/cancel`, undefined, { token }), 'cancel');
      await check('logs', s.get(`${deploymentPath(a.id, d.id)}/logs`, { token }), 'deployment logs');
      await check('logs', s.get(`${appPath(a.id)}/runtime-logs`, { token }), 'runtime logs');
      await check('read', s.get(appPath(a.id), { token }), 'get application');
      await check('read', s.get('/applications', { token }), 'list applications');
      await check('read', s.get(deploymentsPath(a.id), { token }), 'list deployments');
      await check('read', s.get(deploymentPath(a.id, d.id), { token }), 'get deployment');
      await check('read', s.get(`${appPath(a.id)}/metrics/top-pages?${window()}`, { token }), 'metrics');
      await check('service_mutation', s.delete(appPath(a.id), { token }), 'delete');
    });

    it('service_creation: creating is counted per company — the 4th create is 429, another company is not limited', async () => {
      await awaitFreshWindow(3600, 5000);
      const { token } = await s.newCompany();
      for (let i = 0; i < LIMITS.service_creation; i++) await createApp(s, { token, kind: 'image' });
      assert429(
        await s.post(
          '/applications',
          { display_name: 'one too many', cluster_id: '00000000-0000-0000-0000-000000000000', source: 'dockerImage', docker_image: 'x' },
          { token },
        ),
        LIMITS.service_creation,
      );
      const other = await s.newCompany();
      await createApp(s, { token: other.token, kind: 'image' });
    });

    it('service_creation: clones count per company, not per source application, and apart from creates', async () => {
      await awaitFreshWindow(3600, 5000);
      const { token, apps } = await company(2);
      const [a, b] = apps;
      expectStatus(await s.post(`${appPath(a.id)}/clone`, { display_name: 'clone 1' }, { token }), 201);
      expectStatus(await s.post(`${appPath(b.id)}/clone`, { display_name: 'clone 2' }, { token }), 201);
      expectStatus(await s.post(`${appPath(a.id)}/clone`, { display_name: 'clone 3' }, { token }), 201);
      assert429(await s.post(`${appPath(b.id)}/clone`, { display_name: 'clone 4' }, { token }), LIMITS.service_creation);
      // Creates have their own count (two used by company()).
      await createApp(s, { token, kind: 'image' });
    });

    it("service_mutation: counted per company and application — app B is not limited by app A's updates", async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(2);
      const [a, b] = apps;
      for (let i = 0; i < LIMITS.service_mutation; i++) expectStatus(await s.patch(appPath(a.id), { display_name: `a ${i}` }, { token }), 200);
      assert429(await s.patch(appPath(a.id), { display_name: 'a over' }, { token }), LIMITS.service_mutation);
      expectStatus(await s.patch(appPath(b.id), { display_name: 'b fine' }, { token }), 200);
      // Suspend has its own count on app A.
      expectStatus(await s.post(`${appPath(a.id)}/suspend`, undefined, { token }), 200);
      // Another company's app with the same counts is not affected either.
      const other = await company(1);
      expectStatus(await s.patch(appPath(other.apps[0].id), { display_name: 'other' }, { token: other.token }), 200);
    });

    it('service_mutation: suspend/activate/delete are limited per application too', async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(2);
      const [a, b] = apps;
      for (let i = 0; i < LIMITS.service_mutation; i++)
        expectStatus(await s.post(`${appPath(a.id)}/${i % 2 ? 'activate' : 'suspend'}`, undefined, { token }), 200);
      // suspend x2 and activate x2 used: each operation has its own count of 4.
      expectStatus(await s.post(`${appPath(a.id)}/suspend`, undefined, { token }), 200);
      expectStatus(await s.post(`${appPath(a.id)}/suspend`, undefined, { token }), 200);
      assert429(await s.post(`${appPath(a.id)}/suspend`, undefined, { token }), LIMITS.service_mutation);
      expectStatus(await s.post(`${appPath(b.id)}/suspend`, undefined, { token }), 200);
    });

    it('deployment: triggers are counted per application — the 6th on app A is 429, app B still deploys; the hook counts too', async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(2);
      const [a, b] = apps;
      const { url } = expectStatus(await s.post(`${appPath(a.id)}/deployment-hook`, undefined, { token }), 201);
      for (let i = 0; i < LIMITS.deployment - 1; i++) await trigger(s, a.id, {}, token);
      const hook = await fetch(url, { method: 'POST' });
      assert.equal(hook.status, 201, await hook.text());
      assert429(await s.post(deploymentsPath(a.id), {}, { token }), LIMITS.deployment);
      const viaHook = await fetch(url, { method: 'POST' });
      assert.equal(viaHook.status, 429);
      assert.ok(viaHook.headers.get('retry-after'));
      await trigger(s, b.id, {}, token);
      // Rollback and cancel have their own counts.
      assert.notEqual((await s.post(`${deploymentsPath(a.id)}/rollback`, undefined, { token })).status, 429);
    });

    it('logs: counted per company and operation — runtime logs of another app are limited too, deployment logs are not', async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(2);
      const [a, b] = apps;
      const d = await trigger(s, a.id, {}, token);
      for (let i = 0; i < LIMITS.logs; i++) expectStatus(await s.get(`${appPath(a.id)}/runtime-logs`, { token }), 200);
      assert429(await s.get(`${appPath(a.id)}/runtime-logs`, { token }), LIMITS.logs);
      assert429(await s.get(`${appPath(b.id)}/runtime-logs`, { token }), LIMITS.logs);
      expectStatus(await s.get(`${deploymentPath(a.id, d.id)}/logs`, { token }), 200);
    });

    it('read: one count per company shared by every read operation', async () => {
      await awaitFreshWindow(60, 5000);
      const { token, apps } = await company(1);
      const a = apps[0];
      const paths = [
        appPath(a.id),
        '/applications',
        deploymentsPath(a.id),
        `${appPath(a.id)}/metrics/response-time-avg?${window()}`,
        `${appPath(a.id)}/processes`,
      ];
      let last: number | undefined;
      for (const p of paths) {
        const r = await s.get(p, { token });
        assert.equal(r.status, 200, `${p}: ${r.text}`);
        assert.equal(limitOf(r), LIMITS.read);
        const remaining = Number(r.headers.get('x-ratelimit-remaining'));
        if (last !== undefined) assert.equal(remaining, last - 1, `${p} counts in the same read bucket`);
        last = remaining;
      }
    });
  });
}
