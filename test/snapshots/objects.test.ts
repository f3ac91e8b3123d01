// Bucket objects in state snapshots (GET /_admin/snapshots?objects=true): exported with their bytes
// and imported into a fresh server on the other database, where the S3 data plane serves the same
// bytes, content types, metadata and ETags, and an open multipart upload completes; without objects
// the buckets come back empty; the size limit; a snapshot whose bytes do not match its rows changes
// nothing; replacing a server's state frees the bytes it held.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { GENEROUS, skipUnless, startServer, type DbKind, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { bucketFiles, client, createBucket, type Bucket } from '../object-storage/support.js';
import { SNAPSHOT_ENV } from './support.js';

const serverOf = (db: DbKind, env: Record<string, string> = {}) => startServer({ db, rateLimits: GENEROUS, env: { ...SNAPSHOT_ENV, ...env } });

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

interface Put {
  key: string;
  body: Buffer;
  contentType: string;
  metadata?: Record<string, string>;
}

const PUTS: Put[] = [
  { key: 'docs/hello.txt', body: Buffer.from('hello, snapshot\n'), contentType: 'text/plain; charset=utf-8', metadata: { owner: 'ann', stage: 'ci' } },
  { key: 'bin/random.bin', body: randomBytes(300 * 1024), contentType: 'application/octet-stream' },
  { key: 'empty', body: Buffer.alloc(0), contentType: 'application/x-empty' },
  { key: 'naïve/ключ 1.json', body: Buffer.from('{"a":1}'), contentType: 'application/json' },
];
const PART = randomBytes(70 * 1024);
const UPLOAD_KEY = 'uploads/open.bin';

/** A client of bucket `b` on server `s` (the same keys on every server holding the snapshot). */
const s3Of = (s: TestServer, b: Bucket): S3Client => client({ endpoint: `${s.baseUrl}/s3` }, b);

async function read(s3: S3Client, bucket: string, key: string) {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return { body: Buffer.from(await got.Body!.transformToByteArray()), contentType: got.ContentType, metadata: got.Metadata, etag: got.ETag };
}

async function keys(s3: S3Client, bucket: string): Promise<string[]> {
  return ((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((o) => o.Key!);
}

for (const [from, to] of [
  ['sqlite', 'postgres'],
  ['postgres', 'sqlite'],
] as [DbKind, DbKind][]) {
  describe(`snapshot with objects ${from} -> ${to}`, { skip: (await skipUnless('postgres')) || false }, () => {
    let src: TestServer;
    let bucket: Bucket;
    let other: Bucket;
    let uploadId: string;
    let partEtag: string;
    let withObjects: any;
    const etags = new Map<string, string>();
    const servers: TestServer[] = [];
    const fresh = async (db: DbKind, env: Record<string, string> = {}) => {
      const s = await serverOf(db, env);
      servers.push(s);
      return s;
    };

    before(async () => {
      src = await fresh(from);
      bucket = await createBucket(src);
      other = await createBucket(src);
      const s3 = s3Of(src, bucket);
      for (const p of PUTS)
        await s3.send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: p.key, Body: p.body, ContentType: p.contentType, Metadata: p.metadata }));
      for (const p of PUTS) etags.set(p.key, (await read(s3, bucket.bucket_name, p.key)).etag!);
      await s3Of(src, other).send(new PutObjectCommand({ Bucket: other.bucket_name, Key: 'other.txt', Body: 'other', ContentType: 'text/plain' }));
      uploadId = (await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket.bucket_name, Key: UPLOAD_KEY, ContentType: 'application/x-part' })))
        .UploadId!;
      partEtag = (await s3.send(new UploadPartCommand({ Bucket: bucket.bucket_name, Key: UPLOAD_KEY, UploadId: uploadId, PartNumber: 1, Body: PART }))).ETag!;
    });
    after(async () => {
      for (const s of servers) await s.close();
    });

    it('exports every object with its bytes, and the importing server serves the same objects', async () => {
      withObjects = expectStatus(await src.admin('GET', '/snapshots?objects=true'), 200);
      assert.equal(withObjects.objects, true);
      assert.equal(withObjects.version, 2);
      const rows = withObjects.tables.object_storage_objects as { key: string; blob: string; content_type: string }[];
      assert.deepEqual(rows.map((r) => r.key).sort(), [...PUTS.map((p) => p.key), 'other.txt'].sort());
      // One entry of bytes per object and per part of the open upload.
      assert.equal(Object.keys(withObjects.blobs).length, PUTS.length + 1 + 1);
      const hello = rows.find((r) => r.key === 'docs/hello.txt')!;
      assert.equal(Buffer.from(withObjects.blobs[hello.blob], 'base64').toString(), 'hello, snapshot\n');

      const dst = await fresh(to);
      const result = expectStatus(await dst.admin('POST', '/snapshots', withObjects), 201);
      assert.ok(result.rows > 10, JSON.stringify(result));
      const s3 = s3Of(dst, bucket);
      assert.deepEqual(await keys(s3, bucket.bucket_name), [...PUTS.map((p) => p.key)].sort());
      for (const p of PUTS) {
        const got = await read(s3, bucket.bucket_name, p.key);
        assert.ok(got.body.equals(p.body), `bytes of ${p.key}`);
        assert.equal(got.contentType, p.contentType, p.key);
        assert.deepEqual(got.metadata, p.metadata ?? {}, p.key);
        assert.equal(got.etag, etags.get(p.key), p.key);
      }
      assert.equal((await read(s3Of(dst, other), other.bucket_name, 'other.txt')).body.toString(), 'other');
      // The upload left open on the exporting server completes on the importing one.
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket.bucket_name,
          Key: UPLOAD_KEY,
          UploadId: uploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: partEtag }] },
        }),
      );
      const completed = await read(s3, bucket.bucket_name, UPLOAD_KEY);
      assert.equal(md5(completed.body), md5(PART));
      assert.equal(completed.contentType, 'application/x-part');
      // The bytes were stored under new names: the importing server's store holds exactly its objects' blobs.
      const live = await dst.app.database.db.selectFrom('object_storage_objects').select('blob').where('bucket_id', '=', bucket.id).execute();
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, bucket.id).sort(), live.map((l) => l.blob).sort());
      assert.ok(!live.some((l) => rows.some((r) => r.blob === l.blob)), 'fresh blob names');

      // Replacing the state frees the bytes the replaced objects held.
      expectStatus(await dst.admin('POST', '/snapshots?replace=1', withObjects), 201);
      const after = await dst.app.database.db.selectFrom('object_storage_objects').select('blob').where('bucket_id', '=', bucket.id).execute();
      const parts = await dst.app.database.db.selectFrom('object_storage_parts').select('blob').execute();
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, bucket.id).sort(), [...after, ...parts].map((l) => l.blob).sort());
      assert.equal(after.length, PUTS.length);
      assert.ok((await read(s3, bucket.bucket_name, 'bin/random.bin')).body.equals(PUTS[1]!.body));
    });

    it('without objects the rows naming bytes are left out, and the buckets come back empty', async () => {
      const plain = expectStatus(await src.admin('GET', '/snapshots'), 200);
      assert.equal(plain.objects, false);
      assert.equal(plain.blobs, undefined);
      for (const t of ['object_storage_objects', 'object_storage_uploads', 'object_storage_parts']) assert.ok(!(t in plain.tables), t);
      assert.ok(plain.tables.object_storages.some((b: { id: string }) => b.id === bucket.id));
      const dst = await fresh(to);
      expectStatus(await dst.admin('POST', '/snapshots', plain), 201);
      expectStatus(await dst.get(`/object-storage/${bucket.id}`, { token: src.token }), 200);
      assert.deepEqual(await keys(s3Of(dst, bucket), bucket.bucket_name), []);
      // A hand-made document naming objects without their bytes is refused.
      const partial = { ...plain, tables: { ...plain.tables, object_storage_objects: withObjects.tables.object_storage_objects } };
      expectError(await dst.admin('POST', '/snapshots?replace=1', partial), 400, /object_storage_objects names stored content.*objects: true/);
    });

    it('refuses bytes that do not match their rows and changes nothing', async () => {
      const dst = await fresh(to);
      const random = (withObjects.tables.object_storage_objects as { key: string; blob: string }[]).find((r) => r.key === 'bin/random.bin')!;
      const bytes = Buffer.from(withObjects.blobs[random.blob], 'base64');
      bytes[0] = bytes[0]! ^ 0xff;
      const bad = { ...withObjects, blobs: { ...withObjects.blobs, [random.blob]: bytes.toString('base64') } };
      expectError(await dst.admin('POST', '/snapshots', bad), 400, /does not match the ETag of object_storage_objects bin\/random\.bin/);
      const short = { ...withObjects, blobs: { ...withObjects.blobs, [random.blob]: bytes.subarray(1).toString('base64') } };
      expectError(await dst.admin('POST', '/snapshots', short), 400, /holds 307199 bytes; object_storage_objects bin\/random\.bin has size 307200/);
      // The server kept its own state (its bootstrap key still works), and no byte was left behind.
      expectStatus(await dst.get('/projects'), 200);
      expectError(await dst.get(`/object-storage/${bucket.id}`, { token: src.token }), 401);
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, bucket.id), []);
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, other.id), []);
    });

    it('refuses to export more bytes than SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES, and exports without them', async () => {
      const small = await fresh(from, { SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES: '1000' });
      const b = await createBucket(small);
      await s3Of(small, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'a', Body: Buffer.alloc(600) }));
      expectStatus(await small.admin('GET', '/snapshots?objects=true'), 200);
      await s3Of(small, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'b', Body: Buffer.alloc(600) }));
      expectError(
        await small.admin('GET', '/snapshots?objects=true'),
        400,
        /The buckets hold 1200 bytes in 2 objects and parts, more than a snapshot carries \(1000 bytes, SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES\)/,
      );
      assert.equal(expectStatus(await small.admin('GET', '/snapshots'), 200).objects, false);
    });
  });
}
