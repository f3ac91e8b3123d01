// Every response Slipway sends has the contract's error body, including those of the router and
// of Node's HTTP parser: bad percent-encoding, over-long path parameters, over-long request lines,
// broken framing. Sent over raw sockets (fetch refuses most of these inputs).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { assertRawErrorBody, head, portOf, rawRequest } from './support.js';

for (const kind of DB_KINDS) {
  describe(`the error body everywhere [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });
    let port: number;
    let auth: Record<string, string>;
    before(() => {
      port = portOf(s.baseUrl);
      auth = { Authorization: `Bearer ${s.token}` };
    });

    it('invalid percent-encoding in the path is 400 with the error body', async () => {
      for (const path of ['/v3/projects/%zz', '/v3/projects/%E0%A4%A', '/v3/%C0%AF', '/v3/applications/%', '/nowhere/%ff']) {
        const r = await rawRequest(port, head('GET', path, auth));
        assertRawErrorBody(r, 400);
        assert.match(r.body.message, /percent-encoded/, path);
        assert.match(r.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      }
    });

    it('a path parameter over 100 characters is 400 (not 414) with the error body', async () => {
      for (const path of [`/v3/projects/${'a'.repeat(101)}`, `/v3/applications/${'b'.repeat(5000)}/deployments`]) {
        const r = await rawRequest(port, head('GET', path, auth));
        assertRawErrorBody(r, 400);
        assert.match(r.body.message, /longer than 100 characters/);
      }
      // Through fetch as well (and the published contract allows a 400 there).
      const f = await s.get(`/projects/${'c'.repeat(150)}`);
      assert.equal(f.status, 400);
      assert.deepEqual(Object.keys(f.body).sort(), ['message', 'status']);
    });

    it('a request line over 16 KiB is 431 with the error body, and the connection is closed', async () => {
      const r = await rawRequest(port, head('GET', `/v3/projects?x=${'a'.repeat(17 * 1024)}`, auth));
      assertRawErrorBody(r, 431);
      assert.ok(r.closed, 'closed');
      const hdr = await rawRequest(port, head('GET', '/v3/projects', { ...auth, 'X-Big': 'b'.repeat(20 * 1024) }));
      assertRawErrorBody(hdr, 431);
    });

    it('malformed HTTP framing is 400 with the error body, and the connection is closed', async () => {
      const cases = [
        'GET / HTTP/1.1\r\nHost localhost\r\n\r\n', // header without colon
        'HELLO\r\n\r\n', // not HTTP
        'GET /v3/projects HTTP/9.9\r\nHost: x\r\n\r\n', // unknown version
        `POST /v3/projects HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`,
        `POST /v3/projects HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello`,
        `POST /v3/projects HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n`,
        'GET /v3/projects HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n',
      ];
      for (const c of cases) {
        const r = await rawRequest(port, c);
        assertRawErrorBody(r, 400);
        assert.ok(r.closed, `closed after ${JSON.stringify(c)}`);
      }
    });

    it('the server keeps serving after all of the above', async () => {
      const r = await s.get('/projects');
      assert.equal(r.status, 200);
    });
  });
}
