// Cross-company isolation: a key of one company can neither see nor change another company's
// resources; foreign ids answer exactly like ids that do not exist.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError } from '../helpers/util.js';

for (const kind of DB_KINDS) {
  describe(`cross-company isolation [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let a: { companyId: string; token: string };
    let b: { companyId: string; token: string };
    let projectA: { id: string; display_name: string; name: string };
    let keyA: { id: string; token: string };

    const s = useServer({ db: kind });
    before(async () => {
      a = await s.newCompany();
      b = await s.newCompany();
      const p = await s.post('/projects', { display_name: 'A private' }, { token: a.token });
      assert.equal(p.status, 201);
      projectA = p.body;
      keyA = await s.newKey({ companyId: a.companyId, role: 'Company Viewer' });
      // Company B has items of its own, so its lists are not trivially empty.
      assert.equal((await s.post('/projects', { display_name: 'B own' }, { token: b.token })).status, 201);
    });

    it("another company's project answers 404 to GET, PATCH and DELETE, like an unknown id", async () => {
      const unknown = await s.get(`/projects/${randomUUID()}`, { token: b.token });
      expectError(unknown, 404);
      const get = await s.get(`/projects/${projectA.id}`, { token: b.token });
      expectError(get, 404);
      assert.equal(get.body.message, unknown.body.message, 'a foreign id is indistinguishable from an unknown one');
      expectError(await s.patch(`/projects/${projectA.id}`, { display_name: 'hijacked' }, { token: b.token }), 404);
      expectError(await s.delete(`/projects/${projectA.id}`, { token: b.token }), 404);

      const still = await s.get(`/projects/${projectA.id}`, { token: a.token });
      assert.equal(still.status, 200, 'the project still exists');
      assert.equal(still.body.display_name, projectA.display_name, 'and was not renamed');
      assert.equal(still.body.company_id, a.companyId);
    });

    it("another company's API key answers 404 to GET, PATCH, DELETE, toggle and rotate", async () => {
      expectError(await s.get(`/api-keys/${keyA.id}`, { token: b.token }), 404);
      expectError(await s.patch(`/api-keys/${keyA.id}`, { name: 'hijacked' }, { token: b.token }), 404);
      expectError(await s.delete(`/api-keys/${keyA.id}`, { token: b.token }), 404);
      expectError(await s.post(`/api-keys/${keyA.id}/toggle`, undefined, { token: b.token }), 404);
      expectError(await s.post(`/api-keys/${keyA.id}/rotate`, {}, { token: b.token }), 404);

      const view = await s.get(`/api-keys/${keyA.id}`, { token: a.token });
      assert.equal(view.status, 200);
      assert.equal(view.body.name, 'test key', 'not renamed');
      assert.equal(view.body.is_enabled, true, 'not disabled');
      assert.equal((await s.get('/projects', { token: keyA.token })).status, 200, 'still works (not deleted or rotated)');
    });

    it("lists never include another company's items", async () => {
      const projects = await s.get('/projects?limit=100', { token: b.token });
      assert.equal(projects.status, 200);
      assert.ok(projects.body.data.length >= 1);
      assert.ok(!projects.body.data.some((p: { id: string }) => p.id === projectA.id));
      assert.equal(projects.body.total, projects.body.data.length);

      const keys = await s.get('/api-keys?limit=100', { token: b.token });
      assert.equal(keys.status, 200);
      assert.ok(keys.body.data.length >= 1);
      for (const k of keys.body.data) assert.equal(k.company_id, b.companyId);
      assert.ok(!keys.body.data.some((k: { id: string }) => k.id === keyA.id));

      const aKeys = await s.get('/api-keys?limit=100', { token: a.token });
      assert.ok(
        aKeys.body.data.some((k: { id: string }) => k.id === keyA.id),
        'the key is listed for its own company',
      );
    });
  });
}
