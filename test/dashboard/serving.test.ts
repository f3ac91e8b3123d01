// How the server serves the dashboard's files: index.html at / and for the dashboard's own paths,
// hashed assets, the API's prefixes untouched (their JSON 404s), and a page saying how to build
// when web/dist is missing. Uses a small stand-in build, so it needs neither Chromium nor Vite.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-dashboard-'));
const INDEX = '<!doctype html><title>dash</title><div id="root"></div>';
mkdirSync(join(dir, 'assets'));
writeFileSync(join(dir, 'index.html'), INDEX);
writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
after(() => rmSync(dir, { recursive: true, force: true }));

for (const kind of DB_KINDS) {
  describe(`dashboard serving [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: { SLIPWAY_DASHBOARD_DIR: dir } });

    it('answers index.html at / and at the dashboard paths, with a same-origin CSP', async () => {
      for (const path of ['/', '/apps/0b6f5ad4-7c43-4b52-8f25-2d0f0c4c1d11', '/webhooks', '/operator']) {
        const r = await fetch(s.baseUrl + path);
        assert.equal(r.status, 200, path);
        assert.match(r.headers.get('content-type')!, /^text\/html/);
        assert.equal(await r.text(), INDEX);
        assert.match(r.headers.get('content-security-policy')!, /default-src 'self'/);
        assert.match(r.headers.get('content-security-policy')!, /connect-src 'self'/);
        assert.equal(r.headers.get('cache-control'), 'no-cache');
      }
      const head = await fetch(`${s.baseUrl}/`, { method: 'HEAD' });
      assert.equal(head.status, 200);
    });

    it('serves hashed assets as immutable and a missing asset as a 404', async () => {
      const r = await fetch(`${s.baseUrl}/assets/index-abc123.js`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type')!, /^text\/javascript/);
      assert.match(r.headers.get('cache-control')!, /immutable/);
      assert.equal(await r.text(), 'console.log(1)');
      assert.equal((await fetch(`${s.baseUrl}/assets/gone-000.js`)).status, 404);
      assert.equal((await fetch(`${s.baseUrl}/favicon.ico`)).status, 404);
      // No way out of the folder.
      assert.equal((await fetch(`${s.baseUrl}/assets/%2e%2e/%2e%2e/package.json`)).status, 404);
    });

    it('leaves the API, the operator surface, hooks and probes to their routes and JSON 404s', async () => {
      for (const path of ['/v3/nothing-here', '/_admin/nothing-here', '/hooks/nothing', '/s3/bucket-x', '/v3']) {
        const r = await fetch(s.baseUrl + path);
        // The operator surface and S3 answer with their own errors (401, S3's XML); the others are 404s.
        if (!path.startsWith('/_admin') && !path.startsWith('/s3')) assert.equal(r.status, 404, path);
        assert.notEqual(r.status, 200, path);
        assert.doesNotMatch(r.headers.get('content-type') ?? '', /text\/html/, path);
      }
      const health = await fetch(`${s.baseUrl}/healthz`);
      assert.deepEqual(await health.json(), { status: 'ok' });
      const doc = await fetch(`${s.baseUrl}/v3/openapi.json`);
      assert.equal(doc.status, 200);
      assert.equal((await doc.json()).openapi.startsWith('3'), true);
      // Only GET and HEAD reach the dashboard.
      const post = await fetch(`${s.baseUrl}/`, { method: 'POST' });
      assert.equal(post.status, 404);
      assert.equal((await post.json()).status, 404);
    });
  });
}

describe('dashboard not built', () => {
  let empty: string;
  before(() => {
    empty = mkdtempSync(join(tmpdir(), 'slipway-dashboard-empty-'));
  });
  after(() => rmSync(empty, { recursive: true, force: true }));
  const s = useServer(() => ({ env: { SLIPWAY_DASHBOARD_DIR: empty } }));

  it('says at / how to build it, and the API still answers', async () => {
    const r = await fetch(`${s.baseUrl}/`);
    assert.equal(r.status, 503);
    assert.match(await r.text(), /npm run build/);
    assert.equal((await s.get('/api-keys/validate')).status, 200);
  });
});
