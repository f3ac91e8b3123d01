// 403: missing permissions (roles and scoped custom capabilities) and company states
// (suspended, maintenance) that block requests from otherwise valid keys.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, uniqueName } from '../helpers/util.js';
import { assertCommonHeaders } from './support.js';

for (const kind of DB_KINDS) {
  describe(`authorization (403) [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    it('a Company Viewer key reads projects but gets 403 naming PROJECT:CREATE on create', async () => {
      const { token } = await s.newCompany('Company Viewer');
      assert.equal((await s.get('/projects', { token })).status, 200);
      const r = await s.post('/projects', { display_name: 'not allowed' }, { token });
      const msg = expectError(r, 403, undefined, { data: 'absent' });
      assertCommonHeaders(r);
      assert.match(msg, /PROJECT:CREATE/);
      assert.match(msg, /grant/i);
      assert.match(msg, /another (API )?key/i);
      const after = await s.get('/projects', { token });
      assert.equal(after.body.total, 0, 'nothing was created');
    });

    it('a Company Billing key gets 403 naming PROJECT:READ on the project list', async () => {
      const { token } = await s.newCompany('Company Billing');
      const r = await s.get('/projects', { token });
      const msg = expectError(r, 403);
      assert.match(msg, /PROJECT:READ/);
      assert.match(msg, /grant/i);
    });

    it('a key scoped to one project sees only that project', async () => {
      const { companyId, token: admin } = await s.newCompany();
      const a = await s.post('/projects', { display_name: 'scoped A' }, { token: admin });
      const b = await s.post('/projects', { display_name: 'scoped B' }, { token: admin });
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      const k = await s.newKey({ companyId, capabilities: [{ permission: 'PROJECT:READ', id_resource: a.body.id }] });

      const got = await s.get(`/projects/${a.body.id}`, { token: k.token });
      assert.equal(got.status, 200);
      assert.equal(got.body.id, a.body.id);

      const other = await s.get(`/projects/${b.body.id}`, { token: k.token });
      expectError(other, 404);

      const list = await s.get('/projects', { token: k.token });
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.data.map((p: { id: string }) => p.id),
        [a.body.id],
      );
      assert.equal(list.body.total, 1);

      // The scoped read grants no write: updating the visible project is a 403 naming PROJECT:UPDATE.
      const upd = await s.patch(`/projects/${a.body.id}`, { display_name: 'renamed' }, { token: k.token });
      assert.match(expectError(upd, 403), /PROJECT:UPDATE/);
      assert.equal((await s.get(`/projects/${a.body.id}`, { token: admin })).body.display_name, 'scoped A');
    });

    it('a suspended company gets 403 on reads and writes until it is resumed', async () => {
      const { companyId, token } = await s.newCompany();
      const p = await s.post('/projects', { display_name: 'before suspension' }, { token });
      assert.equal(p.status, 201);

      const sus = await s.admin('POST', `/companies/${companyId}/suspend`);
      assert.equal(sus.status, 200, sus.text);

      const read = await s.get('/projects', { token });
      assert.match(expectError(read, 403), /suspended/i);
      assertCommonHeaders(read);
      assert.match(expectError(await s.get(`/projects/${p.body.id}`, { token }), 403), /suspended/i);
      const write = await s.post('/projects', { display_name: 'during suspension' }, { token });
      assert.match(expectError(write, 403), /suspended/i);
      assert.match(expectError(await s.patch(`/projects/${p.body.id}`, { display_name: 'x' }, { token }), 403), /suspended/i);
      // Also on operations that need no permission at all.
      for (const path of ['/api-keys/me', '/resources/clusters']) assert.match(expectError(await s.get(path, { token }), 403), /suspended/i, path);

      const res = await s.admin('POST', `/companies/${companyId}/resume`);
      assert.equal(res.status, 200, res.text);
      const list = await s.get('/projects', { token });
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.data.map((x: { display_name: string }) => x.display_name),
        ['before suspension'],
        'the write during suspension did not happen',
      );
      assert.equal((await s.post('/projects', { display_name: 'after resume' }, { token })).status, 201);
      assert.equal((await s.get('/api-keys/me', { token })).status, 200);
    });

    it('the answer after a suspension, a resumption or a key toggle already reflects it, every time', async () => {
      const { companyId, token } = await s.newCompany();
      const k = await s.newKey({ companyId, capabilities: [{ permission: 'PROJECT:READ' }] });
      for (let i = 0; i < 15; i++) {
        assert.equal((await s.get('/projects', { token })).status, 200, `round ${i}: active`);
        assert.equal((await s.admin('POST', `/companies/${companyId}/suspend`)).status, 200);
        assert.equal((await s.get('/projects', { token })).status, 403, `round ${i}: suspended`);
        assert.equal((await s.admin('POST', `/companies/${companyId}/resume`)).status, 200);
        assert.equal((await s.get('/projects', { token: k.token })).status, 200, `round ${i}: key enabled`);
        assert.equal((await s.post(`/api-keys/${k.id}/toggle`, {}, { token })).status, 200);
        assert.equal((await s.get('/projects', { token: k.token })).status, 401, `round ${i}: key disabled`);
        assert.equal((await s.post(`/api-keys/${k.id}/toggle`, {}, { token })).status, 200);
      }
    });

    it('a company under maintenance gets 403 on writes while reads still work', async () => {
      const { companyId, token } = await s.newCompany();
      const name = uniqueName('maint');
      const p = await s.post('/projects', { display_name: name }, { token });
      assert.equal(p.status, 201);

      const on = await s.admin('POST', `/companies/${companyId}/maintenance`);
      assert.equal(on.status, 200, on.text);

      assert.equal((await s.get('/projects', { token })).status, 200);
      assert.equal((await s.get(`/projects/${p.body.id}`, { token })).status, 200);
      const create = await s.post('/projects', { display_name: 'blocked' }, { token });
      assert.match(expectError(create, 403), /maint|migrat/i);
      expectError(await s.patch(`/projects/${p.body.id}`, { display_name: 'blocked' }, { token }), 403);
      expectError(await s.delete(`/projects/${p.body.id}`, { token }), 403);

      const off = await s.admin('DELETE', `/companies/${companyId}/maintenance`);
      assert.equal(off.status, 200, off.text);
      const after = await s.get(`/projects/${p.body.id}`, { token });
      assert.equal(after.status, 200, 'the project survived the blocked delete');
      assert.equal(after.body.display_name, name, 'the blocked rename did not happen');
      assert.equal((await s.get('/projects', { token })).body.total, 1);
      assert.equal((await s.patch(`/projects/${p.body.id}`, { display_name: 'allowed again' }, { token })).status, 200);
    });
  });
}
