// Hostile input, rejected once for every operation before anything uses it: NUL characters in body
// strings, path and query; invalid or over-long path ids (never part of a rate-limit bucket or a
// query); JSON nested deeper than the limit (even with an Idempotency-Key); non-finite numbers;
// strings over the general string limit. Nothing is stored on rejection.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError } from '../helpers/util.js';
import { assertRawErrorBody, head, portOf, rawRequest } from './support.js';

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

for (const kind of DB_KINDS) {
  describe(`hostile input [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });
    const projects = async () => (await s.get('/projects?limit=100')).body.total as number;
    const webhooks = async () => (await s.get('/webhooks?limit=100')).body.total as number;

    it('a NUL character in any body string or property name is 400', async () => {
      const before = await projects();
      for (const raw of ['{"display_name":"a\\u0000b"}', '{"display_name":"\\u0000"}', '{"display_name":"ok","x\\u0000":1}']) {
        const r = await s.post('/projects', undefined, { raw });
        expectError(r, 400);
        assert.match(r.body.message, /NUL/, raw);
      }
      const hook = await s.post('/webhooks', undefined, { raw: '{"allowed_events":["APP_CREATE"],"endpoint":"https://example.com/\\u0000"}' });
      expectError(hook, 400);
      const nestedNul = await s.post('/usage-alerts', undefined, { raw: '{"limit_usd":5,"emails":["a\\u0000@example.com"],"triggers":[{"percentage":50}]}' });
      expectError(nestedNul, 400);
      assert.match(nestedNul.body.message, /NUL.*emails\[0\]/);
      const p = await s.post('/projects', { display_name: 'fine' });
      assert.equal(p.status, 201);
      const patched = await s.patch(`/projects/${p.body.id}`, undefined, { raw: '{"display_name":"x\\u0000y"}' });
      expectError(patched, 400);
      assert.equal((await s.get(`/projects/${p.body.id}`)).body.display_name, 'fine');
      assert.equal(await projects(), before + 1, 'only the valid project was stored');
    });

    it('%00 in a path id or a query value is 400 before routing, rate limiting or queries', async () => {
      const port = portOf(s.baseUrl);
      const auth = { Authorization: `Bearer ${s.token}` };
      for (const [method, path] of [
        ['GET', '/v3/projects/%00'],
        ['DELETE', '/v3/applications/%00'],
        ['PATCH', '/v3/applications/abc%00def'],
        ['GET', '/v3/projects?search=%00'],
        ['GET', '/v3/nowhere/%00'],
      ] as const) {
        const r = await rawRequest(port, head(method, path, auth));
        assertRawErrorBody(r, 400);
        assert.match(r.body.message, /NUL/, path);
      }
    });

    it('an invalid or over-long path id is 400 and never becomes a rate-limit bucket', async () => {
      const bad = ['not-a-uuid', 'x'.repeat(99), "1' or '1'='1", '00000000-0000-0000-0000-00000000000g'];
      for (const id of bad) {
        for (const [method, body] of [
          ['PATCH', { display_name: 'x' }],
          ['DELETE', undefined],
          ['GET', undefined],
        ] as const) {
          const r = await s.request(method, `/applications/${encodeURIComponent(id)}`, { body });
          expectError(r, 400);
          assert.match(r.headers.get('x-ratelimit-limit') ?? '', /^\d+$/, 'still counted (rate-limit headers present)');
        }
      }
      const over = await s.request('PATCH', `/applications/${'z'.repeat(101)}`, { body: { display_name: 'x' } });
      expectError(over, 400);
      const buckets = await s.app.limiter.buckets();
      assert.ok(buckets.length > 0, 'the requests were counted');
      for (const bucket of buckets) for (const id of bad) assert.ok(!bucket.includes(id.slice(0, 20)), `bucket ${bucket} names the invalid id`);
      // A key without the permission still gets its 403 first (precedence is unchanged).
      const viewer = await s.newKey({ role: 'Company Viewer' });
      const r = await s.request('DELETE', '/applications/not-a-uuid', { token: viewer.token });
      assert.equal(r.status, 403, r.text);
    });

    it('JSON nested deeper than 64 levels is 400 before any processing, with or without an Idempotency-Key', async () => {
      const before = await projects();
      for (const depth of [65, 200, 5_000, 100_000]) {
        for (const headers of [{}, { 'idempotency-key': `deep-${depth}` }] as Record<string, string>[]) {
          const r = await s.post('/projects', undefined, { raw: `{"display_name":${nested(depth - 1)}}`, headers });
          expectError(r, 400);
          assert.match(r.body.message, /nested deeper than 64/, `depth ${depth}`);
        }
      }
      // 64 levels parse; the schema then decides (display_name is not an array).
      const ok = await s.post('/projects', undefined, { raw: `{"display_name":${nested(63)}}`, headers: { 'idempotency-key': 'deep-64' } });
      expectError(ok, 400);
      assert.doesNotMatch(ok.body.message, /nested/);
      // Brackets inside strings do not count.
      const str = await s.post('/projects', undefined, { raw: JSON.stringify({ display_name: '[[[[' }) });
      assert.equal(str.status, 201, str.text);
      assert.equal(await projects(), before + 1);
    });

    it('non-finite numbers (1e400) are 400', async () => {
      const { token } = await s.newCompany();
      for (const n of ['1e400', '-1e400', '1E999']) {
        const r = await s.post('/usage-alerts', undefined, { raw: `{"limit_usd":${n},"emails":["ops@example.com"],"triggers":[{"percentage":50}]}`, token });
        expectError(r, 400);
        assert.match(r.body.message, /not finite/, n);
      }
      const list = await s.get('/usage-alerts', { token });
      assert.equal(list.body.total ?? list.body.items?.length ?? 0, 0, 'nothing stored');
      const fine = await s.post('/usage-alerts', undefined, { raw: '{"limit_usd":1e3,"emails":["ops@example.com"],"triggers":[{"percentage":50}]}', token });
      assert.equal(fine.status, 201, fine.text);
    });

    it('a string longer than 64 KiB is 400 even where the contract sets no maximum', async () => {
      const before = await webhooks();
      const endpoint = `https://example.com/${'a'.repeat(64 * 1024)}`;
      const r = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint });
      expectError(r, 400);
      assert.match(r.body.message, /longer than 65536 characters at body\.endpoint/);
      const key = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'https://example.com/', ['k'.repeat(70_000)]: 1 });
      expectError(key, 400);
      assert.equal(await webhooks(), before, 'nothing stored');
      const ok = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: `https://example.com/${'a'.repeat(60 * 1024)}` });
      assert.equal(ok.status, 201, ok.text.slice(0, 300));
    });
  });
}
