// Bucket objects in state snapshots (GET /_admin/snapshots?objects=true): exported with their bytes
// and imported into a fresh server on the other database, where the S3 data plane serves the same
// bytes, content types, metadata and ETags, and an open multipart upload completes; without objects
// the buckets come back empty; the documents of versions 1 and 2 still import; a document cut short,
// or out of the order a stream is read in, is refused, and so is an export an object's deletion cut short; the size limit; a snapshot whose bytes do not
// match its rows changes nothing; replacing a server's state frees the bytes it held.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { GENEROUS, OPERATOR_TOKEN, skipUnless, startServer, type DbKind, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { bucketFiles, client, createBucket, type Bucket } from '../object-storage/support.js';
import { exportSnapshot } from '../../src/shared/snapshots/index.js';
import { snapshotObjects } from '../../src/modules/object-storage/index.js';
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

/** POST /_admin/snapshots with `text` as the body, as it is. */
const postText = (s: TestServer, text: string) =>
  s.request('POST', '/_admin/snapshots', { raw: text, token: null, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });

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
      assert.equal(withObjects.version, 3);
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

    it('imports the documents of versions 1 and 2 as their exports wrote them', async () => {
      // Version 2 had version 3's members in the same order; the CLI wrote it indented.
      const v2 = JSON.stringify({ ...withObjects, version: 2 }, null, 2);
      const dst = await fresh(to);
      expectStatus(await postText(dst, v2), 201);
      const s3 = s3Of(dst, bucket);
      assert.deepEqual(await keys(s3, bucket.bucket_name), [...PUTS.map((p) => p.key)].sort());
      for (const p of PUTS) assert.ok((await read(s3, bucket.bucket_name, p.key)).body.equals(p.body), `bytes of ${p.key}`);
      // Version 1 had no objects: neither the member nor the rows naming bytes.
      const { objects: _objects, blobs: _blobs, ...v1 } = withObjects;
      const tables = Object.fromEntries(
        Object.entries(v1.tables as object).filter(([t]) => !['object_storage_objects', 'object_storage_uploads', 'object_storage_parts'].includes(t)),
      );
      const old = await fresh(to);
      expectStatus(await postText(old, JSON.stringify({ ...v1, version: 1, tables })), 201);
      expectStatus(await old.get(`/object-storage/${bucket.id}`, { token: src.token }), 200);
      assert.deepEqual(await keys(s3Of(old, bucket), bucket.bucket_name), []);
      expectError(await postText(old, JSON.stringify({ ...v1, version: 4, tables })), 400, /version 4 is not supported \(this server reads versions 1, 2, 3\)/);
    });

    it('refuses a document cut short or whose blobs come before its rows, and leaves no bytes behind', async () => {
      const dst = await fresh(to);
      const text = JSON.stringify(withObjects);
      const at = text.indexOf('"blobs"') + 2000;
      expectError(await postText(dst, text.slice(0, at)), 400, /not valid JSON: it ends inside a string/);
      expectError(await postText(dst, text.slice(0, text.length - 1)), 400, /not valid JSON/);
      const { tables, blobs, ...head } = withObjects;
      expectError(await postText(dst, JSON.stringify({ ...head, blobs, tables })), 400, /"blobs" must come after "tables"/);
      expectError(await postText(dst, JSON.stringify({ ...head, tables, blobs, extra: 1 })), 400, /"blobs" must be its last member/);
      expectStatus(await dst.get('/projects'), 200);
      expectError(await dst.get(`/object-storage/${bucket.id}`, { token: src.token }), 401);
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, bucket.id), []);
    });

    it('an object whose bytes go while the export is written fails the export, and what was written does not import', async () => {
      const s = await fresh(from);
      const b = await createBucket(s);
      for (const key of ['a.bin', 'b.bin']) await s3Of(s, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: key, Body: randomBytes(512 * 1024) }));
      const stream = await exportSnapshot(s.app, { external: snapshotObjects(s.app), objects: true });
      // The rows are read; the bytes are read as the document is written.
      for (const blob of bucketFiles(s.app.config.dataDir, b.id)) rmSync(join(s.app.config.dataDir, 'object-storage', b.id, blob));
      const pieces: Buffer[] = [];
      await assert.rejects(
        (async () => {
          for await (const p of stream) pieces.push(p as Buffer);
        })(),
        /The bytes of object_storage_objects a\.bin .* are gone: it changed during the export; export again/,
      );
      const dst = await fresh(to);
      expectError(await postText(dst, Buffer.concat(pieces).toString()), 400, /not valid JSON: it ends inside a string/);
      assert.deepEqual(bucketFiles(dst.app.config.dataDir, b.id), []);
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
