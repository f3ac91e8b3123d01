// Crash safety of the embedded blob store: `slipway serve` is SIGKILLed while a large PutObject and
// a multipart part upload are streaming. After a restart on the same data directory (and
// database) no partial object is visible, completed objects are intact, the open multipart upload
// keeps only its finished part, and (SQLite: one process) no temporary or unreferenced file is
// left on disk.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createPgDatabase, skipUnless, type DbKind } from '../helpers/server.js';
import { call, startChild, type ChildServer } from '../helpers/process.js';
import { bucketFiles, client, s3Error, waitFor } from './support.js';

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

/** An endless body (1 MB chunks) that claims `length` bytes: the upload is cut by the crash. */
function endless(length: number): { body: Readable; sent: () => number } {
  let sent = 0;
  const chunk = randomBytes(1024 * 1024);
  const body = new Readable({
    read() {
      setTimeout(() => {
        if (sent + chunk.length > length) return this.push(null);
        sent += chunk.length;
        this.push(chunk);
      }, 5);
    },
  });
  return { body, sent: () => sent };
}

for (const kind of ['sqlite', 'postgres'] as DbKind[]) {
  describe(`object storage crash safety [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-s3-crash-'));
    let server: ChildServer | undefined;
    let pgDb: { url: string; drop(): Promise<void> } | undefined;
    after(async () => {
      await server?.stop('SIGKILL');
      await pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a crash during a large PutObject and a part upload leaves no partial object', { timeout: 120_000 }, async () => {
      const token = `svl_${randomBytes(32).toString('hex')}`;
      if (kind === 'postgres') pgDb = await createPgDatabase();
      const env = { DATA_DIR: dir, SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'crash-secret', ...(pgDb ? { DATABASE_URL: pgDb.url } : {}) };
      server = await startChild([], env);
      const created = await call(server.baseUrl, 'POST', '/object-storage', token, { display_name: 'Crash bucket' });
      assert.equal(created.status, 201);
      const b = created.body;
      const s3 = client(b, b);
      const Bucket = b.bucket_name;

      // Completed before the crash: a plain object and a multipart object.
      const small = randomBytes(1024 * 1024);
      await s3.send(new PutObjectCommand({ Bucket, Key: 'done.bin', Body: small }));
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1024)];
      const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'done-multipart.bin' }));
      const etags = [];
      for (const [i, p] of parts.entries())
        etags.push((await s3.send(new UploadPartCommand({ Bucket, Key: 'done-multipart.bin', UploadId: mp.UploadId, PartNumber: i + 1, Body: p }))).ETag);
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: 'done-multipart.bin',
          UploadId: mp.UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) },
        }),
      );

      // In flight at the crash: a large PutObject and part 2 of an open multipart upload.
      const open = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'open-multipart.bin' }));
      const firstPart = randomBytes(5 * 1024 * 1024);
      await s3.send(new UploadPartCommand({ Bucket, Key: 'open-multipart.bin', UploadId: open.UploadId, PartNumber: 1, Body: firstPart }));
      const big = endless(512 * 1024 * 1024);
      const part = endless(512 * 1024 * 1024);
      const putting = s3.send(new PutObjectCommand({ Bucket, Key: 'big.bin', Body: big.body, ContentLength: 512 * 1024 * 1024 })).then(
        () => 'finished',
        () => 'failed',
      );
      const parting = s3
        .send(
          new UploadPartCommand({
            Bucket,
            Key: 'open-multipart.bin',
            UploadId: open.UploadId,
            PartNumber: 2,
            Body: part.body,
            ContentLength: 512 * 1024 * 1024,
          }),
        )
        .then(
          () => 'finished',
          () => 'failed',
        );
      await waitFor(
        'both uploads streaming to temporary files',
        () => big.sent() > 8 * 1024 * 1024 && part.sent() > 8 * 1024 * 1024 && bucketFiles(dir, b.id).filter((f) => f.startsWith('.tmp-')).length === 2,
        60_000,
      );
      await server.stop('SIGKILL');
      assert.deepEqual([await putting, await parting], ['failed', 'failed']);

      server = await startChild([], env);
      const s3b = client({ endpoint: `${server.baseUrl}/s3` }, b);
      const listed = await s3b.send(new ListObjectsV2Command({ Bucket }));
      assert.deepEqual(
        listed.Contents!.map((o) => o.Key),
        ['done-multipart.bin', 'done.bin'],
      );
      assert.deepEqual(await s3Error(s3b.send(new HeadObjectCommand({ Bucket, Key: 'big.bin' }))), { name: 'NotFound', status: 404 });
      const read = async (Key: string) => Buffer.from(await (await s3b.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToByteArray());
      assert.equal(md5(await read('done.bin')), md5(small));
      assert.equal(md5(await read('done-multipart.bin')), md5(Buffer.concat(parts)));
      const openParts = await s3b.send(new ListPartsCommand({ Bucket, Key: 'open-multipart.bin', UploadId: open.UploadId }));
      assert.deepEqual(
        openParts.Parts!.map((p) => [p.PartNumber, p.Size]),
        [[1, firstPart.length]],
      );
      const objects = await call(server.baseUrl, 'GET', `/object-storage/${b.id}/objects`, token);
      assert.deepEqual(
        objects.body.data.map((o: { key: string }) => o.key),
        ['done-multipart.bin', 'done.bin'],
      );
      if (kind === 'sqlite') {
        // Start-up recovery removed the unfinished writes: three blobs remain (two objects, one part).
        const files = readdirSync(join(dir, 'object-storage', b.id));
        assert.equal(files.filter((f) => f.startsWith('.tmp-')).length, 0, `no temporary files: ${files.join(', ')}`);
        assert.equal(files.length, 3);
      }
    });
  });
}
