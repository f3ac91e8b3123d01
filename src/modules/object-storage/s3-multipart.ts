// Multipart uploads of the S3 data plane: initiate, UploadPart and UploadPartCopy, ListParts,
// complete and abort. Every step names its upload and key and answers NoSuchUpload when that upload
// is gone; a part replaced frees its blob; completion takes the listed parts in ascending order,
// every one but the last at least 5 MiB, and composes them into the object's blob (its ETag the
// multipart form), and the upload's rows and part blobs go once the object is committed.
import { pipeline } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import type { ByteRange } from './blobs.js';
import { checkDigests, Digester } from './chunked.js';
import { createUpload, multipartEtag, newBlobId, withFreedBlobs } from './objects.js';
import { dropUpload, findUpload, listParts, putPartRow } from './objects-storage.js';
import { runtime } from './runtime.js';
import { invalidArgument, malformedXml, noSuchUpload, S3Error } from './s3-errors.js';
import { commit, copySource, metaFromRequest, receive } from './s3-objects.js';
import { headerOf, isoSeconds, maxOf, NS, one, quoted, sendXml, unquote, xmlBody, type S3Request, type VerifiedRequest } from './s3-request.js';
import { PATH_PREFIX } from './settings.js';
import type { ObjectStoragesTable } from './storage.js';

const MIN_PART = 5 * 1024 ** 2;

export async function initiateUpload({ app, req, reply, target: t, bucket: b }: S3Request) {
  const id = await createUpload(app.database.db, b.id, t.key, headerOf(req, 'content-type') ?? null, metaFromRequest(req) as unknown as Record<string, string>);
  return sendXml(reply, 200, { InitiateMultipartUploadResult: { '@_xmlns': NS, Bucket: b.bucket_name, Key: t.key, UploadId: id } });
}

function partNumberOf(v: string | undefined): number {
  if (!v || !/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 10000) throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive');
  return Number(v);
}

export async function uploadPart(r: VerifiedRequest, uploadId: string) {
  const { app, req, reply, target: t, bucket: b } = r;
  const partNumber = partNumberOf(one(t.query, 'partNumber'));
  if (!(await findUpload(app.database.db, b.id, uploadId, t.key))) throw noSuchUpload();
  const copying = headerOf(req, 'x-amz-copy-source') !== undefined;
  const got = copying ? await copyPartSource(app, b, req) : await receive(r);
  const { store } = runtime(app);
  const res = await app.database.db
    .transaction()
    .execute((tx) =>
      putPartRow(tx, { upload_id: uploadId, part_number: partNumber, blob: got.blob, size: got.size, etag: got.md5, created_at: new Date().toISOString() }),
    );
  if (!res) {
    await store.remove(b.id, [got.blob]);
    throw noSuchUpload();
  }
  if (res.replaced) await store.remove(b.id, [res.replaced]).catch(() => {});
  if (copying) return sendXml(reply, 200, { CopyPartResult: { '@_xmlns': NS, LastModified: new Date().toISOString(), ETag: quoted(got.md5) } });
  return reply.status(200).header('etag', quoted(got.md5)).send();
}

/** UploadPartCopy: the source's bytes (or `x-amz-copy-source-range`) become a new part blob. */
async function copyPartSource(app: AppContext, b: ObjectStoragesTable, req: FastifyRequest) {
  const src = await copySource(app, b, req);
  const size = Number(src.size);
  const header = headerOf(req, 'x-amz-copy-source-range');
  let range: ByteRange | undefined;
  if (header) {
    const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
    if (!m || Number(m[1]) > Number(m[2]) || Number(m[2]) >= size)
      throw invalidArgument(
        'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy, within the source object.',
      );
    range = { start: Number(m[1]), end: Number(m[2]) };
  }
  const { store } = runtime(app);
  const digester = new Digester({ sha256: false, checksum: null });
  const blob = newBlobId();
  const length = range ? range.end - range.start + 1 : size;
  const stream = pipeline(await store.read(b.id, src.blob, range), digester, () => {});
  const written = await store.put(b.id, blob, stream, length, () => checkDigests(digester, { length, contentMd5: undefined, sha256: null, checksum: null }));
  return { blob, size: written, md5: digester.result().md5.toString('hex') };
}

export async function listPartsOf({ app, reply, target: t, bucket: b }: S3Request, uploadId: string) {
  if (!(await findUpload(app.database.db, b.id, uploadId, t.key))) throw noSuchUpload();
  const max = maxOf(one(t.query, 'max-parts'), 'max-parts', 1000);
  const marker = Number(one(t.query, 'part-number-marker') ?? 0) || 0;
  const all = (await listParts(app.database.db, uploadId)).filter((p) => p.part_number > marker);
  const page = all.slice(0, max);
  return sendXml(reply, 200, {
    ListPartsResult: {
      '@_xmlns': NS,
      Bucket: b.bucket_name,
      Key: t.key,
      UploadId: uploadId,
      PartNumberMarker: marker,
      ...(page.length ? { NextPartNumberMarker: page.at(-1)!.part_number } : {}),
      MaxParts: max,
      IsTruncated: all.length > page.length,
      StorageClass: 'STANDARD',
      Part: page.map((p) => ({ PartNumber: p.part_number, LastModified: isoSeconds(p.created_at), ETag: quoted(p.etag), Size: Number(p.size) })),
    },
  });
}

export async function completeUpload(r: VerifiedRequest, uploadId: string) {
  const { app, reply, target: t, bucket: b } = r;
  const upload = await findUpload(app.database.db, b.id, uploadId, t.key);
  if (!upload) throw noSuchUpload();
  const doc = (await xmlBody(r)).CompleteMultipartUpload as { Part?: { PartNumber?: unknown; ETag?: unknown }[] } | undefined;
  const wanted = doc?.Part ?? [];
  if (!wanted.length || wanted.some((p) => typeof p.PartNumber !== 'string' || typeof p.ETag !== 'string')) throw malformedXml();
  const stored = new Map((await listParts(app.database.db, uploadId)).map((p) => [p.part_number, p]));
  const chosen = [];
  let previous = 0;
  for (const [i, w] of wanted.entries()) {
    const n = Number((w.PartNumber as string).trim());
    if (!Number.isInteger(n) || n <= previous)
      throw new S3Error(400, 'InvalidPartOrder', 'The list of parts was not in ascending order. Parts must be ordered by part number.');
    previous = n;
    const p = stored.get(n);
    if (!p || p.etag !== unquote(w.ETag as string))
      throw new S3Error(
        400,
        'InvalidPart',
        "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not have matched the part's entity tag.",
      );
    if (i < wanted.length - 1 && Number(p.size) < MIN_PART)
      throw new S3Error(400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.');
    chosen.push(p);
  }
  const blob = newBlobId();
  const size = await runtime(app).store.compose(
    b.id,
    blob,
    chosen.map((p) => ({ blob: p.blob, size: Number(p.size) })),
  );
  const etag = multipartEtag(chosen.map((p) => p.etag));
  let partBlobs: string[] = [];
  await commit(
    app,
    { bucket_id: b.id, key: t.key, blob, size, etag, content_type: upload.content_type, metadata: upload.metadata, updated_at: new Date().toISOString() },
    [],
    async (tx) => {
      const blobs = await dropUpload(tx, uploadId);
      partBlobs = blobs ?? [];
      return blobs !== null;
    },
  );
  await runtime(app)
    .store.remove(b.id, partBlobs)
    .catch(() => {});
  return sendXml(reply, 200, {
    CompleteMultipartUploadResult: {
      '@_xmlns': NS,
      Location: `${app.baseUrl}${PATH_PREFIX}/${b.bucket_name}/${encodeURIComponent(t.key)}`,
      Bucket: b.bucket_name,
      Key: t.key,
      ETag: quoted(etag),
    },
  });
}

export async function abortUpload({ app, reply, target: t, bucket: b }: S3Request, uploadId: string) {
  if (!(await findUpload(app.database.db, b.id, uploadId, t.key))) throw noSuchUpload();
  const blobs = await withFreedBlobs(app, b.id, async (tx) => {
    const freed = await dropUpload(tx, uploadId);
    return { result: freed, freed: freed ?? [] };
  });
  if (blobs === null) throw noSuchUpload();
  return reply.status(204).send();
}
