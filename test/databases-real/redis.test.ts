// Redis databases on real servers (SLIPWAY_DB_REDIS_BIN): each database is a redis-server process
// Slipway starts and supervises. Through the API: create and connect as the returned user; password
// reset; suspension; restart with a MULTI open; backup (RDB), change, restore; a broken snapshot;
// isolation; supervision after the process dies; deletion; the servers stop with Slipway.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { DB_KINDS, GENEROUS, skipUnless, startServer, type TestServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { portFree } from '../../src/modules/databases/runtime/redis.js';
import { backup, backupFile, body, create, redisBin, waitStatus } from './support.js';

const bin = redisBin();
const skipAll = bin.includes('unavailable') ? bin : false;

interface Conn {
  host: string;
  port: number;
  username?: string;
  password: string;
}

async function connect(c: Conn): Promise<Redis> {
  const r = new Redis({ ...c, lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  // A refused AUTH is reported as an 'error' event; connect() then only says the connection closed.
  let refused: Error | undefined;
  r.on('error', (e: Error) => (refused ??= e));
  try {
    await r.connect();
  } catch (e) {
    r.disconnect();
    throw refused ?? e;
  }
  return r;
}

async function use<T>(c: Conn, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = await connect(c);
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/** 'ok', or the error of a login attempt. */
const login = (c: Conn) =>
  use(c, (r) => r.ping()).then(
    () => 'ok',
    (e: Error) => e.message,
  );

for (const kind of DB_KINDS) {
  describe(`real Redis databases (${kind})`, { skip: skipAll || (await skipUnless(kind)), timeout: 300_000 }, () => {
    let s: TestServer;
    let a: Conn & { id: string };
    const base = 21000 + Math.floor(Math.random() * 20000);
    const keys = (c: Conn) => use(c, async (r) => (await r.keys('*')).sort());

    before(async () => {
      s = await startServer({
        db: kind,
        rateLimits: GENEROUS,
        env: { SLIPWAY_DB_REDIS_BIN: bin, SLIPWAY_DB_REDIS_PORTS: `${base}-${base + 20}`, SLIPWAY_SIM_PROGRESSION: '*=immediate' },
      });
    });
    after(async () => {
      await s?.close();
    });

    it("starts the database's own server; a client connects as the requested user", async () => {
      const d = await create(s, body('redis', '7', { db_user: 'app', password: 'First_pass1' }));
      assert.equal(d.status, 'ready');
      assert.equal(d.internal_hostname, '127.0.0.1');
      const port = Number(d.internal_port);
      assert.ok(port >= base && port <= base + 20, `port ${port} in the configured range`);
      a = { id: d.id, host: d.internal_hostname, port, username: 'app', password: 'First_pass1' };
      await use(a, async (r) => {
        await r.set('one', '1');
        await r.set('two', '2');
      });
      assert.deepEqual(await keys(a), ['one', 'two']);
      // requirepass: the default user takes the same password.
      assert.equal(await login({ host: a.host, port, password: 'First_pass1' }), 'ok');
      assert.match(await login({ ...a, password: 'Wrong_pass1' }), /WRONGPASS/);
      assert.match(await login({ host: a.host, port, password: 'Wrong_pass1' }), /WRONGPASS/);
      // No password on disk: the users file holds hashes only.
      const acl = readFileSync(join(s.app.config.dataDir, 'redis', d.id, 'users.acl'), 'utf8');
      assert.ok(!acl.includes('First_pass1'));
    });

    it("keeps databases apart: another database's password does not open this one", async () => {
      const d = await create(s, body('redis', '7', { db_user: 'app', password: 'Other_pass1' }));
      assert.notEqual(d.internal_port, String(a.port));
      const b: Conn = { host: d.internal_hostname, port: Number(d.internal_port), username: 'app', password: 'Other_pass1' };
      assert.deepEqual(await keys(b), []);
      assert.match(await login({ ...b, port: a.port }), /WRONGPASS/);
    });

    it('resets the password: the old one is refused, the new one accepted', async () => {
      expectStatus(await s.post(`/databases/${a.id}/reset-password`, { new_password: 'Second_pass2' }), 200);
      assert.equal((await waitStatus(s, a.id, 'ready', 'passwordChangeFailed')).status, 'ready');
      assert.match(await login(a), /WRONGPASS/);
      a.password = 'Second_pass2';
      assert.deepEqual(await keys(a), ['one', 'two']);
    });

    it('suspension refuses logins and closes connections; activation allows them again', async () => {
      const open = await connect(a);
      expectStatus(await s.post(`/databases/${a.id}/suspend`), 200);
      await waitFor('logins to be refused', async () => /WRONGPASS|disabled/.test(await login(a)), 20_000);
      await waitFor(
        'the open connection to be closed',
        () =>
          open.ping().then(
            () => false,
            () => true,
          ),
        20_000,
      );
      open.disconnect();
      expectStatus(await s.post(`/databases/${a.id}/activate`), 200);
      await waitFor('logins to be accepted', async () => (await login(a)) === 'ok', 20_000);
    });

    it('restart aborts an open MULTI and keeps the data', async () => {
      const open = await connect(a);
      await open
        .multi()
        .set('uncommitted', 'x')
        .exec()
        .catch(() => null); // warm the connection
      await open.del('uncommitted');
      const tx = open.multi();
      tx.set('uncommitted', 'y');
      expectStatus(await s.post(`/databases/${a.id}/restart`), 200);
      assert.equal((await waitStatus(s, a.id, 'ready', 'error')).status, 'ready');
      await assert.rejects(tx.exec());
      open.disconnect();
      assert.deepEqual(await keys(a), ['one', 'two']);
    });

    it('backs up (RDB), changes, restores: the old keys are back', async () => {
      const snapshot = await backup(s, a.id);
      assert.ok(existsSync(backupFile(s, a.id, snapshot)));
      await use(a, async (r) => {
        await r.del('one');
        await r.set('three', '3');
      });
      expectStatus(await s.post(`/databases/${a.id}/backups/${snapshot}/restore`), 202);
      assert.equal((await waitStatus(s, a.id, 'ready', 'restoringFailed')).status, 'ready');
      assert.deepEqual(await keys(a), ['one', 'two']);
      await use(a, (r) => r.set('after', 'restore'));
    });

    it('a broken snapshot ends in restoringFailed with the data unchanged', async () => {
      const broken = await backup(s, a.id);
      writeFileSync(backupFile(s, a.id, broken), 'REDIS0011 not a snapshot');
      expectStatus(await s.post(`/databases/${a.id}/backups/${broken}/restore`), 202);
      assert.equal((await waitStatus(s, a.id, 'restoringFailed', 'ready')).status, 'restoringFailed');
      assert.deepEqual(await keys(a), ['after', 'one', 'two']);
    });

    it('reads memory and storage from the server', async () => {
      const used = expectStatus(await s.get(`/databases/${a.id}/metrics/used-storage`), 200) as { value: number };
      assert.ok(used.value > 0);
      const now = Date.now();
      const q = `from=${new Date(now - 120_000).toISOString()}&to=${new Date(now).toISOString()}&interval_in_seconds=60`;
      const mem = expectStatus(await s.get(`/databases/${a.id}/metrics/memory-usage?${q}`), 200) as { data?: { value: number }[] } | { value: number }[];
      const points = Array.isArray(mem) ? mem : (mem.data ?? []);
      assert.ok(
        points.some((p) => p.value > 100_000),
        `memory read from INFO: ${JSON.stringify(mem)}`,
      );
    });

    it('starts the server again when its process dies', async () => {
      const pid = Number(readFileSync(join(s.app.config.dataDir, 'redis', a.id, 'redis.pid'), 'utf8'));
      process.kill(pid, 'SIGKILL');
      await waitFor('the server to come back', async () => (await login(a)) === 'ok', 30_000, 100);
      const again = Number(readFileSync(join(s.app.config.dataDir, 'redis', a.id, 'redis.pid'), 'utf8'));
      assert.notEqual(again, pid);
    });

    it('deletion stops the server and removes its files and backups', async () => {
      expectStatus(await s.delete(`/databases/${a.id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${a.id}`)).status === 404, 60_000);
      assert.ok(await portFree('127.0.0.1', a.port), 'nothing listens on the port');
      assert.ok(!existsSync(join(s.app.config.dataDir, 'redis', a.id)));
      assert.ok(!existsSync(join(s.app.config.dataDir, 'database-backups', a.id)));
    });

    it('the servers stop with Slipway', async () => {
      const left = await s.app.database.db.selectFrom('databases').select('internal_port').where('type', '=', 'redis').execute();
      assert.equal(left.length, 1);
      await s.close();
      assert.ok(await portFree('127.0.0.1', Number(left[0]!.internal_port)));
      s = undefined as unknown as TestServer;
    });
  });
}
