// The S3 data plane with the official AWS SDK for JavaScript v3 as the client: uploads (small,
// streamed and 20 MB multipart), ranged downloads, listing with prefix/delimiter/continuation,
// presigned URLs, copy, delete, digests, keys that open only their own bucket, key rotation with a
// grace period, bucket deletion removing the files, the control plane agreeing with what the SDK
// sees, CORS preflight, signed aws-chunked uploads and public CDN reads.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { runtime } from '../../src/modules/object-storage/runtime.js';
import { bucketFiles, client, createBucket, expectStatus, s3Error, waitFor, type Bucket } from './support.js';

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** A raw HTTP request (any Host header) answering status, headers and body. */
function raw(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

for (const kind of DB_KINDS) {
  describe(`object storage data plane [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });
    let b: Bucket;
    let s3: S3Client;
    before(async () => {
      b = await createBucket(s);
      s3 = client(b, b);
    });

    it('put and get a small object with content type, metadata and a range', async () => {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: b.bucket_name,
          Key: 'docs/hello.txt',
          Body: 'hello world',
          ContentType: 'text/plain',
          Metadata: { owner: 'ann' },
          CacheControl: 'max-age=60',
        }),
      );
      assert.equal(put.ETag, `"${md5(Buffer.from('hello world'))}"`);
      const got = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt' }));
      assert.equal(await got.Body!.transformToString(), 'hello world');
      assert.equal(got.ContentType, 'text/plain');
      assert.equal(got.CacheControl, 'max-age=60');
      assert.deepEqual(got.Metadata, { owner: 'ann' });
      assert.equal(got.ETag, put.ETag);
      const range = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt', Range: 'bytes=6-' }));
      assert.equal(range.$metadata.httpStatusCode, 206);
      assert.equal(range.ContentRange, 'bytes 6-10/11');
      assert.equal(await range.Body!.transformToString(), 'world');
      const suffix = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt', Range: 'bytes=-3' }));
      assert.equal(await suffix.Body!.transformToString(), 'rld');
      assert.deepEqual(await s3Error(s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt', Range: 'bytes=50-60' }))), {
        name: 'InvalidRange',
        status: 416,
      });
      const head = await s3.send(new HeadObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt' }));
      assert.equal(head.ContentLength, 11);
      assert.deepEqual(await s3Error(s3.send(new HeadObjectCommand({ Bucket: b.bucket_name, Key: 'docs/nothing' }))), { name: 'NotFound', status: 404 });
      assert.deepEqual(await s3Error(s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/nothing' }))), { name: 'NoSuchKey', status: 404 });
    });

    it('a streamed body of known length is stored byte for byte', async () => {
      const data = randomBytes(300_000);
      await s3.send(
        new PutObjectCommand({
          Bucket: b.bucket_name,
          Key: 'stream.bin',
          Body: Readable.from([data.subarray(0, 100_000), data.subarray(100_000)]),
          ContentLength: data.length,
        }),
      );
      const got = Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'stream.bin' }))).Body!.transformToByteArray());
      assert.equal(md5(got), md5(data));
    });

    it('a wrong Content-MD5 is refused (BadDigest) and nothing is stored', async () => {
      const wrong = createHash('md5').update('other').digest('base64');
      assert.deepEqual(await s3Error(s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'bad-md5.txt', Body: 'payload', ContentMD5: wrong }))), {
        name: 'BadDigest',
        status: 400,
      });
      assert.deepEqual(await s3Error(s3.send(new HeadObjectCommand({ Bucket: b.bucket_name, Key: 'bad-md5.txt' }))), { name: 'NotFound', status: 404 });
      const good = createHash('md5').update('payload').digest('base64');
      await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'good-md5.txt', Body: 'payload', ContentMD5: good }));
    });

    it('a 20 MB multipart upload: parts listed, completed, read back whole and by range', async () => {
      const Bucket = b.bucket_name;
      const Key = 'big/twenty.bin';
      const data = randomBytes(20 * 1024 * 1024);
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: 'application/x-test' }));
      const partSize = 5 * 1024 * 1024;
      const parts = [];
      for (let i = 0; i * partSize < data.length; i++) {
        const body = data.subarray(i * partSize, (i + 1) * partSize);
        const p = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body: body }));
        assert.equal(p.ETag, `"${md5(body)}"`);
        parts.push({ PartNumber: i + 1, ETag: p.ETag });
      }
      const listed = await s3.send(new ListPartsCommand({ Bucket, Key, UploadId }));
      assert.deepEqual(
        listed.Parts!.map((p) => [p.PartNumber, p.Size]),
        [
          [1, partSize],
          [2, partSize],
          [3, partSize],
          [4, partSize],
        ],
      );
      // Not visible before completion.
      assert.deepEqual(await s3Error(s3.send(new HeadObjectCommand({ Bucket, Key }))), { name: 'NotFound', status: 404 });
      assert.deepEqual(
        await s3Error(s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: [parts[1]!, parts[0]!] } }))),
        { name: 'InvalidPartOrder', status: 400 },
      );
      const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
      assert.match(done.ETag!, /^"[0-9a-f]{32}-4"$/);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key }));
      assert.equal(got.ContentLength, data.length);
      assert.equal(got.ContentType, 'application/x-test');
      assert.equal(md5(Buffer.from(await got.Body!.transformToByteArray())), md5(data));
      const mid = await s3.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=${partSize - 10}-${partSize + 9}` }));
      assert.deepEqual(Buffer.from(await mid.Body!.transformToByteArray()), data.subarray(partSize - 10, partSize + 10));
      // The upload is gone, and so are its part files.
      assert.deepEqual(await s3Error(s3.send(new ListPartsCommand({ Bucket, Key, UploadId }))), { name: 'NoSuchUpload', status: 404 });
      const live = await s.app.database.db.selectFrom('object_storage_objects').select('blob').where('bucket_id', '=', b.id).execute();
      await waitFor('part files removed', () => bucketFiles(s.app.config.dataDir, b.id).every((f) => live.some((l) => l.blob === f)));
    });

    it('an aborted multipart upload leaves nothing behind; small non-last parts are refused', async () => {
      const Bucket = b.bucket_name;
      const Key = 'big/aborted.bin';
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      const p1 = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(1000, 1) }));
      const p2 = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 2, Body: Buffer.alloc(1000, 2) }));
      assert.deepEqual(
        await s3Error(
          s3.send(
            new CompleteMultipartUploadCommand({
              Bucket,
              Key,
              UploadId,
              MultipartUpload: {
                Parts: [
                  { PartNumber: 1, ETag: p1.ETag },
                  { PartNumber: 2, ETag: p2.ETag },
                ],
              },
            }),
          ),
        ),
        { name: 'EntityTooSmall', status: 400 },
      );
      await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
      assert.deepEqual(await s3Error(s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 3, Body: 'x' }))), {
        name: 'NoSuchUpload',
        status: 404,
      });
      assert.deepEqual(await s3Error(s3.send(new HeadObjectCommand({ Bucket, Key }))), { name: 'NotFound', status: 404 });
      assert.equal((await s.app.database.db.selectFrom('object_storage_uploads').select('id').where('id', '=', UploadId!).execute()).length, 0);
    });

    it('list with prefix, delimiter and continuation tokens', async () => {
      const other = await createBucket(s);
      const c = client(other, other);
      const keys = ['a.txt', 'photos/2024/1.jpg', 'photos/2024/2.jpg', 'photos/2025/1.jpg', 'photos/cover.png', 'videos/x.mp4', 'z'];
      for (const Key of keys) await c.send(new PutObjectCommand({ Bucket: other.bucket_name, Key, Body: Key }));
      const top = await c.send(new ListObjectsV2Command({ Bucket: other.bucket_name, Delimiter: '/' }));
      assert.deepEqual(
        top.Contents!.map((o) => o.Key),
        ['a.txt', 'z'],
      );
      assert.deepEqual(
        top.CommonPrefixes!.map((p) => p.Prefix),
        ['photos/', 'videos/'],
      );
      assert.equal(top.KeyCount, 4);
      const photos = await c.send(new ListObjectsV2Command({ Bucket: other.bucket_name, Prefix: 'photos/', Delimiter: '/' }));
      assert.deepEqual(
        photos.Contents!.map((o) => o.Key),
        ['photos/cover.png'],
      );
      assert.deepEqual(
        photos.CommonPrefixes!.map((p) => p.Prefix),
        ['photos/2024/', 'photos/2025/'],
      );
      const seen: string[] = [];
      let ContinuationToken: string | undefined;
      let pages = 0;
      do {
        const page = await c.send(new ListObjectsV2Command({ Bucket: other.bucket_name, MaxKeys: 2, ContinuationToken }));
        seen.push(...(page.Contents ?? []).map((o) => o.Key!));
        assert.equal(page.IsTruncated, !!page.NextContinuationToken);
        ContinuationToken = page.NextContinuationToken;
        pages++;
      } while (ContinuationToken);
      assert.deepEqual(seen, keys);
      assert.equal(pages, 4);
      const after = await c.send(new ListObjectsV2Command({ Bucket: other.bucket_name, StartAfter: 'photos/2025/1.jpg' }));
      assert.deepEqual(
        after.Contents!.map((o) => o.Key),
        ['photos/cover.png', 'videos/x.mp4', 'z'],
      );
      assert.deepEqual(
        (await c.send(new ListBucketsCommand({}))).Buckets!.map((x) => x.Name),
        [other.bucket_name],
      );
      assert.equal((await c.send(new HeadBucketCommand({ Bucket: other.bucket_name }))).$metadata.httpStatusCode, 200);
    });

    it('presigned GET works without headers; a tampered one is 403', async () => {
      await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'shared/report.pdf', Body: 'pdf bytes' }));
      const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: b.bucket_name, Key: 'shared/report.pdf' }), { expiresIn: 300 });
      const r = await fetch(url);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'pdf bytes');
      const tampered = await fetch(url.replace('shared%2Freport.pdf', 'shared%2Fother.pdf').replace('shared/report.pdf', 'shared/other.pdf'));
      assert.equal(tampered.status, 403);
      assert.match(await tampered.text(), /<Code>SignatureDoesNotMatch<\/Code>/);
      const put = await getSignedUrl(s3, new PutObjectCommand({ Bucket: b.bucket_name, Key: 'shared/upload.txt' }), { expiresIn: 300 });
      assert.equal((await fetch(put, { method: 'PUT', body: 'via presigned put' })).status, 200);
      assert.equal(
        await (await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'shared/upload.txt' }))).Body!.transformToString(),
        'via presigned put',
      );
    });

    it('copy keeps or replaces metadata; copying onto itself unchanged is refused', async () => {
      await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'orig.txt', Body: 'original', ContentType: 'text/plain', Metadata: { v: '1' } }));
      const copy = await s3.send(new CopyObjectCommand({ Bucket: b.bucket_name, Key: 'copy.txt', CopySource: `${b.bucket_name}/orig.txt` }));
      assert.equal(copy.CopyObjectResult!.ETag, `"${md5(Buffer.from('original'))}"`);
      const got = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'copy.txt' }));
      assert.equal(await got.Body!.transformToString(), 'original');
      assert.deepEqual(got.Metadata, { v: '1' });
      await s3.send(
        new CopyObjectCommand({
          Bucket: b.bucket_name,
          Key: 'orig.txt',
          CopySource: `${b.bucket_name}/orig.txt`,
          MetadataDirective: 'REPLACE',
          Metadata: { v: '2' },
          ContentType: 'text/x-new',
        }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket: b.bucket_name, Key: 'orig.txt' }));
      assert.deepEqual([head.Metadata, head.ContentType], [{ v: '2' }, 'text/x-new']);
      assert.deepEqual(await s3Error(s3.send(new CopyObjectCommand({ Bucket: b.bucket_name, Key: 'orig.txt', CopySource: `${b.bucket_name}/orig.txt` }))), {
        name: 'InvalidRequest',
        status: 400,
      });
      assert.deepEqual(await s3Error(s3.send(new CopyObjectCommand({ Bucket: b.bucket_name, Key: 'x.txt', CopySource: `${b.bucket_name}/missing.txt` }))), {
        name: 'NoSuchKey',
        status: 404,
      });
      // Overwriting the original leaves the copy intact.
      await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'orig.txt', Body: 'changed' }));
      assert.equal(await (await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'copy.txt' }))).Body!.transformToString(), 'original');
    });

    it('delete one and many; the objects are gone', async () => {
      for (const Key of ['del/1', 'del/2', 'del/3']) await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key, Body: Key }));
      assert.equal((await s3.send(new DeleteObjectCommand({ Bucket: b.bucket_name, Key: 'del/1' }))).$metadata.httpStatusCode, 204);
      const many = await s3.send(
        new DeleteObjectsCommand({ Bucket: b.bucket_name, Delete: { Objects: [{ Key: 'del/2' }, { Key: 'del/3' }, { Key: 'del/never' }] } }),
      );
      assert.deepEqual(many.Deleted!.map((d) => d.Key).sort(), ['del/2', 'del/3', 'del/never']);
      const left = await s3.send(new ListObjectsV2Command({ Bucket: b.bucket_name, Prefix: 'del/' }));
      assert.equal(left.KeyCount, 0);
      // Deleting what does not exist is still 204.
      assert.equal((await s3.send(new DeleteObjectCommand({ Bucket: b.bucket_name, Key: 'del/1' }))).$metadata.httpStatusCode, 204);
    });

    it('a key opens only its own bucket; wrong and unknown keys are 403 with an S3 XML error', async () => {
      const other = await createBucket(s);
      await client(other, other).send(new PutObjectCommand({ Bucket: other.bucket_name, Key: 'secret.txt', Body: 'theirs' }));
      assert.deepEqual(await s3Error(s3.send(new GetObjectCommand({ Bucket: other.bucket_name, Key: 'secret.txt' }))), { name: 'AccessDenied', status: 403 });
      assert.deepEqual(await s3Error(s3.send(new PutObjectCommand({ Bucket: other.bucket_name, Key: 'mine.txt', Body: 'x' }))), {
        name: 'AccessDenied',
        status: 403,
      });
      assert.deepEqual(await s3Error(s3.send(new ListObjectsV2Command({ Bucket: 'no-such-bucket' }))), { name: 'AccessDenied', status: 403 });
      const wrong = client(b, { access_key: b.access_key, secret_key: 'not-the-secret' });
      assert.deepEqual(await s3Error(wrong.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt' }))), {
        name: 'SignatureDoesNotMatch',
        status: 403,
      });
      const unknown = client(b, { access_key: 'SVLAAAAAAAAAAAAAAAAA', secret_key: b.secret_key });
      assert.deepEqual(await s3Error(unknown.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'docs/hello.txt' }))), {
        name: 'InvalidAccessKeyId',
        status: 403,
      });
      const anon = await fetch(`${b.endpoint}/${b.bucket_name}/docs/hello.txt`);
      assert.equal(anon.status, 403);
      assert.match(anon.headers.get('content-type') ?? '', /application\/xml/);
      assert.match(await anon.text(), /^<\?xml[^>]*>\s*<Error><Code>AccessDenied<\/Code><Message>[^<]+<\/Message>/);
    });

    it('rotation: old keys work during the grace period and are refused after it', async () => {
      const r = await createBucket(s);
      await client(r, r).send(new PutObjectCommand({ Bucket: r.bucket_name, Key: 'k', Body: 'v' }));
      const rot = expectStatus(await s.post(`/object-storage/${r.id}/rotate-credentials`, { old_keys_ttl_hours: 2 }), 200);
      const oldKeys = client(r, r);
      const newKeys = client(r, rot);
      const read = (c: S3Client) => c.send(new GetObjectCommand({ Bucket: r.bucket_name, Key: 'k' })).then((o) => o.Body!.transformToString());
      assert.equal(await read(oldKeys), 'v');
      assert.equal(await read(newKeys), 'v');
      // Two hours later (the grace clock is moved, not waited for).
      const rt = runtime(s.app);
      rt.clockOffsetMs = 2 * 3600_000 - 60_000;
      try {
        assert.equal(await read(oldKeys), 'v');
        rt.clockOffsetMs = 2 * 3600_000 + 1000;
        assert.deepEqual(await s3Error(read(oldKeys)), { name: 'InvalidAccessKeyId', status: 403 });
        assert.equal(await read(newKeys), 'v');
      } finally {
        rt.clockOffsetMs = 0;
      }
      // Without a grace period the previous keys stop at once.
      const now = expectStatus(await s.post(`/object-storage/${r.id}/rotate-credentials`, { old_keys_ttl_hours: 0 }), 200);
      assert.deepEqual(await s3Error(read(newKeys)), { name: 'InvalidAccessKeyId', status: 403 });
      assert.equal(await read(client(r, now)), 'v');
    });

    it('the control plane lists and deletes what S3 clients stored, and they agree', async () => {
      const c = await createBucket(s);
      const sdk = client(c, c);
      for (const Key of ['img/a.png', 'img/b.jpg', 'notes.md', 'raw/data.bin'])
        await sdk.send(
          new PutObjectCommand({ Bucket: c.bucket_name, Key, Body: `body of ${Key}`, ContentType: Key.endsWith('.png') ? 'image/png' : undefined }),
        );
      const top = expectStatus(await s.get(`/object-storage/${c.id}/objects?delimiter=/`), 200);
      assert.deepEqual(
        top.data.map((o: { key: string; type: string }) => [o.key, o.type]),
        [
          ['img/', 'folder'],
          ['notes.md', 'document'],
          ['raw/', 'folder'],
        ],
      );
      assert.equal(top.cursor, null);
      const img = expectStatus(await s.get(`/object-storage/${c.id}/objects?prefix=img/`), 200).data;
      assert.deepEqual(
        img.map((o: { key: string; type: string; size: number; content_type: string | null }) => [o.key, o.type, o.size, o.content_type]),
        [
          ['img/a.png', 'image', 'body of img/a.png'.length, 'image/png'],
          ['img/b.jpg', 'image', 'body of img/b.jpg'.length, 'application/octet-stream'],
        ],
      );
      const head = await sdk.send(new HeadObjectCommand({ Bucket: c.bucket_name, Key: 'img/a.png' }));
      assert.equal(`"${img[0].e_tag}"`, head.ETag);
      // Paging with the cursor visits every key once.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: { key: string }[]; cursor: string | null } = expectStatus(
          await s.get(`/object-storage/${c.id}/objects?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
          200,
        );
        seen.push(...page.data.map((o) => o.key));
        cursor = page.cursor;
      } while (cursor);
      assert.deepEqual(seen, ['img/a.png', 'img/b.jpg', 'notes.md', 'raw/data.bin']);
      // Deleted through the API: gone for the SDK, and the file leaves the disk.
      const before = bucketFiles(s.app.config.dataDir, c.id).length;
      expectStatus(await s.request('DELETE', `/object-storage/${c.id}/objects`, { body: { keys: ['img/a.png', 'notes.md'] } }), 204);
      assert.deepEqual(await s3Error(sdk.send(new HeadObjectCommand({ Bucket: c.bucket_name, Key: 'img/a.png' }))), { name: 'NotFound', status: 404 });
      assert.deepEqual(
        (await sdk.send(new ListObjectsV2Command({ Bucket: c.bucket_name }))).Contents!.map((o) => o.Key),
        ['img/b.jpg', 'raw/data.bin'],
      );
      await waitFor('deleted files removed from disk', () => bucketFiles(s.app.config.dataDir, c.id).length === before - 2);
      // Deleted through the SDK: gone from the API's list.
      await sdk.send(new DeleteObjectCommand({ Bucket: c.bucket_name, Key: 'raw/data.bin' }));
      assert.deepEqual(
        expectStatus(await s.get(`/object-storage/${c.id}/objects`), 200).data.map((o: { key: string }) => o.key),
        ['img/b.jpg'],
      );
    });

    it('deleting a bucket removes its files from disk and its keys stop working', async () => {
      const d = await createBucket(s);
      const sdk = client(d, d);
      await sdk.send(new PutObjectCommand({ Bucket: d.bucket_name, Key: 'one', Body: 'x' }));
      await sdk.send(new PutObjectCommand({ Bucket: d.bucket_name, Key: 'two', Body: 'y' }));
      await sdk
        .send(new CreateMultipartUploadCommand({ Bucket: d.bucket_name, Key: 'pending' }))
        .then(({ UploadId }) => sdk.send(new UploadPartCommand({ Bucket: d.bucket_name, Key: 'pending', UploadId, PartNumber: 1, Body: 'part' })));
      assert.equal(bucketFiles(s.app.config.dataDir, d.id).length, 3);
      expectStatus(await s.delete(`/object-storage/${d.id}`), 204);
      await waitFor('bucket directory removed', () => bucketFiles(s.app.config.dataDir, d.id).length === 0);
      assert.deepEqual(await s3Error(sdk.send(new GetObjectCommand({ Bucket: d.bucket_name, Key: 'one' }))), { name: 'InvalidAccessKeyId', status: 403 });
    });

    it('CORS preflight and responses follow the bucket rules', async () => {
      const c = await createBucket(s);
      const url = `${c.endpoint}/${c.bucket_name}/file.txt`;
      const preflight = (origin: string, method: string, headers?: string) =>
        fetch(url, {
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': method, ...(headers ? { 'access-control-request-headers': headers } : {}) },
        });
      let r = await preflight('https://app.example', 'GET');
      assert.equal(r.status, 403);
      assert.match(await r.text(), /<Code>AccessForbidden<\/Code>/);
      expectStatus(
        await s.post(`/object-storage/${c.id}/cors-policies`, {
          methods: ['GET', 'PUT'],
          origins: ['https://app.example', 'https://*.example.org'],
          headers: ['content-type', 'x-amz-*'],
        }),
        201,
      );
      r = await preflight('https://app.example', 'PUT', 'Content-Type, X-Amz-Date');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('access-control-allow-origin'), 'https://app.example');
      assert.equal(r.headers.get('access-control-allow-methods'), 'GET, PUT');
      assert.equal(r.headers.get('access-control-allow-headers'), 'Content-Type, X-Amz-Date');
      assert.equal((await preflight('https://sub.example.org', 'GET')).status, 200);
      assert.equal((await preflight('https://evil.example', 'GET')).status, 403);
      assert.equal((await preflight('https://app.example', 'DELETE')).status, 403);
      assert.equal((await preflight('https://app.example', 'PUT', 'authorization-x')).status, 403);
      // Actual requests from an allowed origin carry the CORS headers.
      const sdk = client(c, c);
      await sdk.send(new PutObjectCommand({ Bucket: c.bucket_name, Key: 'file.txt', Body: 'cors' }));
      const signed = await getSignedUrl(sdk, new GetObjectCommand({ Bucket: c.bucket_name, Key: 'file.txt' }), { expiresIn: 60 });
      const got = await fetch(signed, { headers: { origin: 'https://app.example' } });
      assert.equal(got.status, 200);
      assert.equal(got.headers.get('access-control-allow-origin'), 'https://app.example');
      assert.match(got.headers.get('access-control-expose-headers') ?? '', /ETag/);
      const denied = await fetch(signed, { headers: { origin: 'https://evil.example' } });
      assert.equal(denied.headers.get('access-control-allow-origin'), null);
    });

    it('signed aws-chunked uploads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) are decoded and each chunk verified', async () => {
      const c = await createBucket(s);
      const data = randomBytes(70_000);
      const send = async (tamper: boolean) => {
        const key = tamper ? 'chunked-bad.bin' : 'chunked.bin';
        const u = new URL(`${c.endpoint}/${c.bucket_name}/${key}`);
        const date = new Date()
          .toISOString()
          .replace(/[-:]/g, '')
          .replace(/\.\d{3}/, '');
        const day = date.slice(0, 8);
        const scope = `${day}/us-east-1/s3/aws4_request`;
        const chunks = [data.subarray(0, 65536), data.subarray(65536), Buffer.alloc(0)];
        const encodedLength = chunks.reduce((n, ch) => n + ch.length.toString(16).length + ';chunk-signature='.length + 64 + 4 + ch.length, 0);
        const headers: Record<string, string> = {
          host: u.host,
          'content-encoding': 'aws-chunked',
          'content-length': String(encodedLength),
          'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
          'x-amz-date': date,
          'x-amz-decoded-content-length': String(data.length),
        };
        const names = Object.keys(headers).sort();
        const canonical = ['PUT', u.pathname, '', ...names.map((n) => `${n}:${headers[n]}`), '', names.join(';'), 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD'].join(
          '\n',
        );
        const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
        let key2 = hmac(`AWS4${c.secret_key}`, day);
        for (const p of ['us-east-1', 's3', 'aws4_request']) key2 = hmac(key2, p);
        let previous = hmac(key2, toSign).toString('hex');
        headers.authorization = `AWS4-HMAC-SHA256 Credential=${c.access_key}/${scope}, SignedHeaders=${names.join(';')}, Signature=${previous}`;
        const framed: Buffer[] = [];
        for (const ch of chunks) {
          const sig = hmac(key2, ['AWS4-HMAC-SHA256-PAYLOAD', date, scope, previous, sha256(''), sha256(ch)].join('\n')).toString('hex');
          previous = sig;
          const payload = tamper && ch.length ? Buffer.from(ch).fill(0, 0, 1) : ch;
          framed.push(Buffer.from(`${ch.length.toString(16)};chunk-signature=${sig}\r\n`), payload, Buffer.from('\r\n'));
        }
        return raw(u.toString(), { method: 'PUT', headers, body: Buffer.concat(framed) });
      };
      const ok = await send(false);
      assert.equal(ok.status, 200, ok.body.toString());
      const got = await client(c, c).send(new GetObjectCommand({ Bucket: c.bucket_name, Key: 'chunked.bin' }));
      assert.equal(md5(Buffer.from(await got.Body!.transformToByteArray())), md5(data));
      const bad = await send(true);
      assert.equal(bad.status, 403);
      assert.match(bad.body.toString(), /SignatureDoesNotMatch/);
      assert.deepEqual(await s3Error(client(c, c).send(new HeadObjectCommand({ Bucket: c.bucket_name, Key: 'chunked-bad.bin' }))), {
        name: 'NotFound',
        status: 404,
      });
    });

    it('a bucket with a CDN domain serves public reads on that hostname', async () => {
      const c = await createBucket(s, { public_access: true });
      await client(c, c).send(new PutObjectCommand({ Bucket: c.bucket_name, Key: 'site/index.html', Body: '<h1>hi</h1>', ContentType: 'text/html' }));
      const base = new URL(s.baseUrl);
      const get = (host: string, path: string) => raw(`${s.baseUrl}${path}`, { headers: { host: `${host}:${base.port}` } });
      const r = await get(c.domain!, '/site/index.html');
      assert.equal(r.status, 200);
      assert.equal(r.body.toString(), '<h1>hi</h1>');
      assert.equal(r.headers['content-type'], 'text/html');
      assert.equal((await get(c.domain!, '/site/missing.html')).status, 404);
      expectStatus(await s.delete(`/object-storage/${c.id}/domain`), 204);
      assert.equal((await get(c.domain!, '/site/index.html')).status, 404);
    });
  });
}

describe('object storage data plane: virtual-hosted addressing [sqlite]', () => {
  const s = useServer({ rateLimits: GENEROUS, env: { SLIPWAY_OBJECT_STORAGE_BASE_DOMAIN: 's3.slipway.test' } });

  it('<bucket>.<base domain> and the base domain itself serve the bucket with signed requests', async () => {
    const b = await createBucket(s);
    const port = new URL(s.baseUrl).port;
    // Every *.slipway.test name resolves to this machine.
    const agent = new Agent({
      lookup: ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
        opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as never,
    });
    const virtual = new S3Client({
      endpoint: `http://s3.slipway.test:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: b.access_key, secretAccessKey: b.secret_key },
      requestHandler: { httpAgent: agent },
      maxAttempts: 1,
    });
    await virtual.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'v/hosted.txt', Body: 'virtual' }));
    assert.equal(await (await virtual.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'v/hosted.txt' }))).Body!.transformToString(), 'virtual');
    assert.deepEqual(
      (await virtual.send(new ListObjectsV2Command({ Bucket: b.bucket_name }))).Contents!.map((o) => o.Key),
      ['v/hosted.txt'],
    );
    const pathStyle = new S3Client({
      endpoint: `http://s3.slipway.test:${port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: b.access_key, secretAccessKey: b.secret_key },
      requestHandler: { httpAgent: agent },
      maxAttempts: 1,
    });
    assert.equal(await (await pathStyle.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: 'v/hosted.txt' }))).Body!.transformToString(), 'virtual');
    const other = await createBucket(s);
    assert.deepEqual(await s3Error(virtual.send(new GetObjectCommand({ Bucket: other.bucket_name, Key: 'v/hosted.txt' }))), {
      name: 'AccessDenied',
      status: 403,
    });
    // The API on the main host name is untouched.
    expectStatus(await s.get(`/object-storage/${b.id}`), 200);
  });
});
