// External access and IP restrictions enforced on real servers. MariaDB: the user gets one account
// per allowed host. The suite's server says its internal clients come from 192.0.2.10, so a client
// on 127.0.0.1 stands for an external one: refused while external access is off, admitted once it
// is on, refused by an allowlist or a denylist that excludes it, admitted again when the rule goes.
// Redis: external access moves the server's listening address from loopback to every address.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { body, create, MYSQL_ADMIN_URL, mysqlAvailable, redisBin, removeDatabases, sqlConn, waitStatus, type SqlConn } from './support.js';

const available = await mysqlAvailable();
const bin = redisBin();
const skipRedis = bin.includes('unavailable') ? bin : false;
/** An address of this machine other than loopback (where an external client would come from). */
const outside = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

/** 'ok', or `<error code>: <message>` of a login attempt. */
async function login(c: SqlConn): Promise<string> {
  try {
    const conn = await mysql.createConnection({ ...c, connectTimeout: 5000 });
    await conn.query('SELECT 1');
    await conn.end();
    return 'ok';
  } catch (e) {
    return `${(e as { code?: string }).code}: ${(e as Error).message}`;
  }
}

/** Refusals: a wrong or missing account, a host with no account, a locked account. */
const REFUSED = /^(ER_ACCESS_DENIED_ERROR|ER_ACCESS_DENIED_NO_PASSWORD_ERROR|ER_HOST_NOT_PRIVILEGED)|account is locked/;

for (const kind of DB_KINDS) {
  describe(`real MariaDB access rules (${kind})`, { skip: (available === true ? false : available) || (await skipUnless(kind)), timeout: 300_000 }, () => {
    let admin: mysql.Connection;
    let id: string;
    let c: SqlConn;
    const s = useServer(
      {
        db: kind,
        rateLimits: GENEROUS,
        env: { SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL, SLIPWAY_DB_MYSQL_INTERNAL_CLIENTS: '192.0.2.10', SLIPWAY_SIM_PROGRESSION: '*=immediate' },
      },
      { beforeClose: (s) => removeDatabases(s, id ? [id] : []) },
    );
    const hosts = async () =>
      (await admin.query<mysql.RowDataPacket[]>('SELECT Host FROM mysql.user WHERE User = ? ORDER BY Host', [c.user]))[0].map((r) => String(r.Host));
    /** Waits until the server follows the last change (no sync job left), then checks a login. */
    const eventually = async (want: 'ok' | 'refused', what: string) => {
      await waitFor(
        what,
        async () =>
          !(await s.app.database.db
            .selectFrom('jobs')
            .select('id')
            .where('subject_id', '=', id)
            .where('kind', '=', 'database.runtime.sync')
            .where('status', 'in', ['queued', 'running'])
            .executeTakeFirst()),
        20_000,
      );
      if (want === 'ok') assert.equal(await login(c), 'ok');
      else assert.match(await login(c), REFUSED);
    };
    const restrict = async (rule: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] }) =>
      expectStatus(await s.put(`/databases/${id}/ip-restriction`, rule), 200);

    before(async () => {
      admin = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
    });
    after(async () => admin?.end());

    it('without external access only the internal clients have an account', async () => {
      const user = uniqueName('acc', { sep: '_', random: true });
      const d = await create(s, body('mariadb', '10.11', { db_user: user, password: 'Access_pass1' }));
      id = d.id;
      c = sqlConn(d, user, 'Access_pass1');
      assert.deepEqual(await hosts(), ['192.0.2.10']);
      assert.match(await login(c), REFUSED);
    });

    it('external access admits any host', async () => {
      expectStatus(await s.post(`/databases/${id}/external-connection/toggle`), 202);
      await eventually('ok', 'the external login to be accepted');
      assert.deepEqual(await hosts(), ['%', '192.0.2.10']);
    });

    it('an allowlist that excludes 127.0.0.1 refuses the login; one that includes it admits it', async () => {
      await restrict({ type: 'allow', is_enabled: true, ip_list: ['10.0.0.0/8', '2001:db8::/32'] });
      await eventually('refused', 'the login to be refused by the allowlist');
      // IPv4 ranges as net/mask; the IPv6 range cannot be expressed as an account host.
      assert.deepEqual(await hosts(), ['10.0.0.0/255.0.0.0', '192.0.2.10']);
      await restrict({ type: 'allow', is_enabled: true, ip_list: ['127.0.0.0/8'] });
      await eventually('ok', 'the login to be accepted by the allowlist');
    });

    it('a password reset keeps the restriction and changes the password of every account', async () => {
      expectStatus(await s.post(`/databases/${id}/reset-password`, { new_password: 'Access_pass2' }), 200);
      assert.equal((await waitStatus(s, id, 'ready', 'passwordChangeFailed')).status, 'ready');
      assert.match(await login(c), REFUSED);
      c.password = 'Access_pass2';
      assert.equal(await login(c), 'ok');
      assert.deepEqual(await hosts(), ['127.0.0.0/255.0.0.0', '192.0.2.10']);
    });

    it('a denylist that names 127.0.0.1 refuses the login; disabling it admits it again', async () => {
      await restrict({ type: 'deny', is_enabled: true, ip_list: ['127.0.0.1'] });
      await eventually('refused', 'the login to be refused by the denylist');
      const [locked] = await admin.query<mysql.RowDataPacket[]>('SHOW CREATE USER ?@?', [c.user, '127.0.0.1']);
      assert.match(String(Object.values(locked[0]!)[0]), /ACCOUNT LOCK/);
      await restrict({ type: 'deny', is_enabled: false, ip_list: ['127.0.0.1'] });
      await eventually('ok', 'the login to be accepted without the denylist');
      assert.deepEqual(await hosts(), ['%', '192.0.2.10']);
    });

    it('suspension locks every account; activation unlocks them', async () => {
      expectStatus(await s.post(`/databases/${id}/suspend`), 200);
      await eventually('refused', 'the suspended login to be refused');
      expectStatus(await s.post(`/databases/${id}/activate`), 200);
      await eventually('ok', 'the login to be accepted after activation');
    });

    it('turning external access off leaves only the internal clients; deletion drops every account', async () => {
      expectStatus(await s.post(`/databases/${id}/external-connection/toggle`), 202);
      await eventually('refused', 'the external login to be refused');
      assert.deepEqual(await hosts(), ['192.0.2.10']);
      expectStatus(await s.delete(`/databases/${id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${id}`)).status === 404, 60_000);
      id = '';
      assert.deepEqual(await hosts(), []);
    });
  });

  describe(`real Redis external access (${kind})`, { skip: skipRedis || (await skipUnless(kind)), timeout: 300_000 }, () => {
    const base = 21000 + Math.floor(Math.random() * 20000);
    const s = useServer({
      db: kind,
      rateLimits: GENEROUS,
      env: { SLIPWAY_DB_REDIS_BIN: bin, SLIPWAY_DB_REDIS_PORTS: `${base}-${base + 5}`, SLIPWAY_SIM_PROGRESSION: '*=immediate' },
    });

    /** 'ok', or the error of a PING from `host`. */
    const ping = async (host: string, port: number) => {
      const r = new Redis({ host, port, password: 'Redis_pass1', lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        await r.ping();
        return 'ok';
      } catch (e) {
        return (e as Error).message;
      } finally {
        r.disconnect();
      }
    };

    /** Whether something accepts TCP connections at host:port. */
    const listening = (host: string, port: number) =>
      new Promise<boolean>((resolve) => {
        const sock = connect({ host, port });
        sock.once('connect', () => {
          resolve(true);
          sock.destroy();
        });
        sock.once('error', () => resolve(false));
      });

    it('listens on loopback only until external access is on', { skip: outside ? false : 'this machine has no non-loopback IPv4 address' }, async () => {
      const d = await create(s, body('redis', '7', { db_user: 'app', password: 'Redis_pass1' }));
      const port = Number(d.internal_port);
      assert.equal(await ping('127.0.0.1', port), 'ok');
      assert.equal(await listening(outside!, port), false);
      // A client of the database's user connected before the change: the user does not change, so
      // it stays connected (reloading the same users would disconnect it).
      const open = new Redis({ host: '127.0.0.1', port, username: 'app', password: 'Redis_pass1', maxRetriesPerRequest: 0, retryStrategy: () => null });
      open.on('error', () => {});
      assert.equal(await open.ping(), 'PONG');
      expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
      await waitFor('the server to listen on every address', async () => (await ping(outside!, port)) === 'ok', 20_000);
      assert.equal(await ping('127.0.0.1', port), 'ok');
      assert.equal(await open.ping(), 'PONG');
      open.disconnect();
      // A restart keeps the addresses (they are in the server's configuration file too).
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'ready', 'error');
      assert.equal(await ping(outside!, port), 'ok');
      expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
      await waitFor('the server to listen on loopback only', async () => !(await listening(outside!, port)), 20_000);
      assert.equal(await ping('127.0.0.1', port), 'ok');
    });
  });
}
