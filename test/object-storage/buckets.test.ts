// Object storage control plane: buckets, keys and their rotation, CORS rules, the CDN domain,
// the object list and delete operations, permissions, tenancy, scoped keys, project membership and
// rate tiers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, createBucket, expectError, expectStatus } from './support.js';

const LIMITS = { service_creation: 1001, service_mutation: 1002, general_write: 1003, read: 100_004 };

for (const kind of DB_KINDS) {
  describe(`object storage control plane [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS });

    it('buckets of the same name in two companies, made in the same moment, get different S3 names', async () => {
      // Ids are version 7 (their first digits the time): the S3 name takes the id's random digits.
      const { token } = await s.newCompany();
      const [a, b] = await Promise.all([
        s.post('/object-storage', { display_name: 'Same Moment' }),
        s.post('/object-storage', { display_name: 'Same Moment' }, { token }),
      ]);
      const [x, y] = [expectStatus(a, 201), expectStatus(b, 201)];
      assert.equal(x.name, y.name);
      assert.notEqual(x.bucket_name, y.bucket_name);
      assert.equal(x.bucket_name, `same-moment-${x.id.replace(/-/g, '').slice(-8)}`);
    });

    it('create answers the bucket with its S3 name, endpoint and keys (secret sealed at rest)', async () => {
      const r = await s.post('/object-storage', { display_name: 'Media Files' });
      const b = expectStatus(r, 201);
      assert.equal(b.name, 'media-files');
      assert.equal(b.display_name, 'Media Files');
      assert.equal(b.location, 'enam');
      assert.equal(b.jurisdiction, 'default');
      assert.equal(b.project_id, null);
      assert.equal(b.company_id, s.companyId);
      assert.equal(b.domain, null);
      assert.match(b.bucket_name, /^media-files-[0-9a-f]{8}$/);
      assert.equal(b.endpoint, `${s.baseUrl}/s3`);
      assert.match(b.access_key, /^SVL[A-Z2-7]{17}$/);
      assert.equal(b.secret_key.length, 40);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation));
      const row = await s.app.database.db.selectFrom('object_storage_keys').selectAll().where('bucket_id', '=', b.id).executeTakeFirstOrThrow();
      assert.equal(row.access_key, b.access_key);
      assert.ok(!row.secret_enc.includes(b.secret_key));
      assert.equal(s.app.secrets.decrypt(row.secret_enc), b.secret_key);
      // A second bucket with the same display name gets its own names.
      const twin = await createBucket(s, { display_name: 'Media Files', location: 'weur', jurisdiction: 'eu' });
      assert.equal(twin.name, 'media-files-2');
      assert.notEqual(twin.bucket_name, b.bucket_name);
      assert.equal(twin.location, 'weur');
      assert.equal(twin.jurisdiction, 'eu');
    });

    it('create validates its body (400)', async () => {
      expectError(await s.post('/object-storage', { display_name: 'x' }), 400, /does not match the schema/);
      expectError(await s.post('/object-storage', { display_name: 'ok name', location: 'mars' }), 400);
      expectError(await s.post('/object-storage', { display_name: 'ok name', extra: 1 }), 400);
      // A project that names nothing is answered like a path id.
      expectError(await s.post('/object-storage', { display_name: 'ok name', project_id: MISSING }), 404);
      const before = expectStatus(await s.get('/object-storage?limit=100'), 200).total;
      assert.equal(expectStatus(await s.get('/object-storage?limit=100'), 200).total, before);
    });

    it('get shows the current access key but never a secret; list is ordered by name', async () => {
      const b = await createBucket(s, { display_name: 'Zeta store' });
      const g = expectStatus(await s.get(`/object-storage/${b.id}`), 200);
      assert.equal(g.access_key, b.access_key);
      assert.equal(g.secret_key, null);
      assert.equal(g.bucket_name, b.bucket_name);
      assert.equal(g.endpoint, b.endpoint);
      const l = expectStatus(await s.get('/object-storage?limit=100'), 200);
      const names = l.data.map((x: { name: string }) => x.name);
      assert.deepEqual(names, [...names].sort());
      const item = l.data.find((x: { id: string }) => x.id === b.id);
      assert.deepEqual(Object.keys(item).sort(), ['created_at', 'display_name', 'domain', 'id', 'jurisdiction', 'location', 'name', 'updated_at']);
      assert.ok(!l.text?.includes?.(b.secret_key));
      expectError(await s.get(`/object-storage/${MISSING}`), 404);
    });

    it('update renames and moves between projects; the system name stays', async () => {
      const p = expectStatus(await s.post('/projects', { display_name: 'Storage project' }), 201);
      const b = await createBucket(s, { project_id: p.id });
      let proj = expectStatus(await s.get(`/projects/${p.id}`), 200);
      assert.deepEqual(
        proj.services.map((x: { id: string; type: string }) => [x.id, x.type]),
        [[b.id, 'object-storage']],
      );
      const r = await s.patch(`/object-storage/${b.id}`, { display_name: 'Renamed', project_id: null });
      const u = expectStatus(r, 200);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      assert.equal(u.display_name, 'Renamed');
      assert.equal(u.name, b.name);
      assert.equal(u.project_id, null);
      assert.equal('access_key' in u, false);
      proj = expectStatus(await s.get(`/projects/${p.id}`), 200);
      assert.deepEqual(proj.services, []);
      // Projects add buckets through the service registry.
      expectStatus(await s.post(`/projects/${p.id}/services`, { service_id: b.id, service_type: 'object-storage' }), 200);
      assert.equal(expectStatus(await s.get(`/projects/${p.id}`), 200).services[0].id, b.id);
      expectError(await s.patch(`/object-storage/${b.id}`, { project_id: MISSING }), 404);
      expectError(await s.patch(`/object-storage/${MISSING}`, { display_name: 'Nope nope' }), 404);
      expectStatus(await s.delete(`/object-storage/${b.id}`), 204);
      assert.deepEqual(expectStatus(await s.get(`/projects/${p.id}`), 200).services, []);
    });

    it('delete removes the bucket, its keys, rules and domain', async () => {
      const b = await createBucket(s, { public_access: true });
      expectStatus(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: ['GET'], origins: ['*'] }), 201);
      expectStatus(await s.delete(`/object-storage/${b.id}`), 204);
      expectError(await s.get(`/object-storage/${b.id}`), 404);
      expectError(await s.delete(`/object-storage/${b.id}`), 404);
      const db = s.app.database.db;
      assert.equal((await db.selectFrom('object_storage_keys').select('access_key').where('bucket_id', '=', b.id).execute()).length, 0);
      assert.equal((await db.selectFrom('object_storage_cors').select('id').where('bucket_id', '=', b.id).execute()).length, 0);
      assert.equal((await db.selectFrom('domains').select('hostname').where('service_id', '=', b.id).execute()).length, 0, 'the CDN hostname is free again');
    });

    it('the CDN domain is enabled once, disabled once, and shown on the bucket', async () => {
      const b = await createBucket(s);
      const d = expectStatus(await s.post(`/object-storage/${b.id}/domain`), 200);
      assert.deepEqual(d, { id: b.id, domain: `${b.bucket_name}.cdn.localhost` });
      assert.equal(expectStatus(await s.get(`/object-storage/${b.id}`), 200).domain, d.domain);
      expectError(await s.post(`/object-storage/${b.id}/domain`), 400, /already/);
      expectStatus(await s.delete(`/object-storage/${b.id}/domain`), 204);
      assert.equal(expectStatus(await s.get(`/object-storage/${b.id}`), 200).domain, null);
      expectError(await s.delete(`/object-storage/${b.id}/domain`), 404);
      const pub = await createBucket(s, { public_access: true });
      assert.equal(pub.domain, `${pub.bucket_name}.cdn.localhost`);
    });

    it('CORS rules: append, list in order, replace, delete', async () => {
      const b = await createBucket(s);
      assert.deepEqual(expectStatus(await s.get(`/object-storage/${b.id}/cors-policies`), 200), { data: [] });
      expectStatus(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: ['GET', 'HEAD'], origins: ['https://a.example'] }), 201);
      expectStatus(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: ['PUT'], origins: ['*'], headers: ['Content-Type'] }), 201);
      const list = expectStatus(await s.get(`/object-storage/${b.id}/cors-policies`), 200).data;
      assert.equal(list.length, 2);
      assert.deepEqual(
        list.map((r: { methods: string[]; origins: string[]; headers: string[] | null }) => [r.methods, r.origins, r.headers]),
        [
          [['GET', 'HEAD'], ['https://a.example'], null],
          [['PUT'], ['*'], ['Content-Type']],
        ],
      );
      expectStatus(await s.patch(`/object-storage/${b.id}/cors-policies/${list[0].id}`, { methods: ['DELETE'], origins: ['https://b.example'] }), 200);
      const after = expectStatus(await s.get(`/object-storage/${b.id}/cors-policies`), 200).data;
      assert.deepEqual([after[0].id, after[0].methods, after[0].origins], [list[0].id, ['DELETE'], ['https://b.example']]);
      expectStatus(await s.delete(`/object-storage/${b.id}/cors-policies/${list[0].id}`), 204);
      assert.deepEqual(
        expectStatus(await s.get(`/object-storage/${b.id}/cors-policies`), 200).data.map((r: { id: string }) => r.id),
        [list[1].id],
      );
      expectError(await s.delete(`/object-storage/${b.id}/cors-policies/${list[0].id}`), 404);
      expectError(await s.patch(`/object-storage/${b.id}/cors-policies/nope`, { methods: ['GET'], origins: ['*'] }), 404);
      expectError(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: [], origins: ['*'] }), 400);
      expectError(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: ['PATCH'], origins: ['*'] }), 400);
      expectError(await s.post(`/object-storage/${b.id}/cors-policies`, { methods: ['GET'], origins: ['https://*.*.example'] }), 400, /origin/);
      expectError(await s.post(`/object-storage/${MISSING}/cors-policies`, { methods: ['GET'], origins: ['*'] }), 404);
    });

    it('rotation returns new keys once; the grace period is 0 to 168 hours', async () => {
      const b = await createBucket(s);
      const r = expectStatus(await s.post(`/object-storage/${b.id}/rotate-credentials`, { old_keys_ttl_hours: 24 }), 200);
      assert.equal(r.id, b.id);
      assert.notEqual(r.access_key, b.access_key);
      assert.equal(r.old_access_key, b.access_key);
      assert.equal(r.old_secret_key, null);
      const grace = Date.parse(r.old_keys_expired_at) - Date.now();
      assert.ok(grace > 23 * 3600_000 && grace <= 24 * 3600_000, `old keys expire in 24 hours (${grace} ms)`);
      const keys = await s.app.database.db.selectFrom('object_storage_keys').selectAll().where('bucket_id', '=', b.id).orderBy('created_at').execute();
      assert.deepEqual(
        keys.map((k) => [k.access_key, k.expires_at]),
        [
          [b.access_key, r.old_keys_expired_at],
          [r.access_key, null],
        ],
      );
      assert.equal(expectStatus(await s.get(`/object-storage/${b.id}`), 200).access_key, r.access_key);
      // Immediately (no body means 0 hours): the pair in use is gone; the first keeps its own grace.
      const now = expectStatus(await s.post(`/object-storage/${b.id}/rotate-credentials`), 200);
      const left = await s.app.database.db.selectFrom('object_storage_keys').selectAll().where('bucket_id', '=', b.id).orderBy('created_at').execute();
      assert.deepEqual(
        left.map((k) => [k.access_key, k.expires_at]),
        [
          [b.access_key, r.old_keys_expired_at],
          [now.access_key, null],
        ],
      );
      expectError(await s.post(`/object-storage/${b.id}/rotate-credentials`, { old_keys_ttl_hours: 169 }), 400);
      expectError(await s.post(`/object-storage/${b.id}/rotate-credentials`, { old_keys_ttl_hours: -1 }), 400);
      assert.equal((await s.app.database.db.selectFrom('object_storage_keys').select('access_key').where('bucket_id', '=', b.id).execute()).length, 2);
      expectError(await s.post(`/object-storage/${MISSING}/rotate-credentials`, {}), 404);
    });

    it('object list of an empty bucket; bad cursor is 400; deleting unknown keys is harmless', async () => {
      const b = await createBucket(s);
      assert.deepEqual(expectStatus(await s.get(`/object-storage/${b.id}/objects`), 200), { data: [], cursor: null });
      const bad = expectError(await s.get(`/object-storage/${b.id}/objects?cursor=!!`), 400);
      assert.match(bad, /cursor/);
      expectError(await s.get(`/object-storage/${b.id}/objects?limit=201`), 400);
      expectStatus(await s.request('DELETE', `/object-storage/${b.id}/objects`, { body: { keys: ['nothing-here'] } }), 204);
      expectError(await s.request('DELETE', `/object-storage/${b.id}/objects`, { body: { keys: [] } }), 400);
      expectError(await s.get(`/object-storage/${MISSING}/objects`), 404);
    });

    it('a Viewer reads; writes are 403 naming the OBJECT_STORAGE permission', async () => {
      const b = await createBucket(s);
      const viewer = (await s.newKey({ role: 'Company Viewer' })).token;
      expectStatus(await s.get(`/object-storage/${b.id}`, { token: viewer }), 200);
      expectStatus(await s.get(`/object-storage/${b.id}/objects`, { token: viewer }), 200);
      expectError(await s.post('/object-storage', { display_name: 'Nope nope' }, { token: viewer }), 403, /OBJECT_STORAGE:CREATE/);
      expectError(await s.patch(`/object-storage/${b.id}`, { display_name: 'Nope nope' }, { token: viewer }), 403, /OBJECT_STORAGE:UPDATE/);
      expectError(await s.post(`/object-storage/${b.id}/rotate-credentials`, {}, { token: viewer }), 403, /OBJECT_STORAGE:UPDATE/);
      expectError(await s.delete(`/object-storage/${b.id}`, { token: viewer }), 403, /OBJECT_STORAGE:DELETE/);
      const dev = (await s.newKey({ role: 'Company Developer' })).token;
      await createBucket(s, {}, dev);
    });

    it('another company sees none of the buckets (404)', async () => {
      const b = await createBucket(s);
      const other = await s.newCompany();
      const o = { token: other.token };
      expectError(await s.get(`/object-storage/${b.id}`, o), 404);
      expectError(await s.patch(`/object-storage/${b.id}`, { display_name: 'Stolen bucket' }, o), 404);
      expectError(await s.delete(`/object-storage/${b.id}`, o), 404);
      expectError(await s.get(`/object-storage/${b.id}/cors-policies`, o), 404);
      expectError(await s.get(`/object-storage/${b.id}/objects`, o), 404);
      expectError(await s.post(`/object-storage/${b.id}/rotate-credentials`, {}, o), 404);
      expectError(await s.post(`/object-storage/${b.id}/domain`, undefined, o), 404);
      assert.equal(expectStatus(await s.get('/object-storage', o), 200).total, 0);
    });

    it('a key scoped to one bucket sees only that bucket', async () => {
      const seen = await createBucket(s);
      const hidden = await createBucket(s);
      const scoped = (await s.newKey({ capabilities: [{ permission: 'OBJECT_STORAGE:READ', id_resource: seen.id }] })).token;
      expectStatus(await s.get(`/object-storage/${seen.id}`, { token: scoped }), 200);
      expectError(await s.get(`/object-storage/${hidden.id}`, { token: scoped }), 404);
      const l = expectStatus(await s.get('/object-storage?limit=100', { token: scoped }), 200);
      assert.deepEqual(
        l.data.map((x: { id: string }) => x.id),
        [seen.id],
      );
      assert.equal(l.total, 1);
    });

    it('database backup targets find buckets through the service registry', async () => {
      const b = await createBucket(s);
      const kind = s.app.services.get('object-storage');
      assert.ok(kind);
      const ctx = { app: s.app, tx: s.app.database.db, companyId: s.companyId, actor: null, scope: null, grants: null };
      assert.deepEqual(await kind.find(ctx, b.id), { id: b.id, name: b.name, display_name: b.display_name });
      assert.equal(await kind.find({ ...ctx, companyId: MISSING }, b.id), undefined);
    });
  });
}
