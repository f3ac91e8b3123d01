// Several server processes on one PostgreSQL: shared state, one bootstrap, shared rate-limit
// counters and shared idempotency records.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPgDatabase, skipUnless } from '../helpers/server.js';
import { call, startChild, type ChildServer } from '../helpers/process.js';

describe('two server processes on one PostgreSQL', { skip: await skipUnless('postgres') }, () => {
  const token = `svl_${randomBytes(32).toString('hex')}`;
  let db: Awaited<ReturnType<typeof createPgDatabase>>;
  let a: ChildServer;
  let b: ChildServer;
  let dir: string;

  before(async () => {
    db = await createPgDatabase();
    dir = mkdtempSync(join(tmpdir(), 'slipway-mp-'));
    const env = { DATABASE_URL: db.url, SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'shared-secret', SLIPWAY_RATE_GENERAL_WRITE: '4', DATA_DIR: dir };
    // Started together: they race for migrations and the bootstrap.
    [a, b] = await Promise.all([startChild([], env), startChild([], env)]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('bootstraps exactly once', async () => {
    const printed = [a.output(), b.output()].filter((o) => o.includes('First start'));
    assert.equal(printed.length, 1);
    const keys = await call(a.baseUrl, 'GET', '/api-keys', token);
    assert.equal(keys.status, 200);
    assert.equal(keys.body.total, 1);
  });

  it('a write through one process is read through the other', async () => {
    const created = await call(a.baseUrl, 'POST', '/projects', token, { display_name: 'Shared' });
    assert.equal(created.status, 201);
    const read = await call(b.baseUrl, 'GET', `/projects/${created.body.id}`, token);
    assert.equal(read.status, 200);
    assert.equal(read.body.display_name, 'Shared');
    const updated = await call(b.baseUrl, 'PATCH', `/projects/${created.body.id}`, token, { display_name: 'Renamed' });
    assert.equal(updated.status, 200);
    assert.equal((await call(a.baseUrl, 'GET', `/projects/${created.body.id}`, token)).body.display_name, 'Renamed');
  });

  it('rate-limit counters are shared between processes', async () => {
    // createProjectV3 has a limit of 4 per minute here; one was used by the previous test.
    const statuses = [];
    for (const s of [a, b, a, b]) statuses.push((await call(s.baseUrl, 'POST', '/projects', token, { display_name: 'Counted' })).status);
    assert.deepEqual(statuses, [201, 201, 201, 429]);
    const r = await call(a.baseUrl, 'POST', '/projects', token, { display_name: 'Counted' });
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  });

  it('an Idempotency-Key used on one process is replayed by the other', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `k-${randomBytes(4).toString('hex')}` };
    const body = JSON.stringify({ name: 'idem key', role_ids: [], capabilities: [{ permission: 'PROJECT:READ' }] });
    const first = await fetch(`${a.baseUrl}/v3/api-keys`, { method: 'POST', headers, body });
    const second = await fetch(`${b.baseUrl}/v3/api-keys`, { method: 'POST', headers, body });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await second.json(), await first.json());
    const keys = await call(b.baseUrl, 'GET', '/api-keys', token);
    assert.equal(keys.body.data.filter((k: { name: string }) => k.name === 'idem key').length, 1);
  });
});
