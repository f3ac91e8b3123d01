// Operations on one object of the S3 data plane: GetObject/HeadObject (conditional and ranged),
// PutObject, CopyObject (same bucket only) and DeleteObject, and the steps multipart uploads share
// with them: a body stored as a new blob, then its row committed (a blob whose row did not commit
// is removed; a row replaced frees its blob), and the source of a copy. Stored headers and user
// metadata travel with the object's row.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { newBlobId, withFreedBlobs } from './objects.js';
import { deleteObjectRows, findObject, putObjectRow, type ObjectRow } from './objects-storage.js';
import { runtime } from './runtime.js';
import { accessDenied, invalidArgument, invalidRequest, noSuchKey, noSuchUpload, S3Error } from './s3-errors.js';
import { body, decode, headerOf, NS, one, quoted, sendXml, unquote, type S3Request, type Target, type VerifiedRequest } from './s3-request.js';
import { bucketExists, type ObjectStoragesTable } from './storage.js';

const STORED_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'] as const;

// --- Object headers ---------------------------------------------------------------------------

interface StoredMeta {
  user: Record<string, string>;
  headers: Partial<Record<(typeof STORED_HEADERS)[number], string>>;
}

export function metaFromRequest(req: FastifyRequest): StoredMeta {
  const user: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-amz-meta-') && v !== undefined) user[k.slice(11)] = Array.isArray(v) ? v.join(',') : v;
  if (Buffer.byteLength(JSON.stringify(user)) > 2048)
    throw new S3Error(400, 'MetadataTooLarge', 'Your metadata headers exceed the maximum allowed metadata size.');
  const headers: StoredMeta['headers'] = {};
  for (const h of STORED_HEADERS) {
    const v = headerOf(req, h);
    // aws-chunked is the transfer framing, not a property of the object.
    const kept =
      h === 'content-encoding'
        ? v
            ?.split(',')
            .map((s) => s.trim())
            .filter((s) => s && s !== 'aws-chunked')
            .join(', ')
        : v;
    if (kept) headers[h] = kept;
  }
  return { user, headers };
}

const parseMeta = (s: string): StoredMeta => ({ user: {}, headers: {}, ...(JSON.parse(s) as Partial<StoredMeta>) });

function objectHeaders(reply: FastifyReply, o: ObjectRow, query: Target['query']) {
  const meta = parseMeta(o.metadata);
  reply.header('etag', quoted(o.etag));
  reply.header('last-modified', new Date(o.updated_at).toUTCString());
  reply.header('accept-ranges', 'bytes');
  reply.header('content-type', one(query, 'response-content-type') ?? o.content_type ?? 'application/octet-stream');
  for (const h of STORED_HEADERS) {
    const v = one(query, `response-${h}`) ?? meta.headers[h];
    if (v) reply.header(h, v);
  }
  for (const [k, v] of Object.entries(meta.user)) reply.header(`x-amz-meta-${k}`, v);
}

// --- Reads ------------------------------------------------------------------------------------

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` against an object of `size` bytes; null: serve it whole. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) throw new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable', { 'content-range': `bytes */${size}` });
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size) throw new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable', { 'content-range': `bytes */${size}` });
  return { start, end };
}

/** GetObject and HeadObject (also the CDN's public reads). */
export async function getObject({ app, req, reply, target: t, bucket: b }: S3Request) {
  const { store } = runtime(app);
  // A concurrent overwrite may remove the blob between reading the row and opening it: read again.
  for (let attempt = 0; ; attempt++) {
    const o = await findObject(app.database.db, b.id, t.key);
    if (!o) throw noSuchKey();
    const size = Number(o.size);
    const ifMatch = headerOf(req, 'if-match');
    const ifNone = headerOf(req, 'if-none-match');
    if (ifMatch && !ifMatch.split(',').some((e) => unquote(e) === o.etag || e.trim() === '*'))
      throw new S3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
    objectHeaders(reply, o, t.query);
    if (ifNone && ifNone.split(',').some((e) => unquote(e) === o.etag || e.trim() === '*')) return reply.status(304).send();
    const range = parseRange(headerOf(req, 'range'), size);
    const length = range ? range.end - range.start + 1 : size;
    reply.header('content-length', String(length));
    if (range) reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
    reply.status(range ? 206 : 200);
    if (req.method === 'HEAD') return reply.send();
    if (length === 0) return reply.send('');
    try {
      return reply.send(await store.read(b.id, o.blob, range ?? undefined));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt > 0) throw e;
    }
  }
}

// --- Writes -----------------------------------------------------------------------------------

/** Stores a request body as a new blob; answers it with its size and MD5. */
export async function receive(r: VerifiedRequest) {
  const data = body(r);
  const blob = newBlobId();
  const size = await runtime(r.app).store.put(r.bucket.id, blob, data.stream, data.length, () => data.check());
  return { blob, size, md5: data.md5().toString('hex') };
}

/** Commits object metadata for a stored blob; on failure the blob is removed. */
export async function commit(app: AppContext, row: ObjectRow, extraFreed: string[] = [], before?: (tx: Tx) => Promise<boolean>) {
  try {
    await withFreedBlobs(app, row.bucket_id, async (tx) => {
      if (before && !(await before(tx))) throw noSuchUpload();
      const replaced = await putObjectRow(tx, row);
      return { result: null, freed: [...(replaced ? [replaced] : []), ...extraFreed] };
    });
  } catch (e) {
    await runtime(app)
      .store.remove(row.bucket_id, [row.blob])
      .catch(() => {});
    // The bucket went away while the bytes were arriving.
    if (!(e instanceof S3Error) && !(await bucketExists(app.database.db, row.bucket_id)))
      throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
    throw e;
  }
}

export async function putObject(r: VerifiedRequest) {
  const { app, req, reply, target: t, bucket: b } = r;
  const meta = metaFromRequest(req);
  const got = await receive(r);
  const now = new Date().toISOString();
  await commit(app, {
    bucket_id: b.id,
    key: t.key,
    blob: got.blob,
    size: got.size,
    etag: got.md5,
    content_type: headerOf(req, 'content-type') ?? null,
    metadata: JSON.stringify(meta),
    updated_at: now,
  });
  return reply.status(200).header('etag', quoted(got.md5)).send();
}

/** The source object named by `x-amz-copy-source` (same bucket only). */
export async function copySource(app: AppContext, b: ObjectStoragesTable, req: FastifyRequest): Promise<ObjectRow> {
  const raw = headerOf(req, 'x-amz-copy-source')!.split('?')[0]!;
  const source = decode(raw).replace(/^\//, '');
  const slash = source.indexOf('/');
  if (slash < 1 || slash === source.length - 1) throw invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  if (source.slice(0, slash) !== b.bucket_name) throw accessDenied();
  const src = await findObject(app.database.db, b.id, source.slice(slash + 1));
  if (!src) throw noSuchKey();
  const ifMatch = headerOf(req, 'x-amz-copy-source-if-match');
  if (ifMatch && unquote(ifMatch) !== src.etag) throw new S3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
  return src;
}

export async function copyObject({ app, req, reply, target: t, bucket: b }: S3Request) {
  const src = await copySource(app, b, req);
  const srcKey = src.key;
  const directive = (headerOf(req, 'x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw invalidArgument('Unknown metadata directive.');
  if (srcKey === t.key && directive === 'COPY')
    throw invalidRequest(
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  const blob = newBlobId();
  try {
    await runtime(app).store.copy(b.id, src.blob, blob);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw noSuchKey();
    throw e;
  }
  const now = new Date().toISOString();
  const replace = directive === 'REPLACE';
  await commit(app, {
    bucket_id: b.id,
    key: t.key,
    blob,
    size: src.size,
    etag: src.etag,
    content_type: replace ? (headerOf(req, 'content-type') ?? null) : src.content_type,
    metadata: replace ? JSON.stringify(metaFromRequest(req)) : src.metadata,
    updated_at: now,
  });
  return sendXml(reply, 200, { CopyObjectResult: { '@_xmlns': NS, LastModified: now, ETag: quoted(src.etag) } });
}

export async function deleteObject({ app, reply, target: t, bucket: b }: S3Request) {
  await withFreedBlobs(app, b.id, async (tx) => ({ result: null, freed: (await deleteObjectRows(tx, b.id, [t.key])).blobs }));
  return reply.status(204).send();
}
