// The request journal (SLIPWAY_JOURNAL=on): what a client sent and got, read back under
// /_admin/requests with filters; secrets masked, bodies cut to SLIPWAY_JOURNAL_BODY_BYTES, the
// oldest dropped past SLIPWAY_JOURNAL_MAX, cleared by DELETE; off by default. Kept in the database
// on both kinds (several processes on one PostgreSQL: journal-shared.test.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, startServer, useServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { MASK } from '../../src/shared/observability/index.js';

for (const kind of DB_KINDS) {
  describe(`request journal [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: { SLIPWAY_JOURNAL: 'on', SLIPWAY_JOURNAL_BODY_BYTES: '512', SLIPWAY_JOURNAL_MAX: '50' }, rateLimits: GENEROUS });
    const journal = async (query = '') => expectStatus(await s.admin('GET', `/requests${query}`), 200).data as any[];

    it('records a request: method, path, query, status, key id, request id, idempotency key, bodies', async () => {
      expectStatus(await s.admin('DELETE', '/requests'), 200);
      const key = await s.newKey({ role: 'Company Admin' });
      const created = await s.post('/projects', { display_name: 'journaled' }, { token: key.token, headers: { 'idempotency-key': 'idem-1' } });
      expectStatus(created, 201);
      await s.get('/projects?limit=5&offset=0', { token: key.token });
      const [list, post] = await journal('?path=/v3/projects');
      assert.equal(post.method, 'POST');
      assert.equal(post.path, '/v3/projects');
      assert.equal(post.status, 201);
      assert.equal(post.key_id, key.id);
      assert.ok(!JSON.stringify(post).includes(key.token), 'the token is never recorded');
      assert.equal(post.request_id, created.headers.get('x-request-id'));
      assert.equal(post.idempotency_key, 'idem-1');
      assert.deepEqual(post.request_body, { display_name: 'journaled' });
      assert.equal(post.response_body.id, created.body.id);
      assert.equal(list.method, 'GET');
      assert.deepEqual(list.query, { limit: '5', offset: '0' });
      assert.equal(list.request_body, null);
      assert.ok(Date.parse(post.time) <= Date.parse(list.time));
    });

    it('filters by path (prefix or glob), method, status and since, newest first, up to limit', async () => {
      expectStatus(await s.admin('DELETE', '/requests'), 200);
      const p = expectStatus(await s.post('/projects', { display_name: 'filtered' }), 201);
      const mark = new Date().toISOString();
      await s.get(`/projects/${p.id}`);
      await s.get('/projects/00000000-0000-4000-8000-000000000000');
      await s.patch(`/projects/${p.id}`, { display_name: 'changed' });
      assert.deepEqual(
        (await journal('?method=get')).map((e) => e.status),
        [404, 200],
      );
      assert.deepEqual(
        (await journal('?status=4xx')).map((e) => e.method),
        ['GET'],
      );
      assert.equal((await journal('?status=201')).length, 1);
      assert.deepEqual(
        (await journal(`?path=${encodeURIComponent('/v3/projects/*')}&method=PATCH`)).map((e) => e.path),
        [`/v3/projects/${p.id}`],
      );
      assert.equal((await journal(`?path=/v3/projects/${p.id}`)).length, 2);
      assert.equal((await journal(`?path=${encodeURIComponent('/v3/*')}`)).length, 1, 'a glob does not cross a /');
      assert.equal((await journal(`?since=${encodeURIComponent(mark)}`)).length, 3);
      assert.equal((await journal('?limit=2')).length, 2);
      assert.equal((await journal('?limit=2'))[0].method, 'PATCH');
      expectError(await s.admin('GET', '/requests?status=abc'), 400);
      expectError(await s.admin('GET', '/requests?since=yesterday'), 400);
    });

    it('masks secrets in bodies: passwords, tokens, secrets, variable values', async () => {
      expectStatus(await s.admin('DELETE', '/requests'), 200);
      const hook = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'https://example.com/hook' });
      expectStatus(hook, 201);
      const [e] = await journal('?path=/v3/webhooks');
      assert.equal(e.response_body.secret, MASK, JSON.stringify(e));
      assert.notEqual(hook.body.secret, MASK);
      assert.ok(!JSON.stringify(e).includes(hook.body.secret));
      const variable = await s.post('/applications/global-env-vars', { key: 'DB_URL', value: 'postgres://u:hunter2@db/x' });
      expectStatus(variable, 201);
      const [v] = await journal('?path=/v3/applications/global-env-vars');
      assert.equal(v.request_body.key, 'DB_URL');
      assert.equal(v.request_body.value, MASK);
      assert.ok(!JSON.stringify(v).includes('hunter2'));
      // A password in a body (a database's).
      await s.post('/databases', { name: 'masked', db_password: 'correct horse', type: 'nope' });
      const [d] = await journal('?path=/v3/databases');
      assert.equal(d.request_body.db_password, MASK);
    });

    it('cuts long bodies to the limit and says so', async () => {
      expectStatus(await s.admin('DELETE', '/requests'), 200);
      await s.post('/projects', { display_name: 'long', description: 'x'.repeat(1000) });
      const [e] = await journal();
      assert.equal(e.request_truncated, true);
      assert.equal(typeof e.request_body, 'string');
      assert.equal(Buffer.byteLength(e.request_body), 512);
      assert.ok(e.request_body.startsWith('{"display_name":"long"'));
    });

    it('keeps the last SLIPWAY_JOURNAL_MAX entries; DELETE clears', async () => {
      for (let i = 0; i < 60; i++) await s.get('/projects');
      const all = await journal('?limit=1000');
      assert.equal(all.length, 50);
      assert.equal(expectStatus(await s.admin('DELETE', '/requests'), 200).deleted, 50);
      assert.deepEqual(await journal(), []);
    });

    it('is not part of a snapshot: an export leaves it out, an import keeps it', async () => {
      expectStatus(await s.admin('DELETE', '/requests'), 200);
      const p = expectStatus(await s.post('/projects', { display_name: 'before the snapshot' }), 201);
      const snapshot = expectStatus(await s.admin('GET', '/snapshots'), 200);
      assert.ok(!('request_journal' in snapshot.tables), Object.keys(snapshot.tables).join());
      assert.ok(snapshot.tables.projects.some((r: { id: string }) => r.id === p.id));
      expectStatus(await s.admin('POST', '/snapshots?replace=1', snapshot), 201);
      assert.deepEqual(
        (await journal('?path=/v3/projects')).map((e) => e.response_body?.id),
        [p.id],
      );
    });

    it('needs the operator token', async () => {
      expectError(await s.get('/_admin/requests', { token: null }), 401);
      expectError(await s.get('/_admin/requests'), 401);
    });
  });
}

describe('request journal off', () => {
  it('is off by default: nothing recorded, /_admin/requests says how to turn it on', async () => {
    const s = await startServer();
    try {
      await s.get('/projects');
      expectError(await s.admin('GET', '/requests'), 404, /SLIPWAY_JOURNAL=on/);
    } finally {
      await s.close();
    }
  });
});
