// A database's credentials open that database and nothing else on a shared server. Two companies
// each create a database through the API; the first one's user is refused everywhere else.
// PostgreSQL (an instance of the suite's own): the `postgres` maintenance database, template1 and
// the other company's database refuse it (permission denied for database), superusers still get in.
// MariaDB (the machine's): the other company's database and `mysql` refuse it, SHOW DATABASES lists
// only its own, and the `_` of its database name is no wildcard that lets it create another database
// (a grant left unescaped from before goes at the database's next sync).
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { DB_KINDS, GENEROUS, skipUnless, useServer, type TestServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import {
  body,
  MYSQL_ADMIN_URL,
  mysqlAvailable,
  sqlConn,
  startPasswordPostgres,
  waitStatus,
  type Created,
  type PgInstance,
  type SqlConn,
  removeDatabases,
} from './support.js';

const instance = await startPasswordPostgres();
const skipPg = typeof instance === 'string' ? instance : false;
const mariadb = await mysqlAvailable();
const skipMy = mariadb === true ? false : mariadb;

/** A database created through the API by the company of `token`, once ready. */
async function createIn(s: TestServer, token: string, b: ReturnType<typeof body>): Promise<Created> {
  const d = expectStatus(await s.post('/databases', b, { token }), 201) as Created;
  const ready = await waitFor(
    `database ${d.id} to be created`,
    async () => {
      const now = expectStatus(await s.get(`/databases/${d.id}`, { token }), 200) as Created;
      return now.status === 'creating' ? undefined : now;
    },
    60_000,
    50,
  );
  assert.equal(ready.status, 'ready');
  return ready;
}

/** A user of each of two companies' databases, made through the API. */
async function twoTenants(s: TestServer, type: string, version: string): Promise<{ a: SqlConn; b: SqlConn; ids: [string, string][] }> {
  const other = await s.newCompany();
  const [userA, userB] = [uniqueName('tena', { sep: '_', random: true }), uniqueName('tenb', { sep: '_', random: true })];
  const da = await createIn(s, s.token, body(type, version, { db_user: userA, password: 'Tenant_pass1' }));
  const db = await createIn(s, other.token, body(type, version, { db_user: userB, password: 'Tenant_pass2' }));
  return {
    a: sqlConn(da, userA, 'Tenant_pass1'),
    b: sqlConn(db, userB, 'Tenant_pass2'),
    ids: [
      [s.token, da.id],
      [other.token, db.id],
    ],
  };
}

for (const kind of DB_KINDS) {
  describe(`real PostgreSQL: a tenant's user opens only its own database (${kind})`, { skip: skipPg || (await skipUnless(kind)), timeout: 300_000 }, () => {
    const pgi = instance as PgInstance;
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: { SLIPWAY_DB_POSTGRESQL_URL: pgi.url, SLIPWAY_SIM_PROGRESSION: '*=immediate' } });

    /** The SQLSTATE of a login, or 'ok'. */
    const login = async (c: SqlConn | string): Promise<string> => {
      const client = new pg.Client(typeof c === 'string' ? { connectionString: c } : { ...c, connectionTimeoutMillis: 5000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        return 'ok';
      } catch (e) {
        return String((e as { code?: string }).code ?? (e as Error).message);
      } finally {
        await client.end().catch(() => {});
      }
    };

    it('refuses postgres, template1 and the other company database; superusers still connect', async () => {
      const { a, b, ids } = await twoTenants(s, 'postgresql', '15');
      assert.equal(await login(a), 'ok');
      assert.equal(await login(b), 'ok');
      // 42501: permission denied for database.
      assert.equal(await login({ ...a, database: 'postgres' }), '42501', 'the maintenance database');
      assert.equal(await login({ ...a, database: 'template1' }), '42501', 'the template database');
      assert.equal(await login({ ...a, database: b.database }), '42501', "the other company's database");
      assert.equal(await login({ ...b, database: 'postgres' }), '42501');
      assert.equal(await login({ ...b, database: a.database }), '42501');
      for (const db of ['postgres', 'template1', a.database, b.database]) {
        const u = new URL(pgi.url);
        u.pathname = `/${db}`;
        assert.equal(await login(u.toString()), 'ok', `the superuser connects to ${db}`);
      }
      await removeDatabases(s, ids);
    });
  });

  describe(`real MariaDB: a tenant's user opens only its own database (${kind})`, { skip: skipMy || (await skipUnless(kind)), timeout: 300_000 }, () => {
    let ids: [string, string][] = [];
    let a: SqlConn;
    let twin = '';
    // The server is shared: what the suite created goes through the API's deletion.
    const s = useServer(
      { db: kind, rateLimits: GENEROUS, env: { SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL, SLIPWAY_SIM_PROGRESSION: '*=immediate' } },
      { beforeClose: (s) => removeDatabases(s, ids) },
    );

    /** `<error code>` of a login (with `sql` run after it), or its rows. */
    const attempt = async (c: SqlConn, sql = 'SELECT 1'): Promise<string | mysql.RowDataPacket[]> => {
      let conn: mysql.Connection | undefined;
      try {
        conn = await mysql.createConnection({ ...c, connectTimeout: 5000 });
        return (await conn.query<mysql.RowDataPacket[]>(sql))[0];
      } catch (e) {
        return String((e as { code?: string }).code ?? (e as Error).message);
      } finally {
        await conn?.end().catch(() => {});
      }
    };

    after(async () => {
      if (twin) {
        const root = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
        await root.query(`DROP DATABASE IF EXISTS \`${twin}\``).finally(() => root.end());
      }
    });

    it('refuses other databases, lists only its own, and creates none', async () => {
      const t = await twoTenants(s, 'mariadb', '10.11');
      ({ ids, a } = t);
      const { b } = t;
      assert.ok(Array.isArray(await attempt(a)));
      await attempt(b, 'CREATE TABLE secrets (v text)');
      assert.equal(await attempt({ ...a, database: b.database }), 'ER_DBACCESS_DENIED_ERROR', "the other company's database");
      assert.equal(await attempt({ ...a, database: 'mysql' }), 'ER_DBACCESS_DENIED_ERROR');
      assert.equal(await attempt(a, `USE \`${b.database}\``), 'ER_DBACCESS_DENIED_ERROR');
      assert.equal(await attempt(a, `SELECT * FROM \`${b.database}\`.secrets`), 'ER_TABLEACCESS_DENIED_ERROR');
      const shown = await attempt(a, 'SHOW DATABASES');
      assert.deepEqual((shown as mysql.RowDataPacket[]).map((r) => String(r.Database)).sort(), [a.database, 'information_schema'].sort());
      // A grant's `_` and `%` match any characters unless escaped: a database named like its own
      // with another character in place of `_` would be the user's to create (and to open).
      twin = a.database.replace(/_/g, 'x');
      assert.equal(await attempt(a, `CREATE DATABASE \`${twin}\``), 'ER_DBACCESS_DENIED_ERROR', `creating ${twin}`);
      // No global privilege: only USAGE on *.*.
      const grants = (await attempt(a, 'SHOW GRANTS')) as mysql.RowDataPacket[];
      const global = grants.map((g) => String(Object.values(g)[0])).filter((g) => / ON \*\.\* /.test(g));
      assert.ok(
        global.every((g) => g.startsWith('GRANT USAGE ON *.*')),
        global.join('\n'),
      );
    });

    it("an unescaped grant, made before names were escaped, goes at the database's next sync", async () => {
      const root = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
      const grants = async () =>
        (await root.query<mysql.RowDataPacket[]>('SELECT DISTINCT Db FROM mysql.db WHERE User = ?', [a.user]))[0].map((r) => String(r.Db));
      try {
        const [hosts] = await root.query<mysql.RowDataPacket[]>('SELECT Host FROM mysql.user WHERE User = ?', [a.user]);
        for (const h of hosts) await root.query(`GRANT ALL PRIVILEGES ON \`${a.database}\`.* TO ?@?`, [a.user, h.Host]);
        assert.equal((await grants()).length, 2);
        const [, id] = ids[0]!;
        expectStatus(await s.post(`/databases/${id}/reset-password`, { new_password: 'Tenant_pass3' }), 200);
        assert.equal((await waitStatus(s, id, 'ready', 'passwordChangeFailed')).status, 'ready');
        assert.deepEqual(await grants(), [a.database.replace(/_/g, '\\_')]);
      } finally {
        await root.end();
      }
    });
  });
}

after(() => {
  if (typeof instance !== 'string') instance.stop();
});
