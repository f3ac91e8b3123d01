// Load balancers served by nginx itself (balance.ts): the weighted split, each destination served
// as itself (maintenance, IP restriction on the real client), a failed destination skipped, GEO by
// a country header believed only from a trusted proxy, external URLs with their path and Host,
// nested load balancers, and what is left to the origin or answers 502.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadTls } from '../../src/shared/tls.js';
import { ask, freePort, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';
import type { BalanceDestination, EdgeHost } from '../../src/shared/edge/table.js';

const to = (hostname: string, weight = 1): BalanceDestination => ({ weight, service: { kind: 'applications', id: `id-${hostname}` } });
const lb = (hostname: string, destinations: BalanceDestination[], nearest: Record<string, number> | null = null, extra: Partial<EdgeHost> = {}) =>
  host(hostname, { type: 'balance', destinations, nearest }, { owner: { kind: 'load-balancer', id: `id-${hostname}`, companyId: 'company-1' }, ...extra });

/** The `name` of the app that answered each of `n` requests (or the status when not 200). */
async function names(port: number, hostname: string, n: number, headers: Record<string, string> = {}, localAddress?: string) {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await ask(port, hostname, { headers, localAddress });
    out.push(r.status === 200 ? (JSON.parse(r.body) as { name: string }).name : String(r.status));
  }
  return out;
}
const count = (xs: string[], v: string) => xs.filter((x) => x === v).length;

describe('edge on nginx: load balancers', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  const apps: Awaited<ReturnType<typeof startApp>>[] = [];
  let ext: Awaited<ReturnType<typeof startApp>>;

  before(async () => {
    const [a, b, origin] = [await startApp('a'), await startApp('b'), await startApp('origin')];
    ext = await startApp('ext');
    apps.push(a, b, origin, ext);
    edge = await TestEdge.create({
      trustedProxies: ['127.0.0.2'],
      origin: `127.0.0.1:${origin.port}`,
      geoHeaders: { country: 'x-country', coordinates: null },
    });
    const nobody = await freePort();
    await edge.apply([
      host('a.test', upstream(a.port)),
      host('b.test', upstream(b.port)),
      host('down.test', upstream(nobody)),
      host('maint.test', upstream(a.port), { maintenance: { html: '<h1>Back soon</h1>' } }),
      host('deny.test', upstream(a.port), { ipRestriction: { type: 'deny', ips: ['127.0.0.3'] } }),
      lb('split.test', [to('a.test', 1), to('b.test', 3), to('down.test', 0)]),
      lb('failover.test', [to('down.test'), to('b.test')]),
      lb('maint-lb.test', [to('maint.test')]),
      lb('deny-lb.test', [to('deny.test')]),
      // Paris (a) and New York (b): DE is nearest a, BR nearest b.
      lb('geo.test', [to('a.test'), to('b.test')], { DE: 0, FR: 0, BR: 1, US: 1 }),
      lb('ext.test', [{ weight: 1, url: { address: `127.0.0.1:${ext.port}`, tls: false, host: `ext.example:${ext.port}`, path: '/base' }, owner: null }]),
      lb('outer.test', [{ weight: 1, service: { kind: 'load-balancer', id: 'id-ext.test' } }]),
      lb('none.test', []),
      lb('to-orphan.test', [{ weight: 1, service: { kind: 'load-balancer', id: 'id-orphan.test' } }]),
      lb('orphan.test', [to('missing.test')]),
      lb('loop-a.test', [{ weight: 1, service: { kind: 'load-balancer', id: 'id-loop-b.test' } }]),
      lb('loop-b.test', [{ weight: 1, service: { kind: 'load-balancer', id: 'id-loop-a.test' } }]),
    ]);
  });

  after(async () => {
    await edge?.stop();
    for (const a of apps) await a.close();
  });

  it('splits by weight (smooth weighted round robin: exactly 1 in 4), weight 0 gets nothing', async () => {
    const seen = await names(edge.http.port, 'split.test', 80);
    assert.equal(count(seen, 'a'), 20, seen.join(','));
    assert.equal(count(seen, 'b'), 60);
  });

  it('skips a destination that cannot answer (a GET is retried on another)', async () => {
    const seen = await names(edge.http.port, 'failover.test', 10);
    assert.deepEqual(seen, Array(10).fill('b'));
  });

  it('serves each destination as itself: its maintenance page, its IP restriction on the real client', async () => {
    const m = await ask(edge.http.port, 'maint-lb.test');
    assert.equal(m.status, 503);
    assert.equal(m.headers['retry-after'], '60');
    assert.match(m.body, /Back soon/);
    assert.equal((await ask(edge.http.port, 'deny-lb.test')).status, 200);
    assert.equal((await ask(edge.http.port, 'deny-lb.test', { localAddress: '127.0.0.3' })).status, 403);
    // A forged X-Forwarded-For from a client that is not a trusted proxy changes nothing.
    assert.equal((await ask(edge.http.port, 'deny-lb.test', { localAddress: '127.0.0.3', headers: { 'x-forwarded-for': '10.0.0.1' } })).status, 403);
    // From the trusted proxy, X-Forwarded-For names the client.
    assert.equal((await ask(edge.http.port, 'deny-lb.test', { localAddress: '127.0.0.2', headers: { 'x-forwarded-for': '127.0.0.3' } })).status, 403);
    assert.equal((await ask(edge.http.port, 'deny-lb.test', { localAddress: '127.0.0.2', headers: { 'x-forwarded-for': '10.0.0.1' } })).status, 200);
  });

  it('GEO: the country header from a trusted proxy picks the nearest destination; from a client it is ignored (weighted)', async () => {
    assert.deepEqual(await names(edge.http.port, 'geo.test', 4, { 'x-country': 'de' }, '127.0.0.2'), ['a', 'a', 'a', 'a']);
    assert.deepEqual(await names(edge.http.port, 'geo.test', 4, { 'x-country': 'BR' }, '127.0.0.2'), ['b', 'b', 'b', 'b']);
    const untrusted = await names(edge.http.port, 'geo.test', 4, { 'x-country': 'BR' });
    assert.equal(count(untrusted, 'a'), 2, untrusted.join(','));
    // An unknown country is weighted too.
    const unknown = await names(edge.http.port, 'geo.test', 4, { 'x-country': 'ZZ' }, '127.0.0.2');
    assert.equal(count(unknown, 'a'), 2, unknown.join(','));
  });

  it('an external URL gets its path before the request path and its own Host; a nested load balancer passes through', async () => {
    for (const h of ['ext.test', 'outer.test']) {
      const r = await ask(edge.http.port, h, { path: '/x?y=1' });
      assert.equal(r.status, 200, r.body);
      const body = JSON.parse(r.body) as { name: string; path: string; host: string };
      assert.deepEqual([body.name, body.path, body.host], ['ext', '/base/x?y=1', `ext.example:${ext.port}`]);
    }
  });

  it('no destination: 502; a destination without a hostname, or a loop: the origin answers, told the right hostname', async () => {
    assert.equal((await ask(edge.http.port, 'none.test')).status, 502);
    for (const h of ['orphan.test', 'loop-a.test']) {
      const r = await ask(edge.http.port, h);
      assert.equal((JSON.parse(r.body) as { name: string }).name, 'origin');
    }
    // Reached through another load balancer, the origin is told the hostname it serves, not the outer one.
    const r = JSON.parse((await ask(edge.http.port, 'to-orphan.test')).body) as { name: string; host: string };
    assert.deepEqual([r.name, r.host], ['origin', 'orphan.test']);
  });

  it('logs a request for the load balancer and for the destination that answered, with the client and the believed country', async () => {
    const before = edge.served.length;
    await ask(edge.http.port, 'deny-lb.test', { path: '/logged', localAddress: '127.0.0.2', headers: { 'x-country': 'de' } });
    const until = Date.now() + 5000;
    while (edge.served.slice(before).filter((s) => s.path === '/logged').length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const lines = edge.served.slice(before).filter((s) => s.path === '/logged');
    assert.deepEqual(lines.map((s) => s.owner.id).sort(), ['id-deny-lb.test', 'id-deny.test']);
    // The country believed from the trusted proxy is the country of both.
    assert.deepEqual(
      lines.map((s) => [s.clientIp, s.host, s.country]),
      [
        ['127.0.0.2', 'deny-lb.test', 'DE'],
        ['127.0.0.2', 'deny-lb.test', 'DE'],
      ],
    );
  });
});

describe('edge on nginx: a load balancer over HTTPS', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;
  let dataDir: string;
  let ca: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-lb-tls-'));
    ca = (await loadTls({ mode: 'self-signed' }, dataDir)).caPath!;
    // The local CA's certificate names localhost: the load balancer's; its destination redirects plain HTTP too.
    const tls = { certFile: join(dataDir, 'tls', 'localhost.pem'), keyFile: join(dataDir, 'tls', 'localhost-key.pem') };
    app = await startApp('app');
    edge = await TestEdge.create({ https: true });
    await edge.apply([
      host('dest.test', upstream(app.port), { tls, httpsRedirect: true }),
      lb('localhost', [to('dest.test')], null, { tls, httpsRedirect: true }),
    ]);
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("the destination sees the client's scheme, and nginx's own hop is not redirected", async () => {
    assert.equal((await ask(edge.http.port, 'localhost')).status, 301);
    const body = await new Promise<string>((resolve, reject) => {
      get(
        { host: '127.0.0.1', servername: 'localhost', port: edge.https!.port, path: '/', headers: { host: 'localhost' }, ca: readFileSync(ca), agent: false },
        (res) => {
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve(`${res.statusCode} ${b}`));
        },
      ).on('error', reject);
    });
    assert.match(body, /^200 /);
    const j = JSON.parse(body.slice(4)) as { name: string; proto: string; host: string };
    assert.deepEqual([j.name, j.proto, j.host], ['app', 'https', 'localhost']);
  });
});
