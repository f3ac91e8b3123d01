// GET /users (the company's users, operator-managed) and GET /git/providers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, UUID_RE } from '../helpers/util.js';

interface User {
  id: string;
  email: string;
  image: string;
  full_name: string;
}

for (const kind of DB_KINDS) {
  describe(`users and git providers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    it('lists the bootstrap admin user of a fresh install', async () => {
      const r = await s.get('/users');
      expectStatus(r, 200);
      assert.deepEqual(Object.keys(r.body), ['data']);
      assert.equal(r.body.data.length, 1);
      const u = r.body.data[0] as User;
      assert.match(u.id, UUID_RE);
      assert.equal(u.email, 'admin@slipway.local');
      assert.equal(u.full_name, 'Slipway Admin');
      assert.match(u.image, /^https:\/\//);
    });

    it('lists users added by the operator, only within their company', async () => {
      const added = await s.admin('POST', `/companies/${s.companyId}/users`, { email: 'ada@example.com', full_name: 'Ada Lovelace' });
      expectStatus(added, 201);
      assert.match(added.body.id, UUID_RE);
      const plain = await s.admin('POST', `/companies/${s.companyId}/users`, { email: 'grace@example.com' });
      expectStatus(plain, 201);

      const other = await s.newCompany('Company Viewer');
      const foreign = await s.admin('POST', `/companies/${other.companyId}/users`, { email: 'mallory@example.org', full_name: 'Mallory' });
      expectStatus(foreign, 201);

      const r = await s.get('/users');
      expectStatus(r, 200);
      const users = r.body.data as User[];
      assert.equal(users[0]?.email, 'admin@slipway.local', 'the oldest user first');
      assert.deepEqual(users.map((u) => u.email).sort(), ['ada@example.com', 'admin@slipway.local', 'grace@example.com']);
      const ada = users.find((u) => u.email === 'ada@example.com')!;
      assert.deepEqual(ada, { id: added.body.id, email: 'ada@example.com', image: added.body.image, full_name: 'Ada Lovelace' });
      const grace = users.find((u) => u.email === 'grace@example.com')!;
      assert.equal(grace.full_name, 'grace', 'full_name defaults to the local part');
      assert.match(grace.image, /^https:\/\//, 'a default avatar url');
      assert.ok(!users.some((u) => u.id === foreign.body.id), 'other companies’ users never appear');

      const theirs = await s.get('/users', { token: other.token });
      expectStatus(theirs, 200);
      assert.deepEqual(theirs.body.data, [{ id: foreign.body.id, email: 'mallory@example.org', image: foreign.body.image, full_name: 'Mallory' }]);
    });

    it('rejects invalid users at the operator surface', async () => {
      const before = (await s.get('/users')).body.data.length;
      expectError(await s.admin('POST', `/companies/${s.companyId}/users`, { email: 'not an email' }), 400);
      expectError(await s.admin('POST', `/companies/${s.companyId}/users`, {}), 400, /email/);
      expectError(await s.admin('POST', '/companies/2b5e7c1d-0f4a-4e3b-9c8d-7a6b5c4d3e2f/users', { email: 'x@example.com' }), 404);
      assert.equal((await s.get('/users')).body.data.length, before);
    });

    it('needs COMPANY:READ to list users', async () => {
      for (const role of ['Company Viewer', 'Company Billing', 'Company Developer']) {
        const k = await s.newKey({ role });
        expectStatus(await s.get('/users', { token: k.token }), 200);
      }
      const narrow = await s.newKey({ capabilities: [{ permission: 'PROJECT:READ' }] });
      expectError(await s.get('/users', { token: narrow.token }), 403, /COMPANY:READ/);
      expectError(await s.get('/users', { token: null }), 401);
    });

    it('lists github, gitlab and bitbucket with connect URLs on this server', async () => {
      const r = await s.get('/git/providers');
      expectStatus(r, 200);
      const providers = r.body as { provider: string; display_name: string; connect_url: string; settings_url?: string }[];
      assert.deepEqual(providers.map((p) => p.provider).sort(), ['bitbucket', 'github', 'gitlab']);
      const names = Object.fromEntries(providers.map((p) => [p.provider, p.display_name]));
      assert.deepEqual(names, { github: 'GitHub', gitlab: 'GitLab', bitbucket: 'Bitbucket' });
      for (const p of providers) {
        const u = new URL(p.connect_url);
        assert.equal(u.origin, new URL(s.baseUrl).origin, 'connect_url points at this server');
        assert.ok(u.pathname.includes(p.provider));
        if (p.settings_url !== undefined) assert.equal(new URL(p.settings_url).origin, u.origin);
      }
      // Any key of the company may read it.
      const narrow = await s.newKey({ capabilities: [{ permission: 'BILLING:READ' }] });
      assert.deepEqual((await s.get('/git/providers', { token: narrow.token })).body, providers);
      expectError(await s.get('/git/providers', { token: null }), 401);
    });
  });
}
