// Redis databases on real servers (SLIPWAY_DB_REDIS_BIN): each database is a redis-server process
// Slipway starts and supervises. Through the API: create and connect as the returned user; the
// tenant's users refused server administration but not data commands, Slipway's management
// unaffected; password reset; suspension; restart with a MULTI open; backup (RDB), change, restore;
// a backup while the user's BGSAVE runs; a broken snapshot; isolation; supervision after the
// process dies; deletion; the servers stop with Slipway.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
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
    let a: Conn & { id: string };
    const base = 21000 + Math.floor(Math.random() * 20000);
    const s = useServer({
      db: kind,
      rateLimits: GENEROUS,
      env: { SLIPWAY_DB_REDIS_BIN: bin, SLIPWAY_DB_REDIS_PORTS: `${base}-${base + 20}`, SLIPWAY_SIM_PROGRESSION: '*=immediate' },
    });
    const keys = (c: Conn) => use(c, async (r) => (await r.keys('*')).sort());
    /** Deletes a database a test made for itself and waits until it is gone. */
    const remove = async (id: string) => {
      expectStatus(await s.delete(`/databases/${id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${id}`)).status === 404, 60_000);
    };

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

    it("refuses the tenant's users server administration, keeps every data command; Slipway still manages the server", async () => {
      const d = await create(s, body('redis', '7', { db_user: 'tenant', password: 'Rules_pass1' }));
      try {
        const port = Number(d.internal_port);
        const c: Conn = { host: d.internal_hostname, port, username: 'tenant', password: 'Rules_pass1' };
        /** 'refused' (by the user's rules, or by the server for every client), else 'ran' (with the error past the rules, if any). */
        const attempt = (r: Redis, cmd: string, ...args: (string | number)[]) =>
          r.call(cmd, ...args).then(
            () => 'ran',
            (e: Error) => (/^NOPERM|command not allowed|can't run this command/.test(e.message) ? 'refused' : `ran: ${e.message}`),
          );
        // Rules apply per command (and subcommand) before its arguments are read: the arguments are
        // ones that change nothing where a command does run (the server's own port and address,
        // ABORT, NO ONE, an unreachable host).
        const administration: [string, ...(string | number)[]][] = [
          ['CONFIG', 'SET', 'port', port],
          ['CONFIG', 'SET', 'bind', '127.0.0.1'],
          ['CONFIG', 'SET', 'dir', '/tmp'],
          ['CONFIG', 'REWRITE'],
          ['CONFIG', 'RESETSTAT'],
          ['ACL', 'SETUSER', 'slipway-admin', 'on'],
          ['ACL', 'DELUSER', 'nobody'],
          ['ACL', 'LIST'],
          ['ACL', 'LOAD'],
          ['SHUTDOWN', 'ABORT'],
          ['REPLICAOF', 'NO', 'ONE'],
          ['SLAVEOF', 'NO', 'ONE'],
          ['FAILOVER', 'ABORT'],
          ['MIGRATE', '127.0.0.1', 1, 'k', 0, 100],
          ['MODULE', 'LOAD', '/nonexistent/module.so'],
          ['DEBUG', 'SLEEP', 0],
          ['CLIENT', 'KILL', 'USER', 'slipway-admin'],
          ['CLIENT', 'PAUSE', 1],
          ['BGREWRITEAOF'],
          ['PFSELFTEST'],
        ];
        for (const as of [c, { host: c.host, port, password: c.password }]) {
          const outcomes = await use(as, async (r) => {
            const out: Record<string, string> = {};
            for (const [cmd, ...args] of administration) out[[cmd, ...args].join(' ')] = await attempt(r, cmd, ...args);
            // A script runs with its caller's rules (CONFIG, ACL and the like are refused to every script).
            out['EVAL migrate'] = await attempt(r, 'EVAL', "return redis.call('MIGRATE', '127.0.0.1', 1, 'k', 0, 100)", 0);
            return out;
          });
          assert.deepEqual(outcomes, Object.fromEntries(Object.keys(outcomes).map((k) => [k, 'refused'])), `as ${as.username ?? 'default'}`);
        }

        // What applications and their libraries use.
        await use(c, async (r) => {
          assert.equal(await r.client('SETNAME', 'worker-1'), 'OK');
          assert.equal(await r.client('GETNAME'), 'worker-1');
          assert.ok(Number(await r.client('ID')) > 0);
          assert.match(String(await r.client('INFO')), /name=worker-1/);
          assert.match(String(await r.client('LIST')), /name=worker-1/);
          assert.equal(await r.call('ACL', 'WHOAMI'), 'tenant');
          assert.ok(((await r.call('ACL', 'CAT')) as string[]).includes('keyspace'));
          assert.equal(await r.set('k', 'v'), 'OK');
          assert.equal(await r.get('k'), 'v');
          assert.deepEqual(await r.multi().incr('n').incr('n').exec(), [
            [null, 1],
            [null, 2],
          ]);
          assert.equal(await r.eval("return redis.call('GET', KEYS[1])", 1, 'k'), 'v');
          assert.deepEqual((await r.scan('0', 'MATCH', '*', 'COUNT', 100))[1].sort(), ['k', 'n']);
          assert.deepEqual((await r.keys('*')).sort(), ['k', 'n']);
          await r.rpush('list', '3', '1', '2');
          assert.deepEqual(await r.sort('list'), ['1', '2', '3']);
          assert.deepEqual(await r.call('SORT_RO', 'list'), ['1', '2', '3']);
          const dumped = await r.dumpBuffer('k');
          assert.equal(await r.restore('copy', 0, dumped), 'OK');
          assert.equal(await r.get('copy'), 'v');
          assert.equal(await r.del('k', 'copy', 'list'), 3);
          assert.match(await r.info('memory'), /used_memory:\d+/);
          assert.match(await r.info(), /redis_version:/);
          assert.equal(((await r.config('GET', 'maxmemory')) as string[])[0], 'maxmemory');
          assert.deepEqual(await r.config('GET', 'maxmemory-policy'), ['maxmemory-policy', 'noeviction']); // BullMQ checks it
          // RESTORE payloads of clients are checked in full (a crafted one could corrupt the server's memory).
          assert.deepEqual(await r.config('GET', 'sanitize-dump-payload'), ['sanitize-dump-payload', 'clients']);
          assert.ok(Array.isArray(await r.call('SLOWLOG', 'GET')));
          assert.ok(Array.isArray(await r.call('LATENCY', 'LATEST')));
          assert.deepEqual(await r.call('MODULE', 'LIST'), []);
          assert.equal(((await r.call('ROLE')) as unknown[])[0], 'master');
          assert.equal(await r.select(1), 'OK');
          await r.set('other', 'db');
          assert.equal(await r.swapdb(0, 1), 'OK');
          assert.equal(await r.swapdb(0, 1), 'OK');
          assert.equal(await r.flushdb(), 'OK');
          assert.equal(await r.dbsize(), 0);
          assert.equal(await r.select(0), 'OK');
          assert.equal(await r.dbsize(), 1);
          assert.equal(await r.bgsave().catch((e: Error) => e.message), 'Background saving started');
          await waitFor('the background save', async () => /rdb_bgsave_in_progress:0/.test(await r.info('persistence')));
          assert.ok(Number(await r.lastsave()) > 0);
          assert.equal(await r.save(), 'OK');
          assert.equal(await r.flushall(), 'OK');
          assert.equal(await r.dbsize(), 0);
          await r.set('kept', '1');
        });
        // Pub/sub, and MONITOR on the tenant's own server.
        const sub = await connect(c);
        const monitor = await connect(c);
        try {
          const got = new Promise<string>((resolve) => sub.on('message', (_channel: string, message: string) => resolve(message)));
          await sub.subscribe('events');
          assert.equal(await monitor.call('MONITOR'), 'OK');
          assert.equal(await use(c, (r) => r.publish('events', 'hello')), 1);
          assert.equal(await got, 'hello');
        } finally {
          sub.disconnect();
          monitor.disconnect();
        }

        // Slipway's management: backup, password reset, restart, external access on and off.
        await backup(s, d.id);
        expectStatus(await s.post(`/databases/${d.id}/reset-password`, { new_password: 'Rules_pass2' }), 200);
        assert.equal((await waitStatus(s, d.id, 'ready', 'passwordChangeFailed')).status, 'ready');
        c.password = 'Rules_pass2';
        assert.equal(await use(c, (r) => attempt(r, 'CONFIG', 'SET', 'port', port)), 'refused');
        expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
        assert.equal((await waitStatus(s, d.id, 'ready', 'error')).status, 'ready');
        assert.equal(await use(c, (r) => r.get('kept')), '1');
        assert.equal(await use(c, (r) => attempt(r, 'CONFIG', 'SET', 'port', port)), 'refused');
        // Connections may be reset while the server moves its listening addresses.
        const bind = () => use(c, async (r) => ((await r.config('GET', 'bind')) as string[])[1]).catch(() => undefined);
        expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
        await waitFor('the external address', async () => (await bind()) === '0.0.0.0');
        expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
        await waitFor('loopback only', async () => (await bind()) === '127.0.0.1');
      } finally {
        await remove(d.id);
      }
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

    it("a backup waits for a background save the database's user started", async () => {
      const d = await create(s, body('redis', '7', { db_user: 'saver', password: 'Save_pass1' }));
      try {
        const c: Conn = { host: d.internal_hostname, port: Number(d.internal_port), username: 'saver', password: 'Save_pass1' };
        // Saves slowed down to 100 ms a key: a setting in the server's file, read when it starts again on its own.
        const dir = join(s.app.config.dataDir, 'redis', d.id);
        appendFileSync(join(dir, 'redis.conf'), 'rdb-key-save-delay 100000\n');
        process.kill(Number(readFileSync(join(dir, 'redis.pid'), 'utf8')), 'SIGKILL');
        await waitFor(
          'the server to come back',
          async () => (await use(c, (r) => r.config('GET', 'rdb-key-save-delay') as Promise<string[]>).catch(() => []))[1] === '100000',
          30_000,
          100,
        );
        await use(c, async (r) => {
          for (let i = 0; i < 10; i++) await r.set(`k${i}`, i);
          assert.equal(await r.bgsave(), 'Background saving started');
          assert.match(await r.info('persistence'), /rdb_bgsave_in_progress:1/);
        });
        const snapshot = await backup(s, d.id);
        assert.ok(existsSync(backupFile(s, d.id, snapshot)));
      } finally {
        await remove(d.id);
      }
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
    });
  });
}
