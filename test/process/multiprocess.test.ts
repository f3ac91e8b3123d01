// Several server processes on one PostgreSQL: shared state, one bootstrap, shared rate-limit
// counters (in the database, or in Redis) and shared idempotency records; a change to a key made
// through one process reaches the other's key cache at once.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createPgDatabase, PG_ADMIN_URL, REDIS_URL, redisSkip, skipUnless } from '../helpers/server.js';
import { call, startChild, type ChildServer } from '../helpers/process.js';
import { ACK_CHANNEL, AUTH_CHANNEL, LISTENER_NAME } from '../../src/shared/auth/keycache.js';

/**
 * Registers hooks that start two `slipway serve` processes on one new PostgreSQL database (with
 * `extra` in their environment; started together when `together`, so they race for migrations and
 * the bootstrap) and stop them; the handle is usable from tests. `urlOfB` gives the second process
 * another URL of the database (e.g. through the Unix socket).
 */
/** A new key (any read permission) of the two servers' company, used once on each process so both have it cached. */
async function cachedKeyOf(s: ReturnType<typeof twoServers>) {
  const k = await call(s.a.baseUrl, 'POST', '/api-keys', s.token, {
    name: `k-${randomBytes(3).toString('hex')}`,
    capabilities: [{ permission: 'PROJECT:READ' }],
  });
  assert.equal(k.status, 201, JSON.stringify(k.body));
  for (const x of [s.a, s.b, s.a, s.b]) assert.equal((await call(x.baseUrl, 'GET', '/projects', k.body.token)).status, 200);
  return k.body as { id: string; token: string };
}

function twoServers(extra: Record<string, string>, together = false, urlOfB = (url: string) => url) {
  const s = {
    token: `svl_${randomBytes(32).toString('hex')}`,
    a: undefined as unknown as ChildServer,
    b: undefined as unknown as ChildServer,
    dbUrl: '',
  };
  let db: Awaited<ReturnType<typeof createPgDatabase>>;
  let dir: string;
  before(async () => {
    db = await createPgDatabase();
    dir = mkdtempSync(join(tmpdir(), 'slipway-mp-'));
    s.dbUrl = db.url;
    const env = { DATABASE_URL: db.url, SLIPWAY_BOOTSTRAP_TOKEN: s.token, SLIPWAY_SECRET_KEY: 'shared-secret', DATA_DIR: dir, ...extra };
    const envB = { ...env, DATABASE_URL: urlOfB(db.url) };
    if (together) [s.a, s.b] = await Promise.all([startChild([], env), startChild([], envB)]);
    else {
      s.a = await startChild([], env);
      s.b = await startChild([], envB);
    }
  });
  after(async () => {
    await Promise.all([s.a?.stop(), s.b?.stop()]);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

describe('two server processes on one PostgreSQL', { skip: await skipUnless('postgres') }, () => {
  const s = twoServers({ SLIPWAY_RATE_GENERAL_WRITE: '4' }, true);

  it('bootstraps exactly once', async () => {
    const printed = [s.a.output(), s.b.output()].filter((o) => o.includes('First start'));
    assert.equal(printed.length, 1);
    const keys = await call(s.a.baseUrl, 'GET', '/api-keys', s.token);
    assert.equal(keys.status, 200);
    assert.equal(keys.body.total, 1);
  });

  it('a write through one process is read through the other', async () => {
    const created = await call(s.a.baseUrl, 'POST', '/projects', s.token, { display_name: 'Shared' });
    assert.equal(created.status, 201);
    const read = await call(s.b.baseUrl, 'GET', `/projects/${created.body.id}`, s.token);
    assert.equal(read.status, 200);
    assert.equal(read.body.display_name, 'Shared');
    const updated = await call(s.b.baseUrl, 'PATCH', `/projects/${created.body.id}`, s.token, { display_name: 'Renamed' });
    assert.equal(updated.status, 200);
    assert.equal((await call(s.a.baseUrl, 'GET', `/projects/${created.body.id}`, s.token)).body.display_name, 'Renamed');
  });

  it('rate-limit counters are shared between processes', async () => {
    // createProjectV3 has a limit of 4 per minute here; one was used by the previous test.
    const statuses = [];
    for (const x of [s.a, s.b, s.a, s.b]) statuses.push((await call(x.baseUrl, 'POST', '/projects', s.token, { display_name: 'Counted' })).status);
    assert.deepEqual(statuses, [201, 201, 201, 429]);
    const r = await call(s.a.baseUrl, 'POST', '/projects', s.token, { display_name: 'Counted' });
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  });

  it('an Idempotency-Key used on one process is replayed by the other', async () => {
    const headers = { authorization: `Bearer ${s.token}`, 'content-type': 'application/json', 'idempotency-key': `k-${randomBytes(4).toString('hex')}` };
    const body = JSON.stringify({ name: 'idem key', role_ids: [], capabilities: [{ permission: 'PROJECT:READ' }] });
    const first = await fetch(`${s.a.baseUrl}/v3/api-keys`, { method: 'POST', headers, body });
    const second = await fetch(`${s.b.baseUrl}/v3/api-keys`, { method: 'POST', headers, body });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await second.json(), await first.json());
    const keys = await call(s.b.baseUrl, 'GET', '/api-keys', s.token);
    assert.equal(keys.body.data.filter((k: { name: string }) => k.name === 'idem key').length, 1);
  });
});

describe('API keys cached by two server processes on one PostgreSQL', { skip: await skipUnless('postgres') }, () => {
  const s = twoServers({});
  const cachedKey = () => cachedKeyOf(s);

  it('a key disabled through one process is refused by the other at once, and works again once enabled', async () => {
    const k = await cachedKey();
    assert.equal((await call(s.a.baseUrl, 'POST', `/api-keys/${k.id}/toggle`, s.token)).status, 200);
    const refused = await call(s.b.baseUrl, 'GET', '/projects', k.token);
    assert.equal(refused.status, 401);
    assert.match(refused.body.message, /disabled/);
    assert.equal((await call(s.a.baseUrl, 'GET', '/projects', k.token)).status, 401);
    assert.equal((await call(s.b.baseUrl, 'POST', `/api-keys/${k.id}/toggle`, s.token)).status, 200);
    assert.equal((await call(s.a.baseUrl, 'GET', '/projects', k.token)).status, 200);
    assert.equal((await call(s.b.baseUrl, 'GET', '/projects', k.token)).status, 200);
  });

  it('a key rotated through one process: the other refuses the old token at once and accepts the new one', async () => {
    const k = await cachedKey();
    const rotated = await call(s.a.baseUrl, 'POST', `/api-keys/${k.id}/rotate`, s.token, {});
    assert.equal(rotated.status, 200);
    const old = await call(s.b.baseUrl, 'GET', '/projects', k.token);
    assert.equal(old.status, 401);
    assert.equal((await call(s.b.baseUrl, 'GET', '/projects', rotated.body.token)).status, 200);
    assert.equal((await call(s.a.baseUrl, 'GET', '/projects', k.token)).status, 401);
  });

  it('a key deleted through one process is refused by the other at once', async () => {
    const k = await cachedKey();
    assert.equal((await call(s.b.baseUrl, 'DELETE', `/api-keys/${k.id}`, s.token)).status, 200);
    for (const x of [s.a, s.b]) {
      const r = await call(x.baseUrl, 'GET', '/projects', k.token);
      assert.equal(r.status, 401);
      assert.match(r.body.message, /deleted/);
    }
  });

  it('a change is answered only once every other listening process acknowledged it', async () => {
    const k = await cachedKey();
    const third = await listenerOf(s.dbUrl, 300);
    try {
      const rotated = await call(s.a.baseUrl, 'POST', `/api-keys/${k.id}/rotate`, s.token, {});
      const answeredAt = Date.now();
      assert.equal(rotated.status, 200);
      // The stand-in acknowledged 300 ms after the change reached it, and the answer waited for it.
      assert.equal(third.sentAt.length, 1);
      assert.ok(answeredAt >= third.sentAt[0]!, `answered ${third.sentAt[0]! - answeredAt} ms before the acknowledgement`);
      // B acknowledged too (A does not acknowledge its own change).
      const listeners = await third.listenerPids();
      assert.equal(listeners.length, 2);
      assert.equal(third.ackers.size, 1);
      assert.ok(listeners.includes([...third.ackers][0]!));
      assert.equal((await call(s.b.baseUrl, 'GET', '/projects', k.token)).status, 401);
    } finally {
      await third.end();
    }
  });

  it('a listening process that never acknowledges delays a change only for a bounded time', async () => {
    const k = await cachedKey();
    const silent = await listenerOf(s.dbUrl, null);
    try {
      const rotated = await call(s.a.baseUrl, 'POST', `/api-keys/${k.id}/rotate`, s.token, {});
      assert.equal(rotated.status, 200);
      assert.equal((await call(s.b.baseUrl, 'GET', '/projects', k.token)).status, 401);
      assert.equal((await call(s.b.baseUrl, 'GET', '/projects', rotated.body.token)).status, 200);
    } finally {
      await silent.end();
    }
  });
});

/**
 * A stand-in for a third process's key-cache listener on `url`: it acknowledges each key change
 * `delayMs` after it arrives (never when null), noting when it sent each acknowledgement and which
 * other backends acknowledged.
 */
async function listenerOf(url: string, delayMs: number | null) {
  const client = new pg.Client({ connectionString: url, application_name: LISTENER_NAME });
  await client.connect();
  const own = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const sentAt: number[] = [];
  const ackers = new Set<number>();
  client.on('notification', (n) => {
    if (n.channel === ACK_CHANNEL) {
      if (n.processId !== own) ackers.add(n.processId);
    } else if (delayMs !== null) {
      setTimeout(() => {
        sentAt.push(Date.now());
        client.query('SELECT pg_notify($1, $2)', [ACK_CHANNEL, n.payload]).catch(() => {});
      }, delayMs);
    }
  });
  await client.query(`LISTEN ${AUTH_CHANNEL}; LISTEN ${ACK_CHANNEL}`);
  return {
    sentAt,
    ackers,
    /** The Slipway processes' listeners (not this one). */
    listenerPids: async () =>
      (
        await client.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()',
          [LISTENER_NAME],
        )
      ).rows.map((r) => r.pid),
    end: () => client.end(),
  };
}

describe('rate-limit counters in Redis shared by two server processes', { skip: (await skipUnless('postgres')) || (await redisSkip()) }, () => {
  const s = twoServers({
    REDIS_URL,
    SLIPWAY_REDIS_PREFIX: `slipway-test-${randomBytes(6).toString('hex')}:`,
    SLIPWAY_RATE_GENERAL_WRITE: '3',
    SLIPWAY_RATE_READ: '5',
  });

  it('counts every request of both processes exactly, with the same window', async () => {
    const statuses = [];
    const remaining = [];
    for (const x of [s.a, s.b, s.a, s.b]) {
      const r = await call(x.baseUrl, 'POST', '/projects', s.token, { display_name: 'Counted' });
      statuses.push(r.status);
      remaining.push(r.headers.get('x-ratelimit-remaining'));
    }
    assert.deepEqual(statuses, [201, 201, 201, 429]);
    assert.deepEqual(remaining, ['2', '1', '0', '0']);
    const reads = [];
    for (const x of [s.b, s.a, s.b, s.a, s.b, s.a]) reads.push((await call(x.baseUrl, 'GET', '/projects', s.token)).status);
    assert.deepEqual(reads, [200, 200, 200, 200, 200, 429]);
    const r = await call(s.b.baseUrl, 'GET', '/projects', s.token);
    const retry = Number(r.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
    assert.equal(r.headers.get('x-ratelimit-reset'), String(retry));
  });
});

// Each process counts a bucket's concurrent requests together (one round trip adds them all);
// every request still takes its own place in the shared window.
for (const store of ['database', 'redis'] as const) {
  describe(
    `concurrent requests to two server processes, counters in the ${store}`,
    { skip: (await skipUnless('postgres')) || (store === 'redis' && (await redisSkip())) },
    () => {
      const limit = 20;
      const s = twoServers({
        SLIPWAY_RATE_READ: String(limit),
        ...(store === 'redis'
          ? { REDIS_URL, SLIPWAY_REDIS_PREFIX: `slipway-test-${randomBytes(6).toString('hex')}:` }
          : { SLIPWAY_RATE_LIMIT_STORE: 'database' }),
      });

      it('admit exactly the limit, each with its own remaining count', async () => {
        const rs = await Promise.all(Array.from({ length: 36 }, (_, i) => call((i % 2 ? s.a : s.b).baseUrl, 'GET', '/projects', s.token)));
        const ok = rs.filter((r) => r.status === 200);
        assert.equal(ok.length, limit, `statuses: ${rs.map((r) => r.status).join(' ')}`);
        assert.equal(rs.filter((r) => r.status === 429).length, 36 - limit);
        const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
        assert.deepEqual(
          remaining,
          Array.from({ length: limit }, (_, i) => i),
        );
      });
    },
  );
}

/** Where the local PostgreSQL's Unix socket is (Debian's default). */
const SOCKET_DIR = process.env.SLIPWAY_TEST_POSTGRES_SOCKET_DIR ?? '/var/run/postgresql';

/** The database of `url` through the Unix socket in SOCKET_DIR (same port and user). */
function viaSocket(url: string): string {
  const u = new URL(url);
  return `postgres:///${u.pathname.slice(1)}?host=${encodeURIComponent(SOCKET_DIR)}&port=${u.port || '5432'}&user=${u.username}`;
}

async function socketSkip(): Promise<string | boolean> {
  const unavailable = await skipUnless('postgres');
  if (unavailable) return unavailable;
  const socket = join(SOCKET_DIR, `.s.PGSQL.${new URL(PG_ADMIN_URL).port || '5432'}`);
  return existsSync(socket) ? false : `no PostgreSQL socket at ${socket} (SLIPWAY_TEST_POSTGRES_SOCKET_DIR names its folder)`;
}

describe("a server on PostgreSQL's Unix socket next to one on TCP", { skip: await socketSkip() }, () => {
  const s = twoServers({}, false, viaSocket);

  it('connects through the socket, and shares state and key changes with the process on TCP', async () => {
    const created = await call(s.b.baseUrl, 'POST', '/projects', s.token, { display_name: 'Through the socket' });
    assert.equal(created.status, 201);
    assert.equal((await call(s.a.baseUrl, 'GET', `/projects/${created.body.id}`, s.token)).body.display_name, 'Through the socket');
    // The second process's connections have no client address: they came through the socket
    // (this check and the first process connect over TCP).
    const admin = new pg.Client({ connectionString: s.dbUrl });
    await admin.connect();
    try {
      const r = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND client_port = -1');
      assert.ok(r.rows[0]!.n > 0, 'no connection through the socket');
    } finally {
      await admin.end();
    }
    // A key disabled through the process on TCP is refused at once by the one on the socket.
    const k = await cachedKeyOf(s);
    assert.equal((await call(s.a.baseUrl, 'POST', `/api-keys/${k.id}/toggle`, s.token)).status, 200);
    const refused = await call(s.b.baseUrl, 'GET', '/projects', k.token);
    assert.equal(refused.status, 401);
    assert.match(refused.body.message, /disabled/);
  });
});
