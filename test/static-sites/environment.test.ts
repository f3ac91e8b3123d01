// Environment variables of a static site: list, create, update (PUT), delete; values sealed at
// rest; keys unique per site; production / preview / branch scopes; `${key}` references resolved
// into the build environment (reported in the deployment log like applications).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, UUID_RE, expectError, expectStatus, listAll } from '../helpers/util.js';
import { IMMEDIATE_ENV, createSite, deployedSite, deploymentLogs, trigger, waitForFinal } from './support.js';

const envPath = (siteId: string) => `/static-sites/${siteId}/env-vars`;

for (const kind of DB_KINDS) {
  describe(`static sites: environment variables [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('create, list, update and delete; defaults: production and preview, every branch', async () => {
      const site = await createSite(s);
      const v = expectStatus(await s.post(envPath(site.id), { key: 'API_URL', value: 'https://api.example.com' }), 201);
      assert.deepEqual(Object.keys(v).sort(), ['branch', 'created_at', 'id', 'is_preview', 'is_production', 'key', 'static_site_id', 'updated_at', 'value']);
      assert.match(v.id, UUID_RE);
      assert.deepEqual(
        [v.static_site_id, v.key, v.value, v.is_production, v.is_preview, v.branch],
        [site.id, 'API_URL', 'https://api.example.com', true, true, null],
      );
      const scoped = expectStatus(await s.post(envPath(site.id), { key: 'PREVIEW_ONLY', value: 'p', is_production: false, branch: 'feature-a' }), 201);
      assert.deepEqual([scoped.is_production, scoped.is_preview, scoped.branch], [false, true, 'feature-a']);

      const list = await listAll(s, envPath(site.id));
      assert.deepEqual(
        list.map((x) => x.key),
        ['API_URL', 'PREVIEW_ONLY'],
      );
      assert.deepEqual(list[0], v);

      const u = expectStatus(await s.put(`${envPath(site.id)}/${v.id}`, { value: 'https://api2.example.com', is_preview: false }), 200);
      assert.deepEqual([u.key, u.value, u.is_production, u.is_preview, u.branch], ['API_URL', 'https://api2.example.com', true, false, null]);
      const cleared = expectStatus(await s.put(`${envPath(site.id)}/${scoped.id}`, { branch: null, key: 'RENAMED' }), 200);
      assert.deepEqual([cleared.key, cleared.branch], ['RENAMED', null]);

      // Duplicate keys, bad keys and branches: 400, nothing changes.
      expectError(await s.post(envPath(site.id), { key: 'API_URL', value: 'x' }), 400, /already exists/);
      expectError(await s.put(`${envPath(site.id)}/${cleared.id}`, { key: 'API_URL' }), 400, /already exists/);
      expectError(await s.post(envPath(site.id), { key: '1BAD', value: 'x' }), 400, /Invalid key/);
      expectError(await s.post(envPath(site.id), { key: 'OK', value: 'x', branch: 'two words' }), 400, /branch/);
      expectError(await s.post(envPath(site.id), { value: 'x' }), 400);
      assert.equal((await listAll(s, envPath(site.id))).length, 2);

      const del = expectStatus(await s.delete(`${envPath(site.id)}/${v.id}`), 200);
      assert.equal(typeof del.message, 'string');
      expectError(await s.delete(`${envPath(site.id)}/${v.id}`), 404);
      expectError(await s.put(`${envPath(site.id)}/${v.id}`, { value: 'y' }), 404);
      assert.deepEqual(
        (await listAll(s, envPath(site.id))).map((x) => x.key),
        ['RENAMED'],
      );
      expectError(await s.get(envPath(MISSING)), 404);
      // A variable of another site is not found through this one.
      const other = await createSite(s);
      expectError(await s.delete(`${envPath(other.id)}/${cleared.id}`), 404);
    });

    it('values are sealed at rest', async () => {
      const site = await createSite(s);
      expectStatus(await s.post(envPath(site.id), { key: 'SECRET_TOKEN', value: 'plain-text-secret-123' }), 201);
      const row = await s.app.database.db.selectFrom('static_site_env_vars').selectAll().where('static_site_id', '=', site.id).executeTakeFirstOrThrow();
      assert.ok(!row.value.includes('plain-text-secret-123'), 'the stored value is not the plaintext');
      assert.equal(s.app.secrets.decrypt(row.value), 'plain-text-secret-123');
    });

    it('builds see the variables of their kind and branch, with ${key} references resolved; problems are logged', async () => {
      const site = await deployedSite(s);
      const add = (body: Record<string, unknown>) => s.post(envPath(site.id), body).then((r) => expectStatus(r, 201));
      await add({ key: 'HOST', value: 'example.com' });
      await add({ key: 'API_URL', value: 'https://${HOST}/api' });
      await add({ key: 'PROD_ONLY', value: '1', is_preview: false });
      await add({ key: 'PREVIEW_ONLY', value: '1', is_production: false });
      await add({ key: 'BRANCH_A', value: '1', branch: 'feature-a' });
      await add({ key: 'BROKEN', value: '${MISSING_KEY}' });
      const countOf = async (body: Record<string, unknown>) => {
        const d = await trigger(s, site.id, body);
        assert.equal((await waitForFinal(s, site.id, d.id)).status, 'success');
        const logs = await deploymentLogs(s, site.id, d.id);
        const line = logs.find((l) => /^Build environment: \d+ variables$/.test(l.message));
        assert.ok(line, 'the build reports its environment');
        assert.equal(line!.attributes.phase, 'build');
        assert.ok(
          logs.some((l) => l.severity === 'warning' && /MISSING_KEY/.test(l.message)),
          'the unknown reference is reported',
        );
        return Number(/(\d+)/.exec(line!.message)![1]);
      };
      // System variables (10) + HOST, API_URL, BROKEN + the scoped ones that apply.
      assert.equal(await countOf({}), 10 + 3 + 1, 'production: PROD_ONLY');
      assert.equal(await countOf({ is_preview: true, branch: 'feature-b' }), 10 + 3 + 1, 'preview of another branch: PREVIEW_ONLY');
      assert.equal(await countOf({ is_preview: true, branch: 'feature-a' }), 10 + 3 + 2, 'preview of feature-a: PREVIEW_ONLY and BRANCH_A');
      // The resolution itself, as the build gets it.
      const { resolveSiteEnvironment } = await import('../../src/modules/env-vars/service.js');
      const ctx = { app: s.app, tx: s.app.database.db, companyId: s.companyId, actor: null, scope: null, grants: new Map() } as never;
      const env = await resolveSiteEnvironment(ctx, { id: site.id, company_id: s.companyId }, { is_preview: false, branch: 'main' }, { SVL_APP_ID: site.id });
      assert.equal(env.vars.API_URL, 'https://example.com/api');
      assert.equal(env.vars.PROD_ONLY, '1');
      assert.equal(env.vars.PREVIEW_ONLY, undefined);
      assert.equal(env.vars.SVL_APP_ID, site.id);
    });
  });
}
