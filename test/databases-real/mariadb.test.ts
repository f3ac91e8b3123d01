// MariaDB databases on a real server (SLIPWAY_DB_MYSQL_URL): the machine's MariaDB (root, empty
// password), which checks the passwords of the users Slipway creates. Through the API: create and
// connect as the returned user; password reset; suspension; restart with an open transaction;
// backup, change, restore; a broken dump; isolation between databases; deletion.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import {
  backupChangeRestore,
  body,
  checkRestartAborts,
  checkSuspension,
  create,
  getDb,
  MYSQL_ADMIN_URL,
  mysqlAvailable,
  restoreBrokenDump,
  sqlConn,
  waitStatus,
  type SqlConn,
  removeDatabases,
} from './support.js';

const available = await mysqlAvailable();

const connect = async (c: SqlConn) => {
  const conn = await mysql.createConnection({ ...c, connectTimeout: 5000 });
  conn.on('error', () => {});
  return conn;
};

async function query<T = mysql.RowDataPacket>(c: SqlConn, text: string, values?: unknown[]): Promise<T[]> {
  const conn = await connect(c);
  try {
    return (await conn.query(text, values))[0] as T[];
  } finally {
    await conn.end();
  }
}

/** `<error code>: <message>` of a login attempt, or 'ok'. */
async function login(c: SqlConn): Promise<string> {
  try {
    await query(c, 'SELECT 1');
    return 'ok';
  } catch (e) {
    return `${(e as { code?: string }).code}: ${(e as Error).message}`;
  }
}

for (const kind of DB_KINDS) {
  describe(`real MariaDB databases (${kind})`, { skip: (available === true ? false : available) || (await skipUnless(kind)), timeout: 300_000 }, () => {
    let admin: mysql.Connection;
    let a: SqlConn & { id: string };
    const rows = async (c: SqlConn) => (await query<{ v: string }>(c, 'SELECT v FROM items ORDER BY v')).map((r) => r.v);

    const s = useServer(
      { db: kind, rateLimits: GENEROUS, env: { SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL, SLIPWAY_SIM_PROGRESSION: '*=immediate' } },
      {
        // The server is shared: what the suite created goes through the API's deletion.
        beforeClose: async (s) => {
          const left = ((await s.get('/databases?limit=100')).body as { data: { id: string }[] }).data.map((d) => d.id);
          await removeDatabases(s, left);
        },
      },
    );
    before(async () => {
      admin = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
    });
    after(async () => admin?.end());

    it('creates a database and a user granted only on it; a client connects with the returned facts', async () => {
      const user = uniqueName('app', { sep: '_', random: true });
      const d = await create(s, body('mariadb', '10.11', { db_user: user, password: 'First_pass1' }));
      assert.equal(d.status, 'ready');
      assert.match(d.db_name, /^appdata_[0-9a-f]{12}$/);
      assert.equal(d.internal_hostname, '127.0.0.1');
      assert.equal(d.internal_port, '3306');
      a = { id: d.id, ...sqlConn(d, user, 'First_pass1') };
      await query(a, 'CREATE TABLE items (v varchar(64) PRIMARY KEY) ENGINE=InnoDB');
      await query(a, "INSERT INTO items VALUES ('one'), ('two')");
      assert.deepEqual(await rows(a), ['one', 'two']);
      assert.match(await login({ ...a, password: 'Wrong_pass1' }), /^ER_ACCESS_DENIED_ERROR/);
      const [grants] = await admin.query<mysql.RowDataPacket[]>(`SHOW GRANTS FOR '${user}'@'127.0.0.1'`);
      const text = grants.map((g) => String(Object.values(g)[0])).join('\n');
      // The name's `_` escaped: unescaped, it would match any character.
      assert.ok(text.includes(`ON \`${d.db_name.replace(/_/g, '\\_')}\`.*`), text);
      assert.doesNotMatch(text, /ON \*\.\* TO .* WITH|GRANT ALL PRIVILEGES ON \*\.\*/);
    });

    it("keeps databases apart: another database's user cannot read this one", async () => {
      const user = uniqueName('other', { sep: '_', random: true });
      const d = await create(s, body('mariadb', '10.11', { db_user: user, password: 'Other_pass1' }));
      const b = sqlConn(d, user, 'Other_pass1');
      await query(b, 'CREATE TABLE secrets (v text)');
      assert.match(await login({ ...b, database: a.database }), /^ER_DBACCESS_DENIED_ERROR/);
      await assert.rejects(query(b, `SELECT * FROM \`${a.database}\`.items`), /denied/);
      expectError(await s.post('/databases', body('mariadb', '10.11', { db_user: user })), 400, /already used/);
      expectError(await s.post('/databases', body('mariadb', '10.11', { db_user: 'root' })), 400, /reserved/);
    });

    it('resets the password: the old one is refused, the new one accepted', async () => {
      expectStatus(await s.post(`/databases/${a.id}/reset-password`, { new_password: 'Second_pass2' }), 200);
      assert.equal((await waitStatus(s, a.id, 'ready', 'passwordChangeFailed')).status, 'ready');
      assert.match(await login(a), /^ER_ACCESS_DENIED_ERROR/);
      a.password = 'Second_pass2';
      assert.deepEqual(await rows(a), ['one', 'two']);
    });

    it('suspension refuses logins and closes sessions; activation allows them again', async () => {
      await checkSuspension(s, a.id, await connect(a), () => login(a), /account is locked/);
    });

    it('restart aborts an open transaction and keeps committed data', async () => {
      await checkRestartAborts(s, a.id, await connect(a), 'START TRANSACTION');
      assert.deepEqual(await rows(a), ['one', 'two']);
    });

    it('backs up, changes, restores: the old data is back, with its views, triggers and routines', async () => {
      await query(a, 'CREATE TABLE audit (v varchar(64))');
      await query(a, 'CREATE VIEW items_upper AS SELECT UPPER(v) AS v FROM items');
      await query(a, 'CREATE VIEW items_upper_count AS SELECT COUNT(*) AS n FROM items_upper');
      await query(a, 'CREATE TRIGGER items_audit AFTER INSERT ON items FOR EACH ROW INSERT INTO audit VALUES (NEW.v)');
      await query(a, 'CREATE FUNCTION item_count() RETURNS int READS SQL DATA RETURN (SELECT COUNT(*) FROM items)');
      await backupChangeRestore(s, a.id, async (sql) => {
        await query(a, sql);
        await query(a, 'DROP VIEW IF EXISTS items_upper_count').then(() => query(a, 'DROP VIEW IF EXISTS items_upper'));
        await query(a, 'DROP TRIGGER IF EXISTS items_audit');
        await query(a, 'DROP FUNCTION IF EXISTS item_count');
      });
      assert.deepEqual(await rows(a), ['one', 'two']);
      assert.deepEqual(
        (await query<{ v: string }>(a, 'SELECT v FROM items_upper ORDER BY v')).map((r) => r.v),
        ['ONE', 'TWO'],
      );
      assert.equal(Number((await query<{ n: number }>(a, 'SELECT n FROM items_upper_count'))[0]!.n), 2);
      assert.equal(Number((await query<{ n: number }>(a, 'SELECT item_count() AS n'))[0]!.n), 2);
      await query(a, "INSERT INTO items VALUES ('audited')");
      assert.deepEqual(
        (await query<{ v: string }>(a, 'SELECT v FROM audit')).map((r) => r.v),
        ['audited'],
        'the trigger fires again',
      );
      await query(a, "DELETE FROM items WHERE v = 'audited'");
      assert.equal((await query(a, "SHOW TABLES LIKE 'later'")).length, 0, 'a table made after the backup is gone');
      await query(a, "INSERT INTO items VALUES ('after restore')");
    });

    it('a broken dump ends in restoringFailed with the data unchanged', async () => {
      await restoreBrokenDump(s, a.id, 'CREATE TABLE items (v int);\nTHIS IS NOT SQL;\n');
      assert.deepEqual(await rows(a), ['after restore', 'one', 'two']);
      const [scratch] = await admin.query<mysql.RowDataPacket[]>('SHOW DATABASES LIKE ?', [`${a.database}_%`]);
      assert.equal(scratch.length, 0, 'no scratch database is left');
    });

    it('reads storage from the server', async () => {
      const used = expectStatus(await s.get(`/databases/${a.id}/metrics/used-storage`), 200) as { value: number };
      assert.ok(used.value > 0);
    });

    it('deletion removes the database, the user and the backups', async () => {
      const dir = join(s.app.config.dataDir, 'database-backups', a.id);
      assert.ok(existsSync(dir));
      expectStatus(await s.delete(`/databases/${a.id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${a.id}`)).status === 404, 60_000);
      const [dbs] = await admin.query<mysql.RowDataPacket[]>('SHOW DATABASES LIKE ?', [a.database]);
      assert.equal(dbs.length, 0);
      const [users] = await admin.query<mysql.RowDataPacket[]>('SELECT 1 FROM mysql.user WHERE User = ?', [a.user]);
      assert.equal(users.length, 0);
      assert.ok(!existsSync(dir));
      assert.equal(await getDb(s, a.id).catch(() => null), null);
    });
  });
}
