// The request journal of several server processes on one PostgreSQL: one journal. What a client
// sent to one process is listed by another as soon as the client has its response (entries are
// committed before responses are sent), with the same filters; a DELETE through one clears every
// process's entries; the bounds (SLIPWAY_JOURNAL_MAX, SLIPWAY_JOURNAL_MINUTES) hold across them.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createPgDatabase, GENEROUS, OPERATOR_TOKEN, skipUnless } from '../helpers/server.js';
import { call, rateEnv, startChild, type ChildServer } from '../helpers/process.js';

const MAX = 30;
/** Requests in flight at once in the load of the bound test (a batch of a turn holds at most this many). */
const CONCURRENCY = 10;

describe('request journal shared by two processes on one PostgreSQL', { skip: await skipUnless('postgres') }, () => {
  const token = `svl_${randomBytes(32).toString('hex')}`;
  let a: ChildServer;
  let b: ChildServer;
  let db: Awaited<ReturnType<typeof createPgDatabase>>;
  let dir: string;

  before(async () => {
    db = await createPgDatabase();
    dir = mkdtempSync(join(tmpdir(), 'slipway-journal-'));
    const env = {
      DATABASE_URL: db.url,
      DATA_DIR: dir,
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_SECRET_KEY: 'shared-secret',
      SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN,
      SLIPWAY_JOURNAL: 'on',
      SLIPWAY_JOURNAL_MAX: String(MAX),
      SLIPWAY_JOURNAL_MINUTES: '60',
      SLIPWAY_JOURNAL_BODY_BYTES: '512',
      ...rateEnv(GENEROUS),
    };
    a = await startChild([], env);
    b = await startChild([], env);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const admin = async (s: ChildServer, method: string, query = '') => {
    const res = await fetch(`${s.baseUrl}/_admin/requests${query}`, { method, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    return body;
  };
  const journal = async (s: ChildServer, query = '') => (await admin(s, 'GET', query)).data as any[];
  const requestId = async (s: ChildServer, method: string, path: string, body?: unknown) => {
    const r = await call(s.baseUrl, method, path, token, body);
    return { status: r.status, body: r.body, id: r.headers.get('x-request-id')! };
  };
  const rows = async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return Number((await c.query('SELECT count(*) AS n FROM request_journal')).rows[0].n);
    } finally {
      await c.end();
    }
  };

  it("lists one process's requests through the other, with the filters", async () => {
    const keys = (await call(a.baseUrl, 'GET', '/api-keys', token)).body;
    await admin(b, 'DELETE');
    const created = await requestId(a, 'POST', '/projects', { display_name: 'shared journal' });
    assert.equal(created.status, 201);
    const mark = new Date().toISOString();
    const read = await requestId(a, 'GET', `/projects/${created.body.id}`);
    const missing = await requestId(b, 'GET', '/projects/00000000-0000-4000-8000-000000000000');
    const patched = await requestId(a, 'PATCH', `/projects/${created.body.id}`, { display_name: 'renamed' });
    assert.deepEqual([read.status, missing.status, patched.status], [200, 404, 200]);
    // Asked at once, of the process that did not answer most of them.
    const all = await journal(b);
    assert.deepEqual(
      all.map((e) => e.request_id),
      [patched.id, missing.id, read.id, created.id],
    );
    assert.ok(
      all.every((e, i) => i === 0 || e.seq < all[i - 1].seq),
      'newest first, by seq',
    );
    const [post] = await journal(b, '?status=201');
    assert.equal(post.method, 'POST');
    assert.deepEqual(post.request_body, { display_name: 'shared journal' });
    assert.equal(post.response_body.id, created.body.id);
    assert.ok(!JSON.stringify(post).includes(token), 'the token is never recorded');
    assert.equal(post.key_id, keys.data[0].id);
    assert.deepEqual(
      (await journal(b, '?method=get')).map((e) => e.status),
      [404, 200],
    );
    assert.deepEqual(
      (await journal(a, '?status=4xx')).map((e) => e.request_id),
      [missing.id],
    );
    assert.deepEqual(
      (await journal(b, `?path=${encodeURIComponent('/v3/projects/*')}&method=PATCH`)).map((e) => e.request_id),
      [patched.id],
    );
    assert.equal((await journal(a, `?path=/v3/projects/${created.body.id}`)).length, 2);
    assert.equal((await journal(b, `?path=${encodeURIComponent('/v3/*')}`)).length, 1, 'a glob does not cross a /');
    assert.equal((await journal(a, `?since=${encodeURIComponent(mark)}`)).length, 3);
    assert.deepEqual(
      (await journal(b, `?after=${post.seq}&limit=2`)).map((e) => e.request_id),
      [patched.id, missing.id],
    );
  });

  it('lists every request whose response came before the query, whichever process answered it', async () => {
    for (let round = 0; round < 5; round++) {
      await admin(a, 'DELETE');
      const sent = await Promise.all(Array.from({ length: 12 }, (_, i) => requestId(i % 2 ? a : b, 'GET', `/projects?limit=${round}${i}`)));
      // No wait: each process's entries were committed before its responses left.
      for (const s of [a, b]) {
        const listed = new Set((await journal(s, '?limit=1000')).map((e) => e.request_id));
        for (const r of sent) assert.ok(listed.has(r.id), `round ${round}: ${r.id} listed by ${s === a ? 'A' : 'B'}`);
        assert.equal(listed.size, sent.length);
      }
    }
  });

  it("a DELETE through one process clears the other's entries", async () => {
    await admin(a, 'DELETE');
    for (let i = 0; i < 3; i++) await requestId(a, 'GET', '/projects');
    await requestId(b, 'GET', '/projects');
    assert.equal((await admin(b, 'DELETE')).deleted, 4);
    assert.deepEqual(await journal(a), []);
    assert.deepEqual(await journal(b), []);
    assert.equal(await rows(), 0);
  });

  it('keeps the newest SLIPWAY_JOURNAL_MAX of both processes, none older than SLIPWAY_JOURNAL_MINUTES, the table trimmed in batches', async () => {
    await admin(b, 'DELETE');
    const ids: string[] = [];
    for (let n = 0; n < 200; n += CONCURRENCY) {
      const done = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => requestId((n + i) % 2 ? a : b, 'GET', '/projects')));
      ids.push(...done.map((r) => r.id));
    }
    const listed = await journal(a, '?limit=1000');
    assert.equal(listed.length, MAX);
    // The last batches' requests ran concurrently: the newest MAX entries are the last MAX requests' (as a set).
    assert.deepEqual(new Set(listed.map((e) => e.request_id)), new Set(ids.slice(-MAX)));
    // Each process deletes what is past the bounds every max(10, MAX/10) rows it wrote; between two
    // trims it adds at most that many rows plus one batch.
    const stored = await rows();
    assert.ok(stored >= MAX && stored <= MAX + 2 * (10 + CONCURRENCY), `${stored} rows stored`);
    // An entry older than the age limit is neither listed nor counted by a DELETE.
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO request_journal (time, method, path, query, status, duration_ms, request_id, request_truncated, response_truncated)
         VALUES ($1, 'GET', '/v3/old', '{}', 200, 1, 'old', 0, 0)`,
        [new Date(Date.now() - 61 * 60_000).toISOString()],
      );
    } finally {
      await c.end();
    }
    assert.equal((await journal(b, '?path=/v3/old')).length, 0);
    assert.equal((await journal(b, '?limit=1000')).length, MAX - 1, 'the old row is the newest by seq, and takes a place of the MAX');
    assert.equal((await admin(a, 'DELETE')).deleted, MAX - 1);
    assert.equal(await rows(), 0);
  });
});
