// Real static sites (SLIPWAY_RUNTIME=local): built from a local git repository with an npm build
// step, served by the edge (index, error page, pretty URLs, 304, compression, ranges), preview
// branches on their own hosts, deploy paths, and the edge cache with its purges — for static sites
// and for applications with their CDN on.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { brotliStaticModule } from '../../src/shared/edge/nginx/process.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, git, LOCAL_ENV } from '../apps-real/support.js';
import { APP_JS, buildLog, deploySite, finalDeployment, gitMissing, makeSiteRepo } from './support.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';

const missing = gitMissing();

for (const kind of DB_KINDS) {
  describe(`real static sites (${kind})`, { skip: missing || (await skipUnless(kind)) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV, rateLimits: GENEROUS });
    let port: number;
    const get = (host: string, path = '/', headers: Record<string, string> = {}, method = 'GET') => edgeGet(port, host, headers, path, method);
    before(() => {
      port = s.app.runtimes.edge!.port;
    });

    /** A site from a fresh repository, its initial deployment finished. */
    async function realSite(extra: Record<string, unknown> = {}) {
      const repo = makeSiteRepo();
      const site = expectStatus(
        await s.post('/static-sites', {
          display_name: uniqueName(`real ${kind}`),
          repo_url: repo.url,
          default_branch: 'main',
          source: 'publicGit',
          published_directory: 'dist',
          error_file: '404.html',
          ...extra,
        }),
        201,
      );
      const first = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data[0];
      const d = await finalDeployment(s, site.id, first.id);
      return { repo, site, d, host: `${site.name}.localhost` };
    }

    it('builds from git with npm and serves the release: index, error page, pretty URLs, 304, compression, ranges', async () => {
      const { repo, site, d, host } = await realSite({ node_version: '18' });
      assert.equal(d.status, 'success');
      assert.equal(d.commit_sha, repo.first);
      const log = await buildLog(s, site.id, d.id);
      assert.match(log, /Cloning file:/);
      assert.match(log, /npm run build/);
      assert.match(log, /built version v1/);
      assert.match(log, /node_version 18 requested: this machine's Node.js v\d+/);
      assert.match(log, /git-lfs is not installed|tracks no files with LFS/);
      assert.equal(expectStatus(await s.get(`/static-sites/${site.id}`), 200).status, 'deploymentSuccess');

      const home = await get(host);
      assert.equal(home.status, 200);
      assert.match(home.body, /home v1/);
      assert.match(String(home.headers['content-type']), /^text\/html/);
      assert.equal(home.headers['cache-control'], 'public, max-age=0, s-maxage=60');
      assert.ok(home.headers.etag);
      assert.ok(home.headers['last-modified']);
      // A repeated request with the ETag is answered 304 without a body.
      const again = await get(host, '/', { 'if-none-match': String(home.headers.etag) });
      assert.equal(again.status, 304);
      assert.equal(again.body, '');
      // The site's own hostname serves it too; unknown paths get the error file with 404.
      assert.match((await get(site.hostname)).body, /home v1/);
      const miss = await get(host, '/nope');
      assert.equal(miss.status, 404);
      assert.match(miss.body, /custom not found/);

      // Directories: a redirect to the slash, then the index file.
      const dir = await get(host, '/docs');
      assert.equal(dir.status, 301);
      assert.equal(dir.headers.location, '/docs/');
      assert.match((await get(host, '/docs/')).body, /docs/);

      // Pretty URLs: off, /about is a miss; on, it serves about.html and about.html redirects.
      assert.equal((await get(host, '/about')).status, 404);
      assert.equal(expectStatus(await s.post(`/static-sites/${site.id}/pretty-url/toggle`, {}), 200).is_turned_on, true);
      const about = await get(host, '/about');
      assert.equal(about.status, 200);
      assert.match(about.body, /about v1/);
      const moved = await get(host, '/about.html?x=1');
      assert.equal(moved.status, 301);
      assert.equal(moved.headers.location, '/about?x=1');
      assert.equal((await get(host, '/index.html')).headers.location, '/');

      // Hashed assets: immutable, a JavaScript type, compressed for clients that accept it.
      const asset = '/assets/app.1a2b3c4d.js';
      const plain = await get(host, asset);
      assert.equal(plain.body, APP_JS);
      assert.match(String(plain.headers['content-type']), /javascript/);
      assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.headers.vary, 'Accept-Encoding');
      const gz = await get(host, asset, { 'accept-encoding': 'gzip' });
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.equal(gunzipSync(gz.raw).toString(), APP_JS);
      assert.ok(gz.raw.length < APP_JS.length);
      const br = await get(host, asset, { 'accept-encoding': 'gzip, deflate, br' });
      // nginx answers the release's brotli copy when its brotli_static module is installed (scripts/install-edge.sh), else gzip.
      const gzipOnly = s.app.runtimes.edge!.driver === 'nginx' && !brotliStaticModule();
      assert.equal(br.headers['content-encoding'], gzipOnly ? 'gzip' : 'br');
      assert.equal((gzipOnly ? gunzipSync : brotliDecompressSync)(br.raw).toString(), APP_JS);
      assert.notEqual(gz.headers.etag, plain.headers.etag);
      // A copy's own name is not a page of the site.
      assert.equal((await get(host, `${asset}.br`)).status, 404);

      // Ranges.
      const part = await get(host, asset, { range: 'bytes=3-9' });
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-range'], `bytes 3-9/${Buffer.byteLength(APP_JS)}`);
      assert.equal(part.body, APP_JS.slice(3, 10));
      assert.equal((await get(host, asset, { range: 'bytes=99999-' })).status, 416);
      // Only GET and HEAD.
      assert.equal((await get(host, '/', {}, 'POST')).status, 405);
      const head = await get(host, '/', {}, 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
    });

    it('a preview branch is served on its own host while production keeps its release', async () => {
      const { repo, site, host } = await realSite();
      repo.branch('feature/New-Look');
      repo.commit({ 'src/version.txt': 'v2-preview' });
      const p = await deploySite(s, site.id, { branch: 'feature/New-Look', is_preview: true });
      assert.equal(p.status, 'success');
      const previewHost = `feature-new-look--${site.name}.localhost`;
      assert.match((await get(previewHost)).body, /home v2-preview/);
      assert.match((await get(`feature-new-look--${site.hostname}`)).body, /home v2-preview/);
      if (s.app.runtimes.edge!.driver === 'nginx') {
        // nginx names the preview hosts itself and serves the preview release from disk.
        const table = await (s.app.runtimes.edge as NginxEdge).table();
        for (const h of [previewHost, `feature-new-look--${site.hostname}`]) {
          const entry = table.hosts.find((x) => x.hostname === h);
          assert.equal(entry?.target.type, 'static', `${h}: ${JSON.stringify(entry)}`);
          assert.equal(entry?.owner.id, site.id);
        }
        assert.ok(!table.hosts.some((x) => x.hostname.startsWith('other--')));
      }
      assert.match((await get(host)).body, /home v1/);
      assert.equal((await get(`other--${site.name}.localhost`)).status, 404);
      assert.equal(expectStatus(await s.get(`/static-sites/${site.id}`), 200).status, 'deploymentSuccess');
    });

    it('deploy paths skip a commit that only touches ignored files; a failed build keeps the release live', async () => {
      const { repo, site, host } = await realSite();
      expectStatus(await s.patch(`/static-sites/${site.id}`, { ignore_deploy_paths: ['*.md', 'docs/**'] }), 200);
      repo.commit({ 'README.md': '# changed\n', 'docs/notes.txt': 'x' });
      const skipped = await deploySite(s, site.id);
      assert.equal(skipped.status, 'skipped');
      assert.match(await buildLog(s, site.id, skipped.id), /none of the 2 files changed since [0-9a-f]{7} counts \(ignore_deploy_paths\); nothing to deploy/);
      assert.equal(expectStatus(await s.get(`/static-sites/${site.id}`), 200).status, 'deploymentSuccess');

      // A change that counts deploys, with the site's build variables.
      expectStatus(await s.post(`/static-sites/${site.id}/env-vars`, { key: 'GREETING', value: 'hello-from-env' }), 201);
      repo.commit({ 'src/version.txt': 'v2' });
      const d2 = await deploySite(s, site.id);
      assert.equal(d2.status, 'success');
      assert.match((await get(host)).body, /home v2 hello-from-env/);

      // An allow list: a change outside it is skipped too.
      expectStatus(await s.patch(`/static-sites/${site.id}`, { ignore_deploy_paths: [], allow_deploy_paths: ['src/**'] }), 200);
      repo.commit({ 'build.js.bak': 'x' });
      assert.equal((await deploySite(s, site.id)).status, 'skipped');

      repo.commit({ 'src/version.txt': 'broken' });
      const bad = await deploySite(s, site.id);
      assert.equal(bad.status, 'failed');
      assert.match(await buildLog(s, site.id, bad.id), /build failed on purpose/);
      assert.match((await get(host)).body, /home v2 /);
      assert.equal(expectStatus(await s.get(`/static-sites/${site.id}`), 200).status, 'deploymentFailed');
    });

    it('cancelling a deployment kills its build; production keeps its release', async () => {
      const { repo, site, host } = await realSite();
      repo.commit({ 'src/version.txt': 'slow-2' });
      const d = expectStatus(await s.post(`/static-sites/${site.id}/deployments`, {}), 201);
      await waitFor('the build to start', async () => /slow build started/.test(await buildLog(s, site.id, d.id)), 60_000, 100);
      expectStatus(await s.post(`/static-sites/${site.id}/deployments/${d.id}/cancel`, {}), 200);
      assert.equal((await finalDeployment(s, site.id, d.id)).status, 'cancelled');
      // The killed build fails its phase, which removes the build directory (a build left to finish would keep it).
      const dir = join(s.app.config.dataDir, 'static-sites', 'builds', d.id);
      await waitFor('the build directory to go', () => !existsSync(dir));
      assert.doesNotMatch(await buildLog(s, site.id, d.id), /built version slow-2/);
      assert.match((await get(host)).body, /home v1/);
    });

    it('metrics and access logs count the requests the edge served the site', async () => {
      const from = new Date(Date.now() - 60_000).toISOString();
      const { site, host } = await realSite();
      // Pretty URLs off: /about.html is a file, /about a miss.
      const paths = ['/', '/about.html', '/missing', '/', '/about'];
      const statuses = [];
      for (const p of paths) statuses.push((await get(host, p)).status);
      assert.deepEqual(statuses, [200, 200, 404, 200, 404]);
      const to = () => new Date(Date.now() + 60_000).toISOString();
      const q = () => `from=${from}&to=${to()}`;
      const sum = (pts: { value: number }[]) => pts.reduce((n, p) => n + p.value, 0);
      await waitFor(
        "the site's request records",
        async () => sum(expectStatus(await s.get(`/static-sites/${site.id}/metrics/requests-per-minute?${q()}`), 200)) === paths.length,
      );
      const codes = expectStatus(await s.get(`/static-sites/${site.id}/metrics/top-status-codes?${q()}`), 200) as { status: string; total: number }[];
      assert.deepEqual(Object.fromEntries(codes.map((c) => [c.status, c.total])), { '200': 3, '404': 2 });
      const pages = expectStatus(await s.get(`/static-sites/${site.id}/metrics/top-pages?${q()}`), 200) as { page: string; total: number }[];
      assert.equal(pages.find((p) => p.page === '/')?.total, 2);
      const logs = expectStatus(await s.get(`/static-sites/${site.id}/access-logs?from=${from}&to=${to()}&limit=100`), 200);
      const lines = (Array.isArray(logs) ? logs : logs.data) as { message: string }[];
      assert.equal(lines.length, paths.length);
      assert.ok(
        lines.some((l) => l.message.includes('"GET /missing HTTP/1.1" 404')),
        lines.map((l) => l.message).join('\n'),
      );
    });

    // nginx serves a release's files from disk, uncached (a release never changes in place): the
    // in-process edge's cache is what this checks.
    it('the edge caches the site and a purge empties its cache only', async (t) => {
      if (s.app.runtimes.edge!.driver === 'nginx') return t.skip('nginx serves static files from disk, without the in-process cache');
      const a = await realSite();
      const b = await realSite();
      const first = await get(a.host, '/about.html');
      assert.equal(first.headers['x-cache'], 'MISS');
      const hit = await get(a.host, '/about.html');
      assert.equal(hit.headers['x-cache'], 'HIT');
      assert.equal(hit.body, first.body);
      expectStatus(await s.get(`/static-sites/${b.site.id}`), 200);
      await get(b.host, '/about.html');
      assert.equal((await get(b.host, '/about.html')).headers['x-cache'], 'HIT');
      // The file changes behind the edge's back: the cached copy is served until the purge.
      const file = join(s.app.config.dataDir, 'static-sites', 'releases', a.site.id, a.d.id, 'public', 'about.html');
      writeFileSync(file, '<h1>about changed</h1>');
      assert.match((await get(a.host, '/about.html')).body, /about v1/);
      expectStatus(await s.post(`/static-sites/${a.site.id}/purge-cache`, {}), 200);
      const fresh = await get(a.host, '/about.html');
      assert.equal(fresh.headers['x-cache'], 'MISS');
      assert.match(fresh.body, /about changed/);
      // The other site's entries stay.
      assert.equal((await get(b.host, '/about.html')).headers['x-cache'], 'HIT');
    });

    it('an application with its CDN on is answered from the edge cache until purged', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'slipway-cdn-'));
      git(dir, 'init', '-q', '-b', 'main');
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'cdn', version: '1.0.0', scripts: { start: 'node server.js' } }));
      writeFileSync(
        join(dir, 'server.js'),
        `let n = 0; require('http').createServer((req, res) => { n++; res.setHeader('cache-control', req.url === '/private' ? 'private, max-age=60' : 'public, max-age=60'); res.end('count ' + n); }).listen(process.env.PORT);\n`,
      );
      git(dir, 'add', '.');
      git(dir, 'commit', '-q', '-m', 'cdn app');
      const app = await createRealApp(s, `file://${dir}`, uniqueName(`cdn-${kind}`));
      assert.equal((await deploy(s, app.id)).status, 'success');
      const host = `${app.name}.localhost`;
      await waitFor('the application to answer', async () => (await get(host)).status === 200);
      // CDN off: every request reaches the application.
      const n1 = (await get(host)).body;
      assert.notEqual((await get(host)).body, n1);
      assert.equal(expectStatus(await s.post(`/applications/${app.id}/cdn/toggle`, {}), 200).is_turned_on, true);
      const stored = await get(host);
      assert.equal(stored.headers['x-cache'], 'MISS');
      const cached = await get(host);
      assert.equal(cached.headers['x-cache'], 'HIT');
      assert.equal(cached.body, stored.body);
      // What the application marks private is never kept.
      const p1 = await get(host, '/private');
      assert.notEqual((await get(host, '/private')).body, p1.body);
      expectStatus(await s.post(`/applications/${app.id}/purge-cache`, {}), 200);
      const after = await get(host);
      assert.equal(after.headers['x-cache'], 'MISS');
      assert.notEqual(after.body, stored.body);
    });
  });
}
