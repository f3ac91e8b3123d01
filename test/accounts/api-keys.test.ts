// API keys: create, representation (masked), update, grant limits, toggle, rotate, delete,
// validate and the effective permissions of the calling key.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, UUID_RE } from '../helpers/util.js';
import { expectedMask, keyIdOf, roleIds, SCHEMA_MISMATCH, TOKEN_RE, type RoleName } from './support.js';

const READ_PERMISSIONS = [
  'APP',
  'PIPELINE',
  'DATABASE',
  'STATIC_SITE',
  'LOAD_BALANCER',
  'OBJECT_STORAGE',
  'BILLING',
  'COMPANY',
  'PROJECT',
  'WEBHOOK',
  'API_KEY',
  'REGISTRY_CREDENTIAL',
].map((r) => `${r}:READ`);
const SOME_ID = '5b0c2a4e-1f3d-4c5b-8a6e-7d9f0a1b2c3d';

interface ApiKeyView {
  id: string;
  company_id: string;
  name: string;
  is_enabled: boolean;
  source: string;
  masked_token: string;
  roles: { id: string; name: string; description: string }[];
  capabilities: { id: string; permission: string; id_resource: string | null }[];
  last_used_at: string | null;
  expired_at: string | null;
  old_token_expired_at: string | null;
  created_at: string;
  updated_at: string;
}

for (const kind of DB_KINDS) {
  describe(`api keys [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let roles: Record<RoleName, string>;
    let adminKeyId: string;

    // This suite makes many key writes within one minute; the write tier is raised so the
    // general-write limit (tested elsewhere) does not interfere.
    const s = useServer({ db: kind, rateLimits: { general_write: 1000 } });
    before(async () => {
      roles = await roleIds(s);
      adminKeyId = await keyIdOf(s, s.token);
    });

    /** Creates a key through the API with the bootstrap admin key. */
    async function create(body: Record<string, unknown>, token?: string) {
      const r = await s.post('/api-keys', body, { token });
      expectStatus(r, 201);
      return r.body as { id: string; token: string; name: string };
    }
    const getKey = async (id: string) => expectStatus(await s.get(`/api-keys/${id}`), 200) as ApiKeyView;
    const works = async (token: string) => (await s.get('/api-keys/validate', { token })).status === 200;

    it('creates a key: 201 with id, token and name; the token works', async () => {
      const r = await s.post('/api-keys', { name: 'ci deploy', role_ids: [roles['Company Developer']] });
      expectStatus(r, 201);
      assert.deepEqual(Object.keys(r.body).sort(), ['id', 'name', 'token']);
      assert.match(r.body.id, UUID_RE);
      assert.equal(r.body.name, 'ci deploy');
      assert.match(r.body.token, TOKEN_RE);
      assert.match(r.headers.get('x-request-id') ?? '', UUID_RE);

      const token = r.body.token as string;
      assert.equal(await keyIdOf(s, token), r.body.id);
      expectStatus(await s.get('/projects', { token }), 200);
      const p = await s.post('/projects', { display_name: 'made by ci' }, { token });
      expectStatus(p, 201);
      // Developer has no API key permissions.
      expectError(await s.get('/api-keys', { token }), 403, /API_KEY:READ/);
      expectError(await s.post('/api-keys', { name: 'x', role_ids: [roles['Company Viewer']] }, { token }), 403, /API_KEY:CREATE/);

      // Two keys never share a token.
      const other = await create({ name: 'ci deploy', role_ids: [roles['Company Developer']] });
      assert.notEqual(other.token, token);
      assert.notEqual(other.id, r.body.id);
    });

    it('shows keys with a masked token, roles and capabilities in list and get', async () => {
      const k = await create({
        name: 'masked',
        role_ids: [roles['Company Viewer']],
        capabilities: [{ permission: 'PROJECT:UPDATE', id_resource: SOME_ID }, { permission: 'WEBHOOK:CREATE' }],
      });
      const r = await s.get(`/api-keys/${k.id}`);
      const v = expectStatus(r, 200) as ApiKeyView;
      assert.equal(v.id, k.id);
      assert.equal(v.company_id, s.companyId);
      assert.equal(v.name, 'masked');
      assert.equal(v.is_enabled, true);
      assert.equal(v.source, 'EXTERNAL');
      assert.equal(v.masked_token, expectedMask(k.token));
      assert.match(v.masked_token, /^svl_[0-9a-f]{2}\.\.\.[0-9a-f]{4}$/);
      assert.ok(!('token' in v), 'no token field');
      assert.ok(!r.text.includes(k.token.slice(4, 20)), 'the token never appears');
      assert.ok(!r.text.includes(k.token.slice(-20)), 'the token never appears');

      assert.equal(v.roles.length, 1);
      assert.equal(v.roles[0]!.id, roles['Company Viewer']);
      assert.equal(v.roles[0]!.name, 'Company Viewer');
      assert.ok(v.roles[0]!.description.length > 0);
      assert.equal(v.capabilities.length, 2);
      for (const c of v.capabilities) assert.match(c.id, UUID_RE);
      assert.deepEqual(
        v.capabilities.map(({ permission, id_resource }) => ({ permission, id_resource })),
        [
          { permission: 'PROJECT:UPDATE', id_resource: SOME_ID },
          { permission: 'WEBHOOK:CREATE', id_resource: null },
        ],
      );
      assert.equal(v.last_used_at, null, 'never used yet');
      assert.equal(v.expired_at, null);
      assert.equal(v.old_token_expired_at, null);
      assert.ok(!Number.isNaN(Date.parse(v.created_at)));
      assert.ok(!Number.isNaN(Date.parse(v.updated_at)));

      const l = await s.get('/api-keys');
      expectStatus(l, 200);
      assert.equal(l.body.offset, 0);
      assert.equal(l.body.limit, 25);
      assert.ok(l.body.total >= 3);
      const all = await listAll<ApiKeyView>(s, '/api-keys');
      assert.equal(all.length, l.body.total);
      assert.deepEqual(
        all.find((x) => x.id === k.id),
        v,
        'the list shows the same representation as get',
      );
      const boot = all.find((x) => x.id === adminKeyId)!;
      assert.equal(boot.source, 'DASHBOARD', 'the bootstrap key was not created through the API');
      assert.equal(boot.masked_token, expectedMask(s.token));
      for (const x of all) assert.match(x.masked_token, /^svl_[0-9a-f]{2}\.\.\.[0-9a-f]{4}$/);
      const listText = (await s.get('/api-keys?limit=100')).text;
      assert.ok(!listText.includes(k.token.slice(4)) && !listText.includes(s.token.slice(4)), 'no full token in the list');

      // Using the key records last_used_at.
      await s.get('/projects', { token: k.token });
      const used = await getKey(k.id);
      assert.ok(used.last_used_at && !Number.isNaN(Date.parse(used.last_used_at)), 'last_used_at is set after use');
    });

    it('creates a key with an expiry that validate reports; rejects an expiry in the past', async () => {
      const expires = new Date(Date.now() + 7 * 86400_000).toISOString();
      const k = await create({ name: 'expiring', role_ids: [roles['Company Viewer']], expired_at: expires });
      assert.equal((await getKey(k.id)).expired_at, expires);
      const v = await s.get('/api-keys/validate', { token: k.token });
      expectStatus(v, 200);
      assert.equal(v.body.expires_at, expires);
      expectError(await s.post('/api-keys', { name: 'old', role_ids: [roles['Company Viewer']], expired_at: '2020-01-01T00:00:00.000Z' }), 400, /future/);
    });

    it('updates name, role_ids and capabilities', async () => {
      const k = await create({ name: 'to update', role_ids: [roles['Company Viewer']] });
      const before = await getKey(k.id);

      const n = await s.patch(`/api-keys/${k.id}`, { name: 'renamed' });
      expectStatus(n, 200);
      assert.equal(n.body.name, 'renamed');
      assert.deepEqual(n.body.roles, before.roles, 'roles unchanged by a rename');
      assert.deepEqual(await getKey(k.id), n.body);
      expectError(await s.post('/projects', { display_name: 'nope' }, { token: k.token }), 403, /PROJECT:CREATE/);

      const rr = await s.patch(`/api-keys/${k.id}`, { role_ids: [roles['Company Developer']] });
      expectStatus(rr, 200);
      assert.deepEqual(
        rr.body.roles.map((x: { name: string }) => x.name),
        ['Company Developer'],
      );
      assert.equal(rr.body.name, 'renamed', 'name kept');
      expectStatus(await s.post('/projects', { display_name: 'now allowed' }, { token: k.token }), 201);

      const rc = await s.patch(`/api-keys/${k.id}`, {
        role_ids: [],
        capabilities: [{ permission: 'API_KEY:READ' }, { permission: 'PROJECT:READ', id_resource: SOME_ID }],
      });
      expectStatus(rc, 200);
      assert.deepEqual(rc.body.roles, []);
      assert.deepEqual(
        rc.body.capabilities.map(({ permission, id_resource }: { permission: string; id_resource: string | null }) => ({ permission, id_resource })),
        [
          { permission: 'API_KEY:READ', id_resource: null },
          { permission: 'PROJECT:READ', id_resource: SOME_ID },
        ],
      );
      const after = await getKey(k.id);
      assert.deepEqual(after, rc.body);
      assert.equal(after.masked_token, before.masked_token, 'the token is unchanged by an update');
      assert.ok(after.updated_at >= before.updated_at);
      // The new permissions are in force for the key itself.
      expectStatus(await s.get('/api-keys', { token: k.token }), 200);
      expectError(await s.post('/projects', { display_name: 'no longer' }, { token: k.token }), 403, /PROJECT:CREATE/);
      const me = await s.get('/api-keys/me', { token: k.token });
      assert.deepEqual(
        [...me.body.capabilities].sort((a: { permission: string }, b: { permission: string }) => a.permission.localeCompare(b.permission)),
        [
          { permission: 'API_KEY:READ', id_resource: null },
          { permission: 'PROJECT:READ', id_resource: SOME_ID },
        ],
      );

      expectError(await s.patch(`/api-keys/${k.id}`, { role_ids: [], capabilities: [] }), 400);
      assert.deepEqual(await getKey(k.id), after, 'a rejected update changes nothing');
      expectError(await s.patch(`/api-keys/${SOME_ID}`, { name: 'ghost' }), 404);
      expectError(await s.patch(`/api-keys/${k.id}`, { name: '' }), 400, SCHEMA_MISMATCH);
      expectError(await s.patch(`/api-keys/${k.id}`, { name: 'x', token: 'svl_x' }), 400, SCHEMA_MISMATCH);
    });

    it('rejects unknown roles and unknown permissions with 400 and creates nothing', async () => {
      const total = async () => (await s.get('/api-keys')).body.total as number;
      const n0 = await total();
      expectError(await s.post('/api-keys', { name: 'bad', role_ids: [SOME_ID] }), 400, /role/i);
      expectError(await s.post('/api-keys', { name: 'bad', capabilities: [{ permission: 'APP:FLY' }] }), 400, /permission/i);
      expectError(await s.post('/api-keys', { name: 'bad', capabilities: [{ permission: 'app:read' }] }), 400, /permission/i);
      expectError(await s.post('/api-keys', { name: 'bad', capabilities: [{ permission: 'SPACESHIP:READ' }] }), 400, /permission/i);
      expectError(await s.post('/api-keys', { name: 'bad', role_ids: [roles['Company Viewer'], SOME_ID] }), 400, /role/i);
      expectError(await s.post('/api-keys', { name: 'nothing granted' }), 400);
      expectError(await s.post('/api-keys', { name: 'bad', role_ids: ['not-a-uuid'] }), 400, SCHEMA_MISMATCH);
      expectError(await s.post('/api-keys', { name: '', role_ids: [roles['Company Viewer']] }), 400, SCHEMA_MISMATCH);
      expectError(await s.post('/api-keys', { role_ids: [roles['Company Viewer']] }), 400, SCHEMA_MISMATCH);
      expectError(await s.post('/api-keys', { name: 'x', role_ids: [roles['Company Viewer']], source: 'CLI' }), 400, SCHEMA_MISMATCH);
      expectError(await s.post('/api-keys'), 400, SCHEMA_MISMATCH);
      assert.equal(await total(), n0, 'no key was created');

      const k = await create({ name: 'stable', role_ids: [roles['Company Viewer']] });
      const before = await getKey(k.id);
      expectError(await s.patch(`/api-keys/${k.id}`, { role_ids: [SOME_ID] }), 400, /role/i);
      expectError(await s.patch(`/api-keys/${k.id}`, { capabilities: [{ permission: 'PROJECT:FLY' }] }), 400, /permission/i);
      assert.deepEqual(await getKey(k.id), before, 'rejected updates change nothing');
    });

    it('a key cannot grant permissions it does not hold', async () => {
      const creator = await s.newKey({ capabilities: [{ permission: 'API_KEY:CREATE' }] });
      const n0 = (await s.get('/api-keys')).body.total;
      expectError(await s.post('/api-keys', { name: 'escalated', role_ids: [roles['Company Admin']] }, { token: creator.token }), 403, /grant/);
      expectError(await s.post('/api-keys', { name: 'escalated', role_ids: [roles['Company Viewer']] }, { token: creator.token }), 403, /grant/);
      expectError(await s.post('/api-keys', { name: 'escalated', capabilities: [{ permission: 'PROJECT:READ' }] }, { token: creator.token }), 403, /grant/);
      assert.equal((await s.get('/api-keys')).body.total, n0, 'nothing was created');
      // Handing out exactly what it holds is allowed.
      const same = await s.post('/api-keys', { name: 'peer', capabilities: [{ permission: 'API_KEY:CREATE' }] }, { token: creator.token });
      expectStatus(same, 201);
      assert.equal((await getKey(same.body.id)).source, 'EXTERNAL');

      // A scoped grant does not cover an unscoped one.
      const scoped = await s.newKey({ capabilities: [{ permission: 'API_KEY:CREATE' }, { permission: 'PROJECT:READ', id_resource: SOME_ID }] });
      expectError(await s.post('/api-keys', { name: 'wider', capabilities: [{ permission: 'PROJECT:READ' }] }, { token: scoped.token }), 403, /grant/);
      expectStatus(
        await s.post('/api-keys', { name: 'as wide', capabilities: [{ permission: 'PROJECT:READ', id_resource: SOME_ID }] }, { token: scoped.token }),
        201,
      );

      // The same rule applies to updates.
      const updater = await s.newKey({ capabilities: [{ permission: 'API_KEY:UPDATE' }, { permission: 'API_KEY:READ' }] });
      const target = await create({ name: 'target', role_ids: [roles['Company Viewer']] });
      const before = await getKey(target.id);
      expectError(await s.patch(`/api-keys/${target.id}`, { role_ids: [roles['Company Admin']] }, { token: updater.token }), 403, /grant/);
      expectError(await s.patch(`/api-keys/${target.id}`, { capabilities: [{ permission: 'BILLING:UPDATE' }] }, { token: updater.token }), 403, /grant/);
      assert.deepEqual(await getKey(target.id), before);
      const renamed = await s.patch(`/api-keys/${target.id}`, { name: 'renamed by updater' }, { token: updater.token });
      expectStatus(renamed, 200);
      assert.equal((await getKey(target.id)).name, 'renamed by updater');
    });

    it('a key cannot take over a stronger key by rotating it', async () => {
      const updater = await s.newKey({ capabilities: [{ permission: 'API_KEY:UPDATE' }, { permission: 'API_KEY:READ' }] });
      const admin = await create({ name: 'strong', role_ids: [roles['Company Admin']] });
      const before = await getKey(admin.id);
      expectError(await s.post(`/api-keys/${admin.id}/rotate`, { old_token_ttl_hours: 0 }, { token: updater.token }), 403, /grant/);
      assert.equal((await getKey(admin.id)).masked_token, before.masked_token, 'the token was not rotated');
      assert.ok(await works(admin.token));
      // A key it could have created itself may be rotated.
      const peer = await create({ name: 'peer', capabilities: [{ permission: 'API_KEY:READ' }] });
      const r = await s.post(`/api-keys/${peer.id}/rotate`, {}, { token: updater.token });
      expectStatus(r, 200);
      assert.ok(await works(r.body.token));
    });

    it('scoped API_KEY:READ shows only the keys in scope', async () => {
      const visible = await create({ name: 'visible', role_ids: [roles['Company Viewer']] });
      const reader = await s.newKey({ capabilities: [{ permission: 'API_KEY:READ', id_resource: visible.id }] });
      const l = await s.get('/api-keys', { token: reader.token });
      expectStatus(l, 200);
      assert.deepEqual(
        l.body.data.map((x: ApiKeyView) => x.id),
        [visible.id],
      );
      assert.equal(l.body.total, 1);
      expectStatus(await s.get(`/api-keys/${visible.id}`, { token: reader.token }), 200);
      expectError(await s.get(`/api-keys/${adminKeyId}`, { token: reader.token }), 404);
      expectError(
        await s.post('/api-keys', { name: 'x', capabilities: [{ permission: 'API_KEY:READ', id_resource: visible.id }] }, { token: reader.token }),
        403,
        /API_KEY:CREATE/,
      );
    });

    it('toggles a key off (401) and on again; a key cannot disable itself', async () => {
      const k = await create({ name: 'toggled', role_ids: [roles['Company Viewer']] });
      const off = await s.post(`/api-keys/${k.id}/toggle`);
      expectStatus(off, 200);
      assert.equal(off.body.is_enabled, false);
      assert.equal(typeof off.body.message, 'string');
      assert.equal((await getKey(k.id)).is_enabled, false);
      assert.equal((await listAll<ApiKeyView>(s, '/api-keys')).find((x) => x.id === k.id)?.is_enabled, false);
      expectError(await s.get('/projects', { token: k.token }), 401, /disabled/);
      expectError(await s.get('/api-keys/validate', { token: k.token }), 401);
      expectError(await s.post(`/api-keys/${k.id}/toggle`, undefined, { token: k.token }), 401, /disabled/); // a disabled key cannot enable itself

      const on = await s.post(`/api-keys/${k.id}/toggle`);
      expectStatus(on, 200);
      assert.equal(on.body.is_enabled, true);
      assert.notEqual(on.body.message, off.body.message);
      assert.equal((await getKey(k.id)).is_enabled, true);
      expectStatus(await s.get('/projects', { token: k.token }), 200);

      expectError(await s.post(`/api-keys/${adminKeyId}/toggle`), 400, /itself/);
      assert.equal((await getKey(adminKeyId)).is_enabled, true);
      assert.ok(await works(s.token));
      expectError(await s.post(`/api-keys/${SOME_ID}/toggle`), 404);
      expectError(await s.post('/api-keys/not-a-uuid/toggle'), 400);
    });

    it('rotates without a grace period: the new token works, the old one fails at once', async () => {
      const k = await create({ name: 'rotated', role_ids: [roles['Company Viewer']] });
      const r = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 0 });
      expectStatus(r, 200);
      assert.deepEqual(Object.keys(r.body).sort(), ['name', 'token']);
      assert.equal(r.body.name, 'rotated');
      assert.match(r.body.token, TOKEN_RE);
      assert.notEqual(r.body.token, k.token);
      assert.ok(await works(r.body.token));
      expectError(await s.get('/projects', { token: k.token }), 401);
      const v = await getKey(k.id);
      assert.equal(v.masked_token, expectedMask(r.body.token));
      assert.equal(v.old_token_expired_at, null);
      assert.equal(await keyIdOf(s, r.body.token), k.id, 'same key, new token');

      // An empty body means no grace period too.
      const r2 = await s.post(`/api-keys/${k.id}/rotate`, {});
      expectStatus(r2, 200);
      assert.ok(await works(r2.body.token));
      assert.ok(!(await works(r.body.token)));
    });

    it('rotates with a grace period: both tokens work and old_token_expired_at is set', async () => {
      const k = await create({ name: 'graceful', role_ids: [roles['Company Viewer']] });
      const r = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 2 });
      expectStatus(r, 200);
      assert.ok(await works(r.body.token), 'new token works');
      assert.ok(await works(k.token), 'old token still works during the grace period');
      assert.equal(await keyIdOf(s, k.token), k.id);
      const v = await getKey(k.id);
      assert.ok(v.old_token_expired_at, 'old_token_expired_at is set');
      const due = Date.parse(v.old_token_expired_at!) - Date.now();
      assert.ok(due > 1.5 * 3600_000 && due <= 2 * 3600_000, `old token expires about two hours ahead (${due} ms)`);
      assert.equal(v.masked_token, expectedMask(r.body.token));

      // Rotating again without grace ends both earlier tokens.
      const r2 = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 0 });
      expectStatus(r2, 200);
      assert.ok(await works(r2.body.token));
      assert.ok(!(await works(r.body.token)));
      assert.ok(!(await works(k.token)));
      assert.equal((await getKey(k.id)).old_token_expired_at, null);

      for (const bad of [169, -1, 1.5, '2']) expectError(await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: bad }), 400, SCHEMA_MISMATCH);
      expectError(await s.post(`/api-keys/${k.id}/rotate`), 400, SCHEMA_MISMATCH);
      expectError(await s.post(`/api-keys/${SOME_ID}/rotate`, {}), 404);
      assert.ok(await works(r2.body.token), 'rejected rotations changed nothing');
    });

    it('deletes a key: its token is refused, get is 404 and it leaves the list; a key cannot delete itself', async () => {
      const k = await create({ name: 'doomed', role_ids: [roles['Company Viewer']] });
      const d = await s.delete(`/api-keys/${k.id}`);
      expectStatus(d, 200);
      assert.equal(typeof d.body.message, 'string');
      expectError(await s.get('/projects', { token: k.token }), 401, /deleted/);
      expectError(await s.get(`/api-keys/${k.id}`), 404);
      assert.ok(!(await listAll<ApiKeyView>(s, '/api-keys')).some((x) => x.id === k.id));
      expectError(await s.delete(`/api-keys/${k.id}`), 404);
      expectError(await s.patch(`/api-keys/${k.id}`, { name: 'zombie' }), 404);
      expectError(await s.post(`/api-keys/${k.id}/toggle`), 404);
      expectError(await s.post(`/api-keys/${k.id}/rotate`, {}), 404);

      // A deleted key's grace-period token is refused too.
      const g = await create({ name: 'rotated then deleted', role_ids: [roles['Company Viewer']] });
      expectStatus(await s.post(`/api-keys/${g.id}/rotate`, { old_token_ttl_hours: 1 }), 200);
      expectStatus(await s.delete(`/api-keys/${g.id}`), 200);
      expectError(await s.get('/projects', { token: g.token }), 401);

      expectError(await s.delete(`/api-keys/${adminKeyId}`), 400, /itself/);
      expectStatus(await s.get(`/api-keys/${adminKeyId}`), 200);
      assert.ok(await works(s.token));
    });

    it('validates a key: name, company, expiry and status; 401 for a bad token', async () => {
      const v = await s.get('/api-keys/validate');
      expectStatus(v, 200);
      assert.deepEqual(v.body, { name: 'bootstrap admin', expires_at: null, company_id: s.companyId, status: 'active' });

      const viewer = await create({ name: 'viewer for validate', role_ids: [roles['Company Viewer']] });
      const vv = await s.get('/api-keys/validate', { token: viewer.token });
      expectStatus(vv, 200);
      assert.equal(vv.body.name, 'viewer for validate');
      assert.equal(vv.body.company_id, s.companyId);

      const other = await s.newCompany('Company Viewer');
      const vo = await s.get('/api-keys/validate', { token: other.token });
      expectStatus(vo, 200);
      assert.equal(vo.body.company_id, other.companyId);

      expectError(await s.get('/api-keys/validate', { token: `svl_${'ab'.repeat(32)}` }), 401);
      expectError(await s.get('/api-keys/validate', { token: null }), 401);
      expectError(await s.get('/api-keys/validate', { token: null, headers: { authorization: `Basic ${s.token}` } }), 401);
      expectError(await s.get('/api-keys/validate', { token: 'short' }), 401);
    });

    it('GET /api-keys/me returns the effective permissions of the calling key', async () => {
      const viewer = await create({ name: 'me viewer', role_ids: [roles['Company Viewer']] });
      const me = await s.get('/api-keys/me', { token: viewer.token });
      expectStatus(me, 200);
      assert.equal(me.body.id, viewer.id);
      assert.equal(me.body.name, 'me viewer');
      assert.equal(me.body.company_id, s.companyId);
      assert.equal(me.body.source, 'EXTERNAL');
      assert.equal(me.body.masked_token, expectedMask(viewer.token));
      assert.ok(!me.text.includes(viewer.token.slice(4)));
      const perms = (me.body.capabilities as { permission: string; id_resource: string | null }[]).map((c) => c.permission).sort();
      assert.deepEqual(perms, [...READ_PERMISSIONS].sort());
      assert.ok(me.body.capabilities.every((c: { id_resource: string | null }) => c.id_resource === null));

      const scoped = await create({ name: 'me scoped', capabilities: [{ permission: 'PROJECT:READ', id_resource: SOME_ID }] });
      const ms = await s.get('/api-keys/me', { token: scoped.token });
      expectStatus(ms, 200);
      assert.deepEqual(ms.body.capabilities, [{ permission: 'PROJECT:READ', id_resource: SOME_ID }]);

      const mixed = await create({
        name: 'me mixed',
        role_ids: [roles['Company Billing']],
        capabilities: [{ permission: 'PROJECT:UPDATE', id_resource: SOME_ID }],
      });
      const mm = await s.get('/api-keys/me', { token: mixed.token });
      const byPerm = new Map((mm.body.capabilities as { permission: string; id_resource: string | null }[]).map((c) => [c.permission, c.id_resource]));
      assert.deepEqual([...byPerm.keys()].sort(), ['BILLING:CREATE', 'BILLING:DELETE', 'BILLING:READ', 'BILLING:UPDATE', 'COMPANY:READ', 'PROJECT:UPDATE']);
      assert.equal(byPerm.get('PROJECT:UPDATE'), SOME_ID);
      assert.equal(byPerm.get('BILLING:READ'), null);

      const admin = await s.get('/api-keys/me');
      expectStatus(admin, 200);
      assert.equal(admin.body.id, adminKeyId);
      assert.equal(admin.body.capabilities.length, 48);
      expectError(await s.get('/api-keys/me', { token: null }), 401);
    });

    it('never shows or touches keys of another company', async () => {
      const other = await s.newCompany();
      const foreign = await s.post('/api-keys', { name: 'foreign', role_ids: [roles['Company Viewer']] }, { token: other.token });
      expectStatus(foreign, 201);
      const fid = foreign.body.id as string;
      expectError(await s.get(`/api-keys/${fid}`), 404);
      expectError(await s.patch(`/api-keys/${fid}`, { name: 'hijacked' }), 404);
      expectError(await s.post(`/api-keys/${fid}/toggle`), 404);
      expectError(await s.post(`/api-keys/${fid}/rotate`, {}), 404);
      expectError(await s.delete(`/api-keys/${fid}`), 404);
      assert.ok(!(await listAll<ApiKeyView>(s, '/api-keys')).some((x) => x.id === fid || x.company_id !== s.companyId));
      const theirs = await listAll<ApiKeyView>(s, '/api-keys', other.token);
      assert.ok(theirs.every((x) => x.company_id === other.companyId));
      assert.ok(theirs.some((x) => x.id === fid && x.name === 'foreign' && x.is_enabled));
      assert.ok(await works(foreign.body.token));
    });
  });
}
