// Slow and hostile clients, with real sockets: a request whose headers or declared body never arrive
// is answered 408 with the error body and closed; idle keep-alive connections are closed; one
// address cannot hold more than SLIPWAY_MAX_CONNECTIONS_PER_IP connections. Short limits keep it fast.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import { DB_KINDS, skipUnless, startServer, useServer } from '../helpers/server.js';
import { DEFAULT_HTTP_LIMITS, loadConfig } from '../../src/shared/config.js';
import { sleep, waitFor } from '../helpers/util.js';
import { assertRawErrorBody, portOf, rawRequest } from './support.js';

const LIMITS = {
  SLIPWAY_REQUEST_TIMEOUT_MS: '800',
  SLIPWAY_HEADERS_TIMEOUT_MS: '400',
  SLIPWAY_KEEP_ALIVE_TIMEOUT_MS: '300',
  SLIPWAY_MAX_CONNECTIONS_PER_IP: '20',
};

describe('limits and timeouts configuration', () => {
  it('has documented defaults and reads the environment', () => {
    const d = loadConfig({}, {}).http;
    assert.deepEqual(d, DEFAULT_HTTP_LIMITS);
    assert.ok(d.requestTimeoutMs + d.headersTimeoutMs / 4 <= 30_000, 'a stalled request is answered within 30 s');
    assert.equal(d.maxConnectionsPerIp, 256);
    assert.equal(loadConfig({ 'trust-proxy': true }, {}).http.maxConnectionsPerIp, 0, 'behind a trusted proxy: no per-address cap unless set');
    const c = loadConfig({}, { ...LIMITS, SLIPWAY_MAX_JSON_DEPTH: '10', SLIPWAY_MAX_STRING_LENGTH: '100', SLIPWAY_CONNECTION_TIMEOUT_MS: '0' }).http;
    assert.equal(c.requestTimeoutMs, 800);
    assert.equal(c.headersTimeoutMs, 400);
    assert.equal(c.keepAliveTimeoutMs, 300);
    assert.equal(c.maxConnectionsPerIp, 20);
    assert.equal(c.maxJsonDepth, 10);
    assert.equal(c.maxStringLength, 100);
    assert.equal(c.connectionTimeoutMs, 0);
    assert.equal(
      loadConfig({}, { SLIPWAY_REQUEST_TIMEOUT_MS: '100', SLIPWAY_HEADERS_TIMEOUT_MS: '5000' }).http.headersTimeoutMs,
      100,
      'headers deadline at most the request deadline',
    );
    assert.throws(() => loadConfig({}, { SLIPWAY_REQUEST_TIMEOUT_MS: 'soon' }), /SLIPWAY_REQUEST_TIMEOUT_MS/);
  });
});

for (const kind of DB_KINDS) {
  describe(`slow and hostile clients [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: LIMITS });
    let port: number;
    before(() => {
      port = portOf(s.baseUrl);
    });

    it('a declared body that never arrives is answered 408 with the error body and closed', async () => {
      const stalled = [
        `POST /v3/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"display_name":`,
        `POST /v3/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"dis`,
      ];
      const results = await Promise.all(stalled.map((d) => rawRequest(port, d, 5000)));
      for (const r of results) {
        assertRawErrorBody(r, 408);
        assert.ok(r.closed, 'closed');
        assert.ok(r.elapsedMs >= 700 && r.elapsedMs < 2500, `answered after ${r.elapsedMs} ms`);
      }
    });

    it('a request cut by the deadline is logged as a client timeout at info, not as an error with a stack', async () => {
      const lines: { level: number; msg: string; err?: unknown }[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
          done();
        },
      });
      const logged = await startServer({ db: kind, env: LIMITS, logger: { level: 'info', stream: sink } });
      try {
        const p = portOf(logged.baseUrl);
        const stalled = [
          `POST /v3/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${logged.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"display_name":`,
          `POST /v3/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${logged.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"dis`,
        ];
        for (const r of await Promise.all(stalled.map((d) => rawRequest(p, d, 5000)))) assertRawErrorBody(r, 408);
        // Each cut request is logged once its connection closes: as what it is, or (the fault) as an error.
        const about = () => lines.filter((l) => l.level >= 50 || /timed out/.test(l.msg));
        await waitFor('the cut requests logged', () => about().length >= 2);
        await sleep(200);
        assert.deepEqual(
          lines.filter((l) => l.level >= 50),
          [],
          'nothing logged as an error',
        );
        const timeouts = about();
        assert.equal(timeouts.length, 2, JSON.stringify(timeouts));
        for (const l of timeouts) {
          assert.equal(l.level, 30, JSON.stringify(l));
          assert.equal(l.err, undefined, `no error object (with its stack): ${JSON.stringify(l)}`);
        }
      } finally {
        await logged.close();
      }
    });

    it('headers that never finish are answered 408 within the headers deadline', async () => {
      const r = await rawRequest(port, `GET /v3/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bear`, 5000);
      assertRawErrorBody(r, 408);
      assert.ok(r.closed);
      assert.ok(r.elapsedMs < 1500, `answered after ${r.elapsedMs} ms`);
      // A connection that sends nothing at all is closed too.
      const silent = await rawRequest(port, '', 5000);
      assert.ok(silent.closed, 'silent connection closed');
      assert.ok(silent.elapsedMs < 1500, `closed after ${silent.elapsedMs} ms`);
    });

    it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
      const r = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`, 5000);
      assert.equal(r.status, 200);
      assert.ok(r.closed);
      assert.ok(r.elapsedMs >= 250 && r.elapsedMs < 2500, `closed after ${r.elapsedMs} ms`);
    });

    it('connections beyond the per-address cap are closed at once; the held ones do not starve others for long', async () => {
      const sockets: net.Socket[] = [];
      const closedAt: number[] = [];
      const started = Date.now();
      await Promise.all(
        Array.from(
          { length: 60 },
          (_, i) =>
            new Promise<void>((resolve) => {
              const c = net.connect(port, '127.0.0.1', () => {
                c.write('GET /v3/projects HTTP/1.1\r\nHost: x\r\n'); // headers never finish
                resolve();
              });
              c.resume(); // read (and drop) whatever the server answers, so its close is seen
              c.on('close', () => (closedAt[i] = Date.now() - started));
              c.on('error', () => resolve());
              sockets.push(c);
            }),
        ),
      );
      await new Promise((r) => setTimeout(r, 150));
      const early = closedAt.filter((t) => t !== undefined && t < 300).length;
      assert.equal(early, 40, `closed at once: ${early} of 60 (cap 20)`);
      assert.equal(sockets.filter((c) => !c.destroyed).length, 20, 'the cap holds');
      // The held ones are released by the headers deadline; then the address is served again.
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(sockets.filter((c) => !c.destroyed).length, 0, 'stalled connections released by the deadline');
      const ok = await s.get('/projects');
      assert.equal(ok.status, 200);
    });
  });
}
