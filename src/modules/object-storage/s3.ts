// The S3-compatible data plane, served by the main server: path-style under `/s3/<bucket>/<key>`,
// virtual-hosted style (`<bucket>.<base domain>`) when the operator sets a base domain, and public
// reads on a bucket's CDN hostname. Requests are authenticated with AWS Signature V4 or V2
// (auth.ts) using the bucket's own keys; a key opens only its own bucket. Bodies are streamed
// (never parsed as JSON) and every error is S3's XML error document. Registered as an encapsulated
// Fastify plugin, so the JSON API's parsers and error handler never see these requests.
import { pipeline, type Readable } from 'node:stream';
import type { ByteRange } from './blobs.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type * as Xml from 'fast-xml-parser';
import { lazy } from '../../shared/lazy.js';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { ApiError } from '../../shared/errors.js';
import { announcedChecksum, AwsChunkedDecoder, checkDigests, Digester } from './chunked.js';
import { corsHeaders, findRule } from './cors.js';
import { bucketOfHostname } from './domains.js';
import {
  createUpload,
  decodeBound,
  deleteObjectRows,
  dropUpload,
  encodeBound,
  findObject,
  findUpload,
  listEntries,
  listParts,
  multipartEtag,
  newBlobId,
  putObjectRow,
  putPartRow,
  withFreedBlobs,
  type Bound,
  type ObjectRow,
} from './objects.js';
import { runtime } from './runtime.js';
import { accessDenied, invalidArgument, invalidRequest, malformedXml, noSuchKey, noSuchUpload, notImplemented, S3Error } from './s3-errors.js';
import { corsRules } from './service.js';
import { PATH_PREFIX } from './settings.js';
import { verify } from './auth.js';
import type { Caller } from './signing.js';
import { chunkSignature, trailerSignature } from './sigv4.js';
import type { ObjectStoragesTable } from './storage.js';

/** Internal prefix public CDN requests are rewritten to (`/_object-storage/cdn/<hostname>/<key>`). */
const CDN_PREFIX = '/_object-storage/cdn';
const NS = 'http://s3.amazonaws.com/doc/2006-03-01/';
const MAX_KEY_BYTES = 1024;
const MAX_PUT = 5 * 1024 ** 3;
const MIN_PART = 5 * 1024 ** 2;
const MAX_XML_BODY = 2 * 1024 * 1024;
/** Object sub-resources this server does not serve (other query parameters, e.g. the SDK's `x-id`, are ignored). */
const OBJECT_SUBRESOURCES = ['acl', 'tagging', 'torrent', 'attributes', 'retention', 'legal-hold', 'restore', 'select'];
const STORED_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'] as const;

const loadXml = lazy<typeof Xml>('fast-xml-parser');
let builder: Xml.XMLBuilder | undefined;
let parser: Xml.XMLParser | undefined;
const xml = () => (builder ??= new (loadXml().XMLBuilder)({ ignoreAttributes: false, suppressEmptyNode: false, processEntities: true }));
const xmlParser = () =>
  (parser ??= new (loadXml().XMLParser)({
    ignoreAttributes: true,
    parseTagValue: false,
    trimValues: false,
    isArray: (name) => name === 'Part' || name === 'Object',
  }));

// --- Addressing -------------------------------------------------------------------------------

/**
 * Virtual-hosted and CDN requests are routed by their Host: `<bucket>.<base domain>/<key>` becomes
 * `/s3/<bucket>/<key>` (the base domain itself serves path-style), `<bucket>.<cdn domain>/<key>`
 * becomes the public CDN route. Signatures are checked against the URL as sent.
 */
export function rewriteUrl(app: AppContext, host: string | undefined, url: string): string | undefined {
  const h = host?.toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
  if (!h) return undefined;
  const { baseDomain, cdnDomain } = runtime(app).settings;
  const path = url.startsWith('/') ? url : `/${url}`;
  if (baseDomain && h === baseDomain) return `${PATH_PREFIX}${path}`;
  if (baseDomain && h.endsWith(`.${baseDomain}`)) {
    const bucket = h.slice(0, -(baseDomain.length + 1));
    if (!bucket.includes('.')) return `${PATH_PREFIX}/${bucket}${path}`;
  }
  if (h.endsWith(`.${cdnDomain}`)) return `${CDN_PREFIX}/${h}${path}`;
  return undefined;
}

interface Target {
  method: string;
  /** The path as sent (percent-encoded), for the signature. */
  rawPath: string;
  query: Record<string, string | string[]>;
  /** The query string as sent. */
  rawQuery: string;
  /** `/<bucket>/<key>` (percent-encoded) whatever the addressing, for SigV2's signed resource. */
  resource: string;
  /** The Host named the bucket. */
  virtualHosted: boolean;
  /** The bucket named in the request (null: the service root, ListBuckets). */
  bucket: string | null;
  /** The object key ('' for bucket operations). */
  key: string;
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new S3Error(400, 'InvalidURI', "Couldn't parse the specified URI.");
  }
}

function parseQuery(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const pair of raw.split('&')) {
    if (!pair) continue;
    const i = pair.indexOf('=');
    const k = decode(i < 0 ? pair : pair.slice(0, i));
    const v = i < 0 ? '' : decode(pair.slice(i + 1));
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** The bucket and key of a request routed under `prefix`. */
function target(req: FastifyRequest, prefix: string): Target {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const original = req.originalUrl ?? url;
  const oq = original.indexOf('?');
  const rest = path.slice(prefix.length).replace(/^\//, '');
  const slash = rest.indexOf('/');
  const bucket = rest === '' ? null : decode(slash < 0 ? rest : rest.slice(0, slash));
  const key = slash < 0 ? '' : decode(rest.slice(slash + 1));
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new S3Error(400, 'KeyTooLongError', 'Your key is too long.');
  const rawPath = oq < 0 ? original : original.slice(0, oq);
  const rawQuery = q < 0 ? '' : url.slice(q + 1);
  return {
    method: req.method,
    rawPath,
    query: parseQuery(rawQuery),
    rawQuery,
    resource: rest === '' ? '/' : slash < 0 ? `/${rest}/` : `/${rest}`,
    // rewriteUrl prefixes path-style requests on the base domain with `prefix` alone, virtual-hosted ones with the bucket too.
    virtualHosted: path !== rawPath && path !== `${prefix}${rawPath}`,
    bucket,
    key,
  };
}

const one = (q: Target['query'], k: string): string | undefined => {
  const v = q[k];
  return Array.isArray(v) ? v[0] : v;
};
const has = (q: Target['query'], k: string) => q[k] !== undefined;
const headerOf = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

// --- Responses --------------------------------------------------------------------------------

function sendXml(reply: FastifyReply, status: number, body: Record<string, unknown>) {
  reply.status(status).type('application/xml');
  return reply.send(`<?xml version="1.0" encoding="UTF-8"?>\n${xml().build(body)}`);
}

function toS3Error(err: unknown): S3Error | null {
  if (err instanceof S3Error) return err;
  if (err instanceof ApiError) return new S3Error(err.status, err.status === 403 ? 'AccessDenied' : 'InvalidRequest', err.message);
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500)
    return new S3Error(e.statusCode, 'InvalidRequest', e.message ?? 'Invalid request');
  return null;
}

function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  let e = toS3Error(err);
  if (!e) {
    req.log.error({ err }, 'object storage: unhandled error');
    e = new S3Error(500, 'InternalError', 'We encountered an internal error. Please try again.');
  }
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return reply;
  }
  reply.headers(e.headers);
  // A request body the handler did not read is not waited for.
  if (!req.raw.readableEnded) reply.header('connection', 'close');
  if (req.method === 'HEAD') return reply.status(e.status).send();
  return sendXml(reply, e.status, {
    Error: { Code: e.code, Message: e.message, Resource: req.originalUrl?.split('?')[0] ?? req.url, RequestId: String(req.id) },
  });
}

const quoted = (etag: string) => `"${etag}"`;
const unquote = (s: string) => s.trim().replace(/^"|"$/g, '');
const isoSeconds = (iso: string) => new Date(iso).toISOString();

// --- Bodies -----------------------------------------------------------------------------------

interface Body {
  stream: Readable;
  /** The decoded length the request declared, if any. */
  length: number | null;
  /** Throws the S3 error when what arrived does not match what was declared. */
  check(): void;
  md5(): Buffer;
}

function declaredLength(v: string | undefined): number | null {
  if (v === undefined) return null;
  if (!/^\d+$/.test(v)) throw invalidArgument('The declared content length is not a number.');
  return Number(v);
}

/** The request body, decoded (aws-chunked) and digested as it streams. */
function body(req: FastifyRequest, caller: Caller): Body {
  const hash = caller.payloadHash;
  const encoding = (headerOf(req, 'content-encoding') ?? '').toLowerCase();
  const chunked =
    hash.startsWith('STREAMING-') ||
    encoding
      .split(',')
      .map((s) => s.trim())
      .includes('aws-chunked');
  const signedChunks = hash === 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD' || hash === 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER';
  if (hash.startsWith('STREAMING-') && !signedChunks && hash !== 'STREAMING-UNSIGNED-PAYLOAD-TRAILER') throw notImplemented(`Payload signing mode ${hash}`);
  if (signedChunks && !caller.seed) throw invalidRequest('Streaming signed payloads need header authentication.');
  const seed = caller.seed;
  const decoder = chunked
    ? new AwsChunkedDecoder(
        signedChunks && seed
          ? { seed: seed.signature, chunk: (prev, sha) => chunkSignature(seed, prev, sha), trailer: (prev, text) => trailerSignature(seed, prev, text) }
          : null,
      )
    : null;
  const length = declaredLength(chunked ? headerOf(req, 'x-amz-decoded-content-length') : headerOf(req, 'content-length'));
  if (length !== null && length > MAX_PUT) throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size.');
  const contentMd5 = headerOf(req, 'content-md5');
  if (contentMd5 !== undefined && Buffer.from(contentMd5, 'base64').length !== 16)
    throw new S3Error(400, 'InvalidDigest', 'The Content-MD5 you specified is not valid.');
  const algorithm = announcedChecksum(req.headers);
  const sha256 = /^[0-9a-f]{64}$/.test(hash) ? hash : null;
  const digester = new Digester({ sha256: !!sha256, checksum: algorithm });
  const noop = () => {};
  const stream = decoder ? pipeline(req.raw, decoder, digester, noop) : pipeline(req.raw, digester, noop);
  return {
    stream,
    length,
    md5: () => digester.result().md5,
    check: () =>
      checkDigests(digester, {
        length,
        contentMd5,
        sha256,
        checksum: algorithm ? { algorithm, value: headerOf(req, `x-amz-checksum-${algorithm}`) ?? decoder?.trailers.get(`x-amz-checksum-${algorithm}`) } : null,
      }),
  };
}

/** A small XML request body (DeleteObjects, CompleteMultipartUpload), checked and parsed. */
async function xmlBody(req: FastifyRequest, caller: Caller): Promise<Record<string, unknown>> {
  const b = body(req, caller);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of b.stream) {
    size += (c as Buffer).length;
    if (size > MAX_XML_BODY) throw new S3Error(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(c as Buffer);
  }
  b.check();
  try {
    return xmlParser().parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw malformedXml();
  }
}

// --- Object headers ---------------------------------------------------------------------------

interface StoredMeta {
  user: Record<string, string>;
  headers: Partial<Record<(typeof STORED_HEADERS)[number], string>>;
}

function metaFromRequest(req: FastifyRequest): StoredMeta {
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

// --- Handlers ---------------------------------------------------------------------------------

async function bucketRow(app: AppContext, id: string): Promise<ObjectStoragesTable> {
  const b = await app.database.db.selectFrom('object_storages').selectAll().where('id', '=', id).executeTakeFirst();
  if (!b) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
  return b;
}

/** CORS headers for a request with an Origin, when one of the bucket's rules allows its method. */
async function applyCors(app: AppContext, bucketId: string, req: FastifyRequest, reply: FastifyReply) {
  const origin = headerOf(req, 'origin');
  if (!origin) return;
  const rule = findRule(await corsRules(app.database.db, bucketId), origin, req.method);
  if (rule) reply.headers(corsHeaders(rule, origin));
}

async function preflight(app: AppContext, t: Target, req: FastifyRequest, reply: FastifyReply) {
  const origin = headerOf(req, 'origin');
  const method = headerOf(req, 'access-control-request-method');
  if (!origin || !method) throw new S3Error(400, 'BadRequest', 'Insufficient information. Origin request header needed.');
  const b = t.bucket ? await app.database.db.selectFrom('object_storages').select('id').where('bucket_name', '=', t.bucket).executeTakeFirst() : undefined;
  const requested = (headerOf(req, 'access-control-request-headers') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const rule = b && findRule(await corsRules(app.database.db, b.id), origin, method, requested);
  if (!rule)
    throw new S3Error(
      403,
      'AccessForbidden',
      "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
    );
  reply.headers(corsHeaders(rule, origin));
  reply.header('access-control-allow-methods', rule.methods.join(', '));
  if (requested.length) reply.header('access-control-allow-headers', requested.join(', '));
  return reply.status(200).send();
}

async function handle(app: AppContext, req: FastifyRequest, reply: FastifyReply) {
  reply.header('x-amz-request-id', String(req.id));
  const t = target(req, PATH_PREFIX);
  if (req.method === 'OPTIONS') return preflight(app, t, req, reply);
  const caller = await verify(app, { ...t, headers: req.headers, headersDistinct: req.raw.headersDistinct });
  const b = await bucketRow(app, caller.bucketId);
  if (t.bucket === null) {
    if (req.method !== 'GET') throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    return sendXml(reply, 200, {
      ListAllMyBucketsResult: {
        '@_xmlns': NS,
        Owner: { ID: b.company_id, DisplayName: '' },
        Buckets: { Bucket: [{ Name: b.bucket_name, CreationDate: isoSeconds(b.created_at) }] },
      },
    });
  }
  // A key opens its own bucket only; other names (existing or not) are refused alike.
  if (t.bucket !== b.bucket_name) throw accessDenied();
  await applyCors(app, b.id, req, reply);
  return t.key === '' ? bucketOperation(app, b, t, req, reply, caller) : objectOperation(app, b, t, req, reply, caller);
}

async function bucketOperation(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const q = t.query;
  switch (req.method) {
    case 'HEAD':
      return reply.status(200).header('x-amz-bucket-region', 'us-east-1').send();
    case 'GET':
      if (has(q, 'location')) return sendXml(reply, 200, { LocationConstraint: { '@_xmlns': NS } });
      if (has(q, 'uploads') || has(q, 'versions') || has(q, 'cors') || has(q, 'policy') || has(q, 'acl') || has(q, 'lifecycle') || has(q, 'tagging'))
        throw notImplemented(`This bucket sub-resource (${Object.keys(q).join(', ')})`);
      return listObjectsV(app, b, q, reply, one(q, 'list-type') === '2');
    case 'POST':
      if (has(q, 'delete')) return deleteMany(app, b, req, reply, caller);
      break;
    case 'PUT':
      if (Object.keys(q).length === 0)
        throw new S3Error(409, 'BucketAlreadyOwnedByYou', 'Your previous request to create the named bucket succeeded and you already own it.');
      break;
    case 'DELETE':
      if (Object.keys(q).length === 0) throw accessDenied('Buckets are deleted through the API (DELETE /v3/object-storage/{id}).');
      break;
  }
  throw notImplemented(`${req.method} on a bucket with ${Object.keys(q).join(', ') || 'no'} sub-resource`);
}

function maxOf(v: string | undefined, name: string, cap: number): number {
  if (v === undefined) return cap;
  if (!/^\d+$/.test(v)) throw invalidArgument(`${name} must be a non-negative integer.`);
  return Math.min(Number(v), cap);
}

async function listObjectsV(app: AppContext, b: ObjectStoragesTable, q: Target['query'], reply: FastifyReply, v2: boolean) {
  const prefix = one(q, 'prefix') ?? '';
  const delimiter = one(q, 'delimiter') ?? '';
  const max = maxOf(one(q, 'max-keys'), 'max-keys', 1000);
  const url = one(q, 'encoding-type') === 'url';
  if (one(q, 'encoding-type') !== undefined && !url) throw invalidArgument('Invalid Encoding Method specified in Request');
  const enc = (s: string) => (url ? encodeURIComponent(s).replace(/%2F/g, '/') : s);
  let after: Bound | null = null;
  const token = one(q, 'continuation-token');
  if (v2 && token !== undefined) {
    after = decodeBound(token);
    if (!after) throw invalidArgument('The continuation token provided is incorrect');
  } else {
    const start = v2 ? one(q, 'start-after') : one(q, 'marker');
    if (start) after = { key: start, inclusive: false };
  }
  const { entries, next } = await listEntries(app.database.db, b.id, { prefix, delimiter, after, max });
  const contents = entries.flatMap((e) =>
    'object' in e
      ? [
          {
            Key: enc(e.object.key),
            LastModified: isoSeconds(e.object.updated_at),
            ETag: quoted(e.object.etag),
            Size: Number(e.object.size),
            StorageClass: 'STANDARD',
          },
        ]
      : [],
  );
  const prefixes = entries.flatMap((e) => ('prefix' in e ? [{ Prefix: enc(e.prefix) }] : []));
  const common = {
    '@_xmlns': NS,
    Name: b.bucket_name,
    Prefix: enc(prefix),
    ...(delimiter ? { Delimiter: enc(delimiter) } : {}),
    MaxKeys: max,
    ...(url ? { EncodingType: 'url' } : {}),
    IsTruncated: next !== null,
  };
  const last = entries.at(-1);
  const body = v2
    ? {
        ...common,
        KeyCount: entries.length,
        ...(token !== undefined ? { ContinuationToken: token } : {}),
        ...(next ? { NextContinuationToken: encodeBound(next) } : {}),
        ...(one(q, 'start-after') ? { StartAfter: enc(one(q, 'start-after')!) } : {}),
      }
    : {
        ...common,
        Marker: enc(one(q, 'marker') ?? ''),
        ...(next && delimiter && last ? { NextMarker: enc('object' in last ? last.object.key : last.prefix) } : {}),
      };
  return sendXml(reply, 200, { ListBucketResult: { ...body, Contents: contents, CommonPrefixes: prefixes } });
}

async function deleteMany(app: AppContext, b: ObjectStoragesTable, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const doc = (await xmlBody(req, caller)).Delete as { Object?: { Key?: unknown }[]; Quiet?: string } | undefined;
  const objects = doc?.Object ?? [];
  if (!doc || !objects.length || objects.length > 1000 || objects.some((o) => typeof o.Key !== 'string')) throw malformedXml();
  const keys = objects.map((o) => o.Key as string);
  await withFreedBlobs(app, b.id, async (tx) => {
    const { blobs } = await deleteObjectRows(tx, b.id, keys);
    return { result: null, freed: blobs };
  });
  const quiet = doc.Quiet?.trim().toLowerCase() === 'true';
  return sendXml(reply, 200, { DeleteResult: { '@_xmlns': NS, Deleted: quiet ? [] : keys.map((k) => ({ Key: k })) } });
}

async function objectOperation(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const q = t.query;
  const uploadId = one(q, 'uploadId');
  switch (req.method) {
    case 'GET':
      if (uploadId !== undefined) return listPartsOf(app, b, t, uploadId, reply);
      if (Object.keys(q).some((k) => OBJECT_SUBRESOURCES.includes(k))) throw notImplemented(`Object sub-resource ${Object.keys(q).join(', ')}`);
      return getObject(app, b, t, req, reply);
    case 'HEAD':
      return getObject(app, b, t, req, reply);
    case 'PUT':
      if (uploadId !== undefined) {
        return uploadPart(app, b, t, uploadId, req, reply, caller);
      }
      if (Object.keys(q).some((k) => OBJECT_SUBRESOURCES.includes(k))) throw notImplemented(`Object sub-resource ${Object.keys(q).join(', ')}`);
      if (headerOf(req, 'x-amz-copy-source')) return copyObject(app, b, t, req, reply);
      return putObject(app, b, t, req, reply, caller);
    case 'POST':
      if (has(q, 'uploads')) return initiateUpload(app, b, t, req, reply);
      if (uploadId !== undefined) return completeUpload(app, b, t, uploadId, req, reply, caller);
      break;
    case 'DELETE':
      if (uploadId !== undefined) return abortUpload(app, b, t, uploadId, reply);
      await withFreedBlobs(app, b.id, async (tx) => ({ result: null, freed: (await deleteObjectRows(tx, b.id, [t.key])).blobs }));
      return reply.status(204).send();
  }
  throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
}

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

async function getObject(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply) {
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

/** Stores a request body as a new blob; answers it with its size and MD5. */
async function receive(app: AppContext, bucketId: string, req: FastifyRequest, caller: Caller) {
  const data = body(req, caller);
  const blob = newBlobId();
  const size = await runtime(app).store.put(bucketId, blob, data.stream, data.length, () => data.check());
  return { blob, size, md5: data.md5().toString('hex') };
}

/** Commits object metadata for a stored blob; on failure the blob is removed. */
async function commit(app: AppContext, row: ObjectRow, extraFreed: string[] = [], before?: (tx: Tx) => Promise<boolean>) {
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
    if (!(e instanceof S3Error) && !(await app.database.db.selectFrom('object_storages').select('id').where('id', '=', row.bucket_id).executeTakeFirst()))
      throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
    throw e;
  }
}

async function putObject(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const meta = metaFromRequest(req);
  const got = await receive(app, b.id, req, caller);
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

async function copyObject(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply) {
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

// --- Multipart --------------------------------------------------------------------------------

async function initiateUpload(app: AppContext, b: ObjectStoragesTable, t: Target, req: FastifyRequest, reply: FastifyReply) {
  const id = await createUpload(app.database.db, b.id, t.key, headerOf(req, 'content-type') ?? null, metaFromRequest(req) as unknown as Record<string, string>);
  return sendXml(reply, 200, { InitiateMultipartUploadResult: { '@_xmlns': NS, Bucket: b.bucket_name, Key: t.key, UploadId: id } });
}

function partNumberOf(v: string | undefined): number {
  if (!v || !/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 10000) throw invalidArgument('Part number must be an integer between 1 and 10000, inclusive');
  return Number(v);
}

async function uploadPart(app: AppContext, b: ObjectStoragesTable, t: Target, uploadId: string, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const partNumber = partNumberOf(one(t.query, 'partNumber'));
  if (!(await findUpload(app.database.db, b.id, uploadId, t.key))) throw noSuchUpload();
  const copying = headerOf(req, 'x-amz-copy-source') !== undefined;
  const got = copying ? await copyPartSource(app, b, req) : await receive(app, b.id, req, caller);
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

/** The source object named by `x-amz-copy-source` (same bucket only). */
async function copySource(app: AppContext, b: ObjectStoragesTable, req: FastifyRequest): Promise<ObjectRow> {
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

async function listPartsOf(app: AppContext, b: ObjectStoragesTable, t: Target, uploadId: string, reply: FastifyReply) {
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

async function completeUpload(app: AppContext, b: ObjectStoragesTable, t: Target, uploadId: string, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const upload = await findUpload(app.database.db, b.id, uploadId, t.key);
  if (!upload) throw noSuchUpload();
  const doc = (await xmlBody(req, caller)).CompleteMultipartUpload as { Part?: { PartNumber?: unknown; ETag?: unknown }[] } | undefined;
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

async function abortUpload(app: AppContext, b: ObjectStoragesTable, t: Target, uploadId: string, reply: FastifyReply) {
  if (!(await findUpload(app.database.db, b.id, uploadId, t.key))) throw noSuchUpload();
  const blobs = await withFreedBlobs(app, b.id, async (tx) => {
    const freed = await dropUpload(tx, uploadId);
    return { result: freed, freed: freed ?? [] };
  });
  if (blobs === null) throw noSuchUpload();
  return reply.status(204).send();
}

// --- Public CDN reads -------------------------------------------------------------------------

async function handleCdn(app: AppContext, req: FastifyRequest, reply: FastifyReply) {
  reply.header('x-amz-request-id', String(req.id));
  const t = target(req, CDN_PREFIX);
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS')
    throw new S3Error(405, 'MethodNotAllowed', 'The CDN domain serves reads only.');
  const bucketId = t.bucket ? await bucketOfHostname(app.database.db, t.bucket) : null;
  if (!bucketId) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
  const b = await bucketRow(app, bucketId);
  if (req.method === 'OPTIONS') return preflight(app, { ...t, bucket: b.bucket_name }, req, reply);
  await applyCors(app, b.id, req, reply);
  if (t.key === '') throw noSuchKey();
  return getObject(app, b, t, req, reply);
}

// --- Registration -----------------------------------------------------------------------------

export function registerS3(fastify: FastifyInstance, app: AppContext): void {
  void fastify.register(async (s3) => {
    s3.removeAllContentTypeParsers();
    // Bodies stay unread streams: handlers decode and store them.
    s3.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    s3.setErrorHandler((err, req, reply) => sendError(req, reply, err));
    const methods = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS'];
    for (const url of [PATH_PREFIX, `${PATH_PREFIX}/*`])
      s3.route({ method: methods, url, exposeHeadRoute: false, handler: (req, reply) => handle(app, req, reply) });
    s3.route({ method: methods, url: `${CDN_PREFIX}/*`, exposeHeadRoute: false, handler: (req, reply) => handleCdn(app, req, reply) });
  });
}
