// The S3 request object every data-plane handler takes (S3Request: the server, the exchange, what
// it addresses, the bucket, and the verified caller once known) and what handlers read and answer
// through: query and header accessors, the streamed request body (aws-chunked decoded, digests
// checked against what was declared), small XML bodies and XML answers. Handlers never parse a
// body as JSON and answer every error with S3's XML error document (s3.ts).
import { pipeline, type Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type * as Xml from 'fast-xml-parser';
import { lazy } from '../../shared/lazy.js';
import type { AppContext } from '../../shared/context.js';
import { announcedChecksum, AwsChunkedDecoder, checkDigests, Digester } from './chunked.js';
import { invalidArgument, invalidRequest, malformedXml, notImplemented, S3Error } from './s3-errors.js';
import type { Caller, SignedRequest } from './signing.js';
import { chunkSignature, trailerSignature } from './sigv4.js';
import type { ObjectStoragesTable } from './storage.js';

export const NS = 'http://s3.amazonaws.com/doc/2006-03-01/';
const MAX_PUT = 5 * 1024 ** 3;
const MAX_XML_BODY = 2 * 1024 * 1024;

/** What a request addresses, read from its URL: what its signature covers, and the bucket and key. */
export interface Target extends Omit<SignedRequest, 'headers' | 'headersDistinct'> {
  /** The bucket named in the request (null: the service root, ListBuckets). */
  bucket: string | null;
  /** The object key ('' for bucket operations). */
  key: string;
}

/** A request and its reply, with what it addresses (before its bucket is known: a CORS preflight). */
export interface Addressed {
  app: AppContext;
  req: FastifyRequest;
  reply: FastifyReply;
  target: Target;
}

/** A request to a bucket: the one its key opens, or the one a CDN hostname names (reads only). */
export interface S3Request extends Addressed {
  bucket: ObjectStoragesTable;
}

/** A request signed with the bucket's key: the only kind that may carry a body. */
export interface VerifiedRequest extends S3Request {
  caller: Caller;
}

export function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new S3Error(400, 'InvalidURI', "Couldn't parse the specified URI.");
  }
}

export const one = (q: Target['query'], k: string): string | undefined => {
  const v = q[k];
  return Array.isArray(v) ? v[0] : v;
};
export const has = (q: Target['query'], k: string) => q[k] !== undefined;
export const headerOf = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

/** A count parameter (`max-keys`, `max-parts`): a non-negative integer, at most `cap` (the default). */
export function maxOf(v: string | undefined, name: string, cap: number): number {
  if (v === undefined) return cap;
  if (!/^\d+$/.test(v)) throw invalidArgument(`${name} must be a non-negative integer.`);
  return Math.min(Number(v), cap);
}

export const quoted = (etag: string) => `"${etag}"`;
export const unquote = (s: string) => s.trim().replace(/^"|"$/g, '');
export const isoSeconds = (iso: string) => new Date(iso).toISOString();

// --- XML --------------------------------------------------------------------------------------

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

export function sendXml(reply: FastifyReply, status: number, body: Record<string, unknown>) {
  reply.status(status).type('application/xml');
  return reply.send(`<?xml version="1.0" encoding="UTF-8"?>\n${xml().build(body)}`);
}

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
export function body({ req, caller }: VerifiedRequest): Body {
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
export async function xmlBody(r: VerifiedRequest): Promise<Record<string, unknown>> {
  const b = body(r);
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
