// HTTPS at the edge's nginx with a certificate from Slipway's local CA (`--tls self-signed`):
// handshakes verified against the CA (curl --cacert, node's https with `ca`), HTTP/2, the HTTP →
// HTTPS redirect as a per-host setting, and no certificate for names the edge does not serve.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { loadTls } from '../../src/shared/tls.js';
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
