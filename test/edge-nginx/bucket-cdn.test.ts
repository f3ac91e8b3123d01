// A bucket's public CDN hostname served by Slipway's nginx edge (SLIPWAY_RUNTIME=local): nginx passes
// the request to the API server's S3 data plane with the hostname as Host, over HTTP and HTTPS (a
// certificate of the local CA), through its own cache (what the object's Cache-Control allows,
// emptied by the bucket's purge-cache only, never for a request with an Origin). A bucket without a
// CDN domain, or whose domain is disabled or which is deleted, is unknown at the edge.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { before, describe, it } from 'node:test';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GENEROUS, useServer, type TestServer } from '../helpers/server.js';
import { LOCAL_ENV } from '../apps-real/support.js';
import { client, createBucket, expectStatus, sleep, waitFor, type Bucket } from '../object-storage/support.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import { localCaPath } from '../../src/shared/tls.js';
import { ask, handshake, nginxSkip, type Answer } from './support.js';
import { addDestination, createLb } from '../load-balancers/support.js';

const put = (b: Bucket, key: string, body: string | Buffer, contentType: string, cacheControl?: string) =>
  client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: key, Body: body, ContentType: contentType, CacheControl: cacheControl }));

/** A GET through `send` (http's or https's request), its whole body kept. */
function get(send: (o: RequestOptions, cb: (res: IncomingMessage) => void) => ClientRequest, options: RequestOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = send({ ...options, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A GET on the API server's own port with the bucket's CDN hostname as Host (what the edge should answer alike). */
function apiGet(s: TestServer, host: string, path: string): Promise<Answer> {
  const base = new URL(s.baseUrl);
  return get(request, { host: base.hostname, port: base.port, path, headers: { host } });
}

/** A GET over HTTPS at the edge, the certificate verified against `ca` for `host`. */
function httpsGet(port: number, host: string, path: string, ca: Buffer): Promise<Answer> {
  return get(httpsRequest, { host: '127.0.0.1', port, path, servername: host, headers: { host }, ca });
}

describe('a bucket CDN hostname on the nginx edge (sqlite)', { skip: nginxSkip() }, () => {
  const s = useServer({ db: 'sqlite', env: { ...LOCAL_ENV, SLIPWAY_EDGE: 'nginx', SLIPWAY_EDGE_HTTPS_PORT: '0' }, rateLimits: GENEROUS });
  let edge: NginxEdge;
  before(() => {
    edge = s.app.runtimes.edge as NginxEdge;
  });
  const get = (b: Bucket, path: string, headers: Record<string, string> = {}) => ask(edge.port, b.domain!, { path, headers });
  /** The answer once nginx serves it from its cache (a response is kept once nginx read all of it). */
  const hit = (b: Bucket, path: string) =>
    waitFor(
      `${path} answered from nginx's cache`,
      async () => {
        const r = await get(b, path);
        return r.headers['x-cache'] === 'HIT' ? r : undefined;
      },
      5_000,
      50,
    );

  it('serves the public objects through the edge on HTTP and HTTPS (local CA), the bucket owning the hostname', async () => {
    const b = await createBucket(s, { public_access: true });
    assert.ok(b.domain);
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13]);
    await put(b, 'img/logo.png', bytes, 'image/png', 'public, max-age=300');
    await edge.changed();

    const entry = (await edge.table()).hosts.find((h) => h.hostname === b.domain);
    assert.equal(entry?.target.type, 'url', 'nginx serves the CDN hostname itself');
    assert.deepEqual(entry?.owner, { kind: 'object-storage', id: b.id, companyId: entry?.owner.companyId });
    assert.ok(entry?.tls, 'the hostname has its certificate');

    const r = await get(b, '/img/logo.png');
    assert.equal(r.status, 200);
    assert.deepEqual(r.raw, bytes);
    assert.equal(r.headers['content-type'], 'image/png');
    assert.equal(r.headers.server, 'nginx');

    const ca = readFileSync(localCaPath(s.app.config.dataDir));
    const shake = await handshake(edge.httpsPort!, b.domain!, ca);
    assert.equal(shake.authorized, true);
    assert.match(shake.san, new RegExp(`DNS:${b.domain!.replace(/\./g, '\\.')}`));
    const secure = await httpsGet(edge.httpsPort!, b.domain!, '/img/logo.png', ca);
    assert.equal(secure.status, 200);
    assert.deepEqual(secure.raw, bytes);
    assert.equal(secure.headers['content-type'], 'image/png');
  });

  it("keeps reads in nginx's cache until the bucket's purge-cache; another bucket's purge leaves them", async () => {
    const a = await createBucket(s, { public_access: true });
    const other = await createBucket(s, { public_access: true });
    await put(a, 'site.css', 'v1', 'text/css', 'public, max-age=300');
    await put(other, 'kept.txt', 'other v1', 'text/plain', 'max-age=300');
    await edge.changed();

    const first = await get(a, '/site.css');
    assert.equal(first.status, 200);
    assert.equal(first.body, 'v1');
    assert.equal(first.headers['x-cache'], 'MISS');
    assert.equal((await hit(a, '/site.css')).body, 'v1');
    assert.equal((await hit(other, '/kept.txt')).body, 'other v1');

    // Replaced under the same key: the edge serves its copy until the bucket is purged.
    await put(a, 'site.css', 'v2', 'text/css', 'public, max-age=300');
    await put(other, 'kept.txt', 'other v2', 'text/plain', 'max-age=300');
    assert.equal((await get(a, '/site.css')).body, 'v1');
    expectStatus(await s.post(`/object-storage/${other.id}/purge-cache`), 200);
    const kept = await get(a, '/site.css');
    assert.equal(kept.headers['x-cache'], 'HIT', "another bucket's purge leaves this one's entries");
    assert.equal(kept.body, 'v1');

    expectStatus(await s.post(`/object-storage/${a.id}/purge-cache`), 200);
    const fresh = await get(a, '/site.css');
    assert.equal(fresh.headers['x-cache'], 'MISS');
    assert.equal(fresh.body, 'v2');
    assert.equal((await hit(a, '/site.css')).body, 'v2');
    assert.equal((await get(other, '/kept.txt')).body, 'other v2', 'the purged bucket reads fresh');
  });

  it('keeps nothing private, nor for a request with an Origin; an unknown key answers as the API port does', async () => {
    const b = await createBucket(s, { public_access: true });
    await put(b, 'private.txt', 'p1', 'text/plain', 'private, max-age=300');
    await put(b, 'plain.txt', 'plain', 'text/plain');
    await put(b, 'cors.txt', 'c1', 'text/plain', 'public, max-age=300');
    await edge.changed();
    for (let i = 0; i < 3; i++) {
      for (const [path, body] of [
        ['/private.txt', 'p1'],
        ['/plain.txt', 'plain'],
      ]) {
        const r = await get(b, path!);
        assert.equal(r.status, 200);
        assert.equal(r.body, body);
        assert.notEqual(r.headers['x-cache'], 'HIT', `${path} is not kept`);
      }
      const c = await get(b, '/cors.txt', { origin: 'https://example.com' });
      assert.equal(c.status, 200);
      assert.notEqual(c.headers['x-cache'], 'HIT', 'a request with an Origin goes past the cache');
      // Time for a response to be kept, were it kept.
      await sleep(100);
    }
    await put(b, 'private.txt', 'p2', 'text/plain', 'private, max-age=300');
    assert.equal((await get(b, '/private.txt')).body, 'p2');

    const missing = await get(b, '/no/such/key.txt');
    const direct = await apiGet(s, b.domain!, '/no/such/key.txt');
    assert.equal(direct.status, 404);
    assert.equal(missing.status, direct.status);
    assert.match(missing.body, /NoSuchKey/);
    // A write is refused as on the API port (the CDN hostname serves reads only).
    const post = await ask(edge.port, b.domain!, { method: 'POST', path: '/x.txt', body: 'x' });
    assert.equal(post.status, 405);
  });

  it("serves a load balancer's bucket destination through nginx itself; a bucket without public objects answers 502", async () => {
    const b = await createBucket(s, { public_access: true });
    await put(b, 'site/index.html', '<h1>hi</h1>', 'text/html');
    const closed = await createBucket(s);
    const files = await createLb(s);
    await addDestination(s, files.id, { service_type: 'OBJECT_STORAGE', service_id: b.id });
    const shut = await createLb(s);
    await addDestination(s, shut.id, { service_type: 'OBJECT_STORAGE', service_id: closed.id });
    await edge.changed();

    const hosts = (await edge.table()).hosts;
    const entry = hosts.find((h) => h.owner.id === files.id);
    assert.ok(entry, "the load balancer's hostname is on the edge");
    assert.equal(entry.target.type, 'balance', 'nginx balances it itself');
    const [to] = entry.target.type === 'balance' ? entry.target.destinations : [];
    assert.ok(to && 'url' in to, 'the destination is a URL');
    assert.equal(to.url.host, b.domain, "the data plane, with the bucket's CDN hostname as Host");
    assert.deepEqual(to.owner, { kind: 'object-storage', id: b.id, companyId: entry.owner.companyId });

    const r = await ask(edge.port, entry.hostname, { path: '/site/index.html' });
    assert.equal(r.status, 200);
    assert.equal(r.body, '<h1>hi</h1>');
    assert.equal(r.headers.server, 'nginx');
    assert.equal((await ask(edge.port, entry.hostname, { path: '/site/missing.html' })).status, 404);

    const closedEntry = hosts.find((h) => h.owner.id === shut.id);
    assert.ok(closedEntry);
    assert.equal((await ask(edge.port, closedEntry.hostname, { path: '/x' })).status, 502);
  });

  it('a bucket without a CDN domain, or whose domain is disabled, or deleted, is unknown at the edge', async () => {
    const plain = await createBucket(s);
    assert.equal(plain.domain, null);
    const b = await createBucket(s, { public_access: true });
    await put(b, 'a.txt', 'a', 'text/plain');
    await edge.changed();
    assert.equal((await get(b, '/a.txt')).status, 200);
    const hosts = (await edge.table()).hosts.filter((h) => h.owner.id === plain.id);
    assert.deepEqual(hosts, [], 'a bucket without a CDN domain has no server');

    expectStatus(await s.delete(`/object-storage/${b.id}/domain`), 204);
    const gone = await get(b, '/a.txt');
    assert.equal(gone.status, 404);
    assert.doesNotMatch(gone.body, /NoSuchKey|NoSuchBucket/, "the edge's own 404, not the data plane's");

    // Enabled again, then the bucket deleted.
    const again = expectStatus(await s.post(`/object-storage/${b.id}/domain`), 200);
    assert.equal(again.domain, b.domain);
    assert.equal((await get(b, '/a.txt')).status, 200);
    expectStatus(await s.delete(`/object-storage/${b.id}`), 204);
    assert.equal((await get(b, '/a.txt')).status, 404);
  });
});
