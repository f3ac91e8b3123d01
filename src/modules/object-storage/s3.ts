// The S3-compatible data plane, served by the main server: path-style under `/s3/<bucket>/<key>`,
// virtual-hosted style (`<bucket>.<base domain>`) when the operator sets a base domain, and public
// reads on a bucket's CDN hostname. This file routes: it reads what a request addresses, verifies
// it (AWS Signature V4 or V2, auth.ts, with the bucket's own keys; a key opens only its own
// bucket), answers CORS, and hands one S3Request to the operation (s3-buckets.ts, s3-objects.ts,
// s3-multipart.ts). Bodies are streamed (never parsed as JSON) and every error is S3's XML error
// document. Registered as an encapsulated Fastify plugin, so the JSON API's parsers and error
// handler never see these requests.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import type { EdgeRequest } from '../../shared/edge/index.js';
import { ApiError } from '../../shared/errors.js';
import { verify } from './auth.js';
import { corsHeaders, findRule } from './cors.js';
import { bucketOfHostname } from './domains.js';
import { runtime } from './runtime.js';
import { deleteObjects, listBuckets, listObjects } from './s3-buckets.js';
import { accessDenied, noSuchKey, notImplemented, S3Error } from './s3-errors.js';
import { abortUpload, completeUpload, initiateUpload, listPartsOf, uploadPart } from './s3-multipart.js';
import { copyObject, deleteObject, getObject, putObject } from './s3-objects.js';
import { decode, has, headerOf, NS, one, sendXml, type Addressed, type S3Request, type Target, type VerifiedRequest } from './s3-request.js';
import { corsRules } from './service.js';
import { PATH_PREFIX } from './settings.js';
import { findBucketByName, findBucketRow, type ObjectStoragesTable } from './storage.js';

/** Internal prefix public CDN requests are rewritten to (`/_object-storage/cdn/<hostname>/<key>`). */
const CDN_PREFIX = '/_object-storage/cdn';
const MAX_KEY_BYTES = 1024;
/** Object sub-resources this server does not serve (other query parameters, e.g. the SDK's `x-id`, are ignored). */
const OBJECT_SUBRESOURCES = ['acl', 'tagging', 'torrent', 'attributes', 'retention', 'legal-hold', 'restore', 'select'];

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

// --- Errors -----------------------------------------------------------------------------------

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

// --- CORS -------------------------------------------------------------------------------------

async function bucketRow(app: AppContext, id: string): Promise<ObjectStoragesTable> {
  const b = await findBucketRow(app.database.db, id);
  if (!b) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
  return b;
}

/** CORS headers for a request with an Origin, when one of the bucket's rules allows its method. */
async function applyCors({ app, req, reply, bucket }: S3Request) {
  const origin = headerOf(req, 'origin');
  if (!origin) return;
  const rule = findRule(await corsRules(app.database.db, bucket.id), origin, req.method);
  if (rule) reply.headers(corsHeaders(rule, origin));
}

async function preflight({ app, req, reply, target: t }: Addressed) {
  const origin = headerOf(req, 'origin');
  const method = headerOf(req, 'access-control-request-method');
  if (!origin || !method) throw new S3Error(400, 'BadRequest', 'Insufficient information. Origin request header needed.');
  const b = t.bucket ? await findBucketByName(app.database.db, t.bucket) : undefined;
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

// --- Dispatch ---------------------------------------------------------------------------------

async function handle(app: AppContext, req: FastifyRequest, reply: FastifyReply) {
  reply.header('x-amz-request-id', String(req.id));
  const t = target(req, PATH_PREFIX);
  if (req.method === 'OPTIONS') return preflight({ app, req, reply, target: t });
  const caller = await verify(app, { ...t, headers: req.headers, headersDistinct: req.raw.headersDistinct });
  const r: VerifiedRequest = { app, req, reply, target: t, bucket: await bucketRow(app, caller.bucketId), caller };
  if (t.bucket === null) {
    if (req.method !== 'GET') throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    return listBuckets(r);
  }
  // A key opens its own bucket only; other names (existing or not) are refused alike.
  if (t.bucket !== r.bucket.bucket_name) throw accessDenied();
  await applyCors(r);
  return t.key === '' ? bucketOperation(r) : objectOperation(r);
}

async function bucketOperation(r: VerifiedRequest) {
  const { req, reply } = r;
  const q = r.target.query;
  switch (req.method) {
    case 'HEAD':
      return reply.status(200).header('x-amz-bucket-region', 'us-east-1').send();
    case 'GET':
      if (has(q, 'location')) return sendXml(reply, 200, { LocationConstraint: { '@_xmlns': NS } });
      if (has(q, 'uploads') || has(q, 'versions') || has(q, 'cors') || has(q, 'policy') || has(q, 'acl') || has(q, 'lifecycle') || has(q, 'tagging'))
        throw notImplemented(`This bucket sub-resource (${Object.keys(q).join(', ')})`);
      return listObjects(r, one(q, 'list-type') === '2');
    case 'POST':
      if (has(q, 'delete')) return deleteObjects(r);
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

async function objectOperation(r: VerifiedRequest) {
  const { req } = r;
  const q = r.target.query;
  const uploadId = one(q, 'uploadId');
  switch (req.method) {
    case 'GET':
      if (uploadId !== undefined) return listPartsOf(r, uploadId);
      if (Object.keys(q).some((k) => OBJECT_SUBRESOURCES.includes(k))) throw notImplemented(`Object sub-resource ${Object.keys(q).join(', ')}`);
      return getObject(r);
    case 'HEAD':
      return getObject(r);
    case 'PUT':
      if (uploadId !== undefined) return uploadPart(r, uploadId);
      if (Object.keys(q).some((k) => OBJECT_SUBRESOURCES.includes(k))) throw notImplemented(`Object sub-resource ${Object.keys(q).join(', ')}`);
      if (headerOf(req, 'x-amz-copy-source')) return copyObject(r);
      return putObject(r);
    case 'POST':
      if (has(q, 'uploads')) return initiateUpload(r);
      if (uploadId !== undefined) return completeUpload(r, uploadId);
      break;
    case 'DELETE':
      if (uploadId !== undefined) return abortUpload(r, uploadId);
      return deleteObject(r);
  }
  throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
}

/** Public CDN reads: unsigned, reads only, the bucket told by the hostname. */
async function handleCdn(app: AppContext, req: FastifyRequest, reply: FastifyReply) {
  reply.header('x-amz-request-id', String(req.id));
  const t = target(req, CDN_PREFIX);
  if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS')
    throw new S3Error(405, 'MethodNotAllowed', 'The CDN domain serves reads only.');
  const bucketId = t.bucket ? await bucketOfHostname(app.database.db, t.bucket) : null;
  if (!bucketId) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.');
  const b = await bucketRow(app, bucketId);
  if (req.method === 'OPTIONS') return preflight({ app, req, reply, target: { ...t, bucket: b.bucket_name } });
  const r: S3Request = { app, req, reply, target: t, bucket: b };
  await applyCors(r);
  if (t.key === '') throw noSuchKey();
  // With an edge (SLIPWAY_RUNTIME=local), public reads go through its response cache, which keeps
  // what an object's Cache-Control lets a shared cache keep, until it expires or the bucket's CDN
  // cache is purged (a purge writes `updated_at`, the entries' version). A request with an Origin
  // goes past it: its CORS headers depend on that Origin.
  const cache = app.runtimes.edge?.cache;
  if (!cache || headerOf(req, 'origin') !== undefined) return getObject(r);
  const info: EdgeRequest = { host: t.bucket ?? '', clientIp: req.ip, country: null, location: null };
  await cache.serve(req.raw, reply.raw, info, { owner: b.id, version: b.updated_at }, async () => void (await getObject(r)));
  // Answered from the cache on the raw response: Fastify must not answer again.
  if (!info.cached) return reply;
  reply.hijack();
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
