// Idempotency-Key: a retried write replays the first response instead of running again; a key
// reused for a different request is rejected; concurrent requests with one key run once; keys
// belong to a company.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, uniqueName } from '../helpers/util.js';

for (const kind of DB_KINDS) {
  describe(`idempotency [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    const named = async (token: string, displayName: string) => {
      const l = await s.get('/projects?limit=100', { token });
      assert.equal(l.status, 200);
      return l.body.data.filter((p: { display_name: string }) => p.display_name === displayName) as { id: string }[];
    };

    it('a retry with the same key and body replays the first response', async () => {
      const { token } = await s.newCompany();
      const key = randomUUID();
      const body = { display_name: uniqueName('idem') };
      const first = await s.post('/projects', body, { token, headers: { 'idempotency-key': key } });
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('idempotent-replayed'), null, 'the first response is not a replay');

      const second = await s.post('/projects', body, { token, headers: { 'idempotency-key': key } });
      assert.equal(second.status, first.status);
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.match(second.headers.get('content-type') ?? '', /^application\/json/);
      assert.notEqual(second.headers.get('x-request-id'), first.headers.get('x-request-id'), 'the replay is its own request');

      const third = await s.post('/projects', body, { token, headers: { 'idempotency-key': key } });
      assert.deepEqual(third.body, first.body);

      const found = await named(token, body.display_name);
      assert.deepEqual(
        found.map((p) => p.id),
        [first.body.id],
        'exactly one project exists',
      );

      // Without a key, the same request runs again.
      const again = await s.post('/projects', body, { token });
      assert.equal(again.status, 201);
      assert.notEqual(again.body.id, first.body.id);
      assert.equal((await named(token, body.display_name)).length, 2);
    });

    it('a failed request is replayed as the same error', async () => {
      const { token } = await s.newCompany();
      const key = randomUUID();
      const p = await s.post('/projects', { display_name: 'target' }, { token });
      const missing = randomUUID();
      const first = await s.patch(`/projects/${missing}`, { display_name: 'x' }, { token, headers: { 'idempotency-key': key } });
      expectError(first, 404);
      const second = await s.patch(`/projects/${missing}`, { display_name: 'x' }, { token, headers: { 'idempotency-key': key } });
      expectError(second, 404);
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal((await s.get(`/projects/${p.body.id}`, { token })).body.display_name, 'target');
    });

    it('reusing a key with a different body is a 400 and runs nothing', async () => {
      const { token } = await s.newCompany();
      const key = randomUUID();
      const first = await s.post('/projects', { display_name: 'first body' }, { token, headers: { 'idempotency-key': key } });
      assert.equal(first.status, 201);
      const other = await s.post('/projects', { display_name: 'second body' }, { token, headers: { 'idempotency-key': key } });
      assert.match(expectError(other, 400), /Idempotency-Key/);
      assert.equal(other.headers.get('idempotent-replayed'), null);
      assert.equal((await named(token, 'second body')).length, 0, 'the second body was not executed');

      // The same key on another operation is also a different request.
      const patch = await s.patch(`/projects/${first.body.id}`, { display_name: 'first body' }, { token, headers: { 'idempotency-key': key } });
      expectError(patch, 400);

      // The original request still replays.
      const replay = await s.post('/projects', { display_name: 'first body' }, { token, headers: { 'idempotency-key': key } });
      assert.equal(replay.status, 201);
      assert.deepEqual(replay.body, first.body);
    });

    it('concurrent requests with one key create exactly one project', async () => {
      const { token } = await s.newCompany();
      const key = randomUUID();
      const body = { display_name: uniqueName('race') };
      const results = await Promise.all(Array.from({ length: 5 }, () => s.post('/projects', body, { token, headers: { 'idempotency-key': key } })));
      const created = results.filter((r) => r.status === 201);
      assert.ok(created.length >= 1, `statuses: ${results.map((r) => r.status).join(',')}`);
      const id = created[0]!.body.id;
      for (const r of results) {
        if (r.status === 409) {
          expectError(r, 409);
          continue;
        }
        assert.equal(r.status, 201, r.text);
        assert.deepEqual(r.body, created[0]!.body, 'every success is the same response');
      }
      assert.equal(results.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null).length, 1, 'exactly one request ran');
      const found = await named(token, body.display_name);
      assert.deepEqual(
        found.map((p) => p.id),
        [id],
      );
    });

    it('keys belong to a company: another company may use the same key independently', async () => {
      const a = await s.newCompany();
      const b = await s.newCompany();
      const key = randomUUID();
      const otherKey = randomUUID();
      const body = { display_name: 'shared key' };
      const ra = await s.post('/projects', body, { token: a.token, headers: { 'idempotency-key': key } });
      assert.equal(ra.status, 201);
      assert.equal((await s.post('/projects', { display_name: 'a body' }, { token: a.token, headers: { 'idempotency-key': otherKey } })).status, 201);

      // Same key and body in company B: runs for B, not a replay of A's response.
      const rb = await s.post('/projects', body, { token: b.token, headers: { 'idempotency-key': key } });
      assert.equal(rb.status, 201);
      assert.equal(rb.headers.get('idempotent-replayed'), null, 'not a replay of the other company');
      assert.notEqual(rb.body.id, ra.body.id);
      assert.equal(rb.body.company_id, b.companyId);
      // Same key, different body in company B: not a mismatch with A's request.
      const rb2 = await s.post('/projects', { display_name: 'b body' }, { token: b.token, headers: { 'idempotency-key': otherKey } });
      assert.equal(rb2.status, 201, rb2.text);

      assert.equal((await named(a.token, 'shared key')).length, 1);
      assert.equal((await named(b.token, 'shared key')).length, 1);
      assert.equal((await named(b.token, 'b body')).length, 1);
      const replayB = await s.post('/projects', body, { token: b.token, headers: { 'idempotency-key': key } });
      assert.deepEqual(replayB.body, rb.body);
      assert.equal(replayB.headers.get('idempotent-replayed'), 'true');
    });

    it('an empty or over-long Idempotency-Key is a 400', async () => {
      const { token } = await s.newCompany();
      const empty = await s.post('/projects', { display_name: 'empty key' }, { token, headers: { 'idempotency-key': '' } });
      expectError(empty, 400);
      assert.equal((await named(token, 'empty key')).length, 0);
      const long = await s.post('/projects', { display_name: 'long key' }, { token, headers: { 'idempotency-key': 'k'.repeat(256) } });
      expectError(long, 400);
      assert.equal((await named(token, 'long key')).length, 0);
      const max = await s.post('/projects', { display_name: 'max key' }, { token, headers: { 'idempotency-key': 'k'.repeat(255) } });
      assert.equal(max.status, 201);
    });
  });
}
