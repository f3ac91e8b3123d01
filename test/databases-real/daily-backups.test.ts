// Daily backups on a real PostgreSQL server (the suite's own instance with password authentication),
// with a short period: the daily backup is a real pg_dump kept in the backup store, a restore from
// it brings the data of that time back, and once expired the retention sweep removes its file too.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import pg from 'pg';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { backupFile, body, create, getDb, startPasswordPostgres, waitStatus, type PgInstance } from './support.js';

const instance = await startPasswordPostgres();
const skipAll = typeof instance === 'string' ? instance : false;

for (const kind of DB_KINDS) {
  describe(`daily backups of real PostgreSQL databases (${kind})`, { skip: skipAll || (await skipUnless(kind)), timeout: 180_000 }, () => {
    const pgi = instance as PgInstance;
    const s = useServer({
      db: kind,
      rateLimits: GENEROUS,
      env: {
        SLIPWAY_DB_POSTGRESQL_URL: pgi.url,
        SLIPWAY_SIM_PROGRESSION: '*=immediate',
        SLIPWAY_DB_DAILY_BACKUP_MS: '1500',
        SLIPWAY_DB_BACKUP_SWEEP_MS: '200',
      },
    });

    it('dumps for real, restores from the daily dump, and removes the expired dump', async () => {
      const user = uniqueName('daily', { sep: '_', random: true });
      const d = await create(s, body('postgresql', '15', { db_user: user, password: 'Daily_pass1' }));
      const conn = { host: d.internal_hostname, port: Number(d.internal_port), database: d.db_name, user, password: 'Daily_pass1' };
      const run = async (text: string) => {
        const c = new pg.Client(conn);
        await c.connect();
        try {
          return (await c.query<{ v: string }>(text)).rows;
        } finally {
          await c.end();
        }
      };
      await run('CREATE TABLE items (v text)');
      await run("INSERT INTO items VALUES ('before')");
      const daily = await waitFor(
        'a daily backup',
        // The list shows backups being taken too: wait for one that is ready.
        async () =>
          (expectStatus(await s.get(`/databases/${d.id}/backups?type=daily`), 200) as { id: string; type: string; status: string }[]).find(
            (b) => b.status === 'ready',
          ),
        60_000,
      );
      assert.equal(daily.type, 'daily');
      const file = backupFile(s, d.id, daily.id);
      assert.ok(existsSync(file) && statSync(file).size > 0, 'the dump is in the backup store');

      await run("INSERT INTO items VALUES ('after')");
      // A later daily backup may be running: the restore is refused (400) until it ends.
      await waitFor('the restore to start', async () => {
        const r = await s.post(`/databases/${d.id}/backups/${daily.id}/restore`);
        assert.ok(r.status === 202 || r.status === 400, `restore answered ${r.status}`);
        return r.status === 202;
      });
      await waitStatus(s, d.id, 'ready', 'restoringFailed');
      assert.equal((await getDb(s, d.id)).status, 'ready');
      assert.deepEqual(
        (await run('SELECT v FROM items ORDER BY v')).map((r) => r.v),
        ['before'],
        'the data of the daily backup is back',
      );

      await s.app.database.db
        .updateTable('database_backups')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('database_id', '=', d.id)
        .where('id', '=', daily.id)
        .execute();
      await waitFor(
        'the expired backup to go from the list',
        async () => !(expectStatus(await s.get(`/databases/${d.id}/backups`), 200) as { id: string }[]).some((b) => b.id === daily.id),
        60_000,
      );
      // The row goes last, once its dump is removed.
      const stored = () =>
        s.app.database.db.selectFrom('database_backups').select('id').where('database_id', '=', d.id).where('id', '=', daily.id).executeTakeFirst();
      await waitFor('the expired backup row to go', async () => !(await stored()), 60_000);
      assert.ok(!existsSync(file), 'its dump is removed from the store');

      expectStatus(await s.delete(`/databases/${d.id}`), 200);
      await waitFor('the deletion', async () => (await s.get(`/databases/${d.id}`)).status === 404, 60_000);
    });
  });
}

after(() => {
  if (typeof instance !== 'string') instance.stop();
});
