// Persistent volumes of an application (/applications/{id}/volumes), operations this project
// decided (x-decided in the served document): CRUD with the list envelope, the mount path and
// size rules, company and key scoping, removal with the application, none on a clone, and the
// port a runtime driver mounts them from. Every response is validated against the served document.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, uniqueName, UUID_RE, waitFor } from '../helpers/util.js';
import { IMMEDIATE_ENV, appPath, createApp, setProgression } from '../applications/support.js';

const FIELDS = ['application_id', 'created_at', 'id', 'mount_path', 'name', 'size_gb', 'status', 'updated_at', 'used_bytes'];
const volumes = (appId: string) => `${appPath(appId)}/volumes`;
const volume = (appId: string, id: string) => `${volumes(appId)}/${id}`;

for (const kind of DB_KINDS) {
  describe(`volumes [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const newApp = async () => (await createApp(s, { kind: 'image' })).id as string;
    const create = async (appId: string, body: Record<string, unknown>, token?: string) => s.post(volumes(appId), body, { token });
    const created = async (appId: string, body: Record<string, unknown>) => expectStatus(await create(appId, body), 201);

    it('serves the five operations and their schemas marked x-decided, with the application permissions', async () => {
      const doc = expectStatus(await s.get('/v3/openapi.json'), 200);
      const ops = [
        ['/applications/{id}/volumes', 'get', 'APP:READ'],
        ['/applications/{id}/volumes', 'post', 'APP:UPDATE'],
        ['/applications/{id}/volumes/{volume_id}', 'get', 'APP:READ'],
        ['/applications/{id}/volumes/{volume_id}', 'patch', 'APP:UPDATE'],
        ['/applications/{id}/volumes/{volume_id}', 'delete', 'APP:UPDATE'],
      ] as const;
      for (const [path, method, permission] of ops) {
        const op = doc.paths[path]?.[method];
        assert.ok(op, `${method} ${path} is served`);
        assert.equal(op['x-decided'], true, `${method} ${path} is x-decided`);
        assert.equal(op['x-permission'], permission);
        if (op.requestBody) assert.equal(op.requestBody.content['application/json'].schema['x-decided'], true, `${method} ${path} body`);
      }
      assert.equal(doc.paths['/applications/{id}/volumes'].post.responses['201'].content['application/json'].schema['x-decided'], true);
    });

    it('creates, reads, lists, grows, renames, moves and deletes a volume', async () => {
      const appId = await newApp();
      const v = await created(appId, { name: 'data', mount_path: '/var/lib/data', size_gb: 10 });
      assert.deepEqual(Object.keys(v).sort(), FIELDS);
      assert.match(v.id, UUID_RE);
      assert.equal(v.application_id, appId);
      assert.deepEqual([v.name, v.mount_path, v.size_gb, v.status, v.used_bytes], ['data', '/var/lib/data', 10, 'available', null]);
      assert.deepEqual(expectStatus(await s.get(volume(appId, v.id)), 200), v);
      assert.deepEqual(expectStatus(await s.get(volumes(appId)), 200), { data: [v], total: 1, offset: 0, limit: 25 });

      const grown = expectStatus(await s.patch(volume(appId, v.id), { size_gb: 20, name: 'files', mount_path: '/srv/files/' }), 200);
      assert.deepEqual([grown.name, grown.mount_path, grown.size_gb, grown.created_at], ['files', '/srv/files', 20, v.created_at]);
      assert.ok(grown.updated_at >= v.updated_at);
      assert.deepEqual(expectStatus(await s.get(volume(appId, v.id)), 200), grown);
      // The same size again is not a shrink, and a body that changes nothing keeps the volume.
      assert.deepEqual(expectStatus(await s.patch(volume(appId, v.id), { size_gb: 20, mount_path: '/srv/files' }), 200), grown);

      assert.equal(expectStatus(await s.delete(volume(appId, v.id)), 200).message, 'Volume deleted');
      expectError(await s.get(volume(appId, v.id)), 404, 'Volume not found');
      expectError(await s.delete(volume(appId, v.id)), 404);
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 0);
    });

    it('pages the list oldest first', async () => {
      const appId = await newApp();
      const ids: string[] = [];
      for (const n of ['a', 'b', 'c']) ids.push((await created(appId, { name: n, mount_path: `/mnt/${n}`, size_gb: 1 })).id);
      const first = expectStatus(await s.get(`${volumes(appId)}?limit=2`), 200);
      assert.deepEqual([first.total, first.offset, first.limit], [3, 0, 2]);
      const second = expectStatus(await s.get(`${volumes(appId)}?limit=2&offset=2`), 200);
      assert.deepEqual(
        [...first.data, ...second.data].map((v: { id: string }) => v.id),
        ids,
      );
      expectError(await s.get(`${volumes(appId)}?limit=0`), 400);
    });

    it('stores the mount path normalised and refuses paths a volume cannot take', async () => {
      const appId = await newApp();
      assert.equal((await created(appId, { name: 'n', mount_path: '/var//lib/./x/../data/', size_gb: 1 })).mount_path, '/var/lib/data');
      const refused: [string, RegExp][] = [
        ['data', /absolute path/],
        ['./data', /absolute path/],
        ['/', /cannot be \//],
        ['//', /cannot be \//],
        ['/a/..', /cannot be \//],
        ['/proc', /\/proc or under it/],
        ['/proc/self', /\/proc or under it/],
        ['/sys/fs', /\/sys or under it/],
        ['/dev', /\/dev or under it/],
        ['/data:rw', /may contain only/],
        ['/da ta', /may contain only/],
      ];
      for (const [mount_path, message] of refused) expectError(await create(appId, { name: 'x', mount_path, size_gb: 1 }), 400, message);
      // Names that only look like reserved ones are fine.
      await created(appId, { name: 'devices', mount_path: '/devices', size_gb: 1 });
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 2);
    });

    it('refuses a duplicate name or path, nesting either way, and the eleventh volume', async () => {
      const appId = await newApp();
      const data = await created(appId, { name: 'data', mount_path: '/data', size_gb: 5 });
      expectError(await create(appId, { name: 'data', mount_path: '/other', size_gb: 1 }), 400, 'A volume named "data" already exists on this application');
      expectError(await create(appId, { name: 'copy', mount_path: '/data/', size_gb: 1 }), 400, /already the mount path of volume "data"/);
      expectError(await create(appId, { name: 'inner', mount_path: '/data/cache', size_gb: 1 }), 400, /inside volume "data" \(\/data\): volumes cannot nest/);
      const deep = await created(appId, { name: 'deep', mount_path: '/srv/a/b', size_gb: 1 });
      expectError(await create(appId, { name: 'outer', mount_path: '/srv', size_gb: 1 }), 400, /would contain volume "deep"/);
      // A sibling whose name merely starts the same is not nested.
      await created(appId, { name: 'data2', mount_path: '/data2', size_gb: 1 });
      // Updates follow the same rules, a volume never clashes with itself.
      expectError(await s.patch(volume(appId, deep.id), { mount_path: '/data/x' }), 400, /volumes cannot nest/);
      expectError(await s.patch(volume(appId, deep.id), { name: 'data' }), 400, /already exists/);
      expectStatus(await s.patch(volume(appId, data.id), { mount_path: '/data', name: 'data' }), 200);
      for (let i = 3; i < 10; i++) await created(appId, { name: `v${i}`, mount_path: `/v${i}`, size_gb: 1 });
      expectError(await create(appId, { name: 'v10', mount_path: '/v10', size_gb: 1 }), 400, 'An application can have at most 10 volumes');
      // Other applications have their own paths and names.
      await created(await newApp(), { name: 'data', mount_path: '/data', size_gb: 1 });
    });

    it('concurrent creates of nesting paths: exactly one wins, the others get 400', async () => {
      const appId = await newApp();
      const paths = ['/cache', '/cache/a', '/cache/a/b', '/cache/', '/cache/c'];
      const results = await Promise.all(paths.map((p, i) => create(appId, { name: `c${i}`, mount_path: p, size_gb: 1 })));
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 400, 400, 400, 400], results.map((r) => r.text).join('\n'));
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 1);
    });

    it('size: whole gigabytes from 1 to 1024, and it grows but never shrinks', async () => {
      const appId = await newApp();
      for (const size_gb of [0, -1, 1025, 1.5, '10', null]) expectError(await create(appId, { name: 'x', mount_path: '/x', size_gb }), 400);
      const v = await created(appId, { name: 'x', mount_path: '/x', size_gb: 1024 });
      expectError(await s.patch(volume(appId, v.id), { size_gb: 1025 }), 400);
      const small = await created(appId, { name: 'y', mount_path: '/y', size_gb: 1 });
      expectError(await s.patch(volume(appId, small.id), { size_gb: 0 }), 400);
      const ten = expectStatus(await s.patch(volume(appId, small.id), { size_gb: 10 }), 200);
      assert.equal(ten.size_gb, 10);
      expectError(await s.patch(volume(appId, small.id), { size_gb: 9 }), 400, 'size_gb cannot shrink (10 GB to 9 GB): a volume can only grow');
      // A refused update changes nothing, not even the other fields it named.
      expectError(await s.patch(volume(appId, small.id), { size_gb: 2, mount_path: '/moved' }), 400, /cannot shrink/);
      assert.deepEqual(expectStatus(await s.get(volume(appId, small.id)), 200), ten);
    });

    it('the bodies are strict: unknown fields, bad names and missing fields are 400', async () => {
      const appId = await newApp();
      for (const body of [
        { name: 'x', mount_path: '/x', size_gb: 1, process_ids: [] },
        { name: 'Data', mount_path: '/x', size_gb: 1 },
        { name: 'da_ta', mount_path: '/x', size_gb: 1 },
        { name: '-x', mount_path: '/x', size_gb: 1 },
        { name: 'x'.repeat(64), mount_path: '/x', size_gb: 1 },
        { name: 'x', mount_path: `/${'x'.repeat(255)}`, size_gb: 1 },
        { name: 'x', size_gb: 1 },
        { mount_path: '/x', size_gb: 1 },
        { name: 'x', mount_path: '/x' },
      ])
        expectError(await create(appId, body), 400);
      const v = await created(appId, { name: 'x', mount_path: '/x', size_gb: 1 });
      expectError(await s.patch(volume(appId, v.id), { status: 'deleting' }), 400);
      expectError(await s.patch(volume(appId, v.id), { name: 'Not A Slug' }), 400);
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 1);
    });

    it("404 for another company's application and volume, an unknown one, and a volume through another application", async () => {
      const appId = await newApp();
      const v = await created(appId, { name: 'x', mount_path: '/x', size_gb: 1 });
      const other = await s.newCompany();
      for (const r of [
        await s.get(volumes(appId), { token: other.token }),
        await s.get(volume(appId, v.id), { token: other.token }),
        await s.post(volumes(appId), { name: 'y', mount_path: '/y', size_gb: 1 }, { token: other.token }),
        await s.patch(volume(appId, v.id), { size_gb: 2 }, { token: other.token }),
        await s.delete(volume(appId, v.id), { token: other.token }),
        await s.get(volumes(MISSING)),
      ])
        expectError(r, 404, 'Application not found');
      const sibling = await newApp();
      expectError(await s.get(volume(sibling, v.id)), 404, 'Volume not found');
      expectError(await s.delete(volume(sibling, v.id)), 404, 'Volume not found');
      expectError(await s.get(volume(appId, MISSING)), 404, 'Volume not found');
      expectError(await s.get(`${volumes(appId)}/not-a-uuid`), 400);
      assert.equal(expectStatus(await s.get(volume(appId, v.id)), 200).size_gb, 1, 'untouched by the other company');
    });

    it('permissions: APP:READ reads but cannot write (403), a key scoped to one application gets 404 for another', async () => {
      const a = await newApp();
      const b = await newApp();
      const va = await created(a, { name: 'x', mount_path: '/x', size_gb: 1 });
      const vb = await created(b, { name: 'x', mount_path: '/x', size_gb: 1 });
      const reader = (await s.newKey({ capabilities: [{ permission: 'APP:READ' }] })).token;
      expectStatus(await s.get(volumes(a), { token: reader }), 200);
      expectStatus(await s.get(volume(a, va.id), { token: reader }), 200);
      expectError(await create(a, { name: 'y', mount_path: '/y', size_gb: 1 }, reader), 403, /APP:UPDATE/);
      expectError(await s.patch(volume(a, va.id), { size_gb: 2 }, { token: reader }), 403, /APP:UPDATE/);
      expectError(await s.delete(volume(a, va.id), { token: reader }), 403, /APP:UPDATE/);
      const scoped = (
        await s.newKey({
          capabilities: [
            { permission: 'APP:READ', id_resource: a },
            { permission: 'APP:UPDATE', id_resource: a },
          ],
        })
      ).token;
      expectStatus(await create(a, { name: 'y', mount_path: '/y', size_gb: 1 }, scoped), 201);
      expectError(await s.get(volumes(b), { token: scoped }), 404);
      expectError(await s.delete(volume(b, vb.id), { token: scoped }), 404);
      expectStatus(await s.get(volume(b, vb.id)), 200);
    });

    it('an Idempotency-Key replays the create instead of making a second volume', async () => {
      const appId = await newApp();
      const headers = { 'idempotency-key': uniqueName('volume-key', { random: true }).replace(/ /g, '-') };
      const body = { name: 'once', mount_path: '/once', size_gb: 3 };
      const first = expectStatus(await s.post(volumes(appId), body, { headers }), 201);
      const again = expectStatus(await s.post(volumes(appId), body, { headers }), 201);
      assert.deepEqual(again, first);
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 1);
    });

    it('the runtime port lists the mounts, oldest first, and records measured usage', async () => {
      const appId = await newApp();
      const a = await created(appId, { name: 'a', mount_path: '/a', size_gb: 2 });
      const b = await created(appId, { name: 'b', mount_path: '/b/c', size_gb: 3 });
      const db = s.app.database.db;
      assert.deepEqual(await s.app.ports.volumes.of(db, appId), [
        { id: a.id, name: 'a', mountPath: '/a', sizeGb: 2 },
        { id: b.id, name: 'b', mountPath: '/b/c', sizeGb: 3 },
      ]);
      await s.app.ports.volumes.recordUsage(db, b.id, 5_000_000_000);
      assert.equal(expectStatus(await s.get(volume(appId, b.id)), 200).used_bytes, 5_000_000_000);
      assert.deepEqual(await s.app.ports.volumes.of(db, await newApp()), []);
    });

    it('a clone starts without volumes (the specification); the source keeps its own', async () => {
      const appId = await newApp();
      await created(appId, { name: 'data', mount_path: '/data', size_gb: 5 });
      const clone = expectStatus(await s.post(`${appPath(appId)}/clone`, { display_name: uniqueName('volume clone') }), 201);
      assert.deepEqual(expectStatus(await s.get(volumes(clone.id)), 200), { data: [], total: 0, offset: 0, limit: 25 });
      assert.equal(expectStatus(await s.get(volumes(appId)), 200).total, 1);
      // The clone may take the same name and path for volumes of its own.
      await created(clone.id, { name: 'data', mount_path: '/data', size_gb: 1 });
    });

    it('deleting the application shows its volumes deleting, refuses changes, then removes them', async () => {
      await setProgression(s, 'app_delete', { mode: 'reads', reads: 1 });
      const appId = await newApp();
      const v = await created(appId, { name: 'data', mount_path: '/data', size_gb: 5 });
      const keep = await newApp();
      await created(keep, { name: 'data', mount_path: '/data', size_gb: 5 });
      expectStatus(await s.delete(appPath(appId)), 200);
      assert.equal(expectStatus(await s.get(volume(appId, v.id)), 200).status, 'deleting');
      expectError(await s.patch(volume(appId, v.id), { size_gb: 6 }), 400, 'The application is being deleted');
      expectError(await create(appId, { name: 'late', mount_path: '/late', size_gb: 1 }), 400, 'The application is being deleted');
      await setProgression(s, 'app_delete', { mode: 'immediate' });
      await waitFor('application removed', async () => (await s.get(appPath(appId))).status === 404);
      expectError(await s.get(volumes(appId)), 404, 'Application not found');
      const rows = await s.app.database.db.selectFrom('volumes').select('id').where('app_id', '=', appId).execute();
      assert.deepEqual(rows, [], 'no volume row outlives its application');
      assert.equal((await listAll(s, volumes(keep))).length, 1, "another application's volumes stay");
    });
  });
}
