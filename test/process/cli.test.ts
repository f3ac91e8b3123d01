// The `slipway` command: help, environment configuration, HTTPS, production mode and the
// `admin` commands.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATABASE_RESOURCE_TYPES, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { BIN, call, ok, startChild } from '../helpers/process.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'slipway-cli-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const slipway = (args: string[], env: Record<string, string> = {}) =>
  execFileSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });

function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { ca }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('slipway command line', () => {
  it('prints help with every serve flag', () => {
    const out = slipway(['--help']);
    for (const flag of ['--port', '--host', '--data-dir', '--database-url', '--log-level', '--tls', 'admin create-company'])
      assert.ok(out.includes(flag), flag);
  });

  it('takes DATA_DIR from the environment and prints the bootstrap key on first start only', async () => {
    const dir = tmp();
    const s = await startChild([], { DATA_DIR: dir });
    const m = /API key:\s+(svl_[0-9a-f]{64})/.exec(s.output());
    assert.ok(m, s.output());
    assert.ok(existsSync(join(dir, 'slipway.db')));
    const me = await call(s.baseUrl, 'GET', '/api-keys/me', m[1]!);
    assert.equal(me.status, 200);
    await s.stop();
    const again = await startChild([], { DATA_DIR: dir });
    assert.ok(!again.output().includes('First start'));
    assert.equal((await call(again.baseUrl, 'GET', '/api-keys/me', m[1]!)).status, 200);
    await again.stop();
  });

  it('logs one JSON line per request to standard output, and writes every line still buffered before it exits', async () => {
    const dir = tmp();
    const s = await startChild(['--log-level', 'info'], { DATA_DIR: dir });
    const n = 300;
    try {
      const token = /API key:\s+(svl_[0-9a-f]{64})/.exec(s.output())![1]!;
      // 20 at a time (the connections a client address may hold are capped).
      const statuses: number[] = [];
      for (let i = 0; i < n; i += 20)
        statuses.push(
          ...(await Promise.all(Array.from({ length: 20 }, (_, j) => call(s.baseUrl, 'GET', `/api-keys/me?n=${i + j}`, token).then((r) => r.status)))),
        );
      assert.deepEqual(new Set(statuses), new Set([200]));
    } finally {
      // Stopped at once: lines not written yet must still come out before the process ends.
      await s.stop();
    }
    const lines = s
      .output()
      .split('\n')
      .filter((l) => l.includes('"request completed"'))
      .map((l) => JSON.parse(l) as { url: string; statusCode: number });
    const seen = new Set(lines.filter((l) => l.url.startsWith('/v3/api-keys/me?n=') && l.statusCode === 200).map((l) => l.url));
    assert.equal(seen.size, n, `request lines logged: ${seen.size} of ${n}`);
  });

  it('the start banner lists the database types a database can be created with, and only those', async () => {
    const dir = tmp();
    const none = { SLIPWAY_DB_POSTGRESQL_URL: '', SLIPWAY_DB_MYSQL_URL: '', SLIPWAY_DB_REDIS_BIN: '' };
    const s = await startChild([], { ...none, DATA_DIR: dir });
    try {
      const token = /API key:\s+(svl_[0-9a-f]{64})/.exec(s.output())![1]!;
      const line = /Databases: (.*): simulated/.exec(s.output());
      assert.ok(line, s.output());
      const listed = line[1]!.split(', ');
      assert.deepEqual([...listed].sort(), ['mariadb', 'mysql', 'postgresql', 'redis', 'valkey']);
      assert.ok(!/mongodb/.test(s.output()), s.output());
      const versions: Record<string, string> = { postgresql: '17', mysql: '8.4', mariadb: '11.4', redis: '7.2', valkey: '8' };
      const body = (type: string) => ({
        display_name: `banner ${type}`,
        type,
        version: versions[type] ?? '7',
        cluster_id: DEFAULT_CLUSTER.id,
        resource_type_id: DATABASE_RESOURCE_TYPES[0]!.id,
        db_name: 'appdata',
        db_password: 'Secret_pass1',
      });
      for (const type of listed) await ok(s.baseUrl, token, 'POST', '/databases', 201, body(type));
      // The contract's create enum leaves mongodb out: a schema mismatch, as the specification words it.
      const mongo = await call(s.baseUrl, 'POST', '/databases', token, body('mongodb'));
      assert.deepEqual(mongo.body, { message: 'The request does not match the schema', status: 400 });
    } finally {
      await s.stop();
    }
  });

  it('admin commands act on the same data directory', async () => {
    const dir = tmp();
    const created = JSON.parse(slipway(['admin', 'create-company', '--name', 'Acme', '--data-dir', dir]));
    assert.match(created.api_key.token, /^svl_[0-9a-f]{64}$/);
    const viewer = JSON.parse(slipway(['admin', 'create-key', '--company', created.company.id, '--role', 'Company Viewer', '--data-dir', dir]));
    slipway(['admin', 'maintenance', 'on', '--company', created.company.id, '--data-dir', dir]);
    const s = await startChild(['--data-dir', dir], {});
    assert.equal((await call(s.baseUrl, 'GET', '/projects', viewer.token)).status, 200);
    assert.equal((await call(s.baseUrl, 'POST', '/projects', created.api_key.token, { display_name: 'x' })).status, 403);
    slipway(['admin', 'maintenance', 'off', '--company', created.company.id, '--data-dir', dir]);
    assert.equal((await call(s.baseUrl, 'POST', '/projects', created.api_key.token, { display_name: 'x' })).status, 201);
    slipway(['admin', 'suspend', '--company', created.company.id, '--data-dir', dir]);
    assert.equal((await call(s.baseUrl, 'GET', '/projects', viewer.token)).status, 403);
    await s.stop();
  });

  it('serves HTTPS with a self-signed local CA kept in the data directory', async () => {
    const dir = tmp();
    const s = await startChild(['--tls', 'self-signed', '--data-dir', dir], {});
    assert.ok(s.baseUrl.startsWith('https://'), s.baseUrl);
    const caPath = join(dir, 'tls', 'ca.pem');
    assert.ok(s.output().includes(caPath));
    const ca = readFileSync(caPath, 'utf8');
    const r = await httpsGet(`${s.baseUrl.replace('127.0.0.1', 'localhost')}/healthz`, ca);
    assert.equal(r.status, 200);
    await s.stop();
    // A restart reuses the same CA.
    const again = await startChild(['--tls', 'self-signed', '--data-dir', dir], {});
    assert.equal(readFileSync(caPath, 'utf8'), ca);
    assert.equal((await httpsGet(`${again.baseUrl}/healthz`, ca)).status, 200);
    await again.stop();
  });

  it('refuses plain HTTP in production mode unless a trusted proxy says https', async () => {
    const dir = tmp();
    const s = await startChild(['--production', '--trust-proxy', '--data-dir', dir], { SLIPWAY_BOOTSTRAP_TOKEN: 'svl_' + 'a'.repeat(64) });
    const plain = await fetch(`${s.baseUrl}/v3/projects`, { headers: { authorization: `Bearer svl_${'a'.repeat(64)}` } });
    assert.equal(plain.status, 403);
    const body = await plain.json();
    assert.deepEqual(Object.keys(body).sort(), ['message', 'status']);
    assert.match(body.message, /HTTPS/);
    const proxied = await fetch(`${s.baseUrl}/v3/projects`, { headers: { authorization: `Bearer svl_${'a'.repeat(64)}`, 'x-forwarded-proto': 'https' } });
    assert.equal(proxied.status, 200);
    await s.stop();
  });
});
