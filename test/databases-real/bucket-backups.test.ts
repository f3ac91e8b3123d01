// External backups of a real MariaDB database to a backup target that is one of the platform's own
// buckets: the dump is written into the bucket (an object under database-backups/, gzip), not to
// the file store; a restore reads it back from there; deleting the backup removes the object. The
// daily schedule (a short period here) writes a daily external dump to the target too.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import mysql from 'mysql2/promise';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { readObjectStream } from '../../src/modules/object-storage/files.js';
import { backupFile, body, create, getDb, MYSQL_ADMIN_URL, mysqlAvailable, removeDatabases, sqlConn, waitStatus, type SqlConn } from './support.js';

const available = await mysqlAvailable();

interface External {
  id: string;
  type: string;
  backup_target_id: string;
  size: number | null;
}

for (const kind of DB_KINDS) {
  describe(
    `external backups of real databases to a platform bucket (${kind})`,
    {
      skip: (available === true ? false : available) || (await skipUnless(kind)),
      timeout: 300_000,
    },
    () => {
      let dbId = '';
      const s = useServer(
        {
          db: kind,
          rateLimits: GENEROUS,
          env: { SLIPWAY_DB_MYSQL_URL: MYSQL_ADMIN_URL, SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_DB_DAILY_BACKUP_MS: '4000' },
        },
        { beforeClose: (s) => removeDatabases(s, dbId ? [dbId] : []) },
      );

      const externals = async () => expectStatus(await s.get(`/databases/${dbId}/external-backups`), 200) as External[];
      const objects = async (bucket: string) =>
        (expectStatus(await s.get(`/object-storage/${bucket}/objects?limit=200`), 200) as { data: { key: string }[] }).data.map((o) => o.key);
      /** Retries a request a running daily backup refuses (400) until it is accepted. */
      const whenIdle = (what: string, send: () => Promise<{ status: number }>) =>
        waitFor(what, async () => {
          const r = await send();
          assert.ok(r.status === 202 || r.status === 400, `${what}: answered ${r.status}`);
          return r.status === 202;
        });

      it('writes the dump into the bucket, restores from it, and removes it with the backup', async () => {
        const bucket = expectStatus(await s.post('/object-storage', { display_name: uniqueName('backups', { random: true }) }), 201) as { id: string };
        const user = uniqueName('bkt', { sep: '_', random: true });
        const d = await create(s, body('mariadb', '10.11', { db_user: user, password: 'Bucket_pass1' }));
        dbId = d.id;
        const c: SqlConn = sqlConn(d, user, 'Bucket_pass1');
        const run = async (text: string) => {
          const conn = await mysql.createConnection({ ...c, connectTimeout: 5000 });
          try {
            return (await conn.query(text))[0] as { v: string }[];
          } finally {
            await conn.end();
          }
        };
        await run('CREATE TABLE items (v varchar(64) PRIMARY KEY)');
        await run("INSERT INTO items VALUES ('kept')");
        expectStatus(await s.post(`/databases/${d.id}/backup-targets`, { object_storage_id: bucket.id }), 202);

        await whenIdle('the external backup to start', () => s.post(`/databases/${d.id}/external-backups`, { name: 'before change' }));
        const manual = await waitFor('the external backup', async () => (await externals()).find((b) => b.type === 'manual'), 60_000);
        assert.match(manual.id, /^\d{8}-\d{6}_manual_mariadb10_before-change\.sql\.gz$/);
        assert.ok(manual.size! > 0);
        const key = `database-backups/${d.id}/${manual.id}`;
        assert.ok((await objects(bucket.id)).includes(key), 'the dump is an object of the bucket');
        assert.ok(!existsSync(backupFile(s, d.id, manual.id)), 'not in the file store');
        const stream = await readObjectStream(s.app, bucket.id, key);
        const chunks: Buffer[] = [];
        for await (const chunk of stream!) chunks.push(chunk as Buffer);
        assert.match(gunzipSync(Buffer.concat(chunks)).toString(), /INSERT INTO `items` VALUES\s*\('kept'\)/, 'a gzip-compressed SQL dump');

        await run("INSERT INTO items VALUES ('later')");
        await whenIdle('the restore to start', () => s.post(`/databases/${d.id}/external-backups/${manual.id}/restore`, {}));
        await waitStatus(s, d.id, 'ready', 'restoringFailed');
        assert.equal((await getDb(s, d.id)).status, 'ready');
        assert.deepEqual(
          (await run('SELECT v FROM items ORDER BY v')).map((r) => r.v),
          ['kept'],
          'the data of the bucket dump is back',
        );

        // The daily schedule writes to the target as well.
        const daily = await waitFor('a daily external backup', async () => (await externals()).find((b) => b.type === 'daily'), 60_000);
        assert.match(daily.id, /_daily_mariadb10_/);
        await waitFor('the daily dump in the bucket', async () => (await objects(bucket.id)).includes(`database-backups/${d.id}/${daily.id}`), 60_000);

        expectStatus(await s.delete(`/databases/${d.id}/external-backups/${manual.id}`), 200);
        await waitFor('the object to leave the bucket', async () => !(await objects(bucket.id)).includes(key), 30_000);
      });
    },
  );
}
