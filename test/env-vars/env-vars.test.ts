// Environment variables over HTTP: app-level and global CRUD, key rules (format, uniqueness),
// encryption at rest, permissions (roles, scoped capabilities), tenancy and the rate tier.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer, type TestServer, GENEROUS } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, sleep, UUID_RE } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { SCHEMA_MISMATCH } from '../accounts/support.js';

const APP_VAR_FIELDS = ['app_id', 'created_at', 'id', 'is_buildtime', 'is_runtime', 'key', 'updated_at', 'value'];
const GLOBAL_VAR_FIELDS = ['created_at', 'id', 'is_buildtime', 'is_runtime', 'key', 'updated_at', 'value'];

interface EnvVar {
  id: string;
  app_id?: string;
  key: string;
  value: string;
  is_runtime: boolean | null;
  is_buildtime: boolean | null;
  created_at: string;
  updated_at: string;
}

let appCounter = 0;
async function createApp(s: TestServer, token?: string): Promise<string> {
  const r = await s.post(
    '/applications',
    { display_name: `env app ${++appCounter}`, cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' },
    { token },
  );
  expectStatus(r, 201);
  return r.body.id as string;
}

for (const kind of DB_KINDS) {
  describe(`env vars [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    const appVars = (appId: string) => `/applications/${appId}/env-vars`;
    const createVar = async (appId: string, body: object, token?: string) => expectStatus<EnvVar>(await s.post(appVars(appId), body, { token }), 201);
    const createGlobal = async (body: object, token?: string) => expectStatus<EnvVar>(await s.post('/applications/global-env-vars', body, { token }), 201);

    describe('app-level variables', () => {
      it('creates with defaults (is_runtime and is_buildtime true) and returns the decrypted value', async () => {
        const app = await createApp(s);
        const v = await createVar(app, { key: 'DATABASE_URL', value: 'postgres://u:p@h/db' });
        assert.deepEqual(Object.keys(v).sort(), APP_VAR_FIELDS);
        assert.match(v.id, UUID_RE);
        assert.equal(v.app_id, app);
        assert.equal(v.key, 'DATABASE_URL');
        assert.equal(v.value, 'postgres://u:p@h/db');
        assert.equal(v.is_runtime, true);
        assert.equal(v.is_buildtime, true);
        assert.equal(v.created_at, v.updated_at);

        const flags = await createVar(app, { key: 'BUILD_ONLY', value: '', is_runtime: false, is_buildtime: true });
        assert.equal(flags.is_runtime, false);
        assert.equal(flags.is_buildtime, true);
        assert.equal(flags.value, '', 'an empty value is allowed');
      });

      it('lists in creation order with the pagination envelope', async () => {
        const app = await createApp(s);
        const created: EnvVar[] = [];
        for (const key of ['FIRST', 'SECOND', 'THIRD']) {
          created.push(await createVar(app, { key, value: key.toLowerCase() }));
          await sleep(3); // distinct created_at
        }
        const all = expectStatus(await s.get(appVars(app)), 200);
        assert.deepEqual(Object.keys(all).sort(), ['data', 'limit', 'offset', 'total']);
        assert.equal(all.total, 3);
        assert.equal(all.limit, 25);
        assert.equal(all.offset, 0);
        assert.deepEqual(all.data, created);

        const page = expectStatus(await s.get(`${appVars(app)}?limit=1&offset=1`), 200);
        assert.deepEqual(page, { data: [created[1]], total: 3, offset: 1, limit: 1 });
        expectError(await s.get(`${appVars(app)}?limit=101`), 400);
        expectError(await s.get(`${appVars(app)}?offset=-1`), 400);

        const empty = expectStatus(await s.get(appVars(await createApp(s))), 200);
        assert.deepEqual(empty, { data: [], total: 0, offset: 0, limit: 25 });
      });

      it('updates key, value and flags; fields left out keep their values', async () => {
        const app = await createApp(s);
        const v = await createVar(app, { key: 'API_URL', value: 'http://old' });
        await sleep(3);
        const u1 = expectStatus<EnvVar>(await s.put(`${appVars(app)}/${v.id}`, { value: 'https://new' }), 200);
        assert.deepEqual({ ...u1, updated_at: v.updated_at }, { ...v, value: 'https://new' });
        assert.ok(u1.updated_at > v.updated_at, 'updated_at moves forward');

        const u2 = expectStatus<EnvVar>(await s.put(`${appVars(app)}/${v.id}`, { key: 'API_BASE_URL', is_runtime: false }), 200);
        assert.equal(u2.key, 'API_BASE_URL');
        assert.equal(u2.value, 'https://new');
        assert.equal(u2.is_runtime, false);
        assert.equal(u2.is_buildtime, true);

        const same = expectStatus<EnvVar>(await s.put(`${appVars(app)}/${v.id}`, {}), 200);
        assert.deepEqual(same, u2, 'an empty update changes nothing');
        const renameToSelf = expectStatus<EnvVar>(await s.put(`${appVars(app)}/${v.id}`, { key: 'API_BASE_URL' }), 200);
        assert.equal(renameToSelf.key, 'API_BASE_URL');

        const listed = expectStatus(await s.get(appVars(app)), 200);
        assert.deepEqual(listed.data, [{ ...renameToSelf }]);
      });

      it('deletes; a deleted or unknown variable is 404', async () => {
        const app = await createApp(s);
        const keep = await createVar(app, { key: 'KEEP', value: '1' });
        const v = await createVar(app, { key: 'GONE', value: '1' });
        const d = expectStatus(await s.delete(`${appVars(app)}/${v.id}`), 200);
        assert.equal(typeof d.message, 'string');
        assert.deepEqual(
          expectStatus(await s.get(appVars(app)), 200).data.map((x: EnvVar) => x.id),
          [keep.id],
        );
        expectError(await s.delete(`${appVars(app)}/${v.id}`), 404);
        expectError(await s.put(`${appVars(app)}/${v.id}`, { value: 'x' }), 404);
        expectError(await s.put(`${appVars(app)}/${MISSING}`, { value: 'x' }), 404);
        // The key is free again.
        await createVar(app, { key: 'GONE', value: '2' });
      });

      it('404 for an unknown application, and for a variable addressed through another application', async () => {
        expectError(await s.get(appVars(MISSING)), 404);
        expectError(await s.post(appVars(MISSING), { key: 'A', value: 'b' }), 404);
        const a = await createApp(s);
        const b = await createApp(s);
        const v = await createVar(a, { key: 'ONLY_ON_A', value: '1' });
        expectError(await s.put(`${appVars(b)}/${v.id}`, { value: 'x' }), 404);
        expectError(await s.delete(`${appVars(b)}/${v.id}`), 404);
        assert.equal(expectStatus(await s.get(appVars(a)), 200).data[0].value, '1', 'untouched');
      });

      it('keys are unique per application (400), case-sensitive, and free on other applications', async () => {
        const a = await createApp(s);
        const b = await createApp(s);
        const v = await createVar(a, { key: 'TOKEN', value: '1' });
        expectError(await s.post(appVars(a), { key: 'TOKEN', value: '2' }), 400, /TOKEN.*already exists/);
        await createVar(a, { key: 'token', value: 'lower case is another key' });
        await createVar(b, { key: 'TOKEN', value: 'other app' });
        const other = await createVar(a, { key: 'OTHER', value: '3' });
        expectError(await s.put(`${appVars(a)}/${other.id}`, { key: 'TOKEN' }), 400, /TOKEN.*already exists/);
        const list = expectStatus(await s.get(appVars(a)), 200);
        const byKey = Object.fromEntries(list.data.map((x: EnvVar) => [x.key, x]));
        assert.deepEqual(Object.keys(byKey).sort(), ['OTHER', 'TOKEN', 'token']);
        assert.equal(byKey.TOKEN.id, v.id);
        assert.equal(byKey.TOKEN.value, '1', 'the refused create changed nothing');
        assert.equal(byKey.OTHER.value, '3');
      });

      it('rejects malformed keys and bodies with 400', async () => {
        const app = await createApp(s);
        for (const key of ['1ABC', 'A-B', 'A B', 'É', 'A.B', '$A', 'A=B']) {
          expectError(await s.post(appVars(app), { key, value: 'x' }), 400, /key/i);
        }
        for (const key of ['_', '_A1', 'a', 'Z9_z']) await createVar(app, { key, value: 'ok' });
        expectError(await s.post(appVars(app), { key: '', value: 'x' }), 400, SCHEMA_MISMATCH);
        expectError(await s.post(appVars(app), { key: 'A'.repeat(256), value: 'x' }), 400, SCHEMA_MISMATCH);
        await createVar(app, { key: 'A'.repeat(255), value: 'x'.repeat(32768) });
        expectError(await s.post(appVars(app), { key: 'BIG', value: 'x'.repeat(32769) }), 400, SCHEMA_MISMATCH);
        expectError(await s.post(appVars(app), { key: 'NOVALUE' }), 400, SCHEMA_MISMATCH);
        expectError(await s.post(appVars(app), { value: 'nokey' }), 400, SCHEMA_MISMATCH);
        expectError(await s.post(appVars(app), { key: 'A1', value: 1 }), 400, SCHEMA_MISMATCH);
        expectError(await s.post(appVars(app), { key: 'A1', value: 'x', is_runtime: 'yes' }), 400, SCHEMA_MISMATCH);
        expectError(await s.request('POST', appVars(app), { raw: '{"key":' }), 400);
        expectError(await s.get(`/applications/not-a-uuid/env-vars`), 400);

        const v = await createVar(app, { key: 'VALID', value: 'x' });
        expectError(await s.put(`${appVars(app)}/${v.id}`, { key: '9LIVES' }), 400, /key/i);
        expectError(await s.put(`${appVars(app)}/${v.id}`, { key: '' }), 400, SCHEMA_MISMATCH);
        expectError(await s.put(`${appVars(app)}/${v.id}`, { is_buildtime: null }), 400, SCHEMA_MISMATCH);
        assert.equal(expectStatus(await s.get(`${appVars(app)}?limit=100`), 200).data.find((x: EnvVar) => x.id === v.id).key, 'VALID');
      });

      it('stores values encrypted at rest, never as plaintext', async () => {
        const app = await createApp(s);
        const secret = 'sk_live_plaintext-must-not-be-stored-0123456789';
        const v = await createVar(app, { key: 'STRIPE_KEY', value: secret });
        const row = await s.app.database.db.selectFrom('env_vars').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
        assert.notEqual(row.value, secret);
        assert.ok(!row.value.includes(secret), 'the sealed value does not contain the plaintext');
        assert.ok(!row.value.includes(Buffer.from(secret).toString('base64').slice(0, 20)), 'nor its base64 form');
        assert.match(row.value, /^v1:/);
        assert.equal(s.app.secrets.decrypt(row.value), secret);

        const updated = `${secret}-rotated`;
        expectStatus(await s.put(`${appVars(app)}/${v.id}`, { value: updated }), 200);
        const row2 = await s.app.database.db.selectFrom('env_vars').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
        assert.ok(!row2.value.includes(updated));
        assert.equal(s.app.secrets.decrypt(row2.value), updated);

        // Same plaintext twice: different ciphertexts (random IV).
        const w = await createVar(app, { key: 'STRIPE_KEY_COPY', value: updated });
        const row3 = await s.app.database.db.selectFrom('env_vars').select('value').where('id', '=', w.id).executeTakeFirstOrThrow();
        assert.notEqual(row3.value, row2.value);
      });
    });

    describe('global variables', () => {
      let co: { companyId: string; token: string };
      before(async () => {
        co = await s.newCompany();
      });
      const g = '/applications/global-env-vars';

      it('creates, lists (paginated), updates and deletes', async () => {
        const a = await createGlobal({ key: 'LOG_LEVEL', value: 'info' }, co.token);
        assert.deepEqual(Object.keys(a).sort(), GLOBAL_VAR_FIELDS);
        assert.equal(a.is_runtime, true);
        assert.equal(a.is_buildtime, true);
        await sleep(3);
        const b = await createGlobal({ key: 'NODE_ENV', value: 'production', is_buildtime: false }, co.token);
        assert.equal(b.is_buildtime, false);
        await sleep(3);
        const c = await createGlobal({ key: 'REGION', value: 'eu' }, co.token);

        const all = expectStatus(await s.get(g, { token: co.token }), 200);
        assert.deepEqual(all, { data: [a, b, c], total: 3, offset: 0, limit: 25 });
        const p2 = expectStatus(await s.get(`${g}?limit=2&offset=2`, { token: co.token }), 200);
        assert.deepEqual(p2, { data: [c], total: 3, offset: 2, limit: 2 });

        const u = expectStatus<EnvVar>(await s.put(`${g}/${b.id}`, { value: 'staging', key: 'APP_ENV', is_buildtime: true }, { token: co.token }), 200);
        assert.deepEqual({ ...u, updated_at: b.updated_at }, { ...b, key: 'APP_ENV', value: 'staging', is_buildtime: true });
        assert.deepEqual(expectStatus(await s.put(`${g}/${b.id}`, {}, { token: co.token }), 200), u);

        expectStatus(await s.delete(`${g}/${a.id}`, { token: co.token }), 200);
        expectError(await s.delete(`${g}/${a.id}`, { token: co.token }), 404);
        expectError(await s.put(`${g}/${a.id}`, { value: 'x' }, { token: co.token }), 404);
        expectError(await s.put(`${g}/${MISSING}`, { value: 'x' }, { token: co.token }), 404);
        const after = expectStatus(await s.get(g, { token: co.token }), 200);
        assert.deepEqual(
          after.data.map((x: EnvVar) => x.key),
          ['APP_ENV', 'REGION'],
        );
      });

      it('keys are unique per company (400) and validated like app keys', async () => {
        const { token } = await s.newCompany();
        const v = await createGlobal({ key: 'SHARED', value: '1' }, token);
        expectError(await s.post(g, { key: 'SHARED', value: '2' }, { token }), 400, /SHARED.*already exists/);
        const w = await createGlobal({ key: 'OTHER', value: '1' }, token);
        expectError(await s.put(`${g}/${w.id}`, { key: 'SHARED' }, { token }), 400, /SHARED.*already exists/);
        expectError(await s.post(g, { key: '2FAST', value: '1' }, { token }), 400, /key/i);
        expectError(await s.put(`${g}/${v.id}`, { key: 'no-dash' }, { token }), 400, /key/i);
        expectError(await s.post(g, { key: 'X', value: 'x'.repeat(32769) }, { token }), 400, SCHEMA_MISMATCH);
        // Another company may use the same key; so may an application of this company (it overrides).
        await createGlobal({ key: 'SHARED', value: 'other company' });
        const app = await createApp(s, token);
        await createVar(app, { key: 'SHARED', value: 'app override' }, token);
      });

      it('stores values encrypted at rest', async () => {
        const secret = 'global-plaintext-secret-value-987654321';
        const v = await createGlobal({ key: 'GLOBAL_SECRET', value: secret }, co.token);
        const row = await s.app.database.db.selectFrom('global_env_vars').selectAll().where('id', '=', v.id).executeTakeFirstOrThrow();
        assert.equal(row.company_id, co.companyId);
        assert.ok(!row.value.includes(secret));
        assert.match(row.value, /^v1:/);
        assert.equal(s.app.secrets.decrypt(row.value), secret);
      });
    });

    describe('permissions and tenancy', () => {
      it('a Company Viewer lists but cannot create, update or delete (403 naming APP:UPDATE)', async () => {
        const app = await createApp(s);
        const v = await createVar(app, { key: 'VIEWER_SEES', value: 'yes' });
        const gv = await createGlobal({ key: 'VIEWER_SEES_GLOBAL', value: 'yes' });
        const viewer = await s.newKey({ role: 'Company Viewer' });
        const t = { token: viewer.token };

        assert.ok(expectStatus(await s.get(appVars(app), t), 200).data.some((x: EnvVar) => x.id === v.id));
        assert.ok(expectStatus(await s.get('/applications/global-env-vars?limit=100', t), 200).data.some((x: EnvVar) => x.id === gv.id));

        for (const r of [
          await s.post(appVars(app), { key: 'NOPE', value: '1' }, t),
          await s.put(`${appVars(app)}/${v.id}`, { value: 'changed' }, t),
          await s.delete(`${appVars(app)}/${v.id}`, t),
          await s.post('/applications/global-env-vars', { key: 'NOPE', value: '1' }, t),
          await s.put(`/applications/global-env-vars/${gv.id}`, { value: 'changed' }, t),
          await s.delete(`/applications/global-env-vars/${gv.id}`, t),
        ]) {
          assert.match(expectError(r, 403), /APP:UPDATE/);
        }
        const list = expectStatus(await s.get(appVars(app)), 200);
        assert.deepEqual(
          list.data.map((x: EnvVar) => [x.key, x.value]),
          [['VIEWER_SEES', 'yes']],
          'nothing changed',
        );
      });

      it('a Company Billing key (no APP:READ) cannot list (403 naming APP:READ)', async () => {
        const app = await createApp(s);
        const billing = await s.newKey({ role: 'Company Billing' });
        assert.match(expectError(await s.get(appVars(app), { token: billing.token }), 403), /APP:READ/);
        assert.match(expectError(await s.get('/applications/global-env-vars', { token: billing.token }), 403), /APP:READ/);
      });

      it('a key scoped to one application manages its variables only, and no global variables', async () => {
        const a = await createApp(s);
        const b = await createApp(s);
        const gv = await createGlobal({ key: 'SCOPED_TEST_GLOBAL', value: '1' });
        const k = await s.newKey({
          capabilities: [
            { permission: 'APP:READ', id_resource: a },
            { permission: 'APP:UPDATE', id_resource: a },
          ],
        });
        const t = { token: k.token };
        const v = await createVar(a, { key: 'SCOPED', value: '1' }, k.token);
        expectStatus(await s.put(`${appVars(a)}/${v.id}`, { value: '2' }, t), 200);
        assert.equal(expectStatus(await s.get(appVars(a), t), 200).total, 1);
        expectError(await s.get(appVars(b), t), 404);
        expectError(await s.post(appVars(b), { key: 'SCOPED', value: '1' }, t), 404);

        assert.match(expectError(await s.get('/applications/global-env-vars', t), 403), /APP:READ/);
        assert.match(expectError(await s.post('/applications/global-env-vars', { key: 'FROM_SCOPED', value: '1' }, t), 403), /APP:UPDATE/);
        assert.match(expectError(await s.put(`/applications/global-env-vars/${gv.id}`, { value: '2' }, t), 403), /APP:UPDATE/);
        assert.match(expectError(await s.delete(`/applications/global-env-vars/${gv.id}`, t), 403), /APP:UPDATE/);
        // A capability scoped to the global variable's own id does not help either.
        const byId = await s.newKey({ capabilities: [{ permission: 'APP:UPDATE', id_resource: gv.id }] });
        assert.match(expectError(await s.put(`/applications/global-env-vars/${gv.id}`, { value: '3' }, { token: byId.token }), 403), /APP:UPDATE/);
        const still = expectStatus(await s.get('/applications/global-env-vars?limit=100'), 200).data.find((x: EnvVar) => x.id === gv.id);
        assert.equal(still.value, '1');
        expectStatus(await s.delete(`${appVars(a)}/${v.id}`, t), 200);
      });

      it("another company's application and global variable are 404, and its lists hold none of ours", async () => {
        const app = await createApp(s);
        const v = await createVar(app, { key: 'TENANT', value: 'mine' });
        const gv = await createGlobal({ key: 'TENANT_GLOBAL', value: 'mine' });
        const other = await s.newCompany();
        const t = { token: other.token };

        expectError(await s.get(appVars(app), t), 404);
        expectError(await s.post(appVars(app), { key: 'INTRUDER', value: 'x' }, t), 404);
        expectError(await s.put(`${appVars(app)}/${v.id}`, { value: 'x' }, t), 404);
        expectError(await s.delete(`${appVars(app)}/${v.id}`, t), 404);
        expectError(await s.put(`/applications/global-env-vars/${gv.id}`, { value: 'x' }, t), 404);
        expectError(await s.delete(`/applications/global-env-vars/${gv.id}`, t), 404);
        // Their own application cannot reach our variable either.
        const theirs = await createApp(s, other.token);
        expectError(await s.put(`${appVars(theirs)}/${v.id}`, { value: 'x' }, t), 404);
        assert.deepEqual(expectStatus(await s.get('/applications/global-env-vars', t), 200), { data: [], total: 0, offset: 0, limit: 25 });

        assert.equal(expectStatus(await s.get(appVars(app)), 200).data[0].value, 'mine');
        const mine = expectStatus(await s.get('/applications/global-env-vars?limit=100'), 200).data.find((x: EnvVar) => x.id === gv.id);
        assert.equal(mine.value, 'mine');
      });
    });
  });

  describe(`env vars rate tier [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { general_write: 2 } });

    it('writes count in the general_write tier (per operation); lists do not', async () => {
      const app = await createApp(s);
      for (const key of ['ONE', 'TWO']) expectStatus(await s.post(`/applications/${app}/env-vars`, { key, value: '1' }), 201);
      const r = await s.post(`/applications/${app}/env-vars`, { key: 'THREE', value: '1' });
      expectError(r, 429);
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'retry-after is set');
      assert.equal(r.headers.get('x-ratelimit-limit'), '2');

      for (const key of ['G_ONE', 'G_TWO']) expectStatus(await s.post('/applications/global-env-vars', { key, value: '1' }), 201);
      expectError(await s.post('/applications/global-env-vars', { key: 'G_THREE', value: '1' }), 429);

      for (let i = 0; i < 3; i++) {
        expectStatus(await s.get(`/applications/${app}/env-vars`), 200);
        expectStatus(await s.get('/applications/global-env-vars'), 200);
      }
      assert.equal(expectStatus(await s.get(`/applications/${app}/env-vars`), 200).total, 2, 'the refused create stored nothing');
    });
  });
}
