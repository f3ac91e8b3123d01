// Access logs from the edge's nginx: JSON lines over syslog (UDP) to Slipway's receiver, read into
// the `Served` shape and handed on in batches; unknown hosts are not logged.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { AccessLogReceiver, parseAccessLine } from '../../src/shared/edge/nginx/access-log.js';
import type { Served } from '../../src/shared/edge/index.js';
import { waitFor } from '../helpers/util.js';
import { ask, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';

const LINE =
  '<190>Nov 28 00:29:15 slipway: {"kind":"applications","id":"a1","company":"c1","method":"GET","path":"/x?q=\\"1\\"","status":200,"bytes":12,"time":0.004,"client":"10.0.0.1","host":"app.test","ua":"ua/1","referer":"","cache":"HIT","at":1795000000.123}';

describe('edge on nginx: access log receiver', () => {
  it('reads a syslog-framed JSON line into a Served record', () => {
    const s = parseAccessLine(LINE)!;
    assert.deepEqual(s.owner, { kind: 'applications', id: 'a1', companyId: 'c1' });
    assert.equal(s.path, '/x?q="1"');
    assert.equal(s.status, 200);
    assert.equal(s.bytes, 12);
    assert.equal(s.durationMs, 4);
    assert.equal(s.clientIp, '10.0.0.1');
    assert.equal(s.cached, true);
    assert.equal(s.at.getTime(), 1795000000123);
    assert.equal(parseAccessLine('<190>Nov 28 00:29:15 slipway: not json'), null);
    assert.equal(parseAccessLine('{"kind":"x"}'), null);
  });

  it('hands lines on in batches of at most maxBatch, and the rest on stop', async () => {
    const batches: Served[][] = [];
    const receiver = new AccessLogReceiver((b) => void batches.push(b), { maxBatch: 4, flushMs: 10_000 });
    const [addr, port] = (await receiver.start()).split(':');
    const client = createSocket('udp4');
    for (let i = 0; i < 10; i++) await new Promise<void>((r) => client.send(LINE.replace('"bytes":12', `"bytes":${i}`), Number(port), addr, () => r()));
    client.send('garbage', Number(port), addr);
    await waitFor('the datagrams', () => receiver.counts.received === 11, 5000);
    client.close();
    await receiver.stop();
    assert.equal(receiver.counts.unreadable, 1);
    assert.ok(batches.every((b) => b.length <= 4 && b.length > 0));
    assert.deepEqual(
      batches.flat().map((s) => s.bytes),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
  });
});

describe('edge on nginx: access logs from nginx', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;

  before(async () => {
    app = await startApp('app');
    edge = await TestEdge.create();
    await edge.apply([host('app.test', upstream(app.port)), host('gone.test', upstream(app.port), { maintenance: { html: 'away' } })]);
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
  });

  it('receives one line per answered request, with the owner and the request', async () => {
    await ask(edge.http.port, 'app.test', { path: '/hello?x=1', headers: { 'user-agent': 'test-agent "quoted"', referer: 'https://ref.test/' } });
    await ask(edge.http.port, 'gone.test', { method: 'POST', path: '/form', body: 'a=1' });
    await ask(edge.http.port, 'nobody.test', { path: '/unlogged' });
    const lines = await waitFor('two access log lines', () => edge.served.length >= 2 && edge.served, 10_000);
    const ok = lines.find((s) => s.host === 'app.test')!;
    assert.deepEqual(ok.owner, { kind: 'applications', id: 'id-app.test', companyId: 'company-1' });
    assert.equal(ok.method, 'GET');
    assert.equal(ok.path, '/hello?x=1');
    assert.equal(ok.status, 200);
    assert.ok(ok.bytes > 0);
    assert.ok(ok.durationMs >= 0);
    assert.equal(ok.clientIp, '127.0.0.1');
    assert.equal(ok.userAgent, 'test-agent "quoted"');
    assert.equal(ok.referer, 'https://ref.test/');
    assert.equal(ok.cached, false);
    assert.ok(Math.abs(ok.at.getTime() - Date.now()) < 60_000);
    const maint = lines.find((s) => s.host === 'gone.test')!;
    assert.equal(maint.status, 503);
    assert.equal(maint.method, 'POST');
    assert.equal(maint.owner.id, 'id-gone.test');
    // Give a line for the unknown host time to arrive: there is none.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(
      edge.served.some((s) => s.path === '/unlogged'),
      false,
    );
  });
});
