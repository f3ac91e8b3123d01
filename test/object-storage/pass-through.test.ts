// The pass-through blob store (SLIPWAY_OBJECT_STORAGE_BACKEND=s3): a Slipway server keeps object
// bytes in an external S3-compatible service. The external service here is a second Slipway
// server's bucket (its own data plane), so the test needs nothing outside the repository.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { DB_KINDS, GENEROUS, skipUnless, startServer, useServer, type TestServer } from '../helpers/server.js';
import { client, createBucket, expectStatus, s3Error, waitFor, type Bucket } from './support.js';

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

for (const kind of DB_KINDS) {
  describe(`object storage pass-through backend [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // The upstream store: a second server, started first and closed last.
    let upstream: TestServer;
    let up: Bucket;
    let upClient: S3Client;
    let b: Bucket;
    let s3: S3Client;
    /** The keys the upstream bucket holds for one of the server's buckets. */
    const upstreamKeys = async (bucketId: string) =>
      ((await upClient.send(new ListObjectsV2Command({ Bucket: up.bucket_name, Prefix: `slipway/${bucketId}/` }))).Contents ?? []).map((o) => o.Key!);

    before(async () => {
      upstream = await startServer({ rateLimits: GENEROUS });
      up = await createBucket(upstream);
      upClient = client(up, up);
    });
    const s = useServer(() => ({
      db: kind,
      rateLimits: GENEROUS,
      env: {
        SLIPWAY_OBJECT_STORAGE_BACKEND: 's3',
        SLIPWAY_OBJECT_STORAGE_S3_ENDPOINT: up.endpoint,
        SLIPWAY_OBJECT_STORAGE_S3_BUCKET: up.bucket_name,
        SLIPWAY_OBJECT_STORAGE_S3_ACCESS_KEY: up.access_key,
        SLIPWAY_OBJECT_STORAGE_S3_SECRET_KEY: up.secret_key,
        SLIPWAY_OBJECT_STORAGE_S3_PREFIX: 'slipway/',
      },
    }));
    before(async () => {
      b = await createBucket(s);
      s3 = client(b, b);
    });
    after(async () => upstream?.close());

    it('objects are stored upstream and read back whole, by range and after a copy', async () => {
      const data = randomBytes(200_000);
      await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'a/data.bin', Body: data, ContentType: 'application/x-test' }));
      const keys = await upstreamKeys(b.id);
      assert.equal(keys.length, 1);
      const direct = await upClient.send(new GetObjectCommand({ Bucket: up.bucket_name, Key: keys[0] }));
      assert.equal(md5(Buffer.from(await direct.Body!.transformToByteArray())), md5(data));
      const got = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'a/data.bin' }));
      assert.equal(got.ContentType, 'application/x-test');
      assert.equal(md5(Buffer.from(await got.Body!.transformToByteArray())), md5(data));
      const range = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'a/data.bin', Range: 'bytes=100-199' }));
      assert.deepEqual(Buffer.from(await range.Body!.transformToByteArray()), data.subarray(100, 200));
      await s3.send(new CopyObjectCommand({ Bucket: b.bucket_name, Key: 'a/copy.bin', CopySource: `${b.bucket_name}/a/data.bin` }));
      assert.equal(
        md5(Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'a/copy.bin' }))).Body!.transformToByteArray())),
        md5(data),
      );
      assert.equal((await upstreamKeys(b.id)).length, 2);
    });

    it('multipart uploads are composed upstream; parts and deleted objects leave it', async () => {
      const Bucket = b.bucket_name;
      const Key = 'mp.bin';
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(4096)];
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      const etags = [];
      for (const [i, p] of parts.entries()) etags.push((await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body: p }))).ETag);
      const before = (await upstreamKeys(b.id)).length;
      await s3.send(
        new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } }),
      );
      assert.equal(md5(Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToByteArray())), md5(Buffer.concat(parts)));
      // Two part blobs went, one object blob came.
      assert.equal((await upstreamKeys(b.id)).length, before - 1);
      await s3.send(new DeleteObjectCommand({ Bucket, Key }));
      assert.deepEqual(await s3Error(s3.send(new GetObjectCommand({ Bucket, Key }))), { name: 'NoSuchKey', status: 404 });
      assert.equal((await upstreamKeys(b.id)).length, before - 2);
    });

    it('deleting the bucket removes its bytes upstream', async () => {
      const d = await createBucket(s);
      await client(d, d).send(new PutObjectCommand({ Bucket: d.bucket_name, Key: 'x', Body: 'x' }));
      assert.equal((await upstreamKeys(d.id)).length, 1);
      expectStatus(await s.delete(`/object-storage/${d.id}`), 204);
      await waitFor('upstream emptied', async () => (await upstreamKeys(d.id)).length === 0);
    });
  });
}
