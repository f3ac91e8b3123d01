// Crash safety of real PostgreSQL databases: `slipway serve` (SQLite) is SIGKILLed while databases
// are being created and while a restore runs, at several moments. Started again on the same data
// directory, every operation finishes or fails cleanly (no database stays creating/restoring), a
// restored database holds either its old content or the backup's (never a mix), the server holds
// no role or database that no Slipway database accounts for, and deleting everything leaves none.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { sleep, uniqueName, waitFor } from '../helpers/util.js';
import { body, crashable, startPasswordPostgres, type PgInstance } from './support.js';

const instance = await startPasswordPostgres();

describe(
  'real PostgreSQL databases survive SIGKILL of Slipway during create and restore',
  { skip: typeof instance === 'string' ? instance : false, timeout: 300_000 },
  () => {
    const pgi = instance as PgInstance;
    const h = crashable({ SLIPWAY_DB_POSTGRESQL_URL: pgi.url });
    const { api, waitFinal } = h;
    const restart = () => h.restart();
    const admin = async <T>(fn: (c: pg.Client) => Promise<T>) => {
      const c = new pg.Client({ connectionString: pgi.url });
      await c.connect();
      try {
        return await fn(c);
      } finally {
        await c.end();
      }
    };
    /** Roles and databases Slipway made on the server (it comments each with the database id). */
    const onServer = () =>
      admin(async (c) => ({
        roles: (
          await c.query<{ n: string }>(
            "SELECT rolname AS n FROM pg_roles r JOIN pg_shdescription s ON s.objoid = r.oid WHERE s.description LIKE 'Slipway database %' ORDER BY 1",
          )
        ).rows.map((r) => r.n),
        databases: (await c.query<{ n: string }>("SELECT datname AS n FROM pg_database WHERE datname LIKE 'crash%' ORDER BY 1")).rows.map((r) => r.n),
      }));

    after(async () => {
      await h.child?.stop('SIGKILL');
      rmSync(h.dir, { recursive: true, force: true });
      if (typeof instance !== 'string') instance.stop();
    });

    it('creations interrupted at several moments finish or fail cleanly, leaving no orphan', async () => {
      const ids: { id: string; user: string }[] = [];
      await restart();
      for (const delay of [0, 5, 20, 50, 100, 200]) {
        const user = uniqueName('crash', { sep: '_', random: true });
        const d = await api('POST', '/databases', 201, body('postgresql', '15', { db_name: 'crash', db_user: user, password: 'Crash_pass1' }));
        ids.push({ id: d.id, user });
        await sleep(delay);
        await restart();
      }
      const finals = [];
      for (const { id, user } of ids) {
        const d = await waitFinal(id);
        assert.ok(['ready', 'error'].includes(d.status), `${id}: ${d.status}`);
        if (d.status === 'ready') {
          const c = new pg.Client({ host: d.internal_hostname, port: Number(d.internal_port), database: d.db_name, user, password: 'Crash_pass1' });
          await c.connect();
          await c.query('SELECT 1');
          await c.end();
        }
        finals.push({ ...d, user });
      }
      // Whatever the server holds belongs to a Slipway database.
      const server = await onServer();
      const users = new Set(finals.map((d) => d.user));
      const names = new Set(finals.map((d) => d.db_name));
      for (const r of server.roles.filter((x) => x.startsWith('crash_'))) assert.ok(users.has(r), `orphan role ${r}`);
      for (const n of server.databases) assert.ok(names.has(n), `orphan database ${n}`);
      for (const d of finals.filter((x) => x.status === 'ready')) {
        assert.ok(server.roles.includes(d.user));
        assert.ok(server.databases.includes(d.db_name));
      }
    });

    it('a restore interrupted at several moments leaves the old content or the backup, never a mix', async () => {
      const user = uniqueName('crash', { sep: '_', random: true });
      const d = await api('POST', '/databases', 201, body('postgresql', '15', { db_name: 'crash', db_user: user, password: 'Crash_pass1' }));
      const ready = await waitFinal(d.id);
      assert.equal(ready.status, 'ready');
      const conn = { host: ready.internal_hostname, port: Number(ready.internal_port), database: ready.db_name, user, password: 'Crash_pass1' };
      const q = async (text: string) => {
        const c = new pg.Client(conn);
        await c.connect();
        try {
          return (await c.query(text)).rows;
        } finally {
          await c.end();
        }
      };
      await q('CREATE TABLE big AS SELECT g AS n, md5(g::text) AS h FROM generate_series(1, 200000) g');
      await api('POST', `/databases/${d.id}/backups`, 202, { display_name: 'before crash' });
      const snapshot = await waitFor(
        'the backup',
        async () => ((await api('GET', `/databases/${d.id}/backups`, 200)) as { id: string; status: string }[]).find((b) => b.status === 'ready'),
        60_000,
      );
      for (const delay of [0, 50, 150, 400]) {
        await q('DROP TABLE IF EXISTS big');
        await q("CREATE TABLE big AS SELECT 1 AS n, 'changed' AS h");
        await api('POST', `/databases/${d.id}/backups/${snapshot.id}/restore`, 202);
        await sleep(delay);
        await restart();
        const after = await waitFinal(d.id);
        assert.ok(['ready', 'restoringFailed'].includes(after.status), after.status);
        const [{ count, changed }] = await q("SELECT count(*)::int AS count, count(*) FILTER (WHERE h = 'changed')::int AS changed FROM big");
        if (after.status === 'ready') assert.deepEqual({ count, changed }, { count: 200000, changed: 0 }, 'the backup, whole');
        else assert.deepEqual({ count, changed }, { count: 1, changed: 1 }, 'the old content, untouched');
      }
    });

    it('deleting every database leaves nothing on the server', async () => {
      await h.deleteAll();
      const server = await onServer();
      assert.deepEqual(
        server.roles.filter((r) => r.startsWith('crash_')),
        [],
      );
      assert.deepEqual(server.databases, []);
    });
  },
);
