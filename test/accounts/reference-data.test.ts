// Reference data: regions (clusters), resource sizes, and the RBAC permission and role tables.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, startServer, useServer } from '../helpers/server.js';
import { expectError, expectStatus, UUID_RE } from '../helpers/util.js';
import { ROLE_NAMES } from './support.js';

const RESOURCES = [
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
];
const ACTIONS = ['CREATE', 'READ', 'UPDATE', 'DELETE'];
const REFERENCE_PATHS = [
  '/resources/clusters',
  '/resources/database-resource-types',
  '/resources/process-resource-types',
  '/resources/rbac/api-key-permissions',
  '/resources/rbac/api-key-roles',
];

function assertUniqueIds(items: { id: string }[]) {
  for (const i of items) assert.match(i.id, UUID_RE);
  assert.equal(new Set(items.map((i) => i.id)).size, items.length, 'ids are unique');
}

for (const kind of DB_KINDS) {
  describe(`reference data [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    it('lists several regions with stable ids that are the same on another server', async () => {
      const r = await s.get('/resources/clusters');
      const clusters = expectStatus(r, 200) as { id: string; name: string; display_name: string | null; location: string }[];
      assert.ok(Array.isArray(clusters));
      assert.ok(clusters.length >= 3, `several regions (got ${clusters.length})`);
      assertUniqueIds(clusters);
      assert.equal(new Set(clusters.map((c) => c.name)).size, clusters.length, 'names are unique');
      assert.ok(new Set(clusters.map((c) => c.location)).size >= 3, 'regions are in different locations');
      for (const c of clusters) {
        assert.ok(c.name.length > 0);
        assert.ok(c.location.length > 0);
      }
      // Same request again: same answer.
      assert.deepEqual((await s.get('/resources/clusters')).body, clusters);

      const other = await startServer({ db: kind });
      try {
        const o = await other.get('/resources/clusters');
        expectStatus(o, 200);
        assert.deepEqual(o.body, clusters, 'a second install publishes the same clusters with the same ids');
        const types = await other.get('/resources/process-resource-types');
        assert.deepEqual(types.body, (await s.get('/resources/process-resource-types')).body);
        const dbTypes = await other.get('/resources/database-resource-types');
        assert.deepEqual(dbTypes.body, (await s.get('/resources/database-resource-types')).body);
        const perms = await other.get('/resources/rbac/api-key-permissions');
        assert.deepEqual(perms.body, (await s.get('/resources/rbac/api-key-permissions')).body);
        const roles = await other.get('/resources/rbac/api-key-roles');
        assert.deepEqual(roles.body, (await s.get('/resources/rbac/api-key-roles')).body);
      } finally {
        await other.close();
      }
    });

    it('lists database resource types with positive limits', async () => {
      const r = await s.get('/resources/database-resource-types');
      const types = expectStatus(r, 200) as { id: string; name: string; cpu_limit: number; memory_limit: number; storage_limit: number }[];
      assert.ok(types.length >= 1);
      assertUniqueIds(types);
      assert.equal(new Set(types.map((t) => t.name)).size, types.length, 'names are unique');
      for (const t of types) {
        for (const v of [t.cpu_limit, t.memory_limit, t.storage_limit]) assert.ok(Number.isInteger(v) && v > 0, `${t.name}: positive integer limits`);
      }
    });

    it('lists process resource types in the four categories', async () => {
      const r = await s.get('/resources/process-resource-types');
      const types = expectStatus(r, 200) as { id: string; name: string; cpu_limit: number; memory_limit: number; category: string }[];
      assert.ok(types.length >= 1);
      assertUniqueIds(types);
      assert.equal(new Set(types.map((t) => t.name)).size, types.length, 'names are unique');
      for (const t of types) {
        assert.ok(['hobby', 'standard', 'cpuOptimized', 'memoryOptimized'].includes(t.category));
        assert.ok(Number.isInteger(t.cpu_limit) && t.cpu_limit > 0);
        assert.ok(Number.isInteger(t.memory_limit) && t.memory_limit > 0);
      }
      assert.ok(
        types.some((t) => t.category === 'hobby'),
        'a hobby size exists',
      );
      assert.ok(
        types.some((t) => t.category === 'standard'),
        'a standard size exists',
      );
    });

    it('lists the 48 API key permissions (12 resources x 4 actions), each described', async () => {
      const r = await s.get('/resources/rbac/api-key-permissions');
      const perms = expectStatus(r, 200) as { id: string; name: string; description: string; resource: string; action: string }[];
      assert.equal(perms.length, 48);
      assertUniqueIds(perms);
      const expected = RESOURCES.flatMap((res) => ACTIONS.map((a) => `${res}:${a}`)).sort();
      assert.deepEqual(perms.map((p) => p.name).sort(), expected);
      for (const p of perms) {
        assert.match(p.name, /^[A-Z_]+:(CREATE|READ|UPDATE|DELETE)$/);
        assert.equal(p.name, `${p.resource}:${p.action}`, 'resource and action match the name');
        assert.equal(typeof p.description, 'string');
        assert.ok(p.description.trim().length > 0, `${p.name} has a description`);
      }
    });

    it('lists the four predefined roles; Viewer only reads and Admin has everything', async () => {
      const r = await s.get('/resources/rbac/api-key-roles');
      const roles = expectStatus(r, 200) as { id: string; name: string; description: string; permissions: string[] }[];
      assertUniqueIds(roles);
      assert.deepEqual(roles.map((x) => x.name).sort(), [...ROLE_NAMES].sort());
      const perms = new Set(((await s.get('/resources/rbac/api-key-permissions')).body as { name: string }[]).map((p) => p.name));
      for (const role of roles) {
        assert.equal(typeof role.description, 'string');
        assert.ok(role.description.length > 0);
        assert.ok(role.permissions.length > 0, `${role.name} grants something`);
        for (const p of role.permissions) assert.ok(perms.has(p), `${role.name}: ${p} is a listed permission`);
      }
      const byName = new Map(roles.map((x) => [x.name, x]));
      const viewer = byName.get('Company Viewer')!;
      assert.ok(
        viewer.permissions.every((p) => p.endsWith(':READ')),
        'Viewer permissions are all :READ',
      );
      assert.deepEqual([...viewer.permissions].sort(), RESOURCES.map((x) => `${x}:READ`).sort());
      assert.deepEqual([...byName.get('Company Admin')!.permissions].sort(), [...perms].sort());
      const dev = byName.get('Company Developer')!.permissions;
      assert.ok(!dev.some((p) => p.startsWith('API_KEY:') || p.startsWith('BILLING:')), 'Developer has no API key or billing permission');
      assert.ok(dev.includes('PROJECT:CREATE') && dev.includes('APP:DELETE'));
      const billing = byName.get('Company Billing')!.permissions;
      assert.ok(billing.includes('BILLING:UPDATE') && !billing.includes('PROJECT:READ'));
    });

    it('serves reference data to every key of any role and needs a key', async () => {
      const viewer = await s.newKey({ role: 'Company Viewer' });
      const billing = await s.newKey({ role: 'Company Billing' });
      const scoped = await s.newKey({ capabilities: [{ permission: 'PROJECT:READ', id_resource: '00000000-0000-4000-8000-000000000000' }] });
      for (const path of REFERENCE_PATHS) {
        const admin = await s.get(path);
        expectStatus(admin, 200);
        for (const token of [viewer.token, billing.token, scoped.token]) {
          const r = await s.get(path, { token });
          expectStatus(r, 200);
          assert.deepEqual(r.body, admin.body, `${path} is the same for every key`);
        }
        expectError(await s.get(path, { token: null }), 401);
        expectError(await s.get(path, { token: `svl_${'0'.repeat(64)}` }), 401);
      }
    });
  });
}
