// The presign operation (x-decided): a URL on the S3 data plane that allows one request on one
// object for a while, signed with SigV4 by the bucket's newest current key, so that a client of
// the v3 API (the dashboard) moves object bytes without ever holding the bucket's secret.
import { grantsAllow, missingPermissionMessage } from '../../shared/auth/rbac.js';
import type { CallContext } from '../../shared/context.js';
import { badRequest, conflict, forbidden, notFound } from '../../shared/errors.js';
import { MAX_OBJECT_KEY_BYTES, type PRESIGN_METHODS } from './schemas.js';
import { PATH_PREFIX } from './settings.js';
import { escape, presignUrl } from './sigv4.js';
import { findCompanyBucket, findCurrentKeyPair } from './storage.js';

type PresignMethod = (typeof PRESIGN_METHODS)[number];

export interface PresignInput {
  method: PresignMethod;
  key: string;
  expires_in?: number;
  content_type?: string;
}

/**
 * Where the URL points: the host the API request came in at, with the public URL's scheme. The
 * data plane checks a signature against the Host it receives, so a URL signed for the host the
 * caller reached the API at is reachable the same way (the dashboard's own origin); the API and
 * the data plane share that host (`/s3/...`).
 */
function originFor(ctx: CallContext, host: string | undefined): URL {
  const base = new URL(ctx.app.baseUrl);
  if (!host) return base;
  try {
    const u = new URL(`${base.protocol}//${host}`);
    return u.host === host.toLowerCase() ? u : base;
  } catch {
    return base;
  }
}

export async function presignObject(ctx: CallContext, id: string, input: PresignInput, host: string | undefined) {
  const { tx, companyId, grants } = ctx;
  const b = await findCompanyBucket(tx, companyId, id);
  if (!b) throw notFound('Object storage');
  // Reading needs OBJECT_STORAGE:READ (the route's permission); writing and deleting objects need
  // OBJECT_STORAGE:UPDATE, as the API's own object delete does.
  if ((input.method === 'PUT' || input.method === 'DELETE') && !grantsAllow(grants, 'OBJECT_STORAGE:UPDATE', id))
    throw forbidden(missingPermissionMessage('OBJECT_STORAGE:UPDATE'));
  if (Buffer.byteLength(input.key) > MAX_OBJECT_KEY_BYTES) throw badRequest(`key is longer than ${MAX_OBJECT_KEY_BYTES} bytes of UTF-8`);
  if (input.content_type !== undefined && input.method !== 'PUT') throw badRequest('content_type applies to PUT only');
  if (input.content_type !== undefined && !/^[\x20-\x7e]+$/.test(input.content_type)) throw badRequest('content_type must be printable ASCII');
  const pair = await findCurrentKeyPair(tx, id);
  if (!pair) throw conflict('The bucket has no current key to sign with: rotate its keys first');
  const expiresIn = input.expires_in ?? 900;
  // SigV4 dates have whole seconds: the URL expires `expiresIn` seconds after that instant.
  const signingDate = new Date(Math.floor(Date.now() / 1000) * 1000);
  const headers: Record<string, string> = input.content_type ? { 'content-type': input.content_type } : {};
  const url = await presignUrl({
    origin: originFor(ctx, host),
    method: input.method,
    path: `${PATH_PREFIX}/${escape(b.bucket_name)}/${input.key.split('/').map(escape).join('/')}`,
    headers,
    accessKey: pair.access_key,
    secret: ctx.app.secrets.decrypt(pair.secret_enc),
    expiresIn,
    signingDate,
  });
  return {
    url,
    method: input.method,
    headers,
    access_key: pair.access_key,
    expires_at: new Date(signingDate.getTime() + expiresIn * 1000).toISOString(),
  };
}
