// Access logs from the edge's nginx: JSON lines written to a buffered file in nginx's directory and
// tailed by Slipway's AccessLogTailer, read into the `Served` shape and handed on in batches; what
// is written while no tailer runs is read by the next one, a rotation loses no line, and unknown
// hosts are not logged.
import assert from 'node:assert/strict';
import { appendFileSync, closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AccessLogTailer, parseAccessLine } from '../../src/shared/edge/nginx/access-log.js';
import type { Served } from '../../src/shared/edge/index.js';
import { waitFor } from '../helpers/util.js';
import { ask, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';

const LINE =
  '{"kind":"applications","id":"a1","company":"c1","method":"GET","path":"/x?q=\\"1\\"","status":200,"bytes":12,"time":0.004,"client":"10.0.0.1","host":"app.test","ua":"ua/1","referer":"","cache":"HIT","at":1795000000.123}';
const line = (bytes: number) => LINE.replace('"bytes":12', `"bytes":${bytes}`) + '\n';
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('edge on nginx: access log tailer', () => {
  let dir: string;
  before(() => void (dir = mkdtempSync(join(tmpdir(), 'slipway-access-log-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a JSON line (or a syslog-framed one) into a Served record', () => {
    const s = parseAccessLine(LINE)!;
    assert.deepEqual(s.owner, { kind: 'applications', id: 'a1', companyId: 'c1' });
    assert.equal(s.path, '/x?q="1"');
    assert.equal(s.status, 200);
    assert.equal(s.bytes, 12);
    assert.equal(s.durationMs, 4);
    assert.equal(s.clientIp, '10.0.0.1');
    assert.equal(s.cached, true);
    assert.equal(s.at.getTime(), 1795000000123);
    assert.deepEqual(parseAccessLine(`<190>Nov 28 00:29:15 slipway: ${LINE}`), s);
    assert.equal(parseAccessLine('not json'), null);
    assert.equal(parseAccessLine('x {"kind":"x"}'), null);
    assert.equal(parseAccessLine('{"kind":"x"}'), null);
  });

  it('hands complete lines on in batches of at most maxBatch, and a partial line once it is complete', async () => {
    const path = join(dir, 'batches.log');
    const batches: Served[][] = [];
    const tailer = new AccessLogTailer((b) => void batches.push(b), { path, maxBatch: 4, pollMs: 20 });
    await tailer.start();
    writeFileSync(path, range(0, 10).map(line).join('') + 'garbage\n' + line(10).slice(0, 40));
    await waitFor('ten lines', () => batches.flat().length === 10, 5000);
    appendFileSync(path, line(10).slice(40));
    await tailer.stop();
    assert.equal(tailer.counts.unreadable, 1);
    assert.ok(batches.every((b) => b.length <= 4 && b.length > 0));
    assert.deepEqual(
      batches.flat().map((s) => s.bytes),
      range(0, 11),
    );
  });

  it('reads what was written while no tailer ran, once, from where the last one stopped', async () => {
    const path = join(dir, 'restart.log');
    const served: Served[] = [];
    writeFileSync(path, range(0, 5).map(line).join(''));
    const first = new AccessLogTailer((b) => void served.push(...b), { path, pollMs: 20 });
    await first.start();
    await first.flush();
    await first.stop();
    appendFileSync(path, range(5, 12).map(line).join(''));
    const second = new AccessLogTailer((b) => void served.push(...b), { path, pollMs: 20 });
    await second.start();
    await second.flush();
    await second.stop();
    assert.deepEqual(
      served.map((s) => s.bytes),
      range(0, 12),
    );
  });

  it('skips a backlog over maxBacklog to its end, and says so', async () => {
    const path = join(dir, 'backlog.log');
    const served: Served[] = [];
    writeFileSync(path, range(0, 50).map(line).join(''));
    const warnings: string[] = [];
    const tailer = new AccessLogTailer((b) => void served.push(...b), { path, maxBacklog: 1000, log: { warn: (_o, m) => void warnings.push(m) } });
    await tailer.start();
    appendFileSync(path, line(50));
    await tailer.stop();
    assert.deepEqual(
      served.map((s) => s.bytes),
      [50],
    );
    assert.ok(tailer.counts.skipped > 1000);
    assert.match(warnings.join('\n'), /backlog is too long/);
  });

  it('rotates: renames the file, has the writer reopen it, finishes the renamed file, deletes it; no line is lost', async () => {
    const path = join(dir, 'rotate.log');
    const served: Served[] = [];
    // The writer (nginx): keeps writing to the file it opened until told to reopen, then a line more to the old one (its buffer).
    let fd = openSync(path, 'a');
    let n = 0;
    let stopped = false;
    const reopen = () => {
      // A rotation can still start while the tailer stops, after the writer has: nothing to flush then.
      if (stopped) return false;
      writeSync(fd, line(n++));
      closeSync(fd);
      fd = openSync(path, 'a');
      return true;
    };
    const tailer = new AccessLogTailer((b) => void served.push(...b), { path, pollMs: 10, rotateBytes: 2000, settleMs: 50, reopen });
    await tailer.start();
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5; i++) writeSync(fd, line(n++));
      await new Promise((r) => setTimeout(r, 15));
    }
    await waitFor('every line', () => served.length === n && !existsSync(`${path}.rotated`), 5000);
    stopped = true;
    closeSync(fd);
    await tailer.stop();
    assert.ok(tailer.counts.rotations >= 3, `${tailer.counts.rotations} rotations`);
    assert.deepEqual(
      served.map((s) => s.bytes),
      range(0, n),
    );
    // (A rotation the stopping tailer started leaves no current file: the writer had stopped.)
    assert.ok((existsSync(path) ? readFileSync(path).length : 0) < 4000);
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
    // The unknown host first: the lines after it arrive, so a line for it would have too.
    await ask(edge.http.port, 'nobody.test', { path: '/unlogged' });
    await ask(edge.http.port, 'app.test', { path: '/hello?x=1', headers: { 'user-agent': 'test-agent "quoted"', referer: 'https://ref.test/' } });
    await ask(edge.http.port, 'gone.test', { method: 'POST', path: '/form', body: 'a=1' });
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
    assert.equal(
      edge.served.some((s) => s.path === '/unlogged'),
      false,
    );
  });

  it('reads the lines nginx wrote while the tailer was stopped after it starts again', async () => {
    await edge.receiver.stop();
    const before = edge.served.length;
    for (let i = 0; i < 20; i++) await ask(edge.http.port, 'app.test', { path: `/while-down/${i}` });
    // nginx's buffer reaches the file within a second (flush=1s).
    await waitFor('the lines in the file', () => readFileSync(edge.receiver.path, 'utf8').includes('/while-down/19'), 10_000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(edge.served.length, before, 'nothing read while stopped');
    await edge.restartAccessLog();
    const down = await waitFor(
      'the lines written while down',
      () => {
        const d = edge.served.filter((s) => s.path.startsWith('/while-down/'));
        return d.length >= 20 && d;
      },
      10_000,
    );
    assert.deepEqual(
      down.map((s) => s.path),
      range(0, 20).map((i) => `/while-down/${i}`),
    );
  });
});

describe('edge on nginx: access log rotation', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;

  before(async () => {
    app = await startApp('app');
    edge = await TestEdge.create({ accessLog: { rotateBytes: 8 * 1024, settleMs: 1200 } });
    await edge.apply([host('app.test', upstream(app.port))]);
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
  });

  it('renames the file past rotateBytes, has nginx reopen it, and loses no line', async () => {
    const count = 300;
    for (let i = 0; i < count; i++) {
      await ask(edge.http.port, 'app.test', { path: `/r/${i}` });
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 400));
    }
    const got = await waitFor(
      'every line',
      () => {
        const r = edge.served.filter((s) => s.path.startsWith('/r/'));
        return r.length >= count && !existsSync(`${edge.receiver.path}.rotated`) && r;
      },
      30_000,
    );
    assert.ok(edge.receiver.counts.rotations >= 2, `${edge.receiver.counts.rotations} rotations`);
    assert.deepEqual(
      got.map((s) => s.path).sort((a, b) => Number(a.slice(3)) - Number(b.slice(3))),
      range(0, count).map((i) => `/r/${i}`),
    );
    // Requests keep coming while a renamed file settles, so how much the current file holds varies; that it holds fewer than all of them does not.
    const left = readFileSync(edge.receiver.path, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"/r/')).length;
    assert.ok(left < count, `the current file is a new one (${left} lines of ${count})`);
  });
});
