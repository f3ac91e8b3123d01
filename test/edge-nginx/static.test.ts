// Static sites served by nginx from a release directory, as the in-process edge serves them
// (src/modules/static-sites/runtime/local/serve.ts): pretty URLs and their redirects, directory
// redirects, the site's 404 page or the edge's, a single-page fallback, ETag and 304, gzip,
// Cache-Control by kind of file, and GET/HEAD only.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { ask, host, nginxSkip, TestEdge } from './support.js';
import { brotliStaticModule } from '../../src/shared/edge/nginx/process.js';
import type { EdgeTarget } from '../../src/shared/edge/table.js';

const APP_JS = `export function hello() {\n${'  console.log("hello from the static site");\n'.repeat(40)}}\n`;

describe('edge on nginx: static sites', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let root: string;
  let beside: string;
  const get = (hostname: string, path: string, headers: Record<string, string> = {}) => ask(edge.http.port, hostname, { path, headers });

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'slipway-edge-site-'));
    // nginx's workers run as `nobody` when it starts as root.
    chmodSync(root, 0o755);
    mkdirSync(join(root, 'docs'));
    mkdirSync(join(root, 'empty'));
    const files: Record<string, string> = {
      'index.html': '<h1>home</h1>',
      'about.html': '<h1>about</h1>',
      'docs/index.html': '<h1>docs</h1>',
      '404.html': '<h1>site 404</h1>',
      'app.js': APP_JS,
      'app.3f9a1c2e.js': 'hashed',
    };
    for (const [name, body] of Object.entries(files)) writeFileSync(join(root, name), body);
    const site = (o: Partial<Extract<EdgeTarget, { type: 'static' }>>): EdgeTarget => ({
      type: 'static',
      root,
      compressedRoot: null,
      prettyUrls: true,
      notFoundPage: '/404.html',
      fallback: null,
      ...o,
    });
    // A release's `beside/` tree (build.ts): the published files with a brotli and a gzip copy of
    // app.js next to it; `data.gz` the site published itself.
    beside = join(root, '..', `${root.split('/').pop()}-beside`);
    mkdirSync(join(beside, 'docs'), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, 'data.gz'), gzipSync('published gzip'));
    for (const [name, body] of Object.entries({ ...files, 'data.gz': gzipSync('published gzip') })) writeFileSync(join(beside, name), body);
    writeFileSync(join(beside, 'app.js.br'), brotliCompressSync(APP_JS));
    writeFileSync(join(beside, 'app.js.gz'), gzipSync(APP_JS));
    edge = await TestEdge.create();
    await edge.apply([
      host('site.test', site({})),
      host('copies.test', site({ compressedRoot: beside })),
      host('plain.test', site({ prettyUrls: false, notFoundPage: null })),
      host('spa.test', site({ fallback: '/index.html' })),
      host('lost.test', site({ notFoundPage: '/missing-404.html' })),
    ]);
  });

  after(async () => {
    await edge?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
    if (beside) rmSync(beside, { recursive: true, force: true });
  });

  it('serves pretty URLs and redirects the .html and index names to them', async () => {
    assert.equal((await get('site.test', '/')).body, '<h1>home</h1>');
    const about = await get('site.test', '/about');
    assert.equal(about.status, 200);
    assert.equal(about.body, '<h1>about</h1>');
    assert.match(String(about.headers['content-type']), /^text\/html/);
    const redirects: [string, string][] = [
      ['/about.html', '/about'],
      ['/about.html?x=1', '/about?x=1'],
      ['/index.html', '/'],
      ['/docs/index.html', '/docs/'],
      ['/docs', '/docs/'],
    ];
    for (const [from, to] of redirects) {
      const r = await get('site.test', from);
      assert.equal(r.status, 301, from);
      assert.equal(r.headers.location, to, from);
    }
    assert.equal((await get('site.test', '/docs/')).body, '<h1>docs</h1>');
    // A directory without an index file is not found (not nginx's 403).
    assert.equal((await get('site.test', '/empty/')).status, 404);
    assert.equal((await get('site.test', '/empty')).status, 404);
  });

  it('without pretty URLs serves names as they are', async () => {
    assert.equal((await get('plain.test', '/about.html')).status, 200);
    const r = await get('plain.test', '/about');
    assert.equal(r.status, 404);
    // No page of its own: the edge's.
    assert.match(r.body, /Nothing is published at this address/);
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  it("answers a missing path with the site's 404 page (or the edge's when the page is missing too)", async () => {
    const r = await get('site.test', '/nope');
    assert.equal(r.status, 404);
    assert.equal(r.body, '<h1>site 404</h1>');
    assert.match(String(r.headers['content-type']), /^text\/html/);
    const lost = await get('lost.test', '/nope');
    assert.equal(lost.status, 404);
    assert.match(lost.body, /Nothing is published/);
  });

  it('serves the fallback with 200 for any path not found (single-page applications)', async () => {
    const r = await get('spa.test', '/some/client/route');
    assert.equal(r.status, 200);
    assert.equal(r.body, '<h1>home</h1>');
    assert.equal((await get('spa.test', '/about')).body, '<h1>about</h1>');
  });

  it('sends an ETag and answers 304 to a matching If-None-Match, compressed or not', async () => {
    for (const enc of ['identity', 'gzip']) {
      const r = await get('site.test', '/app.js', { 'accept-encoding': enc });
      assert.equal(r.status, 200);
      const etag = String(r.headers.etag);
      assert.ok(etag.length > 2, enc);
      assert.ok(r.headers['last-modified']);
      const again = await get('site.test', '/app.js', { 'accept-encoding': enc, 'if-none-match': etag });
      assert.equal(again.status, 304, enc);
      assert.equal(again.body, '');
    }
  });

  it('compresses for clients that accept gzip', async () => {
    const r = await get('site.test', '/app.js', { 'accept-encoding': 'gzip, br' });
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.match(String(r.headers.vary), /Accept-Encoding/i);
    assert.equal(gunzipSync(r.raw).toString(), APP_JS);
    assert.ok(r.raw.length < APP_JS.length / 2);
    const plain = await get('site.test', '/app.js');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body, APP_JS);
  });

  it("answers the precompressed copy beside a file to a client that accepts its encoding, and never a copy's own name", async () => {
    const br = await get('copies.test', '/app.js', { 'accept-encoding': 'gzip, br' });
    assert.equal(br.status, 200);
    assert.equal(br.headers['content-encoding'], brotliStaticModule() ? 'br' : 'gzip');
    const body = br.headers['content-encoding'] === 'br' ? brotliDecompressSync(br.raw) : gunzipSync(br.raw);
    assert.equal(body.toString(), APP_JS);
    assert.match(String(br.headers['content-type']), /javascript/);
    const gz = await get('copies.test', '/app.js', { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(gz.raw).toString(), APP_JS);
    const plain = await get('copies.test', '/app.js');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body, APP_JS);
    // The copies are not pages of the site; what the site published under such a name is.
    for (const copy of ['/app.js.br', '/app.js.gz']) assert.equal((await get('copies.test', copy)).status, 404, copy);
    const published = await get('copies.test', '/data.gz');
    assert.equal(published.status, 200);
    assert.equal(gunzipSync(published.raw).toString(), 'published gzip');
    assert.equal((await get('copies.test', '/about')).body, '<h1>about</h1>');
  });

  it('sets Cache-Control as the in-process edge does', async () => {
    assert.equal((await get('site.test', '/about')).headers['cache-control'], 'public, max-age=0, s-maxage=60');
    assert.equal((await get('site.test', '/app.3f9a1c2e.js')).headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal((await get('site.test', '/app.js')).headers['cache-control'], 'public, max-age=300');
  });

  it('answers only GET and HEAD', async () => {
    const head = await ask(edge.http.port, 'site.test', { method: 'HEAD', path: '/about' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    const post = await ask(edge.http.port, 'site.test', { method: 'POST', path: '/about', body: 'x' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });
});
