// HTTPS at the edge's nginx with a certificate from Slipway's local CA (`--tls self-signed`):
// handshakes verified against the CA (curl --cacert, node's https with `ca`), HTTP/2, the HTTP →
// HTTPS redirect as a per-host setting, and no certificate for names the edge does not serve.
// Then through Slipway (SLIPWAY_EDGE_HTTPS_PORT, SLIPWAY_EDGE_HTTPS_REDIRECT=1): a deployed static
// site over HTTPS and HTTP/2 with its certificate from the local CA, the redirect, an unknown
// name's handshake refused, and a custom domain verified in the test getting its certificate.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { get } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { loadTls, localCaPath } from '../../src/shared/tls.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import { GENEROUS, useServer } from '../helpers/server.js';
import { edgeGet, LOCAL_ENV } from '../apps-real/support.js';
import { activeSiteDomain, deployedSite, gitMissing } from '../static-sites-real/support.js';
import { ask, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';

const run = promisify(execFile);

describe('edge on nginx: TLS', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;
  let dataDir: string;
  let ca: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-tls-'));
    const material = await loadTls({ mode: 'self-signed' }, dataDir);
    ca = material.caPath!;
    const tls = { certFile: join(dataDir, 'tls', 'localhost.pem'), keyFile: join(dataDir, 'tls', 'localhost-key.pem') };
    app = await startApp('app');
    edge = await TestEdge.create({ https: true });
    await edge.apply([
      // The local CA's certificate names localhost (and 127.0.0.1).
      host('localhost', upstream(app.port), { tls, httpsRedirect: true }),
      host('127.0.0.1', upstream(app.port), { tls, httpsRedirect: false }),
    ]);
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const url = (path = '/') => `https://localhost:${edge.https!.port}${path}`;
  const resolve = () => `localhost:${edge.https!.port}:127.0.0.1`;

  it('completes a handshake curl verifies against the local CA, over HTTP/2', async () => {
    const { stdout } = await run('curl', ['-sS', '--http2', '--cacert', ca, '--resolve', resolve(), '-w', '\n%{http_version} %{http_code}', url('/secure')]);
    const [body, meta] = stdout.split('\n');
    assert.equal(meta, '2 200');
    const j = JSON.parse(body!);
    assert.equal(j.path, '/secure');
    assert.equal(j.proto, 'https');
    assert.equal(j.host, `localhost:${edge.https!.port}`);
  });

  it("is verified by node's https with the CA, and refused without it", async () => {
    const fetchTls = (withCa: boolean) =>
      new Promise<number>((res, rej) => {
        get(
          {
            host: '127.0.0.1',
            servername: 'localhost',
            port: edge.https!.port,
            path: '/',
            headers: { host: 'localhost' },
            ca: withCa ? readFileSync(ca) : undefined,
          },
          (r) => {
            r.resume();
            res(r.statusCode ?? 0);
          },
        ).on('error', rej);
      });
    assert.equal(await fetchTls(true), 200);
    await assert.rejects(fetchTls(false), /self[- ]signed|unable to (get|verify)/i);
  });

  it('redirects plain HTTP to HTTPS when the host asks for it', async () => {
    const r = await ask(edge.http.port, 'localhost', { path: '/a?b=1' });
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, `https://localhost:${edge.https!.port}/a?b=1`);
    const { stdout } = await run('curl', [
      '-sS',
      '-L',
      '--cacert',
      ca,
      '--resolve',
      resolve(),
      '-w',
      '\n%{http_code}',
      `http://localhost:${edge.http.port}/followed`,
    ]);
    assert.equal(stdout.split('\n')[1], '200');
    assert.equal(JSON.parse(stdout.split('\n')[0]!).path, '/followed');
    // Without the setting, HTTP is served.
    assert.equal((await ask(edge.http.port, '127.0.0.1')).status, 200);
  });

  it('rejects the handshake for a name it does not serve', async () => {
    const r = await run('curl', [
      '-sS',
      '--cacert',
      ca,
      '--resolve',
      `other.test:${edge.https!.port}:127.0.0.1`,
      `https://other.test:${edge.https!.port}/`,
    ]).catch((e) => e);
    assert.ok(r instanceof Error);
    assert.match(String((r as { stderr?: string }).stderr), /alert|handshake|SSL/i);
  });
});

/** A TLS handshake with `servername` at 127.0.0.1:port offering h2 and http/1.1; resolves with the socket's outcome. */
function handshake(port: number, servername: string, ca?: Buffer): Promise<{ alpn: string | false | null; authorized: boolean; san: string }> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      const out = { alpn: socket.alpnProtocol, authorized: socket.authorized, san: socket.getPeerCertificate().subjectaltname ?? '' };
      socket.end();
      resolve(out);
    });
    socket.once('error', reject);
  });
}

describe('Slipway serves HTTPS on its nginx edge (sqlite)', { skip: nginxSkip() || gitMissing() }, () => {
  const s = useServer({
    db: 'sqlite',
    env: { ...LOCAL_ENV, SLIPWAY_EDGE: 'nginx', SLIPWAY_EDGE_HTTPS_PORT: '0', SLIPWAY_EDGE_HTTPS_REDIRECT: '1' },
    rateLimits: GENEROUS,
  });
  let edge: NginxEdge;
  let httpsPort: number;
  let ca: string;
  let site: { id: string; hostname: string };

  before(async () => {
    edge = s.app.runtimes.edge as NginxEdge;
    httpsPort = edge.httpsPort!;
    ca = localCaPath(s.app.config.dataDir);
    site = await deployedSite(s, `tls-site-${Date.now() % 100000}`);
  });

  const curl = (hostname: string, ...args: string[]) => run('curl', ['-sS', '--cacert', ca, '--resolve', `${hostname}:${httpsPort}:127.0.0.1`, ...args]);

  it('a deployed static site answers over HTTPS and HTTP/2, its certificate verified against the local CA', async () => {
    assert.equal(edge.driver, 'nginx');
    assert.ok(httpsPort > 0 && httpsPort !== edge.port);
    assert.ok(existsSync(ca), 'the local CA is under the data directory');
    const { stdout } = await curl(site.hostname, '--http2', '-w', '\n%{http_version} %{http_code}', `https://${site.hostname}:${httpsPort}/`);
    const lines = stdout.trimEnd().split('\n');
    assert.equal(lines.at(-1), '2 200');
    assert.match(stdout, /home v1/);
    // Node's TLS with the CA: verified, ALPN h2, the certificate names the hostname.
    const h = await handshake(httpsPort, site.hostname, readFileSync(ca));
    assert.deepEqual([h.authorized, h.alpn], [true, 'h2']);
    assert.equal(h.san, `DNS:${site.hostname}`);
    // Without the CA, the chain is not trusted.
    await assert.rejects(handshake(httpsPort, site.hostname), /self[- ]signed|unable to (get|verify)/i);
    // Its key file is the owner's alone.
    const entry = (await edge.table()).hosts.find((x) => x.hostname === site.hostname)!;
    assert.ok(entry.tls, 'the table entry has its certificate');
    assert.equal(statSync(entry.tls.keyFile).mode & 0o777, 0o600);
    assert.ok(entry.tls.certFile.startsWith(s.app.config.dataDir));
  });

  it('redirects plain HTTP to the HTTPS URL, port included', async () => {
    const r = await edgeGet(edge.port, site.hostname, {}, '/docs/?q=1');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, `https://${site.hostname}:${httpsPort}/docs/?q=1`);
    const { stdout } = await run('curl', [
      '-sS',
      '-L',
      '--cacert',
      ca,
      '--resolve',
      `${site.hostname}:${httpsPort}:127.0.0.1`,
      '--resolve',
      `${site.hostname}:${edge.port}:127.0.0.1`,
      '-w',
      '\n%{http_code} %{url_effective}',
      `http://${site.hostname}:${edge.port}/`,
    ]);
    assert.equal(stdout.trimEnd().split('\n').at(-1), `200 https://${site.hostname}:${httpsPort}/`);
    // Unknown hosts over HTTP are still a 404, not a redirect.
    assert.equal((await edgeGet(edge.port, 'nobody-here.localhost')).status, 404);
  });

  it('refuses the handshake of a hostname it does not serve', async () => {
    await assert.rejects(handshake(httpsPort, 'nobody-here.localhost', readFileSync(ca)), /alert|handshake|unrecognized|SSL/i);
    const r = await curl('nobody-here.localhost', `https://nobody-here.localhost:${httpsPort}/`).catch((e: Error) => e);
    assert.ok(r instanceof Error, 'curl fails');
  });

  it('a custom domain verified in the test gets its certificate', async () => {
    const name = `tls-${process.pid}-${Date.now() % 100000}.example.com`;
    await activeSiteDomain(s, site.id, name);
    // The refresh that activated it waited for nginx to serve it (its certificate issued before the render).
    await edge.changed();
    const h = await handshake(httpsPort, name, readFileSync(ca));
    assert.deepEqual([h.authorized, h.alpn, h.san], [true, 'h2', `DNS:${name}`]);
    const { stdout } = await curl(name, '-w', '\n%{http_code}', `https://${name}:${httpsPort}/`);
    assert.equal(stdout.trimEnd().split('\n').at(-1), '200');
    assert.match(stdout, /home v1/);
    const r = await edgeGet(edge.port, name);
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, `https://${name}:${httpsPort}/`);
  });
});
