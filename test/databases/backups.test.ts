// Database backups: internal snapshots, backup targets, external dumps, and restores from either
// (in place or into another database), proven on the simulated data version of the databases.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, waitFor } from '../helpers/util.js';
import {
  IMMEDIATE_ENV,
  OTHER_CLUSTER,
  addFault,
  addTarget,
  backupAndWait,
  clearProgression,
  createDb,
  getDb,
  row,
  setProgression,
  waitStatus,
  write,
} from './support.js';

const EXTERNAL_ID_RE = /^\d{8}-\d{6}_manual_pg17_[a-z0-9-]+\.sql\.gz$/;

for (const kind of DB_KINDS) {
  describe(`database backups [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });
    afterEach(async () => {
      for (const op of ['restart', 'backup', 'restore']) await clearProgression(s, op);
    });

    /** A source with data version 2 and one backup of it (internal or external), then a later write. */
    async function sourceWithBackup(external: boolean, opts: { version?: string } = {}) {
      const src = await createDb(s, opts);
      await write(s, src.id);
      await write(s, src.id);
      let backupId: string;
      if (external) {
        await addTarget(s, src.id);
        await backupAndWait(s, src.id, { name: 'my backup' });
        backupId = expectStatus(await s.get(`/databases/${src.id}/external-backups`), 200)[0].id;
      } else {
        await backupAndWait(s, src.id, false);
        backupId = expectStatus(await s.get(`/databases/${src.id}/backups`), 200)[0].id;
      }
      const captured = (await row(s, src.id)).data_version;
      await write(s, src.id);
      return { src, backupId, captured };
    }

    it('manual backup: 202, backup status inProgress until taken, then listed (type filter)', async () => {
      const d = await createDb(s);
      await setProgression(s, 'backup', { mode: 'reads', reads: 2 });
      assert.match(expectStatus(await s.post(`/databases/${d.id}/backups`, { display_name: 'Before upgrade' }), 202).message, /backup/i);
      assert.equal((await row(s, d.id)).backup_status, 'inProgress');
      expectError(await s.post(`/databases/${d.id}/backups`, { display_name: 'second' }), 400, /in progress/);
      await waitFor('backup taken', async () => (await getDb(s, d.id)) && (await row(s, d.id)).backup_status === 'ready');
      const list = expectStatus(await s.get(`/databases/${d.id}/backups`), 200);
      assert.equal(list.length, 1);
      assert.equal(list[0].display_name, 'Before upgrade');
      assert.equal(list[0].type, 'manual');
      assert.ok(Date.parse(list[0].expires_at) > Date.parse(list[0].created_at));
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/backups?type=manual`), 200).length, 1);
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/backups?type=daily`), 200).length, 0);
    });

    it('a backup in progress shows: the database backup_status inProgress (the reason restart is refused), the backup listed inProgress', async () => {
      const d = await createDb(s);
      const listed = async () => (await listAll(s, '/databases')).find((x) => x.id === d.id);
      assert.equal((await getDb(s, d.id)).backup_status, 'ready');
      assert.equal((await listed()).backup_status, 'ready');
      await setProgression(s, 'backup', { mode: 'reads', reads: 3 });
      expectStatus(await s.post(`/databases/${d.id}/backups`, { display_name: 'Running' }), 202);
      // One read of the database: the backup needs three to finish.
      assert.equal((await getDb(s, d.id)).backup_status, 'inProgress');
      assert.equal((await listed()).backup_status, 'inProgress');
      assert.equal(expectStatus(await s.patch(`/databases/${d.id}`, { display_name: 'Renamed while backing up' }), 200).backup_status, 'inProgress');
      const [running] = expectStatus(await s.get(`/databases/${d.id}/backups`), 200);
      assert.equal(running.display_name, 'Running');
      assert.equal(running.status, 'inProgress');
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/backups?type=manual`), 200)[0].status, 'inProgress');
      expectError(await s.post(`/databases/${d.id}/restart`), 400, /backup/);
      expectError(await s.post(`/databases/${d.id}/backups/${running.id}/restore`, null), 400, /still being taken/);
      await waitFor('backup taken', async () => (await getDb(s, d.id)).backup_status === 'ready');
      const [taken] = expectStatus(await s.get(`/databases/${d.id}/backups`), 200);
      assert.equal(taken.id, running.id);
      assert.equal(taken.status, 'ready');
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
    });

    it('the served document marks the decided field backup_status and the backup status x-decided', async () => {
      const doc = expectStatus(await s.get('/openapi.json'), 200);
      const resolve = (x: any): any => (x.$ref ? resolve(doc.components.schemas[x.$ref.split('/').pop()]) : x);
      const schemaOf = (path: string, method: string, code: string) => resolve(doc.paths[path][method].responses[code].content['application/json'].schema);
      const item = (x: any) => resolve(x.properties?.data?.items ?? x);
      for (const [path, method, code] of [
        ['/databases', 'get', '200'],
        ['/databases', 'post', '201'],
        ['/databases/{id}', 'get', '200'],
        ['/databases/{id}', 'patch', '200'],
      ]) {
        const field = item(schemaOf(path!, method!, code!)).properties.backup_status;
        assert.deepEqual(field?.enum, ['ready', 'inProgress'], `${method} ${path}`);
        assert.equal(field['x-decided'], true, `${method} ${path}`);
      }
      const status = resolve(schemaOf('/databases/{id}/backups', 'get', '200').items).properties.status;
      assert.deepEqual(status?.enum, ['ready', 'inProgress']);
      assert.equal(status['x-decided'], true);
    });

    it('delete backup; unknown backup is 404', async () => {
      const d = await createDb(s);
      await backupAndWait(s, d.id, false);
      const [b] = expectStatus(await s.get(`/databases/${d.id}/backups`), 200);
      expectStatus(await s.delete(`/databases/${d.id}/backups/${b.id}`), 200);
      expectError(await s.delete(`/databases/${d.id}/backups/${b.id}`), 404);
      expectError(await s.post(`/databases/${d.id}/backups/nope/restore`, null), 404);
    });

    it('restore a backup in place: restoring, then ready with the backup content', async () => {
      const { src, backupId, captured } = await sourceWithBackup(false);
      assert.notEqual((await row(s, src.id)).data_version, captured);
      await setProgression(s, 'restore', { mode: 'reads', reads: 2 });
      expectStatus(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, null), 202);
      assert.equal((await getDb(s, src.id)).status, 'restoring');
      await waitStatus(s, src.id, 'ready');
      assert.equal((await row(s, src.id)).data_version, captured);
    });

    it('restore a backup into another database: same cluster, type and major version; source untouched', async () => {
      const { src, backupId, captured } = await sourceWithBackup(false);
      const srcVersion = (await row(s, src.id)).data_version;
      const target = await createDb(s);
      const far = await createDb(s, { cluster_id: OTHER_CLUSTER.id });
      const mysql = await createDb(s, { type: 'mysql', version: '8.0' });
      const older = await createDb(s, { version: '16' });
      expectError(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, { target_database_id: far.id }), 400, /same cluster/);
      expectError(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, { target_database_id: mysql.id }), 400, /same type/);
      expectError(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, { target_database_id: older.id }), 400, /major version/);
      expectError(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, { target_database_id: MISSING }), 404);
      expectStatus(await s.post(`/databases/${src.id}/backups/${backupId}/restore`, { target_database_id: target.id }), 202);
      await waitStatus(s, target.id, 'ready');
      assert.equal((await row(s, target.id)).data_version, captured, 'target holds the backup content');
      assert.equal((await row(s, src.id)).data_version, srcVersion, 'source untouched');
      assert.equal((await getDb(s, src.id)).status, 'ready');
    });

    it('backup targets: attach (secrets sealed, never returned), list, at most 5 per database, detach', async () => {
      const d = await createDb(s);
      assert.deepEqual(expectStatus(await s.get(`/databases/${d.id}/backup-targets`), 200), []);
      const first = await addTarget(s, d.id, 'bucket-0');
      const listed = (await s.get(`/databases/${d.id}/backup-targets`)).text;
      assert.ok(!listed.includes('secret1') && !listed.includes('AKIA1'));
      const stored = await s.app.database.db.selectFrom('database_backup_targets').selectAll().where('id', '=', first).executeTakeFirstOrThrow();
      assert.equal(s.app.secrets.decrypt(stored.secret_key_enc!), 'secret1');
      for (let i = 1; i < 5; i++) await addTarget(s, d.id, `bucket-${i}`);
      expectError(await s.post(`/databases/${d.id}/backup-targets`, { bucket_name: 'sixth', access_key: 'a', secret_key: 'b' }), 400, /5 backup targets/);
      expectError(await s.post(`/databases/${d.id}/backup-targets`, { bucket_name: 'nokeys' }), 400);
      expectStatus(await s.delete(`/databases/${d.id}/backup-targets/${first}`), 200);
      expectError(await s.delete(`/databases/${d.id}/backup-targets/${first}`), 404);
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/backup-targets`), 200).length, 4);
    });

    it('external backup: needs a target; id is YYYYMMDD-HHMMSS_<kind>_<engine><major>_<name>.sql.gz', async () => {
      const d = await createDb(s);
      expectError(await s.post(`/databases/${d.id}/external-backups`, { name: 'x' }), 400, /no backup target/);
      const t = await addTarget(s, d.id);
      await backupAndWait(s, d.id, { name: 'My Backup', backup_target_id: t });
      const [b] = expectStatus(await s.get(`/databases/${d.id}/external-backups`), 200);
      assert.match(b.id, EXTERNAL_ID_RE);
      assert.ok(b.id.endsWith('_my-backup.sql.gz'));
      assert.equal(b.backup_target_id, t);
      assert.equal(b.type, 'manual');
      expectError(await s.post(`/databases/${d.id}/external-backups`, { name: 'x', backup_target_id: MISSING }), 400, /backup_target_id/);
      expectStatus(await s.delete(`/databases/${d.id}/external-backups/${b.id}`), 200);
      expectError(await s.delete(`/databases/${d.id}/external-backups/${b.id}`), 404);
    });

    it('external backups: at most 5 manual backups per target', async () => {
      const d = await createDb(s);
      const t = await addTarget(s, d.id);
      for (let i = 0; i < 5; i++) await backupAndWait(s, d.id, { name: `b${i}`, backup_target_id: t });
      expectError(await s.post(`/databases/${d.id}/external-backups`, { name: 'sixth', backup_target_id: t }), 400, /5 manual backups/);
      const t2 = await addTarget(s, d.id, 'second');
      await backupAndWait(s, d.id, { name: 'sixth', backup_target_id: t2 });
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/external-backups`), 200).length, 6);
    });

    it('external backups are refused (400) for engines without support (redis, valkey)', async () => {
      for (const [type, version] of [
        ['redis', '7'],
        ['valkey', '8'],
      ] as const) {
        const d = await createDb(s, { type, version });
        expectError(await s.get(`/databases/${d.id}/external-backups`), 400, /do not support external backups/);
        expectError(await s.post(`/databases/${d.id}/external-backups`, { name: 'x' }), 400, /do not support/);
        expectError(await s.get(`/databases/${d.id}/backup-targets`), 400, /do not support/);
        expectError(await s.post(`/databases/${d.id}/backup-targets`, { bucket_name: 'b', access_key: 'a', secret_key: 'b' }), 400, /do not support/);
        expectError(await s.post(`/databases/${d.id}/external-backups/20250115-013000_manual_redis7_x.sql.gz/restore`, null), 400, /do not support/);
      }
    });

    it('external restore with a JSON null body restores in place: restoring, then ready with the backup content', async () => {
      const { src, backupId, captured } = await sourceWithBackup(true);
      await setProgression(s, 'restore', { mode: 'reads', reads: 2 });
      const r = expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 202);
      assert.deepEqual(Object.keys(r), ['message']);
      assert.equal((await getDb(s, src.id)).status, 'restoring');
      await waitStatus(s, src.id, 'ready');
      assert.equal((await row(s, src.id)).data_version, captured);
    });

    it('external restore with an empty object body restores in place', async () => {
      const { src, backupId, captured } = await sourceWithBackup(true);
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, {}), 202);
      await waitFor('restore done', async () => (await row(s, src.id)).data_version === captured && (await getDb(s, src.id)).status === 'ready');
    });

    it('external restore requires a body (object or null) and rejects unknown fields (400)', async () => {
      const { src, backupId } = await sourceWithBackup(true);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`), 400, /does not match the schema/);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target: 'x' }), 400, /does not match the schema/);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: 'not-a-uuid' }), 400);
      expectError(await s.post(`/databases/${src.id}/external-backups/20250115-013000_manual_pg17_none.sql.gz/restore`, null), 404);
    });

    it('external restore into a target: same cluster and type required; target data replaced, source untouched', async () => {
      const { src, backupId, captured } = await sourceWithBackup(true);
      const srcVersion = (await row(s, src.id)).data_version;
      const far = await createDb(s, { cluster_id: OTHER_CLUSTER.id });
      const maria = await createDb(s, { type: 'mariadb', version: '11.4' });
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: far.id }), 400, /same cluster/);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: maria.id }), 400, /same type/);
      const target = await createDb(s);
      assert.notEqual((await row(s, target.id)).data_version, captured);
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: target.id }), 202);
      await waitStatus(s, target.id, 'ready');
      assert.equal((await row(s, target.id)).data_version, captured, 'target data replaced by the backup content');
      assert.equal((await row(s, src.id)).data_version, srcVersion, 'source data untouched');
      assert.equal((await getDb(s, src.id)).status, 'ready', 'source status untouched');
    });

    it('external restore is refused (400) while another restore runs on the destination', async () => {
      const { src, backupId } = await sourceWithBackup(true);
      const target = await createDb(s);
      await setProgression(s, 'restore', { mode: 'reads', reads: 3 });
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: target.id }), 202);
      expectError(
        await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: target.id }),
        400,
        /Another restore is in progress/,
      );
      // The source itself is not restoring: an in-place restore is accepted meanwhile.
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 202);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 400, /Another restore is in progress/);
      await waitStatus(s, target.id, 'ready');
      await waitStatus(s, src.id, 'ready');
    });

    it('a dump from a newer major version than the destination is accepted, then ends in restoringFailed', async () => {
      const { src, backupId } = await sourceWithBackup(true, { version: '17' });
      const older = await createDb(s, { version: '15' });
      const before = (await row(s, older.id)).data_version;
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, { target_database_id: older.id }), 202);
      await waitStatus(s, older.id, 'restoringFailed');
      assert.equal((await row(s, older.id)).data_version, before, 'data not replaced by an incompatible dump');
      // restoringFailed allows a restart, which brings it back to ready.
      expectStatus(await s.post(`/databases/${older.id}/restart`), 200);
      await waitStatus(s, older.id, 'ready');
    });

    it('a failing replay (fault rule) ends in restoringFailed and a new restore is allowed', async () => {
      const { src, backupId, captured } = await sourceWithBackup(true);
      await addFault(s, { operation: 'restore', target_id: src.id, remaining: 1 });
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 202);
      await waitStatus(s, src.id, 'restoringFailed');
      assert.notEqual((await row(s, src.id)).data_version, captured);
      expectStatus(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 202);
      await waitStatus(s, src.id, 'ready');
      assert.equal((await row(s, src.id)).data_version, captured);
    });

    it('restore is refused (400) on a suspended destination', async () => {
      const { src, backupId } = await sourceWithBackup(true);
      expectStatus(await s.post(`/databases/${src.id}/suspend`), 200);
      expectError(await s.post(`/databases/${src.id}/external-backups/${backupId}/restore`, null), 400, /suspended/);
      expectStatus(await s.post(`/databases/${src.id}/activate`), 200);
    });
  });
}
