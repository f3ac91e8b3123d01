// AWS Signature Version 4 for the S3 data plane: the Authorization header and presigned-URL
// forms. The expected signature is computed with @smithy/signature-v4 over exactly the headers the
// client signed, and compared in constant time; the key, clock and expiry rules are signing.ts's.
import { createHash } from 'node:crypto';
import type * as HashNode from '@smithy/hash-node';
import type * as Signing from '@smithy/signature-v4';
import { lazy } from '../../shared/lazy.js';
import type { AppContext } from '../../shared/context.js';
import { accessDenied, invalidArgument, invalidRequest, S3Error } from './s3-errors.js';
import {
  checkPresignedWindow,
  checkRequestTime,
  equal,
  header,
  lookupKey,
  MAX_PRESIGN_SECONDS,
  mismatch,
  parseAmzDate,
  queryValue,
  UNSIGNED_PAYLOAD,
  type Caller,
  type SignedRequest,
} from './signing.js';

const ALGORITHM = 'AWS4-HMAC-SHA256';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const hashNode = lazy<typeof HashNode>('@smithy/hash-node');
const signing = lazy<typeof Signing>('@smithy/signature-v4');

interface Credential {
  accessKey: string;
  date: string;
  region: string;
  scope: string;
}

function parseCredential(s: string | undefined): Credential {
  const parts = (s ?? '').split('/');
  if (parts.length !== 5 || parts[3] !== 's3' || parts[4] !== 'aws4_request' || !/^\d{8}$/.test(parts[1]!) || !parts[0])
    throw new S3Error(
      400,
      'AuthorizationHeaderMalformed',
      `The credential "${s ?? ''}" is malformed; expected <access key>/<yyyymmdd>/<region>/s3/aws4_request.`,
    );
  return { accessKey: parts[0], date: parts[1]!, region: parts[2]!, scope: parts.slice(1).join('/') };
}

function signerFor(accessKey: string, secret: string, region: string): Signing.SignatureV4 {
  const Hash = hashNode().Hash;
  return new (signing().SignatureV4)({
    credentials: { accessKeyId: accessKey, secretAccessKey: secret },
    region,
    service: 's3',
    sha256: Hash.bind(null, 'sha256'),
    uriEscapePath: false,
    applyChecksum: false,
  });
}

function signedHeaders(req: SignedRequest, list: string): Record<string, string> {
  const names = list.split(';').filter(Boolean);
  if (!names.includes('host')) throw accessDenied('The host header must be signed.');
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = header(req.headers, n);
    if (v === undefined) throw accessDenied(`The signed header "${n}" is missing from the request.`);
    out[n] = v;
  }
  return out;
}

/** `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` */
export async function verifyHeader(app: AppContext, req: SignedRequest, auth: string): Promise<Caller> {
  const m = /^AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})\s*$/.exec(auth.trim());
  if (!m)
    throw new S3Error(
      400,
      'AuthorizationHeaderMalformed',
      'The authorization header is malformed; expected AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...',
    );
  const cred = parseCredential(m[1]);
  const date = parseAmzDate(header(req.headers, 'x-amz-date'));
  if (!date) throw accessDenied('AWS authentication requires a valid x-amz-date header.');
  checkRequestTime(date);
  if (!header(req.headers, 'x-amz-date')!.startsWith(cred.date))
    throw new S3Error(400, 'AuthorizationHeaderMalformed', 'The credential date does not match the x-amz-date header.');
  const payloadHash = header(req.headers, 'x-amz-content-sha256');
  if (!payloadHash) throw invalidRequest('Missing required header for this request: x-amz-content-sha256');
  const { bucketId, secret } = await lookupKey(app, cred.accessKey);
  const signer = signerFor(cred.accessKey, secret, cred.region);
  const names = m[2]!;
  const signed = await signer.sign(
    {
      method: req.method,
      protocol: 'http:',
      hostname: header(req.headers, 'host') ?? '',
      path: req.rawPath,
      query: req.query,
      headers: signedHeaders(req, names),
    },
    { signingDate: date, signingRegion: cred.region, signableHeaders: new Set(names.split(';')) },
  );
  const expected = /Signature=([0-9a-f]{64})$/.exec(String(signed.headers.authorization))?.[1] ?? '';
  if (!equal(expected, m[3]!)) throw mismatch();
  return { accessKey: cred.accessKey, bucketId, seed: { signature: m[3]!, signer, date, scope: `${cred.scope}` }, payloadHash };
}

/** A presigned URL: `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`. */
export async function verifyPresigned(app: AppContext, req: SignedRequest): Promise<Caller> {
  const q = (k: string) => queryValue(req.query, k);
  if (q('X-Amz-Algorithm') !== ALGORITHM) throw invalidArgument(`X-Amz-Algorithm must be ${ALGORITHM}.`);
  const cred = parseCredential(q('X-Amz-Credential'));
  const date = parseAmzDate(q('X-Amz-Date'));
  const expires = Number(q('X-Amz-Expires'));
  const given = q('X-Amz-Signature') ?? '';
  const names = q('X-Amz-SignedHeaders') ?? '';
  if (!date || !Number.isInteger(expires) || expires < 1 || expires > MAX_PRESIGN_SECONDS || !/^[0-9a-f]{64}$/.test(given))
    throw accessDenied('The presigned URL is malformed (X-Amz-Date, X-Amz-Expires of 1 to 604800 seconds, and X-Amz-Signature are required).');
  checkPresignedWindow(date.getTime(), date.getTime() + expires * 1000);
  const { bucketId, secret } = await lookupKey(app, cred.accessKey);
  const signer = signerFor(cred.accessKey, secret, cred.region);
  const headers = signedHeaders(req, names);
  const query = { ...req.query };
  delete query['X-Amz-Signature'];
  // Presigned S3 URLs sign no payload; keep the marker out of the headers unless the client signed one.
  const payloadHash = headers['x-amz-content-sha256'] ?? UNSIGNED_PAYLOAD;
  const presigned = await signer.presign(
    {
      method: req.method,
      protocol: 'http:',
      hostname: headers.host ?? '',
      path: req.rawPath,
      query,
      headers: { ...headers, 'x-amz-content-sha256': payloadHash },
    },
    {
      signingDate: date,
      signingRegion: cred.region,
      expiresIn: expires,
      signableHeaders: new Set(names.split(';')),
      unsignableHeaders: new Set(['x-amz-content-sha256']),
      unhoistableHeaders: new Set([...Object.keys(headers), 'x-amz-content-sha256']),
    },
  );
  const expected = String(presigned.query?.['X-Amz-Signature'] ?? '');
  if (!equal(expected, given)) throw mismatch();
  return { accessKey: cred.accessKey, bucketId, seed: null, payloadHash };
}

/** RFC 3986 encoding as SigV4 canonicalizes it (encodeURIComponent leaves !'()* alone); also of a presigned URL's path segments. */
export const escape = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * A SigV4 presigned URL (query form, payload unsigned) that `verifyPresigned` accepts: `path` is
 * sent as given (already encoded), `headers` (lower-case names) are signed with the host and must be
 * sent as given.
 */
export async function presignUrl(opts: {
  origin: URL;
  method: string;
  path: string;
  headers: Record<string, string>;
  accessKey: string;
  secret: string;
  expiresIn: number;
  signingDate: Date;
}): Promise<string> {
  const { origin, accessKey, secret } = opts;
  const region = 'us-east-1';
  const headers = { ...opts.headers, host: origin.host };
  const signed = await signerFor(accessKey, secret, region).presign(
    {
      method: opts.method,
      protocol: origin.protocol,
      hostname: origin.host,
      path: opts.path,
      query: {},
      headers: { ...headers, 'x-amz-content-sha256': UNSIGNED_PAYLOAD },
    },
    {
      signingDate: opts.signingDate,
      signingRegion: region,
      expiresIn: opts.expiresIn,
      unsignableHeaders: new Set(['x-amz-content-sha256']),
      unhoistableHeaders: new Set([...Object.keys(headers), 'x-amz-content-sha256']),
    },
  );
  const query = Object.entries(signed.query ?? {})
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${escape(k)}=${escape(String(x))}`))
    .join('&');
  return `${origin.protocol}//${origin.host}${opts.path}?${query}`;
}

/** The signature of one chunk of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body, chained from `previous`. */
export async function chunkSignature(seed: NonNullable<Caller['seed']>, previous: string, chunkSha256: string): Promise<string> {
  const longDate = seed.date
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
  const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', longDate, seed.scope, previous, EMPTY_SHA256, chunkSha256].join('\n');
  return seed.signer.sign(toSign, { signingDate: seed.date, signingRegion: seed.scope.split('/')[1] });
}

/** The signature of the trailing headers of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER body. */
export async function trailerSignature(seed: NonNullable<Caller['seed']>, previous: string, trailer: string): Promise<string> {
  const longDate = seed.date
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
  const toSign = ['AWS4-HMAC-SHA256-TRAILER', longDate, seed.scope, previous, createHash('sha256').update(trailer).digest('hex')].join('\n');
  return seed.signer.sign(toSign, { signingDate: seed.date, signingRegion: seed.scope.split('/')[1] });
}
