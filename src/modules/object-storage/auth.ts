// Which signature a data-plane request carries: an Authorization header (SigV4 or SigV2) or a
// presigned URL (SigV4's `X-Amz-*` or SigV2's `AWSAccessKeyId`/`Signature`/`Expires` parameters).
import type { AppContext } from '../../shared/context.js';
import { accessDenied, invalidArgument } from './s3-errors.js';
import { header, type Caller, type SignedRequest } from './signing.js';
import * as v2 from './sigv2.js';
import * as v4 from './sigv4.js';

/**
 * Verifies the request's signature and answers the caller, or throws the S3 error a client
 * expects (403 AccessDenied / InvalidAccessKeyId / SignatureDoesNotMatch / RequestTimeTooSkewed).
 * Requests with no signature are anonymous: AccessDenied.
 */
export async function verify(app: AppContext, req: SignedRequest): Promise<Caller> {
  const auth = header(req.headers, 'authorization') || undefined;
  const v4Query = req.query['X-Amz-Algorithm'] !== undefined;
  const v2Query = req.query.AWSAccessKeyId !== undefined || req.query.Signature !== undefined;
  // As S3 does: with two, which one authorizes the request would be ambiguous.
  if (Number(auth !== undefined) + Number(v4Query) + Number(v2Query) > 1)
    throw invalidArgument(
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
    );
  if (auth !== undefined) return /^AWS\s/.test(auth) ? v2.verifyHeader(app, req, auth) : v4.verifyHeader(app, req, auth);
  if (v4Query) return v4.verifyPresigned(app, req);
  if (v2Query) return v2.verifyPresigned(app, req);
  throw accessDenied("Anonymous requests are not allowed: sign the request with the bucket's access key (AWS Signature Version 4 or 2).");
}
