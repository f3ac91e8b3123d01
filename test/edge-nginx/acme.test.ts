// ACME certificates at the edge (SLIPWAY_EDGE_CERTIFICATES=acme). First nginx alone: the HTTP-01
// answer (`/.well-known/acme-challenge/<token>`, a file in nginx's directory) is served for every
// hostname before the HTTPS redirect, the IP restriction, maintenance and a static site's method
// check, and by the default server. Then a whole Slipway against Pebble (Let's Encrypt's test ACME
// server, validating on the edge's HTTP port): a static site's hostname gets a certificate that
// verifies against Pebble's root with its name; a custom domain whose DNS points nowhere is served
// over HTTP only, its failure logged, while another one gets its certificate; and the certificate
// source of a restarted Slipway (a new instance over the same data directory) uses the kept
// certificates and the same account, and renews a certificate with fewer than 30 days left.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect, type TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AcmeCertificates, directoryFolder } from '../../src/shared/edge/acme.js';
import { certificatesDir } from '../../src/shared/edge/certificates.js';
import { acmeChallengeDir } from '../../src/shared/edge/nginx/config.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import { loadTls } from '../../src/shared/tls.js';
import { GENEROUS, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/util.js';
import { edgeGet, LOCAL_ENV } from '../apps-real/support.js';
import { activeSiteDomain, deployedSite, gitMissing } from '../static-sites-real/support.js';
import { pebbleSkip, startPebble, type Pebble } from './acme-support.js';
import { ask, freePort, host, nginxSkip, quietLog, startApp, TestEdge, upstream } from './support.js';

const run = promisify(execFile);
const CHALLENGE = '/.well-known/acme-challenge/';

describe('edge on nginx: HTTP-01 answers', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;
  let dataDir: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-acme-'));
    await loadTls({ mode: 'self-signed' }, dataDir);
    const tls = { certFile: join(dataDir, 'tls', 'localhost.pem'), keyFile: join(dataDir, 'tls', 'localhost-key.pem') };
    const site = join(dataDir, 'site');
    mkdirSync(site);
    writeFileSync(join(site, 'index.html'), 'home');
    app = await startApp('app');
    edge = await TestEdge.create({ https: true });
    // Every check at once: redirect to HTTPS, an allow list the client is not on, maintenance.
    await edge.apply([
      host('localhost', upstream(app.port), {
        tls,
        httpsRedirect: true,
        ipRestriction: { type: 'allow', ips: ['10.9.9.9'] },
        maintenance: { html: '<p>down</p>' },
      }),
      host('site.test', { type: 'static', root: site, compressedRoot: null, prettyUrls: false, notFoundPage: null, fallback: null }),
    ]);
    mkdirSync(acmeChallengeDir(edge.dir), { recursive: true });
    writeFileSync(join(acmeChallengeDir(edge.dir), 'tok_1-A'), 'tok_1-A.thumbprint');
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers the challenge of a host in maintenance, behind an allow list and the HTTPS redirect', async () => {
    const r = await ask(edge.http.port, 'localhost', { path: `${CHALLENGE}tok_1-A` });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'tok_1-A.thumbprint');
    assert.match(String(r.headers['content-type']), /^text\/plain/);
    // Everything else on that host still meets the checks, the redirect first.
    assert.equal((await ask(edge.http.port, 'localhost', { path: '/x' })).status, 301);
    assert.equal((await ask(edge.http.port, 'localhost', { path: '/.well-known/other' })).status, 301);
    // A token nobody wrote is a 404, not the site.
    assert.equal((await ask(edge.http.port, 'localhost', { path: `${CHALLENGE}missing` })).status, 404);
  });

  it('answers it for a static site (whose other methods are refused) and for a name the table does not hold', async () => {
    const r = await ask(edge.http.port, 'site.test', { path: `${CHALLENGE}tok_1-A` });
    assert.deepEqual([r.status, r.body], [200, 'tok_1-A.thumbprint']);
    assert.equal((await ask(edge.http.port, 'site.test', { method: 'POST', path: '/' })).status, 405);
    const d = await ask(edge.http.port, 'unknown.test', { path: `${CHALLENGE}tok_1-A` });
    assert.deepEqual([d.status, d.body], [200, 'tok_1-A.thumbprint']);
    assert.equal((await ask(edge.http.port, 'unknown.test')).status, 404);
  });
});

/** A TLS handshake with `servername` at 127.0.0.1:port verified against `ca`: whether it was, and the certificate's names. */
function handshake(port: number, servername: string, ca: string): Promise<{ authorized: boolean; san: string; issuer: string }> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false }, () => {
      const peer = socket.getPeerCertificate();
      const out = { authorized: socket.authorized, san: peer.subjectaltname ?? '', issuer: String(peer.issuer?.CN ?? '') };
      socket.end();
      resolve(out);
    });
    socket.once('error', reject);
  });
}

const skip = nginxSkip() || pebbleSkip() || gitMissing();
// Pebble validates on the edge's HTTP port, so it is chosen before either starts.
const edgePort = skip ? 0 : await freePort();

describe('Slipway gets its edge certificates from an ACME server (Pebble, sqlite)', { skip }, () => {
  let pebble: Pebble;
  let root: string;
  const logLines: string[] = [];
  const unreachable = `nowhere-${process.pid}.example.test`;
  const reachable = `shop-${process.pid}.example.test`;
  /** A name only the certificate sources made in the tests order (nginx's default server answers its challenges). */
  const fresh = `again-${process.pid}.example.test`;

  before(async () => {
    pebble = await startPebble(edgePort);
    root = await pebble.root();
    // Validation of this name goes to an address nothing listens on.
    await pebble.pointAt(unreachable, '127.0.0.2');
  });
  after(async () => {
    await pebble?.stop();
  });

  const s = useServer(() => ({
    db: 'sqlite',
    env: {
      ...LOCAL_ENV,
      SLIPWAY_EDGE: 'nginx',
      SLIPWAY_EDGE_PORT: String(edgePort),
      SLIPWAY_EDGE_HTTPS_PORT: '0',
      SLIPWAY_EDGE_HTTPS_REDIRECT: '1',
      SLIPWAY_EDGE_CERTIFICATES: 'acme',
      SLIPWAY_EDGE_ACME_DIRECTORY: pebble.directory,
      SLIPWAY_EDGE_ACME_CA_FILE: pebble.caFile,
      SLIPWAY_EDGE_ACME_EMAIL: 'ops@example.com',
    },
    rateLimits: GENEROUS,
    logger: {
      level: 'info',
      stream: new Writable({
        write(chunk: Buffer, _enc, done) {
          logLines.push(...chunk.toString().split('\n').filter(Boolean));
          done();
        },
      }),
    },
  }));
  let edge: NginxEdge;
  let site: { id: string; hostname: string };
  const acmeDir = () => join(certificatesDir(s.app.config.dataDir), 'acme', directoryFolder(pebble.directory));
  const certified = (name: string) =>
    waitFor(
      `a certificate for ${name}`,
      async () => {
        const h = await handshake(edge.httpsPort!, name, root).catch(() => null);
        return h?.authorized ? h : null;
      },
      30_000,
      100,
    );

  before(async () => {
    edge = s.app.runtimes.edge as NginxEdge;
    site = await deployedSite(s, `acme-site-${Date.now() % 100000}`);
  });

  it("a static site's hostname gets a certificate from the ACME server, verified against its root", async () => {
    const h = await certified(site.hostname);
    assert.equal(h.san, `DNS:${site.hostname}`);
    assert.match(h.issuer, /^Pebble Intermediate CA/);
    const https = edge.httpsPort!;
    const rootFile = join(s.app.config.dataDir, 'pebble-root.pem');
    writeFileSync(rootFile, root);
    const { stdout } = await run('curl', [
      '-sS',
      '--cacert',
      rootFile,
      '--resolve',
      `${site.hostname}:${https}:127.0.0.1`,
      '-w',
      '\n%{http_code}',
      `https://${site.hostname}:${https}/`,
    ]);
    assert.equal(stdout.trimEnd().split('\n').at(-1), '200');
    assert.match(stdout, /home v1/);
    // Now that it has one, plain HTTP redirects.
    assert.equal((await edgeGet(edge.port, site.hostname)).status, 301);
    // The account key is made once, the owner's alone; so is the certificate's key.
    assert.equal(statSync(join(acmeDir(), 'account.key')).mode & 0o777, 0o600);
    const entry = (await edge.table()).hosts.find((x) => x.hostname === site.hostname)!;
    assert.equal(statSync(entry.tls!.keyFile).mode & 0o777, 0o600);
    assert.ok(entry.tls!.certFile.startsWith(acmeDir()));
  });

  it('a custom domain whose validation fails is served over HTTP only, the others get their certificates', async () => {
    for (const name of [unreachable, reachable]) await activeSiteDomain(s, site.id, name);
    const h = await certified(reachable);
    assert.equal(h.san, `DNS:${reachable}`);
    await waitFor('the failed order to be logged', () => logLines.find((l) => l.includes('ACME order failed') && l.includes(unreachable)), 30_000, 100);
    const warning = logLines.find((l) => l.includes(unreachable))!;
    assert.doesNotMatch(warning, /PRIVATE KEY/);
    // No certificate: served over plain HTTP (no redirect), its handshake refused.
    const r = await edgeGet(edge.port, unreachable);
    assert.equal(r.status, 200);
    assert.match(r.body, /home v1/);
    await assert.rejects(handshake(edge.httpsPort!, unreachable, root));
    const entry = (await edge.table()).hosts.find((x) => x.hostname === unreachable)!;
    assert.equal(entry.tls, null);
  });

  it("a restarted Slipway's certificate source keeps the certificates and the account", async () => {
    const key = readFileSync(join(acmeDir(), 'account.key'), 'utf8');
    const account = readFileSync(join(acmeDir(), 'account.url'), 'utf8');
    assert.match(account, /^https:\/\/127\.0\.0\.1:\d+\/.+/);
    let issued = 0;
    const again = new AcmeCertificates(
      { mode: 'acme', directory: pebble.directory, email: null, caFile: pebble.caFile },
      join(certificatesDir(s.app.config.dataDir), 'acme'),
      quietLog,
      { challengeDir: acmeChallengeDir(edge.nginx.dir), issued: () => issued++ },
    );
    // The kept certificate is answered at once, no order placed.
    const kept = await again.forHosts([site.hostname]);
    assert.ok(kept.get(site.hostname)?.certFile.startsWith(acmeDir()));
    assert.equal(again.pending, 0);
    // A new hostname (answered by nginx's default server) is ordered with the same account.
    assert.equal((await again.forHosts([fresh])).size, 0);
    await waitFor('the new certificate', () => issued === 1, 30_000, 50);
    assert.ok((await again.forHosts([fresh])).get(fresh));
    assert.equal(readFileSync(join(acmeDir(), 'account.key'), 'utf8'), key);
    assert.equal(readFileSync(join(acmeDir(), 'account.url'), 'utf8'), account);
  });

  it('renews a certificate with fewer than 30 days left, answering the current one until the new one lands', async () => {
    const source = (now?: () => number, issued = () => {}) =>
      new AcmeCertificates(
        { mode: 'acme', directory: pebble.directory, email: null, caFile: pebble.caFile },
        join(certificatesDir(s.app.config.dataDir), 'acme'),
        quietLog,
        { challengeDir: acmeChallengeDir(edge.nginx.dir), issued },
        now,
      );
    const current = (await source().forHosts([fresh])).get(fresh)!;
    assert.ok(current, 'the previous test issued it');
    // A clock 61 days on: Pebble's certificates are valid 90 days, so 29 are left.
    let issued = 0;
    const later = source(
      () => Date.now() + 61 * 86400_000,
      () => issued++,
    );
    assert.deepEqual((await later.forHosts([fresh])).get(fresh), current);
    assert.equal(later.pending, 1);
    await waitFor('the renewed certificate', () => issued === 1, 30_000, 50);
    // The new pair is what a restart finds (asked with today's clock: the renewed one too has 29 days left at the other); the replaced one is gone.
    const renewed = (await source().forHosts([fresh])).get(fresh)!;
    assert.notEqual(renewed.certFile, current.certFile);
    assert.equal(existsSync(current.certFile), false);
  });
});
