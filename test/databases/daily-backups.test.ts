// Scheduled daily backups and the retention sweep (src/modules/databases/schedule.ts), with a short
// period (SLIPWAY_DB_DAILY_BACKUP_MS) and sweep interval: daily backups appear typed `daily` with a
// 7-day expiry and the `type` filter lists them; a suspended database gets none (and says why in
// the log); a deleted database's chain stops; expired backups disappear, except one a running
// restore reads; restarts (and a crash between arming and running) never arm a database twice.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPgDatabase, DB_KINDS, GENEROUS, skipUnless, startServer, type DbKind, type TestServer, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { clearProgression, createDb, setProgression, waitStatus } from './support.js';

const DAY = 24 * 3600 * 1000;
const PERIOD_ENV = { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_DB_DAILY_BACKUP_MS: '300', SLIPWAY_DB_BACKUP_SWEEP_MS: '150' };

interface Listed {
  id: string;
  name: string;
  display_name: string;
  type: 'daily' | 'manual';
  created_at: string;
  expires_at: string;
}

const list = async (s: TestServer, id: string, query = ''): Promise<Listed[]> => expectStatus(await s.get(`/databases/${id}/backups${query}`), 200);

/** The daily chain(s) of a database that can still run: queued or running job rows. */
async function liveChains(s: TestServer, databaseId: string) {
  return s.app.database.db
    .selectFrom('jobs')
    .select(['id', 'status', 'payload'])
    .where('kind', '=', 'database.daily-backup')
    .where('subject_id', '=', databaseId)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}

/** Makes a backup expired, as if its retention ran out (written directly in the control plane's database). */
async function expire(s: TestServer, databaseId: string, backupId: string) {
  await s.app.database.db
    .updateTable('database_backups')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('database_id', '=', databaseId)
    .where('id', '=', backupId)
    .execute();
}

/**
 * Sends a request the daily backups can make wait: a backup in progress turns backups, restores
 * and suspensions away with 400, so it is sent again until accepted.
 */
async function whenIdle(what: string, send: () => Promise<{ status: number }>, want: number) {
  return waitFor(what, async () => {
    const r = await send();
    if (r.status !== 400 && r.status !== want) assert.fail(`${what}: unexpected ${r.status}`);
    return r.status === want;
  });
}

/** Takes a manual backup; returns it once listed. */
async function manualBackup(s: TestServer, id: string, name: string): Promise<Listed> {
  await whenIdle('a manual backup', () => s.post(`/databases/${id}/backups`, { display_name: name }), 202);
  return waitFor('the manual backup listed', async () => (await list(s, id, '?type=manual')).find((b) => b.display_name === name));
}

async function storedBackup(s: TestServer, databaseId: string, backupId: string) {
  return s.app.database.db
    .selectFrom('database_backups')
    .select(['id', 'status'])
    .where('database_id', '=', databaseId)
    .where('id', '=', backupId)
    .executeTakeFirst();
}

for (const kind of DB_KINDS) {
  describe(`database daily backups and retention [${kind}]`, { skip: await skipUnless(kind), timeout: 180_000 }, () => {
    const lines: { msg?: string; database?: string; reason?: string }[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l.includes('daily database backup')) lines.push(JSON.parse(l));
        done();
      },
    });
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: PERIOD_ENV, logger: { level: 'info', stream: sink } });

    it('takes daily backups typed daily, expiring 7 days after they were taken; type=daily lists only them', async () => {
      const d = await createDb(s);
      assert.equal((await liveChains(s, d.id)).length, 1, 'armed with the creation');
      const daily = await waitFor('two daily backups', async () => {
        const l = await list(s, d.id, '?type=daily');
        return l.length >= 2 ? l : undefined;
      });
      for (const b of daily) {
        assert.equal(b.type, 'daily');
        assert.match(b.id, /^daily-\d{8}-\d{6}-[0-9a-f]{6}$/);
        assert.equal(b.name, b.id);
        assert.match(b.display_name, /^Daily backup \d{4}-\d{2}-\d{2}$/);
        assert.equal(Date.parse(b.expires_at) - Date.parse(b.created_at), 7 * DAY);
      }
      assert.equal(new Set(daily.map((b) => b.id)).size, daily.length);
      // A manual backup is listed with them, but not under type=daily (nor a daily one under type=manual).
      const mine = await manualBackup(s, d.id, 'by hand');
      assert.equal(Date.parse(mine.expires_at) - Date.parse(mine.created_at), 30 * DAY);
      assert.ok((await list(s, d.id, '?type=manual')).every((b) => b.type === 'manual'));
      assert.ok(!(await list(s, d.id, '?type=daily')).some((b) => b.id === mine.id));
      const all = await list(s, d.id);
      assert.ok(all.some((b) => b.id === mine.id) && all.some((b) => b.id === daily[0]!.id));
      assert.equal((await liveChains(s, d.id)).length, 1, 'still one chain');
    });

    it('a suspended database gets no daily backup (the skip is logged); activated, it gets them again', async () => {
      const d = await createDb(s);
      // Suspension is refused while a (daily) backup is in progress: try until it is accepted.
      await whenIdle('the suspension', () => s.post(`/databases/${d.id}/suspend`), 200);
      const before = (await list(s, d.id)).map((b) => b.id);
      // Skips logged before the suspension (a run that found the previous backup still going) do not count.
      const since = lines.length;
      const skips = () => lines.slice(since).filter((l) => l.database === d.id && l.msg === 'daily database backup skipped');
      await waitFor('two skipped daily backups', () => skips().length >= 2);
      assert.match(skips()[0]!.reason!, /suspended/);
      assert.deepEqual(
        (await list(s, d.id)).map((b) => b.id),
        before,
        'no backup while suspended',
      );
      assert.equal((await liveChains(s, d.id)).length, 1, 'the chain goes on');
      expectStatus(await s.post(`/databases/${d.id}/activate`), 200);
      await waitFor('a daily backup after activation', async () => (await list(s, d.id, '?type=daily')).some((b) => !before.includes(b.id)));
    });

    it("a deleted database's chain stops", async () => {
      const d = await createDb(s);
      await waitFor('a daily backup', async () => (await list(s, d.id, '?type=daily')).length > 0);
      assert.equal((await liveChains(s, d.id)).length, 1);
      expectStatus(await s.delete(`/databases/${d.id}`), 200);
      await waitFor('the database gone', async () => (await s.get(`/databases/${d.id}`)).status === 404);
      assert.deepEqual(await liveChains(s, d.id), [], 'no daily backup job left to run');
      const rows = await s.app.database.db
        .selectFrom('jobs')
        .select('status')
        .where('kind', '=', 'database.daily-backup')
        .where('subject_id', '=', d.id)
        .execute();
      assert.ok(rows.length >= 1 && rows.every((r) => r.status === 'cancelled' || r.status === 'done'), JSON.stringify(rows));
    });

    it('removes expired backups (manual and daily) and keeps the others', async () => {
      const d = await createDb(s);
      const daily = await waitFor('two daily backups', async () => {
        const l = await list(s, d.id, '?type=daily');
        return l.length >= 2 ? l : undefined;
      });
      const manual = await manualBackup(s, d.id, 'to expire');
      await expire(s, d.id, manual.id);
      await expire(s, d.id, daily[0]!.id);
      // Rows go last (after their stored dumps, for real engines).
      await waitFor('the expired backups to go', async () => !(await storedBackup(s, d.id, manual.id)) && !(await storedBackup(s, d.id, daily[0]!.id)));
      const ids = (await list(s, d.id)).map((b) => b.id);
      assert.ok(!ids.includes(manual.id) && !ids.includes(daily[0]!.id), 'no longer listed');
      assert.ok(ids.includes(daily[1]!.id), 'an unexpired backup stays');
      expectStatus(await s.delete(`/databases/${d.id}/backups/${manual.id}`), 404);
      expectStatus(await s.post(`/databases/${d.id}/backups/${daily[0]!.id}/restore`), 404);
    });

    it('never removes an expired backup while a restore from it runs; removes it once the restore ended', async () => {
      const d = await createDb(s);
      const witness = await createDb(s);
      const b = await manualBackup(s, d.id, 'restored');
      const w = await manualBackup(s, witness.id, 'witness');
      // The restore advances only when the database is read: it runs until this test reads it.
      await setProgression(s, 'restore', { mode: 'reads', reads: 2 });
      try {
        await whenIdle('the restore', () => s.post(`/databases/${d.id}/backups/${b.id}/restore`), 202);
        await expire(s, d.id, b.id);
        await expire(s, witness.id, w.id);
        // The witness's expired backup going shows a sweep saw both.
        await waitFor('the witness backup to go', async () => !(await list(s, witness.id)).some((x) => x.id === w.id));
        assert.deepEqual(await storedBackup(s, d.id, b.id), { id: b.id, status: 'ready' }, 'kept while the restore reads it');
        assert.ok((await list(s, d.id)).some((x) => x.id === b.id));
        await waitStatus(s, d.id, 'ready');
      } finally {
        await clearProgression(s, 'restore');
      }
      await waitFor('the backup to go after the restore', async () => !(await storedBackup(s, d.id, b.id)));
    });
  });

  describe(`database daily backups across restarts [${kind}]`, { skip: await skipUnless(kind), timeout: 120_000 }, () => {
    // One control-plane database (a SQLite directory or a PostgreSQL database) for several servers in turn.
    let dir: string;
    let pgDb: { url: string; drop(): Promise<void> } | undefined;
    const servers: TestServer[] = [];
    const boot = async (k: DbKind) => {
      const s = await startServer({
        db: k,
        rateLimits: GENEROUS,
        env: { SLIPWAY_SIM_PROGRESSION: '*=immediate' },
        flags: { 'data-dir': dir },
        ...(pgDb ? { databaseUrl: pgDb.url } : {}),
      });
      servers.push(s);
      return s;
    };
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'slipway-daily-'));
      if (kind === 'postgres') pgDb = await createPgDatabase();
    });
    after(async () => {
      for (const s of servers) await s.close().catch(() => {});
      await pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a crash between arming and running, and later starts, leave exactly one chain; a database without one is armed once', async () => {
      const first = await boot(kind);
      const token = first.token;
      const a = await createDb(first);
      const b = await createDb(first);
      const [armed] = await liveChains(first, a.id);
      assert.ok(armed);
      assert.equal(JSON.parse(armed.payload).databaseId, a.id);
      // a's chain as a worker that died while running it leaves it: running under an expired lease.
      // b's chain missing, as for a database created before daily backups existed.
      await first.app.jobs.stop();
      await first.app.database.db
        .updateTable('jobs')
        .set({ status: 'running', lease_owner: 'dead-worker', lease_expires_at: new Date(Date.now() - 60_000).toISOString() })
        .where('id', '=', armed.id)
        .execute();
      await first.app.database.db.deleteFrom('jobs').where('kind', '=', 'database.daily-backup').where('subject_id', '=', b.id).execute();
      await first.close();

      // PostgreSQL: two servers start at once on the same database; SQLite: one after the other.
      const next = kind === 'postgres' ? await Promise.all([boot(kind), boot(kind)]) : [await boot(kind)];
      for (const s of next) expectStatus(await s.get(`/databases/${a.id}`, { token }), 200);
      const s = next[0]!;
      const chainsA = await liveChains(s, a.id);
      assert.equal(chainsA.length, 1, 'the crashed chain is the only one');
      assert.equal(chainsA[0]!.id, armed.id);
      assert.equal((await liveChains(s, b.id)).length, 1, 'the missing chain is armed, once');
      for (const x of next) await x.close();
      const again = await boot(kind);
      assert.equal((await liveChains(again, a.id)).length, 1);
      assert.equal((await liveChains(again, b.id)).length, 1);
      const sweeps = await again.app.database.db
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'database.backup-retention')
        .where('status', 'in', ['queued', 'running'])
        .execute();
      assert.equal(sweeps.length, 1, 'one retention sweep');
    });
  });
}
