// The error surface shared by every operation: schema mismatches (with and without data.issues),
// malformed JSON, content types, body size, unknown routes, and the shape of every error body.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, type Response, useServer } from '../helpers/server.js';
import { expectError } from '../helpers/util.js';
import { assertCommonHeaders } from './support.js';

const SCHEMA_MESSAGE = /does not match the schema/;

function issuesOf(r: Response): { path: string; message: string }[] {
  expectError(r, 400);
  assert.match(r.body.message, SCHEMA_MESSAGE);
  assert.ok(r.body.data && Array.isArray(r.body.data.issues), `data.issues is present: ${r.text}`);
  assert.ok(r.body.data.issues.length > 0, 'at least one issue');
  for (const i of r.body.data.issues) {
    assert.deepEqual(Object.keys(i).sort(), ['message', 'path']);
    assert.equal(typeof i.path, 'string');
    assert.equal(typeof i.message, 'string');
    assert.ok(i.message.length > 0);
  }
  return r.body.data.issues;
}

for (const kind of DB_KINDS) {
  describe(`errors [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });
    const small = useServer({ db: kind, env: { SLIPWAY_BODY_LIMIT: '256' } });
    const projectCount = async () => (await s.get('/projects')).body.total as number;

    it('a body not matching the schema is a 400 without data where the contract lists 400', async () => {
      const before = await projectCount();
      const cases: unknown[] = [
        { display_name: 'x'.repeat(65) },
        { display_name: '' },
        { display_name: 'ok', extra: true },
        { display_name: 42 },
        {},
        [],
        null,
      ];
      for (const body of cases) {
        const r = await s.post('/projects', undefined, { raw: JSON.stringify(body) });
        expectError(r, 400, undefined, { data: 'absent' });
        assert.match(r.body.message, SCHEMA_MESSAGE, `for body ${JSON.stringify(body)}`);
        assertCommonHeaders(r);
      }
      const missing = await s.request('POST', '/projects', {});
      expectError(missing, 400, undefined, { data: 'absent' });
      assert.match(missing.body.message, SCHEMA_MESSAGE, 'a missing required body');
      assert.equal(await projectCount(), before, 'nothing was created');
    });

    it('a parameter not matching the schema is a 400 with data.issues where the contract lists no 400', async () => {
      const limit0 = issuesOf(await s.get('/projects?limit=0'));
      assert.ok(
        limit0.some((i) => i.path === 'query.limit'),
        JSON.stringify(limit0),
      );

      const badId = issuesOf(await s.get('/api-keys/not-a-uuid'));
      assert.ok(
        badId.some((i) => i.path === 'params.id'),
        JSON.stringify(badId),
      );

      const badProject = issuesOf(await s.get('/projects/123'));
      assert.ok(
        badProject.some((i) => i.path === 'params.id'),
        JSON.stringify(badProject),
      );
    });

    it('malformed JSON is a 400 with the error body', async () => {
      const before = await projectCount();
      for (const raw of ['{"display_name": "x"', '{display_name: "x"}', "{'display_name': 'x'}", 'undefined']) {
        const r = await s.post('/projects', undefined, { raw });
        expectError(r, 400);
        assert.match(r.body.message, /JSON/, raw);
        assertCommonHeaders(r);
      }
      assert.equal(await projectCount(), before);

      // Also on an operation whose contract lists no 400 (no data.issues: it is not a schema mismatch).
      const p = await s.post('/projects', { display_name: 'survives' });
      const del = await s.request('DELETE', `/projects/${p.body.id}`, { raw: '{' });
      expectError(del, 400, undefined, { data: 'absent' });
      assert.match(del.body.message, /JSON/);
      assert.equal((await s.get(`/projects/${p.body.id}`)).status, 200, 'the project was not deleted');
    });

    it('a body that is not JSON is a 415', async () => {
      const before = await projectCount();
      const r = await s.post('/projects', undefined, { raw: 'display_name=x', headers: { 'content-type': 'text/plain' } });
      expectError(r, 415);
      assertCommonHeaders(r);
      const form = await s.post('/projects', undefined, { raw: 'display_name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expectError(form, 415);
      // +json media types are JSON.
      const vendor = await s.post('/projects', undefined, {
        raw: JSON.stringify({ display_name: 'vendor json' }),
        headers: { 'content-type': 'application/vnd.api+json' },
      });
      assert.equal(vendor.status, 201, vendor.text);
      assert.equal(await projectCount(), before + 1);
    });

    it('a body larger than the limit is a 413', async () => {
      const before = await projectCount();
      const big = await s.post('/projects', { display_name: 'x', pad: 'y'.repeat(1024 * 1024 + 16) });
      expectError(big, 413);
      assertCommonHeaders(big);
      assert.equal(await projectCount(), before);

      // A server configured with a small limit (SLIPWAY_BODY_LIMIT) enforces it and names it.
      const r = await small.post('/projects', { display_name: 'x'.repeat(60), pad: 'y'.repeat(300) });
      expectError(r, 413);
      assert.match(r.body.message, /256/);
      assert.equal((await small.post('/projects', { display_name: 'fits' })).status, 201, 'a body under the limit passes');
    });

    it('an unknown route under /v3 is a 404 with the error body', async () => {
      for (const [method, path] of [
        ['GET', '/no-such-thing'],
        ['POST', '/no-such-thing'],
        ['GET', `/projects/${randomUUID()}/nothing`],
        ['PUT', '/projects'],
      ] as const) {
        const r = await s.request(method, path);
        expectError(r, 404, undefined, { data: 'absent' });
        assertCommonHeaders(r);
      }
      const anon = await s.get('/no-such-thing', { token: null });
      expectError(anon, 404);
      assertCommonHeaders(anon);
    });

    it('error bodies never carry properties beyond message, status and data', async () => {
      const responses: Response[] = [
        await s.get('/projects', { token: null }),
        await s.get('/projects', { token: 'not a token at all' }),
        await s.get(`/projects/${randomUUID()}`),
        await s.get('/projects?offset=-1'),
        await s.post('/projects', { nope: 1 }),
        await s.post('/projects', undefined, { raw: '{' }),
        await s.post('/projects', undefined, { raw: 'x', headers: { 'content-type': 'text/plain' } }),
        await s.get('/nowhere'),
      ];
      for (const r of responses) {
        assert.ok(r.status >= 400, `${r.status}`);
        expectError(r, r.status);
        if (r.body.data !== undefined) {
          for (const k of Object.keys(r.body.data)) assert.ok(['code', 'message', 'issues'].includes(k), `unexpected data.${k}: ${r.text}`);
        }
      }
    });
  });
}
