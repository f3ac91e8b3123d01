// The edge's nginx data plane routes by Host: applications balanced across instances, Slipway's
// origin, unknown hosts 404, a stopped upstream 502, maintenance 503, IP restriction on the real
// client address (X-Forwarded-For believed only from a trusted proxy), and the response cache.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ask, freePort, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';
import type { EdgeHost } from '../../src/shared/edge/table.js';

describe('edge on nginx: routing', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  const apps: Awaited<ReturnType<typeof startApp>>[] = [];
  let hosts: EdgeHost[] = [];
  let hits = 0;

  before(async () => {
    const [a, b, origin] = [await startApp('a'), await startApp('b'), await startApp('origin')];
    const counter = await startApp('counter', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60' });
      res.end(`hit ${++hits}`);
    });
    apps.push(a, b, origin, counter);
    edge = await TestEdge.create({ trustedProxies: ['127.0.0.2'], origin: `127.0.0.1:${origin.port}` });
    const nobody = await freePort();
    hosts = [
      host('app.test', upstream(a.port, b.port)),
      host('down.test', upstream(nobody)),
      host('origin.test', { type: 'origin' }),
      host('maint.test', upstream(a.port), { maintenance: { html: '<h1>Back soon</h1><p>costs $5</p>' } }),
      host('closed.test', upstream(a.port), { maintenance: { html: 'closed' }, ipRestriction: { type: 'deny', ips: ['127.0.0.1'] } }),
      host('allow.test', upstream(a.port), { ipRestriction: { type: 'allow', ips: ['10.1.2.3', '192.168.0.0/16'] } }),
      host('deny.test', upstream(a.port), { ipRestriction: { type: 'deny', ips: ['10.9.9.9'] } }),
      host('cached.test', upstream(counter.port), { cache: { seconds: 0, generation: 1 } }),
    ];
    await edge.apply(hosts);
  });

  after(async () => {
    await edge?.stop();
    for (const a of apps) await a.close();
  });

  it('routes by Host to an application, balanced across its instances, with the Host and X-Forwarded headers', async () => {
    const names: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await ask(edge.http.port, 'app.test', { path: `/x?i=${i}` });
      assert.equal(r.status, 200);
      const body = JSON.parse(r.body);
      assert.equal(body.host, 'app.test');
      assert.equal(body.path, `/x?i=${i}`);
      assert.equal(body.proto, 'http');
      assert.equal(body.realIp, '127.0.0.1');
      names.push(body.name);
    }
    assert.deepEqual([...new Set(names)].sort(), ['a', 'b']);
    assert.equal(names.filter((n) => n === 'a').length, 3);
    // Host names match without case, port or trailing dot.
    const r = await ask(edge.http.port, 'APP.Test.:8080');
    assert.equal(r.status, 200);
  });

  it('answers an unknown host with 404 and a page', async () => {
    const r = await ask(edge.http.port, 'nobody.test');
    assert.equal(r.status, 404);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.match(r.body, /Nothing is served at this address/);
  });

  it('answers 502 with a page when the upstream is down', async () => {
    const r = await ask(edge.http.port, 'down.test');
    assert.equal(r.status, 502);
    assert.match(r.body, /Bad gateway/);
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  it('sends origin targets to Slipway with the Host kept', async () => {
    const r = await ask(edge.http.port, 'origin.test', { path: '/wake' });
    assert.equal(r.status, 200);
    const body = JSON.parse(r.body);
    assert.equal(body.name, 'origin');
    assert.equal(body.host, 'origin.test');
  });

  it('answers maintenance with 503, Retry-After and the page, whatever the method', async () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const r = await ask(edge.http.port, 'maint.test', { method, path: '/anything' });
      assert.equal(r.status, 503, method);
      assert.equal(r.headers['retry-after'], '60');
      assert.equal(r.body, '<h1>Back soon</h1><p>costs $5</p>');
      assert.match(String(r.headers['content-type']), /^text\/html/);
    }
    const head = await ask(edge.http.port, 'maint.test', { method: 'HEAD' });
    assert.equal(head.status, 503);
    // The IP restriction comes first, as in the in-process edge.
    assert.equal((await ask(edge.http.port, 'closed.test')).status, 403);
    assert.equal((await ask(edge.http.port, 'closed.test', { localAddress: '127.0.0.2' })).status, 503);
  });

  it('allows only listed addresses, believing X-Forwarded-For only from a trusted proxy', async () => {
    const viaProxy = { localAddress: '127.0.0.2', headers: { 'x-forwarded-for': '10.1.2.3' } };
    const ok = await ask(edge.http.port, 'allow.test', viaProxy);
    assert.equal(ok.status, 200);
    assert.equal(JSON.parse(ok.body).realIp, '10.1.2.3');
    assert.equal((await ask(edge.http.port, 'allow.test', { localAddress: '127.0.0.2', headers: { 'x-forwarded-for': '192.168.4.5' } })).status, 200);
    // The same header from an address that is not a trusted proxy is ignored: the client is 127.0.0.1.
    const spoofed = await ask(edge.http.port, 'allow.test', { headers: { 'x-forwarded-for': '10.1.2.3' } });
    assert.equal(spoofed.status, 403);
    assert.match(spoofed.body, /Your address may not reach this service/);
    // The proxy itself is not listed.
    assert.equal((await ask(edge.http.port, 'allow.test', { localAddress: '127.0.0.2' })).status, 403);
  });

  it('denies listed addresses: the last untrusted X-Forwarded-For entry is the client', async () => {
    const deny = (localAddress: string | undefined, xff: string) => ask(edge.http.port, 'deny.test', { localAddress, headers: { 'x-forwarded-for': xff } });
    assert.equal((await deny('127.0.0.2', '10.9.9.9')).status, 403);
    assert.equal((await deny('127.0.0.2', '10.9.9.9, 127.0.0.2')).status, 403);
    // A client putting the denied address first does not make it the client.
    assert.equal((await deny('127.0.0.2', '10.9.9.9, 10.1.1.1')).status, 200);
    // From an untrusted address the header counts for nothing.
    assert.equal((await deny(undefined, '10.9.9.9')).status, 200);
  });

  it('keeps cacheable responses, keyed with the generation (a purge is a new generation)', async () => {
    const first = await ask(edge.http.port, 'cached.test', { path: '/page' });
    const second = await ask(edge.http.port, 'cached.test', { path: '/page' });
    assert.equal(first.headers['x-cache'], 'MISS');
    assert.equal(second.headers['x-cache'], 'HIT');
    assert.equal(second.body, first.body);
    // Credentials go past the cache.
    const authed = await ask(edge.http.port, 'cached.test', { path: '/page', headers: { authorization: 'Bearer x' } });
    assert.notEqual(authed.body, first.body);
    hosts = hosts.map((h) => (h.hostname === 'cached.test' ? { ...h, cache: { seconds: 0, generation: 2 } } : h));
    await edge.apply(hosts);
    const purged = await ask(edge.http.port, 'cached.test', { path: '/page' });
    assert.equal(purged.headers['x-cache'], 'MISS');
    assert.notEqual(purged.body, first.body);
  });
});
