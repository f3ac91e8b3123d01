// PostgreSQL databases on a real server (SLIPWAY_DB_POSTGRESQL_URL): a PostgreSQL instance of the
// suite's own with SCRAM password authentication. Through the API: create, then connect as the
// returned user with the returned host, port and db_name; password reset; suspension; restart
// with an open transaction; backup, change, restore; a broken dump; external backup restored into
// another database; isolation between databases; a user name someone else has; deletion.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { idDigits } from '../../src/shared/ids.js';
import {
  backupChangeRestore,
  body,
  checkRestartAborts,
  checkSuspension,
  create,
  getDb,
  restoreBrokenDump,
  sqlConn,
  startPasswordPostgres,
  waitStatus,
  type PgInstance,
  type SqlConn,
} from './support.js';

const instance = await startPasswordPostgres();
const skipAll = typeof instance === 'string' ? instance : false;

async function connect(c: SqlConn): Promise<pg.Client> {
  const client = new pg.Client({ ...c, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Runs one query as the user and closes the connection. */
async function query<T extends pg.QueryResultRow = pg.QueryResultRow>(c: SqlConn, text: string, values?: unknown[]): Promise<T[]> {
  const client = await connect(c);
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The error code (SQLSTATE) of a login attempt, or 'ok'. */
async function login(c: SqlConn): Promise<string> {
  try {
    await query(c, 'SELECT 1');
    return 'ok';
  } catch (e) {
    return String((e as { code?: string }).code ?? (e as Error).message);
  }
}

for (const kind of DB_KINDS) {
  describe(`real PostgreSQL databases (${kind})`, { skip: skipAll || (await skipUnless(kind)), timeout: 300_000 }, () => {
    const pgi = instance as PgInstance;
    let admin: pg.Client;
    let a: SqlConn & { id: string };
    const rows = async (c: SqlConn) => (await query<{ v: string }>(c, 'SELECT v FROM items ORDER BY v')).map((r) => r.v);

    const s = useServer({ db: kind, rateLimits: GENEROUS, env: { SLIPWAY_DB_POSTGRESQL_URL: pgi.url, SLIPWAY_SIM_PROGRESSION: '*=immediate' } });
    before(async () => {
      admin = new pg.Client({ connectionString: pgi.url });
      await admin.connect();
    });
    after(async () => admin?.end());

    it('creates a role and a database a client connects to with the returned facts', async () => {
      const user = uniqueName('app', { sep: '_', random: true });
      const d = await create(s, body('postgresql', '15', { db_user: user, password: 'First_pass1', extra: { extensions: { enable_vector: true } } }));
      assert.equal(d.status, 'ready');
      assert.match(d.db_name, /^appdata_[0-9a-f]{12}$/);
      assert.equal(d.internal_hostname, '127.0.0.1');
      assert.equal(d.internal_port, String(pgi.port));
      assert.equal(d.external_hostname, null);
      a = { id: d.id, ...sqlConn(d, user, 'First_pass1') };
      await query(a, 'CREATE TABLE items (v text PRIMARY KEY)');
      await query(a, "INSERT INTO items VALUES ('one'), ('two')");
      assert.deepEqual(await rows(a), ['one', 'two']);
      assert.equal(await login({ ...a, password: 'Wrong_pass1' }), '28P01');
      // The role is no superuser and the database is closed to everyone else.
      const role = (await admin.query('SELECT rolsuper, rolcreatedb, rolcanlogin FROM pg_roles WHERE rolname = $1', [user])).rows[0];
      assert.deepEqual(role, { rolsuper: false, rolcreatedb: false, rolcanlogin: true });
      const acl = (await admin.query('SELECT datacl::text AS acl, pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [d.db_name])).rows[0];
      assert.equal(acl.owner, user);
      assert.doesNotMatch(acl.acl, /(^|[{,])=/, 'PUBLIC has no privilege on the database');
      // External access shows the same server once enabled.
      expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
      const ext = await getDb(s, d.id);
      assert.equal(ext.external_hostname, '127.0.0.1');
      assert.equal(ext.external_port, String(pgi.port));
    });

    it("keeps databases apart: another database's user cannot read this one", async () => {
      const user = uniqueName('other', { sep: '_', random: true });
      const d = await create(s, body('postgresql', '15', { db_user: user, password: 'Other_pass1' }));
      const b = sqlConn(d, user, 'Other_pass1');
      await query(b, 'CREATE TABLE secrets (v text)');
      assert.equal(await login({ ...b, database: a.database }), '42501', 'connecting to the other database is refused');
      assert.equal(await login({ ...a, database: b.database }), '42501');
      // The same user name cannot be taken twice on one server.
      expectError(await s.post('/databases', body('postgresql', '15', { db_user: user })), 400, /already used/);
      expectError(await s.post('/databases', body('postgresql', '15', { db_user: 'postgres' })), 400, /reserved/);
    });

    it('resets the password: the old one is refused, the new one accepted', async () => {
      expectStatus(await s.post(`/databases/${a.id}/reset-password`, { new_password: 'Second_pass2' }), 200);
      await waitStatus(s, a.id, 'ready', 'passwordChangeFailed');
      assert.equal((await getDb(s, a.id)).status, 'ready');
      assert.equal(await login(a), '28P01');
      a.password = 'Second_pass2';
      assert.deepEqual(await rows(a), ['one', 'two']);
    });

    it('suspension refuses logins and closes sessions; activation allows them again', async () => {
      await checkSuspension(s, a.id, await connect(a), () => login(a), /^28000$/);
    });

    it('restart aborts an open transaction and keeps committed data', async () => {
      await checkRestartAborts(s, a.id, await connect(a), 'BEGIN');
      assert.deepEqual(await rows(a), ['one', 'two']);
    });

    it('backs up, changes, restores: the old data is back', async () => {
      await backupChangeRestore(s, a.id, (sql) => query(a, sql));
      assert.deepEqual(await rows(a), ['one', 'two']);
      assert.equal((await query(a, "SELECT to_regclass('later') AS t"))[0]!.t, null, 'a table made after the backup is gone');
      // The restored objects belong to the database's user.
      assert.equal((await query(a, "SELECT tableowner FROM pg_tables WHERE tablename = 'items'"))[0]!.tableowner, a.user);
      await query(a, "INSERT INTO items VALUES ('after restore')");
    });

    it('a broken dump ends in restoringFailed with the data unchanged', async () => {
      await restoreBrokenDump(s, a.id, 'PGDMP this is not a dump');
      assert.deepEqual(await rows(a), ['after restore', 'one', 'two']);
    });

    it('an external backup restores into another database of the same engine', async () => {
      const user = uniqueName('dest', { sep: '_', random: true });
      const d = await create(s, body('postgresql', '15', { db_user: user, password: 'Dest_pass1' }));
      const dest = sqlConn(d, user, 'Dest_pass1');
      // restoringFailed -> ready through a restart (backups need a ready database).
      expectStatus(await s.post(`/databases/${a.id}/restart`), 200);
      await waitStatus(s, a.id, 'ready', 'error');
      expectStatus(await s.post(`/databases/${a.id}/backup-targets`, { bucket_name: 'b', access_key: 'k', secret_key: 's' }), 202);
      expectStatus(await s.post(`/databases/${a.id}/external-backups`, { name: 'copy' }), 202);
      const ext = await waitFor(
        'the external backup',
        async () => ((await s.get(`/databases/${a.id}/external-backups`)).body as { id: string; size: number }[])[0],
      );
      assert.ok(ext.size > 0, 'the size is the dump file size');
      expectStatus(await s.post(`/databases/${a.id}/external-backups/${encodeURIComponent(ext.id)}/restore`, { target_database_id: d.id }), 202);
      await waitStatus(s, d.id, 'ready', 'restoringFailed');
      assert.equal((await getDb(s, d.id)).status, 'ready');
      assert.deepEqual(await rows(dest), ['after restore', 'one', 'two']);
      assert.deepEqual(await rows(a), ['after restore', 'one', 'two'], 'the source is untouched');
    });

    it('reads storage from the server', async () => {
      const used = expectStatus(await s.get(`/databases/${a.id}/metrics/used-storage`), 200) as { value: number };
      const size = Number((await admin.query('SELECT pg_database_size($1) AS n', [a.database])).rows[0].n);
      assert.ok(used.value > 1_000_000 && Math.abs(used.value - size) < 1_000_000, `used ${used.value}, server ${size}`);
    });

    it('fails the creation when the user name belongs to someone else, and leaves that user alone', async () => {
      const foreign = uniqueName('foreign', { sep: '_', random: true });
      await admin.query(`CREATE ROLE ${foreign} LOGIN`);
      const d = await create(s, body('postgresql', '15', { db_user: foreign }), 'error');
      assert.equal(d.status, 'error');
      expectStatus(await s.delete(`/databases/${d.id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${d.id}`)).status === 404);
      assert.equal((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [foreign])).rowCount, 1);
      assert.equal((await admin.query("SELECT 1 FROM pg_database WHERE datname LIKE 'appdata_' || $1 || '%'", [idDigits(d.id, 12)])).rowCount, 0);
    });

    it('deletion removes the database, the role and the backups', async () => {
      const dir = join(s.app.config.dataDir, 'database-backups', a.id);
      assert.ok(existsSync(dir));
      expectStatus(await s.delete(`/databases/${a.id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${a.id}`)).status === 404, 60_000);
      assert.equal((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [a.database])).rowCount, 0);
      assert.equal((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [a.user])).rowCount, 0);
      assert.ok(!existsSync(dir), 'the backup files are gone');
    });
  });
}

after(() => {
  if (typeof instance !== 'string') instance.stop();
});
