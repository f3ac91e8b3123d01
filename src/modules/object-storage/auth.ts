// Which signature a data-plane request carries: an Authorization header or a presigned URL
// (SigV4's `X-Amz-*` parameters).
import type { AppContext } from '../../shared/context.js';
import { accessDenied, invalidArgument } from './s3-errors.js';
import { header, type Caller, type SignedRequest } from './signing.js';
import * as v4 from './sigv4.js';

/**
 * Verifies the request's signature and answers the caller, or throws the S3 error a client
 * expects (403 AccessDenied / InvalidAccessKeyId / SignatureDoesNotMatch / RequestTimeTooSkewed).
 * Requests with no signature are anonymous: AccessDenied.
 */
export async function verify(app: AppContext, req: SignedRequest): Promise<Caller> {
  const auth = header(req.headers, 'authorization') || undefined;
  if (auth !== undefined) {
    if (auth.startsWith('AWS ')) throw invalidArgument('Signature Version 2 is not supported; use AWS Signature Version 4.');
    return v4.verifyHeader(app, req, auth);
  }
  if (req.query['X-Amz-Algorithm'] !== undefined) return v4.verifyPresigned(app, req);
  throw accessDenied("Anonymous requests are not allowed: sign the request with the bucket's access key (AWS Signature Version 4).");
}
