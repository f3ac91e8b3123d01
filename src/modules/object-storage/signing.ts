// What every signature version of the S3 data plane checks the same way: the access key (it exists
// and is current or within its rotation grace period), a header-signed request's clock, a
// presigned URL's validity window, constant-time comparison and the errors clients expect.
// sigv2.ts and sigv4.ts compute the signatures; auth.ts picks the one a request uses. Which bucket
// a key opens is decided once the caller is known (s3.ts).
import { timingSafeEqual } from 'node:crypto';
import type * as Signing from '@smithy/signature-v4';
import type { AppContext } from '../../shared/context.js';
import { accessDenied, S3Error } from './s3-errors.js';
import { runtime } from './runtime.js';
import { findKey } from './storage.js';

/** How far a signed request's time may be from ours (S3's limit). */
export const MAX_SKEW_MS = 15 * 60_000;
/** The longest a presigned URL may be valid (S3's limit for SigV4, applied to every version). */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/** What the data plane needs of an incoming request. */
export interface SignedRequest {
  method: string;
  /** The path exactly as sent (still percent-encoded), without the query string. */
  rawPath: string;
  /** Decoded query parameters. */
  query: Record<string, string | string[]>;
  /** The query string as sent. */
  rawQuery: string;
  /**
   * The path as `/<bucket>/<key>` (still percent-encoded) whatever the addressing: `/<bucket>/`
   * for the bucket itself, `/` for the service.
   */
  resource: string;
  /** The Host named the bucket (virtual-hosted style), not the path. */
  virtualHosted: boolean;
  headers: Record<string, string | string[] | undefined>;
  /** Every header's values apart, as repeated in the request. */
  headersDistinct: Record<string, string[] | undefined>;
}

/** The verified caller: which key, of which bucket, and what the chunk signatures chain from. */
export interface Caller {
  accessKey: string;
  bucketId: string;
  /** SigV4 header form only: the request's own signature (the seed of streaming chunk signatures). */
  seed: { signature: string; signer: Signing.SignatureV4; date: Date; scope: string } | null;
  /** The declared payload hash, or UNSIGNED-PAYLOAD. */
  payloadHash: string;
}

export const header = (h: SignedRequest['headers'], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
};

export const queryValue = (q: SignedRequest['query'], k: string): string | undefined => {
  const v = q[k];
  return Array.isArray(v) ? v[0] : v;
};

export const equal = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export const mismatch = () =>
  new S3Error(
    403,
    'SignatureDoesNotMatch',
    'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
  );

/** The key's bucket and secret, if the key exists and has not expired (a rotated key lives out its grace period). */
export async function lookupKey(app: AppContext, accessKey: string): Promise<{ bucketId: string; secret: string }> {
  const row = await findKey(app.database.db, accessKey);
  if (!row || (row.expires_at !== null && Date.parse(row.expires_at) <= runtime(app).now()))
    throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  return { bucketId: row.bucket_id, secret: app.secrets.decrypt(row.secret_enc) };
}

/** `20240101T000000Z` -> Date, or null. */
export function parseAmzDate(s: string | undefined): Date | null {
  const m = s && /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** A header-signed request carries its signing time, which must be close to ours (a captured request is not replayable later). */
export function checkRequestTime(date: Date): void {
  if (Math.abs(Date.now() - date.getTime()) > MAX_SKEW_MS)
    throw new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
}

/**
 * A presigned URL works from its signing time (SigV4 states one; allowing for skew) until it
 * expires, and never longer than MAX_PRESIGN_SECONDS from now.
 */
export function checkPresignedWindow(signedAtMs: number | null, expiresAtMs: number): void {
  const now = Date.now();
  if (now > expiresAtMs) throw accessDenied('Request has expired');
  if (signedAtMs !== null && signedAtMs > now + MAX_SKEW_MS) throw accessDenied('Request is not valid yet');
  if (expiresAtMs > now + MAX_PRESIGN_SECONDS * 1000 + MAX_SKEW_MS)
    throw accessDenied(`A presigned URL may be valid for at most ${MAX_PRESIGN_SECONDS} seconds (7 days).`);
}
