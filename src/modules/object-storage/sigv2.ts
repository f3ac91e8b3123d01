// AWS Signature Version 2 (HMAC-SHA1), what AWS CLI v1's `aws s3 presign` and older SDKs sign
// with: the `Authorization: AWS <access key>:<signature>` header and presigned URLs
// (`AWSAccessKeyId`, `Signature`, `Expires`). The string to sign is S3's ("Signing and
// authenticating REST requests (AWS signature version 2)"); the key, clock and expiry rules are
// signing.ts's, the same as SigV4's.
import { createHmac } from 'node:crypto';
import type { AppContext } from '../../shared/context.js';
import { accessDenied, invalidArgument } from './s3-errors.js';
import {
  checkPresignedWindow,
  checkRequestTime,
  equal,
  header,
  lookupKey,
  mismatch,
  parseAmzDate,
  queryValue,
  UNSIGNED_PAYLOAD,
  type Caller,
  type SignedRequest,
} from './signing.js';

/**
 * The query parameters that belong to the signed resource: S3's sub-resources and response header
 * overrides, as botocore (AWS CLI v1) signs them (the S3 documentation's list and those added since).
 * Every other parameter is left out.
 */
const SIGNED_PARAMETERS = new Set([
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'defaultObjectAcl',
  'delete',
  'inventory',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'partNumber',
  'policy',
  'replication',
  'requestPayment',
  'restore',
  'select',
  'select-type',
  'storageClass',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
  'response-content-language',
  'response-content-type',
  'response-expires',
]);

/** `?name[=value]&...` of the signed parameters, sorted by name, values decoded; '' when there are none. */
function subresources(rawQuery: string): string {
  const kept: [name: string, text: string][] = [];
  for (const pair of rawQuery.split('&')) {
    const i = pair.indexOf('=');
    const name = i < 0 ? pair : pair.slice(0, i);
    if (SIGNED_PARAMETERS.has(name)) kept.push([name, i < 0 ? name : `${name}=${decodeURIComponent(pair.slice(i + 1))}`]);
  }
  if (!kept.length) return '';
  kept.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `?${kept.map((k) => k[1]).join('&')}`;
}

/**
 * The canonicalized resources the client may have signed. S3's is `/<bucket>/<key>` as sent (the
 * bucket taken from the Host for virtual-hosted requests), which botocore signs whatever the
 * endpoint's path; clients that sign their URL's own path include the `/s3` prefix of a
 * path-style request.
 */
function resources(req: SignedRequest): string[] {
  const sub = subresources(req.rawQuery);
  const paths = req.virtualHosted || req.rawPath === req.resource ? [req.resource] : [req.resource, req.rawPath];
  return paths.map((p) => p + sub);
}

/**
 * `name:value\n` for every x-amz-* header: names lowercased and sorted, a repeated header's values
 * joined by commas, folded lines unfolded. A presigned URL may carry them as query parameters
 * (botocore moves them there); a header sent with the request takes precedence.
 */
function amzHeaders(req: SignedRequest, presigned: boolean): string {
  const values = new Map<string, string[]>();
  for (const [name, vs] of Object.entries(req.headersDistinct)) if (name.startsWith('x-amz-') && vs) values.set(name, vs);
  if (presigned)
    for (const [name, v] of Object.entries(req.query)) {
      const n = name.toLowerCase();
      if (n.startsWith('x-amz-') && !values.has(n)) values.set(n, Array.isArray(v) ? v : [v]);
    }
  const unfold = (v: string) => v.replace(/\s*\r?\n\s*/g, ' ').trim();
  return [...values.keys()]
    .sort()
    .map((n) => `${n}:${values.get(n)!.map(unfold).join(',')}\n`)
    .join('');
}

/** Checks `given` against the signature of every resource the client may have signed. */
function check(secret: string, req: SignedRequest, dateLine: string, presigned: boolean, given: string): void {
  // Content-MD5 and Content-Type, like x-amz-* headers, may travel in a presigned URL's query.
  const standard = (name: string) => header(req.headers, name) ?? (presigned ? queryValue(req.query, name) : undefined) ?? '';
  const head = `${req.method}\n${standard('content-md5')}\n${standard('content-type')}\n${dateLine}\n${amzHeaders(req, presigned)}`;
  let matched = false;
  // Every candidate is compared, so the time taken does not tell which one matched.
  for (const resource of resources(req)) {
    const expected = createHmac('sha1', secret)
      .update(head + resource)
      .digest('base64');
    matched = equal(expected, given) || matched;
  }
  if (!matched) throw mismatch();
}

/** An HTTP date (`Tue, 27 Mar 2007 19:36:42 +0000`) or `20070327T193642Z` -> Date, or null. */
function parseDate(s: string | undefined): Date | null {
  if (!s) return null;
  const basic = parseAmzDate(s);
  if (basic) return basic;
  const ms = Date.parse(s);
  return Number.isNaN(ms) ? null : new Date(ms);
}

const callerOf = (req: SignedRequest, accessKey: string, bucketId: string): Caller => ({
  accessKey,
  bucketId,
  seed: null,
  // A declared payload hash is an x-amz-* header, so it was signed; the body is checked against it.
  payloadHash: header(req.headers, 'x-amz-content-sha256') ?? UNSIGNED_PAYLOAD,
});

/** `Authorization: AWS <access key>:<signature>` */
export async function verifyHeader(app: AppContext, req: SignedRequest, auth: string): Promise<Caller> {
  const m = /^AWS\s+([^:\s]+):(\S+)$/.exec(auth.trim());
  if (!m) throw invalidArgument('AWS authorization header is invalid. Expected AwsAccessKeyId:signature');
  const amzDate = header(req.headers, 'x-amz-date');
  const stated = amzDate ?? header(req.headers, 'date');
  const date = parseDate(stated);
  if (!date) throw accessDenied('AWS authentication requires a valid Date or x-amz-date header');
  checkRequestTime(date);
  const { bucketId, secret } = await lookupKey(app, m[1]!);
  // With x-amz-date the Date line is empty: the time is signed among the x-amz-* headers.
  check(secret, req, amzDate !== undefined ? '' : stated!, false, m[2]!);
  return callerOf(req, m[1]!, bucketId);
}

/** A presigned URL: `AWSAccessKeyId`, `Expires` (Unix seconds, signed in place of the date) and `Signature`. */
export async function verifyPresigned(app: AppContext, req: SignedRequest): Promise<Caller> {
  const accessKey = queryValue(req.query, 'AWSAccessKeyId');
  const given = queryValue(req.query, 'Signature');
  const expires = queryValue(req.query, 'Expires');
  if (!accessKey || !given || expires === undefined)
    throw accessDenied('Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters');
  if (!/^\d{1,12}$/.test(expires)) throw accessDenied(`Invalid date (should be seconds since epoch): ${expires}`);
  checkPresignedWindow(null, Number(expires) * 1000);
  const { bucketId, secret } = await lookupKey(app, accessKey);
  check(secret, req, expires, true, given);
  return callerOf(req, accessKey, bucketId);
}
