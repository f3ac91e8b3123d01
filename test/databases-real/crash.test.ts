// Crash safety of real PostgreSQL databases: `slipway serve` (SQLite) is SIGKILLed while databases
// are being created and while a restore runs, at several moments. Started again on the same data
// directory, every operation finishes or fails cleanly (no database stays creating/restoring), a
// restored database holds either its old content or the backup's (never a mix), the server holds
// no role or database that no Slipway database accounts for, and deleting everything leaves none.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { call, startChild, type ChildServer } from '../helpers/process.js';
import { sleep, waitFor } from '../helpers/util.js';
import { body, startPasswordPostgres, unique, type PgInstance } from './support.js';

const instance = await startPasswordPostgres();
const FINAL = new Set(['ready', 'error', 'restoringFailed', 'passwordChangeFailed', 'dbDeletionFailed']);

describe(
  'real PostgreSQL databases survive SIGKILL of Slipway during create and restore',
  { skip: typeof instance === 'string' ? instance : false, timeout: 300_000 },
  () => {
    const pgi = instance as PgInstance;
    const dir = mkdtempSync(join(tmpdir(), 'slipway-real-crash-'));
    const token = `svl_${randomBytes(32).toString('hex')}`;
    const env = {
      DATA_DIR: dir,
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_SECRET_KEY: 'real-crash-secret',
      SLIPWAY_DB_POSTGRESQL_URL: pgi.url,
      SLIPWAY_SIM_PROGRESSION: '*=immediate',
    };
    let child: ChildServer | undefined;
    const api = async (method: string, path: string, expected: number, b?: unknown) => {
      const r = await call(child!.baseUrl, method, path, token, b);
      assert.equal(r.status, expected, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const restart = async () => {
      await child?.stop('SIGKILL');
      child = await startChild([], env);
    };
    const waitFinal = (id: string) =>
      waitFor(
        `database ${id} to reach a final status`,
        async () => {
          const d = await api('GET', `/databases/${id}`, 200);
          return FINAL.has(d.status) ? d : undefined;
        },
        60_000,
        50,
      );
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
      await child?.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      if (typeof instance !== 'string') instance.stop();
    });

    it('creations interrupted at several moments finish or fail cleanly, leaving no orphan', async () => {
      const ids: { id: string; user: string }[] = [];
      child = await startChild([], env);
      for (const delay of [0, 5, 20, 50, 100, 200]) {
        const user = unique('crash_');
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
      const user = unique('crash_');
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
      const snapshot = await waitFor('the backup', async () => ((await api('GET', `/databases/${d.id}/backups`, 200)) as { id: string }[])[0], 60_000);
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
      const list = (await api('GET', '/databases?limit=100', 200)) as { data: { id: string }[] };
      for (const d of list.data) await api('DELETE', `/databases/${d.id}`, 200);
      for (const d of list.data)
        await waitFor(`deletion of ${d.id}`, async () => (await call(child!.baseUrl, 'GET', `/databases/${d.id}`, token)).status === 404, 60_000);
      const server = await onServer();
      assert.deepEqual(
        server.roles.filter((r) => r.startsWith('crash_')),
        [],
      );
      assert.deepEqual(server.databases, []);
    });
  },
);
