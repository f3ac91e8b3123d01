// AWS Signature Version 4 for the S3 data plane: the Authorization header and presigned-URL
// forms. The expected signature is computed with @smithy/signature-v4 over exactly the headers the
// client signed, and compared in constant time. The bucket's access keys are looked up here.
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as HashNode from '@smithy/hash-node';
import type * as Signing from '@smithy/signature-v4';
import { lazy } from '../../shared/lazy.js';
import type { AppContext } from '../../shared/context.js';
import { accessDenied, invalidArgument, invalidRequest, S3Error } from './s3-errors.js';
import { runtime } from './runtime.js';

const ALGORITHM = 'AWS4-HMAC-SHA256';
const MAX_SKEW_MS = 15 * 60_000;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const hashNode = lazy<typeof HashNode>('@smithy/hash-node');
const signing = lazy<typeof Signing>('@smithy/signature-v4');

/** What the data plane needs of an incoming request. */
export interface SignedRequest {
  method: string;
  /** The path exactly as sent (still percent-encoded), without the query string. */
  rawPath: string;
  /** Decoded query parameters. */
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[] | undefined>;
}

/** The verified caller: which key, of which bucket, and what the chunk signatures chain from. */
export interface Caller {
  accessKey: string;
  bucketId: string;
  /** Header form only: the request's own signature (the seed of streaming chunk signatures). */
  seed: { signature: string; signer: Signing.SignatureV4; date: Date; scope: string } | null;
  /** The declared payload hash (header form) or UNSIGNED-PAYLOAD (presigned). */
  payloadHash: string;
}

const header = (h: SignedRequest['headers'], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
};

const equal = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** `20240101T000000Z` -> Date, or null. */
function parseAmzDate(s: string | undefined): Date | null {
  const m = s && /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return Number.isNaN(d.getTime()) ? null : d;
}

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

/** The key's bucket and secret, if the key exists and has not expired. */
async function lookupKey(app: AppContext, accessKey: string): Promise<{ bucketId: string; secret: string }> {
  const row = await app.database.db
    .selectFrom('object_storage_keys')
    .select(['bucket_id', 'secret_enc', 'expires_at'])
    .where('access_key', '=', accessKey)
    .executeTakeFirst();
  if (!row || (row.expires_at !== null && Date.parse(row.expires_at) <= runtime(app).now()))
    throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  return { bucketId: row.bucket_id, secret: app.secrets.decrypt(row.secret_enc) };
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

const mismatch = () =>
  new S3Error(
    403,
    'SignatureDoesNotMatch',
    'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
  );

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

/**
 * Verifies the request's signature (header or presigned form) and answers the caller, or throws
 * the S3 error a client expects (403 AccessDenied / InvalidAccessKeyId / SignatureDoesNotMatch /
 * RequestTimeTooSkewed). Requests with neither form are anonymous: AccessDenied.
 */
export async function verify(app: AppContext, req: SignedRequest): Promise<Caller> {
  const auth = header(req.headers, 'authorization');
  if (auth) return verifyHeader(app, req, auth);
  if (req.query['X-Amz-Algorithm'] !== undefined) return verifyPresigned(app, req);
  throw accessDenied("Anonymous requests are not allowed: sign the request with the bucket's access key (AWS Signature Version 4).");
}

async function verifyHeader(app: AppContext, req: SignedRequest, auth: string): Promise<Caller> {
  const m = /^AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})\s*$/.exec(auth.trim());
  if (!m) {
    if (auth.startsWith('AWS ')) throw invalidArgument('Signature Version 2 is not supported; use AWS Signature Version 4.');
    throw new S3Error(
      400,
      'AuthorizationHeaderMalformed',
      'The authorization header is malformed; expected AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...',
    );
  }
  const cred = parseCredential(m[1]);
  const date = parseAmzDate(header(req.headers, 'x-amz-date'));
  if (!date) throw accessDenied('AWS authentication requires a valid x-amz-date header.');
  if (Math.abs(Date.now() - date.getTime()) > MAX_SKEW_MS)
    throw new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
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

async function verifyPresigned(app: AppContext, req: SignedRequest): Promise<Caller> {
  const q = (k: string) => {
    const v = req.query[k];
    return Array.isArray(v) ? v[0] : v;
  };
  if (q('X-Amz-Algorithm') !== ALGORITHM) throw invalidArgument(`X-Amz-Algorithm must be ${ALGORITHM}.`);
  const cred = parseCredential(q('X-Amz-Credential'));
  const date = parseAmzDate(q('X-Amz-Date'));
  const expires = Number(q('X-Amz-Expires'));
  const given = q('X-Amz-Signature') ?? '';
  const names = q('X-Amz-SignedHeaders') ?? '';
  if (!date || !Number.isInteger(expires) || expires < 1 || expires > MAX_PRESIGN_SECONDS || !/^[0-9a-f]{64}$/.test(given))
    throw accessDenied('The presigned URL is malformed (X-Amz-Date, X-Amz-Expires of 1 to 604800 seconds, and X-Amz-Signature are required).');
  if (Date.now() > date.getTime() + expires * 1000) throw accessDenied('Request has expired');
  if (date.getTime() > Date.now() + MAX_SKEW_MS) throw accessDenied('Request is not valid yet');
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
