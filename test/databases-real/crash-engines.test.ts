// Crash safety of real MariaDB and Redis databases: `slipway serve` (SQLite) is SIGKILLed while
// databases are being created and while a restore runs, at several moments. Started again on the
// same data directory, every operation finishes or fails cleanly (nothing stays creating or
// restoring), a restored database holds either its old content or the backup's, the server holds
// no database or user (MariaDB) and no server process (Redis) that no Slipway database accounts
// for, and deleting everything leaves none.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { sleep, uniqueName, waitFor } from '../helpers/util.js';
import { body, crashable, MYSQL_ADMIN_URL, mysqlAvailable, redisBin, withRedis } from './support.js';

const available = await mysqlAvailable();
const bin = redisBin();

describe(
  'real MariaDB databases survive SIGKILL of Slipway during create and restore',
  { skip: available === true ? false : available, timeout: 300_000 },
  () => {
    const h = crashable({ SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL });
    const prefix = `crashmy${randomBytes(2).toString('hex')}`;
    const admin = async <T>(fn: (c: mysql.Connection) => Promise<T>) => {
      const c = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
      try {
        return await fn(c);
      } finally {
        await c.end();
      }
    };
    const onServer = () =>
      admin(async (c) => ({
        users: (await c.query<mysql.RowDataPacket[]>('SELECT DISTINCT User AS n FROM mysql.user WHERE User LIKE ?', [`${prefix}%`]))[0].map((r) => String(r.n)),
        databases: (await c.query<mysql.RowDataPacket[]>('SHOW DATABASES LIKE ?', [`${prefix}%`]))[0].map((r) => String(Object.values(r)[0])),
        grants: (await c.query<mysql.RowDataPacket[]>('SELECT Db AS n FROM mysql.db WHERE Db LIKE ?', [`${prefix}%`]))[0].map((r) => String(r.n)),
      }));

    after(async () => {
      await h.deleteAll().catch(() => {});
      await h.child?.stop('SIGKILL');
      rmSync(h.dir, { recursive: true, force: true });
    });

    it('creations interrupted at several moments finish or fail cleanly, leaving no orphan', async () => {
      const ids: { id: string; user: string }[] = [];
      await h.restart();
      for (const delay of [0, 5, 20, 50, 100, 200]) {
        const user = uniqueName(prefix, { sep: '_', random: true });
        const d = await h.api('POST', '/databases', 201, body('mariadb', '10.11', { db_name: prefix, db_user: user, password: 'Crash_pass1' }));
        ids.push({ id: d.id, user });
        await sleep(delay);
        await h.restart();
      }
      const finals = [];
      for (const { id, user } of ids) {
        const d = await h.waitFinal(id);
        assert.ok(['ready', 'error'].includes(d.status), `${id}: ${d.status}`);
        if (d.status === 'ready') {
          const c = await mysql.createConnection({
            host: d.internal_hostname,
            port: Number(d.internal_port),
            database: d.db_name,
            user,
            password: 'Crash_pass1',
          });
          await c.query('SELECT 1');
          await c.end();
        }
        finals.push({ ...d, user });
      }
      const server = await onServer();
      const users = new Set(finals.map((d) => d.user));
      const names = new Set(finals.map((d) => d.db_name));
      for (const u of server.users) assert.ok(users.has(u), `orphan user ${u}`);
      for (const n of server.databases) assert.ok(names.has(n), `orphan database ${n}`);
      for (const d of finals.filter((x) => x.status === 'ready')) {
        assert.ok(server.users.includes(d.user));
        assert.ok(server.databases.includes(d.db_name));
      }
    });

    it('a restore interrupted at several moments leaves the old content or the backup, never a mix', async () => {
      const user = uniqueName(prefix, { sep: '_', random: true });
      const d = await h.api('POST', '/databases', 201, body('mariadb', '10.11', { db_name: prefix, db_user: user, password: 'Crash_pass1' }));
      const ready = await h.waitFinal(d.id);
      assert.equal(ready.status, 'ready');
      const conn = { host: ready.internal_hostname, port: Number(ready.internal_port), database: ready.db_name, user, password: 'Crash_pass1' };
      const q = async (text: string) => {
        const c = await mysql.createConnection(conn);
        try {
          return (await c.query(text))[0] as mysql.RowDataPacket[];
        } finally {
          await c.end();
        }
      };
      await q('CREATE TABLE big ENGINE=InnoDB AS SELECT seq AS n, md5(seq) AS h FROM seq_1_to_100000');
      await q('CREATE VIEW big_count AS SELECT COUNT(*) AS n FROM big');
      await h.api('POST', `/databases/${d.id}/backups`, 202, { display_name: 'before crash' });
      const snapshot = await waitFor(
        'the backup',
        async () => ((await h.api('GET', `/databases/${d.id}/backups`, 200)) as { id: string; status: string }[]).find((b) => b.status === 'ready'),
        60_000,
      );
      for (const delay of [0, 50, 150, 400]) {
        await q('DROP TABLE IF EXISTS big');
        await q("CREATE TABLE big AS SELECT 1 AS n, 'changed' AS h");
        await h.api('POST', `/databases/${d.id}/backups/${snapshot.id}/restore`, 202);
        await sleep(delay);
        await h.restart();
        const after = await h.waitFinal(d.id);
        assert.ok(['ready', 'restoringFailed'].includes(after.status), after.status);
        const [row] = await q("SELECT COUNT(*) AS count, SUM(h = 'changed') AS changed FROM big");
        const got = { count: Number(row!.count), changed: Number(row!.changed) };
        if (after.status === 'ready') {
          assert.deepEqual(got, { count: 100000, changed: 0 }, 'the backup, whole');
          assert.equal(Number((await q('SELECT n FROM big_count'))[0]!.n), 100000, 'with its view');
        } else assert.deepEqual(got, { count: 1, changed: 1 }, 'the old content, untouched');
        const server = await onServer();
        assert.deepEqual(
          server.databases.filter((n) => n.startsWith(ready.db_name) && n !== ready.db_name),
          [],
          'no scratch database is left',
        );
        assert.ok(
          server.grants.every((n) => !n.endsWith('_r')),
          'no grant on a scratch database is left',
        );
      }
    });

    it('deleting every database leaves nothing on the server', async () => {
      await h.deleteAll();
      assert.deepEqual(await onServer(), { users: [], databases: [], grants: [] });
    });
  },
);

describe(
  'real Redis databases survive SIGKILL of Slipway during create and restore',
  { skip: bin.includes('unavailable') ? bin : false, timeout: 300_000 },
  () => {
    const base = 21000 + Math.floor(Math.random() * 20000);
    const h = crashable({ SLIPWAY_DB_REDIS_BIN: bin, SLIPWAY_DB_REDIS_PORTS: `${base}-${base + 20}` });
    /** The server processes running from this data directory: database id -> pid. */
    const servers = () => {
      const root = join(h.dir, 'redis');
      const out = new Map<string, number>();
      if (!existsSync(root)) return out;
      for (const id of readdirSync(root)) {
        const pidFile = join(root, id, 'redis.pid');
        if (!existsSync(pidFile)) continue;
        const pid = Number(readFileSync(pidFile, 'utf8').trim());
        // The server names itself `redis-server <address>:<port>` once running.
        const port = /^port (\d+)$/m.exec(readFileSync(join(root, id, 'redis.conf'), 'utf8'))?.[1];
        if (existsSync(`/proc/${pid}`) && new RegExp(`:${port}\\b`).test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) out.set(id, pid);
      }
      return out;
    };
    const redis = <T>(d: { internal_hostname: string; internal_port: string }, fn: (r: Redis) => Promise<T>) =>
      withRedis({ host: d.internal_hostname, port: Number(d.internal_port), password: 'Crash_pass1' }, fn);

    after(async () => {
      await h.deleteAll().catch(() => {});
      await h.child?.stop('SIGKILL');
      // Servers a failed test left behind: ended by their own pid.
      for (const pid of servers().values()) process.kill(pid, 'SIGKILL');
      rmSync(h.dir, { recursive: true, force: true });
    });

    it('creations interrupted at several moments finish or fail cleanly, leaving no orphan process', async () => {
      const ids: string[] = [];
      await h.restart();
      for (const delay of [0, 5, 20, 50, 100, 200]) {
        const d = await h.api('POST', '/databases', 201, body('redis', '7', { password: 'Crash_pass1' }));
        ids.push(d.id);
        await sleep(delay);
        await h.restart();
      }
      const ready = [];
      for (const id of ids) {
        const d = await h.waitFinal(id);
        assert.ok(['ready', 'error'].includes(d.status), `${id}: ${d.status}`);
        if (d.status === 'ready') {
          assert.equal(await redis(d, (r) => r.ping()), 'PONG');
          ready.push(d.id);
        }
      }
      const running = servers();
      for (const id of running.keys()) assert.ok(ready.includes(id), `orphan server process of ${id}`);
      for (const id of ready) assert.ok(running.has(id), `the server of ${id} runs`);
      assert.equal(new Set(running.values()).size, running.size, 'one process per database');
    });

    it('a restore interrupted at several moments leaves the old content or the backup, never a mix', async () => {
      const d0 = await h.api('POST', '/databases', 201, body('redis', '7', { password: 'Crash_pass1' }));
      const d = await h.waitFinal(d0.id);
      assert.equal(d.status, 'ready');
      await redis(d, async (r) => {
        for (let i = 0; i < 20; i++) await r.set(`k${i}`, 'backed up');
      });
      await h.api('POST', `/databases/${d.id}/backups`, 202, { display_name: 'before crash' });
      const snapshot = await waitFor(
        'the backup',
        async () => ((await h.api('GET', `/databases/${d.id}/backups`, 200)) as { id: string; status: string }[]).find((b) => b.status === 'ready'),
        60_000,
      );
      for (const delay of [0, 20, 100, 300]) {
        await redis(d, async (r) => {
          await r.flushall();
          await r.set('changed', '1');
        });
        await h.api('POST', `/databases/${d.id}/backups/${snapshot.id}/restore`, 202);
        await sleep(delay);
        await h.restart();
        const after = await h.waitFinal(d.id);
        assert.ok(['ready', 'restoringFailed'].includes(after.status), after.status);
        const keys = (await waitFor('the server to answer', () => redis(d, (r) => r.keys('*')).catch(() => undefined), 30_000)).sort();
        if (after.status === 'ready') assert.equal(keys.length, 20, 'the backup, whole');
        else assert.deepEqual(keys, ['changed'], 'the old content, untouched');
        assert.equal([...servers().keys()].filter((id) => id === d.id).length, 1, 'one server process');
      }
    });

    it('deleting every database stops every server process and removes its files', async () => {
      await h.deleteAll();
      assert.equal(servers().size, 0);
      assert.deepEqual(existsSync(join(h.dir, 'redis')) ? readdirSync(join(h.dir, 'redis')) : [], []);
    });
  },
);
