// `slipway admin snapshot export --objects` and `... import` on SQLite data directories: a bucket's
// objects written by one server are served, byte for byte, by a server started on the directory the
// snapshot was imported into; without --objects the bucket is empty there.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { GENEROUS, startServer } from '../helpers/server.js';
import { BIN, call, rateEnv, startChild } from '../helpers/process.js';
import { client, createBucket } from '../object-storage/support.js';
import { SNAPSHOT_ENV } from './support.js';

/** The test servers' secret key (test/helpers/server.ts): the snapshot's secrets are sealed with it. */
const ENV = { SLIPWAY_SECRET_KEY: 'test-secret-key', ...SNAPSHOT_ENV };

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'slipway-snapshot-cli-'));
  dirs.push(d);
  return d;
};
const slipway = (args: string[], input?: string) =>
  execFileSync(process.execPath, [BIN, ...args], { env: { ...process.env, ...ENV }, encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });

describe('slipway admin snapshot with objects', () => {
  it('exports a bucket with its objects and imports it into another data directory', async () => {
    const src = await startServer({ db: 'sqlite', rateLimits: GENEROUS, env: SNAPSHOT_ENV });
    const bucket = await createBucket(src);
    const data = randomBytes(100 * 1024);
    await client(bucket, bucket).send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: 'data.bin', Body: data, ContentType: 'application/x-data' }));
    const srcDir = src.app.config.dataDir;
    let withObjects: string;
    let without: string;
    try {
      assert.match(slipway(['--help']), /admin snapshot export \[--company <id>\] \[--objects\]/);
      withObjects = slipway(['admin', 'snapshot', 'export', '--objects', '--data-dir', srcDir]);
      without = slipway(['admin', 'snapshot', 'export', '--data-dir', srcDir]);
    } finally {
      await src.close();
    }
    assert.equal(JSON.parse(withObjects).objects, true);
    assert.equal(JSON.parse(without).objects, false);

    const dir = tmp();
    const loaded = JSON.parse(slipway(['admin', 'snapshot', 'import', '--data-dir', dir], withObjects));
    assert.ok(loaded.rows > 5, JSON.stringify(loaded));
    const emptyDir = tmp();
    slipway(['admin', 'snapshot', 'import', '--data-dir', emptyDir], without);

    for (const [d, expected] of [
      [dir, data],
      [emptyDir, null],
    ] as const) {
      const s = await startChild(['--data-dir', d], { ...ENV, ...rateEnv(GENEROUS) });
      try {
        assert.equal((await call(s.baseUrl, 'GET', `/object-storage/${bucket.id}`, src.token)).status, 200);
        const s3 = client({ endpoint: `${s.baseUrl}/s3` }, bucket);
        const listed = (await s3.send(new ListObjectsV2Command({ Bucket: bucket.bucket_name }))).Contents ?? [];
        if (!expected) {
          assert.deepEqual(listed, []);
          continue;
        }
        assert.deepEqual(
          listed.map((o) => o.Key),
          ['data.bin'],
        );
        const got = await s3.send(new GetObjectCommand({ Bucket: bucket.bucket_name, Key: 'data.bin' }));
        assert.equal(got.ContentType, 'application/x-data');
        assert.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(expected));
      } finally {
        await s.stop();
      }
    }
  });
});
