// Resource ids named in request bodies and queries are checked like path ids: a key scoped to other
// resources, or a key of another company, gets the same 404 and nothing changes. One test per
// field that names a resource (the `references` of the operation declarations).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, uniqueName } from '../helpers/util.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, dbBody, waitStatus } from '../databases/support.js';

const appBody = (over: Record<string, unknown> = {}) => ({
  display_name: uniqueName('ref app'),
  cluster_id: DEFAULT_CLUSTER.id,
  source: 'publicGit',
  repo_url: 'https://github.com/example/site',
  ...over,
});

for (const kind of DB_KINDS) {
  describe(`referenced ids are checked like path ids [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const created = async (token: string, path: string, body: unknown) => {
      const r = await s.post(path, body, { token });
      assert.equal(r.status, 201, `${path}: ${r.text}`);
      return r.body as { id: string };
    };
    const db = async (token: string) => {
      const d = await created(token, '/databases', dbBody());
      await waitStatus(s, d.id, 'ready', token);
      return d;
    };

    it("project_id on application and database create: another company's project or one outside the key's scope is 404, nothing is created", async () => {
      const mine = await s.newCompany();
      const other = await s.newCompany();
      const theirs = await created(other.token, '/projects', { display_name: 'theirs' });
      const visible = await created(mine.token, '/projects', { display_name: 'visible' });
      const hidden = await created(mine.token, '/projects', { display_name: 'hidden' });
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [
          { permission: 'APP:CREATE' },
          { permission: 'APP:READ' },
          { permission: 'DATABASE:CREATE' },
          { permission: 'PROJECT:READ', id_resource: visible.id },
        ],
      });
      expectError(await s.post('/applications', appBody({ project_id: theirs.id }), { token: mine.token }), 404);
      expectError(await s.post('/applications', appBody({ project_id: hidden.id }), { token: scoped.token }), 404);
      expectError(await s.post('/databases', dbBody({ extra: { project_id: theirs.id } }), { token: mine.token }), 404);
      expectError(await s.post('/databases', dbBody({ extra: { project_id: hidden.id } }), { token: scoped.token }), 404);
      assert.equal((await s.get('/applications', { token: mine.token })).body.total, 0, 'no application was created');
      assert.equal((await s.get('/databases', { token: mine.token })).body.total, 0, 'no database was created');
      // The visible project is accepted, and the project shows the new service.
      const a = await created(scoped.token, '/applications', appBody({ project_id: visible.id }));
      const p = await s.get(`/projects/${visible.id}`, { token: mine.token });
      assert.deepEqual(
        p.body.services.map((x: { id: string }) => x.id),
        [a.id],
      );
    });

    it("moving a database into a project outside the key's scope is 404 and the database stays where it was", async () => {
      const mine = await s.newCompany();
      const hidden = await created(mine.token, '/projects', { display_name: 'hidden' });
      const d = await db(mine.token);
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [
          { permission: 'DATABASE:UPDATE', id_resource: d.id },
          { permission: 'DATABASE:READ', id_resource: d.id },
        ],
      });
      expectError(await s.patch(`/databases/${d.id}`, { project_id: hidden.id }, { token: scoped.token }), 404);
      assert.equal((await s.get(`/databases/${d.id}`, { token: mine.token })).body.project_id, null);
    });

    it('docker_registry_credential_id of another company is 404 on application create and update', async () => {
      const mine = await s.newCompany();
      const other = await s.newCompany();
      const cred = await created(other.token, '/docker-registries', { name: 'theirs', username: 'u', secret: 's3cret-value' });
      expectError(
        await s.post(
          '/applications',
          appBody({ source: 'dockerImage', docker_image: 'nginx:1', repo_url: undefined, docker_registry_credential_id: cred.id }),
          { token: mine.token },
        ),
        404,
      );
      const a = await created(mine.token, '/applications', appBody());
      expectError(await s.patch(`/applications/${a.id}`, { docker_registry_credential_id: cred.id }, { token: mine.token }), 404);
      const own = await created(mine.token, '/docker-registries', { name: 'mine', username: 'u', secret: 's3cret-value' });
      const ok = await s.patch(`/applications/${a.id}`, { docker_registry_credential_id: own.id }, { token: mine.token });
      assert.equal(ok.status, 200, ok.text);
      assert.equal((await s.get(`/applications/${a.id}`, { token: mine.token })).body.docker_registry_credential_id, own.id);
    });

    it("restore into a target database outside the key's scope is 404 and the target is untouched", async () => {
      const mine = await s.newCompany();
      const a = await db(mine.token);
      const b = await db(mine.token);
      assert.equal((await s.post(`/databases/${a.id}/backups`, { display_name: 'snap' }, { token: mine.token })).status, 202);
      const backup = await (async () => {
        for (let i = 0; i < 200; i++) {
          const l = await s.get(`/databases/${a.id}/backups`, { token: mine.token });
          const [done] = l.body as { id: string }[];
          if (done && (await s.get(`/databases/${a.id}`, { token: mine.token })).body.status === 'ready') return done;
          await new Promise((r) => setTimeout(r, 25));
        }
        throw new Error('backup did not finish');
      })();
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [
          { permission: 'DATABASE:UPDATE', id_resource: a.id },
          { permission: 'DATABASE:READ', id_resource: a.id },
        ],
      });
      expectError(await s.post(`/databases/${a.id}/backups/${backup.id}/restore`, { target_database_id: b.id }, { token: scoped.token }), 404);
      const other = await s.newCompany();
      expectError(
        await s.post(`/databases/${a.id}/backups/${backup.id}/restore`, { target_database_id: (await db(other.token)).id }, { token: mine.token }),
        404,
      );
      assert.equal((await s.get(`/databases/${b.id}`, { token: mine.token })).body.status, 'ready', 'the target was not touched');
    });

    it("internal connections to another company's or an out-of-scope service are 404", async () => {
      const mine = await s.newCompany();
      const other = await s.newCompany();
      const d = await db(mine.token);
      const theirApp = await created(other.token, '/applications', appBody());
      const myApp = await created(mine.token, '/applications', appBody());
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: theirApp.id, target_type: 'app' }, { token: mine.token }), 404);
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [
          { permission: 'DATABASE:UPDATE', id_resource: d.id },
          { permission: 'DATABASE:READ', id_resource: d.id },
        ],
      });
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: myApp.id, target_type: 'app' }, { token: scoped.token }), 404);
      assert.deepEqual((await s.get(`/databases/${d.id}/internal-connections`, { token: mine.token })).body, []);
    });

    it('adding a service to a project needs the service to be visible to the key', async () => {
      const mine = await s.newCompany();
      const p = await created(mine.token, '/projects', { display_name: 'grouping' });
      const seen = await created(mine.token, '/applications', appBody());
      const unseen = await created(mine.token, '/applications', appBody());
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [{ permission: 'PROJECT:UPDATE' }, { permission: 'PROJECT:READ' }, { permission: 'APP:READ', id_resource: seen.id }],
      });
      expectError(await s.post(`/projects/${p.id}/services`, { service_id: unseen.id, service_type: 'app' }, { token: scoped.token }), 404);
      assert.equal((await s.post(`/projects/${p.id}/services`, { service_id: seen.id, service_type: 'app' }, { token: scoped.token })).status, 200);
      const services = (await s.get(`/projects/${p.id}`, { token: mine.token })).body.services as { id: string; name: string }[];
      assert.deepEqual(
        services.map((x) => x.id),
        [seen.id],
        "only the visible application was added; the other one's name was never read back",
      );
    });

    it('usage alerts: project_id of another company is 404 on create and as a list filter', async () => {
      const mine = await s.newCompany();
      const other = await s.newCompany();
      const theirs = await created(other.token, '/projects', { display_name: 'theirs' });
      const body = { limit_usd: 100, emails: ['ops@example.com'], triggers: [{ percentage: 50 }], project_id: theirs.id };
      expectError(await s.post('/usage-alerts', body, { token: mine.token }), 404);
      expectError(await s.get(`/usage-alerts?project_id=${theirs.id}`, { token: mine.token }), 404);
    });

    it('cloning needs APP:CREATE for the whole company: a capability scoped to the source is 403', async () => {
      const mine = await s.newCompany();
      const a = await created(mine.token, '/applications', appBody());
      const scoped = await s.newKey({
        companyId: mine.companyId,
        capabilities: [
          { permission: 'APP:CREATE', id_resource: a.id },
          { permission: 'APP:READ', id_resource: a.id },
        ],
      });
      expectError(await s.post(`/applications/${a.id}/clone`, { display_name: 'copy' }, { token: scoped.token }), 403);
      assert.equal((await s.get('/applications', { token: mine.token })).body.total, 1);
    });
  });
}
