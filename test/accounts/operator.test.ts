// The operator surface (/_admin): its token, companies and their keys, company states, the full
// reset, and the surface being absent when no operator token is configured.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, OPERATOR_TOKEN, skipUnless, startServer, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, UUID_RE } from '../helpers/util.js';
import { keyIdOf, TOKEN_RE } from './support.js';

for (const kind of DB_KINDS) {
  describe(`operator surface [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // No fixed bootstrap token: the server generates one, so a reset hands out a different one.
    const s = useServer({ db: kind, env: { SLIPWAY_BOOTSTRAP_TOKEN: '' } });

    const works = async (token: string) => (await s.get('/api-keys/validate', { token })).status === 200;
    const adminAs = (method: string, path: string, authorization: string | null, body?: unknown) =>
      s.request(method, `/_admin${path}`, { token: null, body, headers: authorization === null ? {} : { authorization } });

    it('requires the operator token', async () => {
      assert.match(s.token, TOKEN_RE, 'a generated bootstrap token');
      const companies = (await s.admin('GET', '/companies')).body.data.length;
      for (const authorization of [null, 'Bearer wrong-operator-token', `Bearer ${s.token}`, `Basic ${OPERATOR_TOKEN}`, OPERATOR_TOKEN, 'Bearer ']) {
        expectError(await adminAs('GET', '/companies', authorization), 401);
        expectError(await adminAs('POST', '/companies', authorization, { name: 'sneaky' }), 401);
        expectError(await adminAs('POST', `/companies/${s.companyId}/suspend`, authorization), 401);
        expectError(await adminAs('POST', '/reset', authorization), 401);
      }
      assert.equal((await s.admin('GET', '/companies')).body.data.length, companies, 'nothing was created');
      assert.ok(await works(s.token), 'nothing was reset');
      assert.equal((await s.admin('GET', `/companies/${s.companyId}`)).body.status, 'active', 'nothing was suspended');
      const ok = await s.admin('GET', '/companies');
      expectStatus(ok, 200);
      assert.ok(ok.body.data.some((c: { id: string }) => c.id === s.companyId));
    });

    it('creates a company whose admin key works', async () => {
      const r = await s.admin('POST', '/companies', { name: 'Acme Corp' });
      expectStatus(r, 201);
      const { company, api_key } = r.body;
      assert.match(company.id, UUID_RE);
      assert.equal(company.name, 'Acme Corp');
      assert.equal(company.status, 'active');
      assert.match(api_key.id, UUID_RE);
      assert.match(api_key.token, TOKEN_RE);

      const v = await s.get('/api-keys/validate', { token: api_key.token });
      expectStatus(v, 200);
      assert.equal(v.body.company_id, company.id);
      assert.equal(v.body.status, 'active');
      const me = await s.get('/api-keys/me', { token: api_key.token });
      assert.equal(me.body.id, api_key.id);
      assert.equal(me.body.capabilities.length, 48, 'a Company Admin key by default');
      const keys = await s.get('/api-keys', { token: api_key.token });
      expectStatus(keys, 200);
      assert.deepEqual(
        keys.body.data.map((k: { id: string; source: string }) => [k.id, k.source]),
        [[api_key.id, 'DASHBOARD']],
      );
      expectStatus(await s.post('/projects', { display_name: 'Acme site' }, { token: api_key.token }), 201);
      assert.equal(
        (await s.get('/projects')).body.data.filter((p: { display_name: string }) => p.display_name === 'Acme site').length,
        0,
        'companies are separate',
      );

      const listed = await s.admin('GET', '/companies');
      assert.ok(listed.body.data.some((c: { id: string; name: string }) => c.id === company.id && c.name === 'Acme Corp'));
      const one = await s.admin('GET', `/companies/${company.id}`);
      expectStatus(one, 200);
      assert.equal(one.body.name, 'Acme Corp');
      expectError(await s.admin('GET', `/companies/${MISSING}`), 404);

      // More keys for the company, of any role.
      const billing = await s.admin('POST', `/companies/${company.id}/api-keys`, { name: 'finance', role: 'Company Billing' });
      expectStatus(billing, 201);
      assert.match(billing.body.token, TOKEN_RE);
      assert.equal(billing.body.name, 'finance');
      expectError(await s.get('/projects', { token: billing.body.token }), 403, /PROJECT:READ/);
      const viewerCo = await s.admin('POST', '/companies', { name: 'Viewer Co', admin_key_role: 'Company Viewer' });
      expectStatus(viewerCo, 201);
      expectError(await s.post('/projects', { display_name: 'x' }, { token: viewerCo.body.api_key.token }), 403, /PROJECT:CREATE/);
    });

    it('rejects invalid company requests and creates nothing', async () => {
      const count = async () => (await s.admin('GET', '/companies')).body.data.length as number;
      const n0 = await count();
      expectError(await s.admin('POST', '/companies', {}), 400, /name/);
      expectError(await s.admin('POST', '/companies', { name: '   ' }), 400, /name/);
      expectError(await s.admin('POST', '/companies', { name: 42 }), 400, /name/);
      expectError(await s.admin('POST', '/companies', { name: 'Half made', admin_key_role: 'Company Overlord' }), 400, /role/i);
      assert.equal(await count(), n0, 'a failed creation leaves no company behind');
      expectError(await s.admin('POST', `/companies/${MISSING}/api-keys`, { role: 'Company Admin' }), 404);
      expectError(await s.admin('POST', `/companies/${s.companyId}/api-keys`, { role: 'Company Overlord' }), 400, /role/i);
      expectError(await s.admin('POST', `/companies/${MISSING}/suspend`), 404);
      expectError(await s.admin('POST', `/companies/${MISSING}/resume`), 404);
    });

    it('suspends a company (403 on its requests) and resumes it', async () => {
      const c = await s.newCompany();
      const viewer = await s.newKey({ role: 'Company Viewer', companyId: c.companyId });
      expectStatus(await s.post('/projects', { display_name: 'before' }, { token: c.token }), 201);

      const sus = await s.admin('POST', `/companies/${c.companyId}/suspend`);
      expectStatus(sus, 200);
      assert.equal(sus.body.status, 'suspended');
      assert.equal((await s.admin('GET', `/companies/${c.companyId}`)).body.status, 'suspended');
      expectError(await s.get('/projects', { token: c.token }), 403, /suspended/);
      expectError(await s.post('/projects', { display_name: 'during' }, { token: c.token }), 403, /suspended/);
      expectError(await s.get('/api-keys', { token: c.token }), 403, /suspended/);
      expectError(await s.get('/users', { token: viewer.token }), 403, /suspended/);
      // Other companies are unaffected; a wrong key is still a 401.
      expectStatus(await s.get('/projects'), 200);
      expectError(await s.get('/projects', { token: `svl_${'1'.repeat(64)}` }), 401);

      const res = await s.admin('POST', `/companies/${c.companyId}/resume`);
      expectStatus(res, 200);
      assert.equal(res.body.status, 'active');
      const l = await s.get('/projects', { token: c.token });
      expectStatus(l, 200);
      assert.deepEqual(
        l.body.data.map((p: { display_name: string }) => p.display_name),
        ['before'],
        'nothing was created while suspended',
      );
      expectStatus(await s.post('/projects', { display_name: 'after' }, { token: c.token }), 201);
      expectStatus(await s.get('/users', { token: viewer.token }), 200);
    });

    it('a suspended company is refused everywhere, also on validate, /api-keys/me and reference data', async () => {
      const c = await s.newCompany();
      expectStatus(await s.admin('POST', `/companies/${c.companyId}/suspend`), 200);
      try {
        for (const path of ['/api-keys/validate', '/api-keys/me', '/resources/clusters', '/git/providers']) {
          expectError(await s.get(path, { token: c.token }), 403, /suspended/);
        }
      } finally {
        expectStatus(await s.admin('POST', `/companies/${c.companyId}/resume`), 200);
      }
      const v = await s.get('/api-keys/validate', { token: c.token });
      expectStatus(v, 200);
      assert.equal(v.body.status, 'active');
    });

    it('maintenance blocks changes and keeps reads', async () => {
      const c = await s.newCompany();
      expectStatus(await s.admin('POST', `/companies/${c.companyId}/maintenance`), 200);
      assert.equal((await s.admin('GET', `/companies/${c.companyId}`)).body.status, 'maintenance');
      expectStatus(await s.get('/projects', { token: c.token }), 200);
      const v = await s.get('/api-keys/validate', { token: c.token });
      expectStatus(v, 200);
      assert.equal(v.body.status, 'maintenance');
      expectError(await s.post('/projects', { display_name: 'blocked' }, { token: c.token }), 403, /maint/);
      expectError(await s.post('/api-keys', { name: 'blocked', role_ids: [] }, { token: c.token }), 403, /maint/);
      assert.equal((await s.get('/projects', { token: c.token })).body.total, 0);

      expectStatus(await s.admin('DELETE', `/companies/${c.companyId}/maintenance`), 200);
      assert.equal((await s.admin('GET', `/companies/${c.companyId}`)).body.status, 'active');
      expectStatus(await s.post('/projects', { display_name: 'allowed' }, { token: c.token }), 201);
      assert.equal((await s.get('/api-keys/validate', { token: c.token })).body.status, 'active');
    });

    it('reset removes everything and bootstraps again with a new company and token', async () => {
      const other = await s.newCompany();
      const extra = await s.newKey({ role: 'Company Viewer' });
      expectStatus(await s.post('/projects', { display_name: 'Doomed' }), 201);
      expectStatus(await s.admin('POST', `/companies/${s.companyId}/users`, { email: 'doomed@example.com' }), 201);
      const pending = (await s.post('/auth/device-codes', undefined, { token: null })).body.code as string;

      const r = await s.admin('POST', '/reset');
      expectStatus(r, 200);
      assert.equal(typeof r.body.message, 'string');
      assert.match(r.body.company_id, UUID_RE);
      assert.notEqual(r.body.company_id, s.companyId);
      assert.match(r.body.token, TOKEN_RE);
      assert.notEqual(r.body.token, s.token);

      for (const old of [s.token, other.token, extra.token]) expectError(await s.get('/projects', { token: old }), 401);
      const v = await s.get('/api-keys/validate', { token: r.body.token });
      expectStatus(v, 200);
      assert.equal(v.body.company_id, r.body.company_id);
      assert.equal(v.body.status, 'active');

      const token = r.body.token as string;
      assert.equal((await s.get('/projects', { token })).body.total, 0);
      const keys = await s.get('/api-keys', { token });
      assert.deepEqual(
        keys.body.data.map((k: { id: string }) => k.id),
        [await keyIdOf(s, token)],
      );
      assert.deepEqual(
        (await s.get('/users', { token })).body.data.map((u: { email: string }) => u.email),
        ['admin@slipway.local'],
      );
      const companies = await s.admin('GET', '/companies');
      assert.deepEqual(
        companies.body.data.map((c: { id: string }) => c.id),
        [r.body.company_id],
      );
      expectError(await s.admin('GET', `/companies/${other.companyId}`), 404);
      const p = await s.get(`/auth/device-codes/${pending}`, { token: null });
      assert.deepEqual(p.body, { status: 'expired' }, 'device codes are gone');
      expectStatus(await s.post('/projects', { display_name: 'Fresh start' }, { token }), 201);
    });

    it('after a reset, a configured bootstrap token is bound to the new company', async () => {
      const fixed = await startServer({ db: kind });
      try {
        const oldCompany = fixed.companyId;
        const extra = await fixed.newKey({ role: 'Company Admin' });
        const r = await fixed.admin('POST', '/reset');
        expectStatus(r, 200);
        assert.equal(r.body.token, fixed.token, 'the configured bootstrap token is used again');
        assert.notEqual(r.body.company_id, oldCompany);
        expectError(await fixed.get('/projects', { token: extra.token }), 401);
        const v = await fixed.get('/api-keys/validate');
        expectStatus(v, 200);
        assert.equal(v.body.company_id, r.body.company_id);
      } finally {
        await fixed.close();
      }
    });

    it('answers 404 on /_admin when no operator token is configured', async () => {
      const bare = await startServer({ db: kind, env: { SLIPWAY_OPERATOR_TOKEN: '' } });
      try {
        for (const authorization of [null, `Bearer ${OPERATOR_TOKEN}`, 'Bearer anything', `Bearer ${bare.token}`]) {
          const opts = { token: null, headers: (authorization === null ? {} : { authorization }) as Record<string, string> };
          expectError(await bare.request('GET', '/_admin/companies', opts), 404);
          expectError(await bare.request('POST', '/_admin/companies', { ...opts, body: { name: 'x' } }), 404);
          expectError(await bare.request('POST', '/_admin/reset', opts), 404);
        }
        // The API itself is unaffected and nothing was reset.
        const v = await bare.get('/api-keys/validate');
        expectStatus(v, 200);
        assert.equal(v.body.company_id, bare.companyId);
      } finally {
        await bare.close();
      }
    });
  });
}
