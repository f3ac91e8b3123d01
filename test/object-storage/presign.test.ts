// POST /object-storage/{id}/presign (x-decided): URLs on the S3 data plane signed by the bucket's
// current key, used with plain HTTP (no key, no SDK): upload, download, HEAD and DELETE, the signed
// Content-Type, expiry and tampering refused with S3's errors, keys that rotate away, permissions
// per method, other companies and bad input.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { createBucket, expectError, expectStatus, MISSING, sleep, type Bucket } from './support.js';

interface Presigned {
  url: string;
  method: string;
  headers: Record<string, string>;
  access_key: string;
  expires_at: string;
}

for (const kind of DB_KINDS) {
  describe(`object storage presign [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });
    let b: Bucket;
    const presign = (body: Record<string, unknown>, token?: string, id = b.id) => s.post(`/object-storage/${id}/presign`, body, { token });
    const signed = async (body: Record<string, unknown>): Promise<Presigned> => expectStatus(await presign(body), 200);
    before(async () => {
      b = await createBucket(s);
    });

    it('a presigned PUT uploads and a presigned GET downloads the same bytes; HEAD and DELETE work too', async () => {
      const bytes = randomBytes(70_000);
      const before = Date.now();
      const put = await signed({ method: 'PUT', key: 'docs/report 1 (final)+é.bin', expires_in: 600, content_type: 'application/x-test' });
      assert.equal(put.method, 'PUT');
      assert.equal(put.access_key, b.access_key);
      assert.deepEqual(put.headers, { 'content-type': 'application/x-test' });
      const url = new URL(put.url);
      assert.equal(url.origin, s.baseUrl, 'on the host the API was reached at');
      assert.equal(url.pathname, `/s3/${b.bucket_name}/docs/report%201%20%28final%29%2B%C3%A9.bin`);
      assert.equal(url.searchParams.get('X-Amz-Expires'), '600');
      assert.equal(url.searchParams.get('X-Amz-SignedHeaders'), 'content-type;host');
      const expiresAt = Date.parse(put.expires_at);
      assert.ok(expiresAt >= Math.floor(before / 1000) * 1000 + 600_000 && expiresAt <= Date.now() + 600_000, put.expires_at);

      const up = await fetch(put.url, { method: 'PUT', headers: put.headers, body: bytes });
      assert.equal(up.status, 200, await up.text());
      // The control plane lists what the URL stored, with the signed content type.
      const list = expectStatus(await s.get(`/object-storage/${b.id}/objects?prefix=docs/&delimiter=/`), 200);
      assert.deepEqual(
        list.data.map((o: { key: string; size: number; content_type: string }) => [o.key, o.size, o.content_type]),
        [['docs/report 1 (final)+é.bin', bytes.length, 'application/x-test']],
      );

      const get = await signed({ method: 'GET', key: 'docs/report 1 (final)+é.bin' });
      assert.deepEqual(get.headers, {});
      const down = await fetch(get.url);
      assert.equal(down.status, 200);
      assert.equal(down.headers.get('content-type'), 'application/x-test');
      assert.ok(Buffer.from(await down.arrayBuffer()).equals(bytes), 'the downloaded bytes are the uploaded ones');

      const head = await fetch((await signed({ method: 'HEAD', key: 'docs/report 1 (final)+é.bin' })).url, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(bytes.length));
      // A URL allows its method only.
      const wrongMethod = await fetch(get.url, { method: 'DELETE' });
      assert.equal(wrongMethod.status, 403);
      assert.match(await wrongMethod.text(), /<Code>SignatureDoesNotMatch<\/Code>/);

      const del = await fetch((await signed({ method: 'DELETE', key: 'docs/report 1 (final)+é.bin' })).url, { method: 'DELETE' });
      assert.equal(del.status, 204);
      assert.deepEqual(expectStatus(await s.get(`/object-storage/${b.id}/objects`), 200).data, []);
      const gone = await fetch(get.url);
      assert.equal(gone.status, 404);
      assert.match(await gone.text(), /<Code>NoSuchKey<\/Code>/);
    });

    it('the signed Content-Type must be sent as given; a tampered URL is refused', async () => {
      const put = await signed({ method: 'PUT', key: 'typed.txt', content_type: 'text/plain' });
      const other = await fetch(put.url, { method: 'PUT', headers: { 'content-type': 'text/html' }, body: 'x' });
      assert.equal(other.status, 403);
      assert.match(await other.text(), /<Code>SignatureDoesNotMatch<\/Code>/);

      const get = await signed({ method: 'GET', key: 'typed.txt' });
      // Another key in the same URL, a longer expiry, a changed signature: each is refused.
      for (const tamper of [
        (u: URL) => (u.pathname = u.pathname.replace('typed.txt', 'other.txt')),
        (u: URL) => u.searchParams.set('X-Amz-Expires', '601'),
        (u: URL) =>
          u.searchParams.set(
            'X-Amz-Signature',
            u.searchParams.get('X-Amz-Signature')!.replace(/^./, (c) => (c === '0' ? '1' : '0')),
          ),
      ]) {
        const u = new URL(get.url);
        tamper(u);
        const r = await fetch(u);
        assert.equal(r.status, 403, u.toString());
        assert.match(await r.text(), /<Code>SignatureDoesNotMatch<\/Code>/);
      }
      assert.equal(expectStatus(await s.get(`/object-storage/${b.id}/objects`), 200).data.length, 0, 'nothing was stored');
    });

    it('an expired URL is refused with AccessDenied', async () => {
      const put = await signed({ method: 'PUT', key: 'late.txt', expires_in: 1 });
      await sleep(2100);
      const r = await fetch(put.url, { method: 'PUT', body: 'late' });
      assert.equal(r.status, 403);
      const text = await r.text();
      assert.match(text, /<Code>AccessDenied<\/Code>/);
      assert.match(text, /Request has expired/);
    });

    it('URLs signed before a rotation stop working when the old key does', async () => {
      const c = await createBucket(s);
      const old: Presigned = expectStatus(await presign({ method: 'GET', key: 'k.txt' }, undefined, c.id), 200);
      assert.equal(old.access_key, c.access_key);
      const rotated = expectStatus(await s.post(`/object-storage/${c.id}/rotate-credentials`, { old_keys_ttl_hours: 0 }), 200);
      const r = await fetch(old.url);
      assert.equal(r.status, 403);
      assert.match(await r.text(), /<Code>InvalidAccessKeyId<\/Code>/);
      const fresh = expectStatus(await presign({ method: 'PUT', key: 'k.txt' }, undefined, c.id), 200);
      assert.equal(fresh.access_key, rotated.access_key, 'signed by the newest current key');
      assert.equal((await fetch(fresh.url, { method: 'PUT', body: 'new' })).status, 200);
    });

    it('a bucket with no current key answers 409', async () => {
      const c = await createBucket(s);
      await s.app.database.db.deleteFrom('object_storage_keys').where('bucket_id', '=', c.id).execute();
      expectError(await presign({ method: 'GET', key: 'a' }, undefined, c.id), 409, /no current key/);
    });

    it('reading needs OBJECT_STORAGE:READ, writing and deleting OBJECT_STORAGE:UPDATE; other companies and unknown ids get 404', async () => {
      const viewer = await s.newKey({ role: 'Company Viewer' });
      const g = expectStatus(await presign({ method: 'GET', key: 'v.txt' }, viewer.token), 200);
      assert.match(g.url, /X-Amz-Signature=/);
      expectStatus(await presign({ method: 'HEAD', key: 'v.txt' }, viewer.token), 200);
      for (const method of ['PUT', 'DELETE']) expectError(await presign({ method, key: 'v.txt' }, viewer.token), 403, /OBJECT_STORAGE:UPDATE/);
      // A key granted UPDATE on this bucket alone may upload to it.
      const scoped = await s.newKey({
        capabilities: [
          { permission: 'OBJECT_STORAGE:READ', id_resource: b.id },
          { permission: 'OBJECT_STORAGE:UPDATE', id_resource: b.id },
        ],
      });
      expectStatus(await presign({ method: 'PUT', key: 'v.txt' }, scoped.token), 200);
      const c = await createBucket(s);
      expectError(await presign({ method: 'GET', key: 'v.txt' }, scoped.token, c.id), 404);
      const noUpdate = await s.newKey({ capabilities: [{ permission: 'OBJECT_STORAGE:READ', id_resource: null }] });
      expectError(await presign({ method: 'PUT', key: 'v.txt' }, noUpdate.token), 403);
      const noRead = await s.newKey({ capabilities: [{ permission: 'APP:READ', id_resource: null }] });
      expectError(await presign({ method: 'GET', key: 'v.txt' }, noRead.token), 403, /OBJECT_STORAGE:READ/);

      const other = await s.newCompany();
      expectError(await presign({ method: 'GET', key: 'v.txt' }, other.token), 404);
      expectError(await presign({ method: 'PUT', key: 'v.txt' }, other.token), 404);
      expectError(await presign({ method: 'GET', key: 'v.txt' }, undefined, MISSING), 404);
    });

    it('bad input answers 400', async () => {
      for (const body of [
        {},
        { method: 'POST', key: 'a' },
        { method: 'GET' },
        { method: 'GET', key: '' },
        { method: 'GET', key: 'a', expires_in: 0 },
        { method: 'GET', key: 'a', expires_in: 604801 },
        { method: 'GET', key: 'a', expires_in: 1.5 },
        { method: 'GET', key: 'a', content_type: 'text/plain' },
        { method: 'PUT', key: 'a', content_type: 'text/plain\nx-evil: 1' },
        { method: 'GET', key: 'é'.repeat(513) },
        { method: 'GET', key: 'a', extra: true },
      ])
        expectError(await presign(body), 400);
      expectError(await s.post(`/object-storage/not-a-uuid/presign`, { method: 'GET', key: 'a' }), 400);
      // The longest key and expiry are accepted.
      expectStatus(await presign({ method: 'GET', key: 'k'.repeat(1024), expires_in: 604800 }), 200);
    });
  });
}
