// x-request-id: every response has one, a UUID; a well-formed incoming id is echoed so callers
// can correlate, anything else is replaced by a fresh one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer, type Response } from '../helpers/server.js';
import { UUID_RE } from '../helpers/util.js';

for (const kind of DB_KINDS) {
  describe(`x-request-id [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { read: 3 } });

    it('is a UUID on every response, success or error, inside and outside /v3', async () => {
      // Each company has its own read count (limit 3 here), so the reads below stay under it.
      const { token } = await s.newCompany();
      const { token: viewer } = await s.newCompany('Company Viewer');
      const responses: [string, Response][] = [
        ['200', await s.get('/projects', { token })],
        ['201', await s.post('/projects', { display_name: 'rid' }, { token })],
        ['400', await s.post('/projects', { nope: true }, { token })],
        ['401', await s.get('/projects', { token: null })],
        ['403', await s.post('/projects', { display_name: 'x' }, { token: viewer })],
        ['404', await s.get(`/projects/${randomUUID()}`, { token })],
        ['404 route', await s.get('/nowhere', { token })],
        ['415', await s.post('/projects', undefined, { token, raw: 'x', headers: { 'content-type': 'text/plain' } })],
        ['healthz', await s.get('/healthz')],
        ['openapi', await s.get('/v3/openapi.json', { token: null })],
        ['operator', await s.admin('GET', '/companies')],
      ];
      const ids = new Set<string>();
      for (const [what, r] of responses) {
        const id = r.headers.get('x-request-id');
        assert.match(id ?? '', UUID_RE, `${what}: x-request-id ${id}`);
        ids.add(id!);
      }
      assert.equal(ids.size, responses.length, 'every request gets its own id');
    });

    it('is present on a 429', async () => {
      const { token } = await s.newCompany();
      let last: Response | undefined;
      for (let i = 0; i < 6 && last?.status !== 429; i++) last = await s.get('/projects', { token });
      assert.equal(last?.status, 429);
      assert.match(last!.headers.get('x-request-id') ?? '', UUID_RE);
    });

    it('echoes a well-formed incoming x-request-id', async () => {
      const { token } = await s.newCompany();
      const id = randomUUID();
      const ok = await s.get('/api-keys/me', { token, headers: { 'x-request-id': id } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-request-id'), id);
      const err = await s.get('/projects', { token: null, headers: { 'x-request-id': id } });
      assert.equal(err.status, 401);
      assert.equal(err.headers.get('x-request-id'), id, 'echoed on errors too');
      const upper = randomUUID().toUpperCase();
      assert.equal((await s.get('/healthz', { headers: { 'x-request-id': upper } })).headers.get('x-request-id'), upper.toLowerCase());
    });

    it('replaces a malformed incoming x-request-id', async () => {
      for (const bad of ['abc', 'not-a-uuid-at-all', `${randomUUID()}x`, 'x'.repeat(300), '<script>']) {
        const r = await s.get('/healthz', { headers: { 'x-request-id': bad } });
        const id = r.headers.get('x-request-id') ?? '';
        assert.match(id, UUID_RE, `replaced ${JSON.stringify(bad)}`);
        assert.notEqual(id, bad);
      }
    });
  });
}
