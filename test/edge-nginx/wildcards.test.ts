// What nginx serves alone that the origin used to: wildcard custom domains (`*.example.com`) and a
// static site whose index file is not `index.html`.
//
// Wildcards follow the hostname registry's routeOf exactly: a name's own row decides (served: its
// owner's, even another company's; recorded but not served: unknown), then a static site's preview
// name `<label>--<hostname>`, then the wildcard of its parent, one label deep only. Over HTTPS a
// name under the wildcard that has a server of its own never gets the wildcard's certificate.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { LocalCertificates, withCertificates } from '../../src/shared/edge/certificates.js';
import type { EdgeHost, EdgeTarget } from '../../src/shared/edge/table.js';
import { loadTls } from '../../src/shared/tls.js';
import { waitFor } from '../helpers/util.js';
import { ask, handshake, host, nginxSkip, quietLog, startApp, TestEdge, upstream } from './support.js';

type App = Awaited<ReturnType<typeof startApp>>;

/** A site directory (0755: nginx's workers may run as another user) with these files. */
function siteDir(files: Record<string, string | Buffer>): string {
  const root = mkdtempSync(join(tmpdir(), 'slipway-edge-wild-'));
  chmodSync(root, 0o755);
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, name), body);
  }
  return root;
}

const site = (root: string, o: Partial<Extract<EdgeTarget, { type: 'static' }>> = {}): EdgeTarget => ({
  type: 'static',
  root,
  compressedRoot: null,
  prettyUrls: true,
  notFoundPage: '/404.html',
  fallback: null,
  ...o,
});

const owner = (id: string, companyId: string, kind = 'app') => ({ owner: { kind, id, companyId } });

describe('edge on nginx: wildcard domains', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let wild: App;
  let shop: App;
  let dataDir: string;
  let blog: string;
  let ca: Buffer;
  const name = (r: { status: number; body: string }) => (r.status === 200 ? (JSON.parse(r.body) as { name: string }).name : String(r.status));
  const get = async (hostname: string) => name(await ask(edge.http.port, hostname));

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-wildtls-'));
    ca = readFileSync((await loadTls({ mode: 'self-signed' }, dataDir)).caPath!);
    const certs = await new LocalCertificates(dataDir, quietLog).forHosts(['*.wild.test', 'shop.wild.test', 'blog.wild.test', 'feat--blog.wild.test']);
    const tls = (h: string) => ({ tls: certs.get(h)!, httpsRedirect: false });
    wild = await startApp('wild');
    shop = await startApp('shop');
    blog = siteDir({ 'index.html': '<h1>blog</h1>', '404.html': '<h1>blog 404</h1>' });
    edge = await TestEdge.create({ https: true });
    const hosts: EdgeHost[] = [
      // Another company's names under the wildcard: served as theirs, one without a certificate yet.
      host('shop.wild.test', upstream(shop.port), { ...owner('shop', 'company-b'), ...tls('shop.wild.test') }),
      host('nocert.wild.test', upstream(shop.port), owner('shop', 'company-b')),
      host('blog.wild.test', site(blog), { ...owner('blog', 'company-b', 'static-site'), ...tls('blog.wild.test') }),
      host('feat--blog.wild.test', site(blog, { prettyUrls: false }), { ...owner('blog', 'company-b', 'static-site'), ...tls('feat--blog.wild.test') }),
      host('*.wild.test', upstream(wild.port), { ...owner('wild', 'company-a'), ...tls('*.wild.test') }),
    ];
    // `pending.wild.test`: company B's custom domain, not verified yet; `blog.wild.test`'s preview names.
    await edge.apply(hosts, { hostnames: ['pending.wild.test'], previewsOf: ['blog.wild.test'] });
  });

  after(async () => {
    await edge?.stop();
    await wild?.close();
    await shop?.close();
    for (const d of [dataDir, blog]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('serves every name one label under the wildcard as its owner, and logs it for the owner', async () => {
    assert.equal(await get('a.wild.test'), 'wild');
    assert.equal(await get('x-1_y.wild.test'), 'wild');
    assert.equal(await get('A.WILD.TEST'), 'wild');
    const r = await ask(edge.http.port, 'logged.wild.test', { headers: { 'user-agent': 'wild-proof' } });
    assert.equal(r.headers.server, 'nginx');
    const line = await waitFor('the access log line', async () => edge.served.find((x) => x.userAgent === 'wild-proof'), 5000, 50);
    assert.deepEqual([line.owner.id, line.owner.companyId, line.host], ['wild', 'company-a', 'logged.wild.test']);
  });

  it('is one label deep: neither a deeper name nor the base name is the wildcard owner’s', async () => {
    assert.equal(await get('a.b.wild.test'), '404');
    assert.equal(await get('wild.test'), '404');
    assert.equal(await get('a.notwild.test'), '404');
  });

  it('an exact name owned by another service wins, whatever the order; a name recorded but not served stays unknown', async () => {
    assert.equal(await get('shop.wild.test'), 'shop');
    assert.equal(await get('nocert.wild.test'), 'shop');
    // Company B's pending domain: unknown (404), not captured by company A's wildcard.
    const pending = await ask(edge.http.port, 'pending.wild.test');
    assert.equal(pending.status, 404);
    assert.match(pending.body, /Nothing is served at this address/);
  });

  it("a static site's preview names under the wildcard are the site's: known labels served, unknown ones 404", async () => {
    const preview = await ask(edge.http.port, 'feat--blog.wild.test');
    assert.equal(preview.status, 200);
    assert.match(preview.body, /<h1>blog<\/h1>/);
    const unknown = await ask(edge.http.port, 'nope--blog.wild.test');
    assert.equal(unknown.status, 404);
    assert.match(unknown.body, /Nothing is served at this address/);
    // Not a preview name of the site: the label is `a`, the rest `b--blog.wild.test` (no such site): the wildcard's.
    assert.equal(await get('a--b--blog.wild.test'), 'wild');
    // `<label>--<name>` of a name that is no static site's: the wildcard's.
    assert.equal(await get('feat--shop.wild.test'), 'wild');
  });

  it('the names held unknown under a wildcard survive the certificates being added to the table', async () => {
    const unknown = { hostnames: ['pending.wild.test'], previewsOf: ['blog.wild.test'] };
    const table = { hosts: [host('*.wild.test', upstream(wild.port))], unknown };
    const withTls = await withCertificates(table, new LocalCertificates(dataDir, quietLog), true);
    assert.deepEqual(withTls.unknown, unknown);
    assert.equal(withTls.hosts[0]!.tls?.certFile.includes('*.wild.test'), true, 'the wildcard has its certificate');
  });

  it('HTTPS: the wildcard has a certificate of its own; names of other servers never get it', async () => {
    const port = edge.https!.port;
    assert.deepEqual(await handshake(port, 'a.wild.test', ca), { authorized: true, san: 'DNS:*.wild.test' });
    assert.deepEqual(await handshake(port, 'shop.wild.test', ca), { authorized: true, san: 'DNS:shop.wild.test' });
    // No certificate of its own (yet): refused, not answered with the wildcard's.
    for (const refused of ['nocert.wild.test', 'pending.wild.test', 'nope--blog.wild.test', 'a.b.wild.test'])
      await assert.rejects(handshake(port, refused, ca), /alert|handshake|unrecognized|SSL/i, refused);
  });
});

describe('edge on nginx: a static site whose index file is not index.html', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let root: string;
  let beside: string;
  const HOME = `<h1>home</h1>${' <p>padding</p>'.repeat(40)}`;
  const get = (hostname: string, path: string, headers: Record<string, string> = {}) => ask(edge.http.port, hostname, { path, headers });

  before(async () => {
    const files = {
      'home.html': HOME,
      // Not the index: an ordinary page (pretty: `/index.html` → `/index`).
      'index.html': '<h1>not the index</h1>',
      'about.html': '<h1>about</h1>',
      'docs/home.html': '<h1>docs home</h1>',
      'nohome/page.html': '<h1>page</h1>',
      '404.html': '<h1>site 404</h1>',
      'default.htm': '<h1>default</h1>',
    };
    root = siteDir(files);
    // A release's `beside/` tree: the published files and a gzip copy of home.html next to it.
    beside = siteDir({ ...files, 'home.html.gz': gzipSync(HOME) });
    edge = await TestEdge.create();
    await edge.apply([
      host('home.test', site(root, { indexFile: 'home.html', compressedRoot: beside })),
      host('plain.test', site(root, { indexFile: 'default.htm', prettyUrls: false, notFoundPage: null })),
    ]);
  });

  after(async () => {
    await edge?.stop();
    for (const d of [root, beside]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it("serves a directory's index file, redirects a directory named without its slash", async () => {
    const home = await get('home.test', '/');
    assert.equal(home.status, 200);
    assert.equal(home.body, HOME);
    assert.equal(home.headers.server, 'nginx');
    assert.ok(home.headers.etag, 'an ETag');
    assert.equal((await get('home.test', '/docs/')).body, '<h1>docs home</h1>');
    const dir = await get('home.test', '/docs?x=1');
    assert.deepEqual([dir.status, dir.headers.location], [301, '/docs/?x=1']);
    // A directory without the index file has no page.
    assert.equal((await get('home.test', '/nohome/')).status, 404);
    assert.equal((await get('home.test', '/nohome')).status, 404);
  });

  it('keeps pretty URLs: the index file redirects to its directory, other pages to their name without .html', async () => {
    const top = await get('home.test', '/home.html');
    assert.deepEqual([top.status, top.headers.location], [301, '/']);
    const docs = await get('home.test', '/docs/home.html');
    assert.deepEqual([docs.status, docs.headers.location], [301, '/docs/']);
    const index = await get('home.test', '/index.html');
    assert.deepEqual([index.status, index.headers.location], [301, '/index']);
    assert.equal((await get('home.test', '/index')).body, '<h1>not the index</h1>');
    assert.equal((await get('home.test', '/about')).body, '<h1>about</h1>');
  });

  it("answers the site's 404 page, and the precompressed copy of the index file", async () => {
    const missing = await get('home.test', '/missing');
    assert.deepEqual([missing.status, missing.body], [404, '<h1>site 404</h1>']);
    const gz = await get('home.test', '/', { 'accept-encoding': 'gzip' });
    assert.equal(gz.status, 200);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(gz.raw).toString(), HOME);
  });

  it('an index file that is not HTML, without pretty URLs, is served under its own name too', async () => {
    assert.equal((await get('plain.test', '/')).body, '<h1>default</h1>');
    assert.equal((await get('plain.test', '/default.htm')).body, '<h1>default</h1>');
    assert.equal((await get('plain.test', '/home.html')).body, HOME);
    assert.equal((await get('plain.test', '/docs/')).status, 404);
  });
});
