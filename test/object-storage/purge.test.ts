// POST /object-storage/{id}/purge-cache (x-decided): the answer (as the static sites' purge), its
// permission and tenancy; and, with an edge (SLIPWAY_RUNTIME=local), the bucket's public CDN reads
// kept by the edge's response cache as the object's Cache-Control allows, until a purge empties
// that bucket's entries only.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DB_KINDS, GENEROUS, skipUnless, useServer, type TestServer } from '../helpers/server.js';
import { LOCAL_ENV } from '../apps-real/support.js';
import { client, createBucket, expectError, expectStatus, MISSING, sleep, waitFor, type Bucket } from './support.js';

/** A GET on the API server's port with the bucket's CDN hostname as Host. */
function cdnGet(s: TestServer, b: Bucket, path: string, headers: Record<string, string> = {}) {
  const base = new URL(s.baseUrl);
  return new Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
    const req = request({ host: base.hostname, port: base.port, path, headers: { host: `${b.domain}:${base.port}`, ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The answer once the edge serves it from its cache: a response is kept when the server finished
 * sending it, which may be just after this process's client read its end.
 */
const cached = (s: TestServer, b: Bucket, path: string) =>
  waitFor(
    `${path} answered from the cache`,
    async () => {
      const r = await cdnGet(s, b, path);
      return r.headers['x-cache'] === 'HIT' ? r : undefined;
    },
    5_000,
  );

const put = (b: Bucket, key: string, body: string, cacheControl?: string) =>
  client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: key, Body: body, ContentType: 'text/plain', CacheControl: cacheControl }));

for (const kind of DB_KINDS) {
  describe(`object storage CDN purge [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    it('answers 200 with a message, as the static sites purge does, and writes the bucket updated_at', async () => {
      const b = await createBucket(s, { public_access: true });
      const r = expectStatus(await s.post(`/object-storage/${b.id}/purge-cache`), 200);
      assert.deepEqual(r, { message: 'Cache purge started' });
      const after = expectStatus(await s.get(`/object-storage/${b.id}`), 200);
      assert.ok(Date.parse(after.updated_at) > Date.parse(b.updated_at as string), 'a purge is a new cache version');
      // A bucket without a CDN domain purges nothing, and says so the same way.
      const plain = await createBucket(s);
      expectStatus(await s.post(`/object-storage/${plain.id}/purge-cache`), 200);
    });

    it('needs OBJECT_STORAGE:UPDATE; other companies and unknown ids get 404', async () => {
      const b = await createBucket(s, { public_access: true });
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectError(await s.post(`/object-storage/${b.id}/purge-cache`, undefined, { token: viewer.token }), 403, /OBJECT_STORAGE:UPDATE/);
      const other = await s.newCompany();
      expectError(await s.post(`/object-storage/${b.id}/purge-cache`, undefined, { token: other.token }), 404);
      expectError(await s.post(`/object-storage/${MISSING}/purge-cache`), 404);
      const scoped = await s.newKey({ capabilities: [{ permission: 'OBJECT_STORAGE:UPDATE', id_resource: b.id }] });
      expectStatus(await s.post(`/object-storage/${b.id}/purge-cache`, undefined, { token: scoped.token }), 200);
      const c = await createBucket(s);
      expectError(await s.post(`/object-storage/${c.id}/purge-cache`, undefined, { token: scoped.token }), 404);
    });
  });
}

describe('object storage CDN cache on the edge [sqlite, SLIPWAY_RUNTIME=local]', () => {
  const s = useServer({ env: LOCAL_ENV, rateLimits: GENEROUS });

  it('keeps public reads as Cache-Control allows until the bucket is purged; other buckets keep theirs', async () => {
    const a = await createBucket(s, { public_access: true });
    const other = await createBucket(s, { public_access: true });
    await put(a, 'styles/site.css', 'v1', 'public, max-age=300');
    await put(other, 'kept.txt', 'other v1', 'max-age=300');

    const first = await cdnGet(s, a, '/styles/site.css');
    assert.equal(first.status, 200);
    assert.equal(first.body, 'v1');
    assert.equal(first.headers['x-cache'], 'MISS');
    const hit = await cached(s, a, '/styles/site.css');
    assert.equal(hit.body, 'v1');
    assert.equal(hit.headers['cache-control'], 'public, max-age=300');
    assert.equal((await cdnGet(s, other, '/kept.txt')).headers['x-cache'], 'MISS');
    await cached(s, other, '/kept.txt');

    // Replaced under the same key: the CDN serves the kept copy until the purge.
    await put(a, 'styles/site.css', 'v2', 'public, max-age=300');
    assert.equal((await cdnGet(s, a, '/styles/site.css')).body, 'v1');
    expectStatus(await s.post(`/object-storage/${a.id}/purge-cache`), 200);
    const fresh = await cdnGet(s, a, '/styles/site.css');
    assert.equal(fresh.headers['x-cache'], 'MISS');
    assert.equal(fresh.body, 'v2');
    assert.equal((await cached(s, a, '/styles/site.css')).body, 'v2');
    const kept = await cdnGet(s, other, '/kept.txt');
    assert.equal(kept.headers['x-cache'], 'HIT', "another bucket's entries stay");
    assert.equal(kept.body, 'other v1');
  });

  it('keeps nothing an object does not allow, nor answers to a request with an Origin', async () => {
    const b = await createBucket(s, { public_access: true });
    await put(b, 'plain.txt', 'plain');
    await put(b, 'cors.txt', 'cors', 'max-age=300');
    for (let i = 0; i < 3; i++) {
      const r = await cdnGet(s, b, '/plain.txt');
      assert.equal(r.body, 'plain');
      assert.equal(r.headers['x-cache'], 'MISS');
      // Time for a response to be kept, were it kept.
      await sleep(100);
    }
    for (let i = 0; i < 3; i++) {
      const r = await cdnGet(s, b, '/cors.txt', { origin: 'https://example.com' });
      assert.equal(r.status, 200);
      assert.equal(r.body, 'cors');
      assert.equal(r.headers['x-cache'], undefined);
      await sleep(100);
    }
    // Without an Origin the same object is kept.
    assert.equal((await cdnGet(s, b, '/cors.txt')).headers['x-cache'], 'MISS');
    assert.equal((await cached(s, b, '/cors.txt')).body, 'cors');
    assert.equal((await cdnGet(s, b, '/missing.txt')).status, 404);
  });
});
