// Presigned S3 URLs (AWS Signature V4, query form) for a bucket's objects, signed in the browser:
// the v3 contract has no operation that presigns, and the data plane accepts SigV4 presigned URLs.
// The API returns a bucket's secret key only when the bucket is created or its keys are rotated,
// so the dashboard keeps it from those answers (or as the user pastes it) in the tab's
// sessionStorage, like the API key, under its access key: a rotation leaves the old one unused.
// The URL is on the dashboard's own origin (path-style `/s3/<bucket>/<key>`), so the page's
// connect-src 'self' covers it and the signed Host is the one the browser sends. Needs WebCrypto
// (a secure context: HTTPS or localhost).

export interface BucketKeys {
  bucket: string;
  accessKey: string;
  secretKey: string;
}

const secretKey = (accessKey: string) => `slipway.bucketSecret.${accessKey}`;

/** Keeps a bucket's secret key for this tab (from a create or rotate answer, or pasted). */
export function rememberSecret(accessKey: string | null | undefined, secret: string | null | undefined) {
  if (accessKey && secret) sessionStorage.setItem(secretKey(accessKey), secret);
}

/** The secret key of `accessKey` if this tab has it. */
export const knownSecret = (accessKey: string | null | undefined) => (accessKey ? sessionStorage.getItem(secretKey(accessKey)) : null);

const REGION = 'us-east-1';
const enc = new TextEncoder();

/** RFC 3986 encoding as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
const escape = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const hex = (b: ArrayBuffer) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');

async function hmac(key: ArrayBuffer | Uint8Array, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey('raw', key as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return crypto.subtle.sign('HMAC', k, enc.encode(data));
}

/** The path of an object on this origin: every key segment encoded, its slashes kept. */
export const objectPath = (bucket: string, key: string) => `/s3/${escape(bucket)}/${key.split('/').map(escape).join('/')}`;

/**
 * A URL that lets `method` on `key` for `seconds` without further credentials; `query` adds
 * signed parameters such as `response-content-disposition`.
 */
export async function presign(keys: BucketKeys, method: 'GET' | 'PUT', key: string, seconds = 600, query: Record<string, string> = {}): Promise<string> {
  const now = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = now.slice(0, 8);
  const scope = `${day}/${REGION}/s3/aws4_request`;
  const params: Record<string, string> = {
    ...query,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${keys.accessKey}/${scope}`,
    'X-Amz-Date': now,
    'X-Amz-Expires': String(seconds),
    'X-Amz-SignedHeaders': 'host',
  };
  const qs = Object.keys(params)
    .sort()
    .map((k) => `${escape(k)}=${escape(params[k]!)}`)
    .join('&');
  const path = objectPath(keys.bucket, key);
  const canonical = [method, path, qs, `host:${location.host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const digest = hex(await crypto.subtle.digest('SHA-256', enc.encode(canonical)));
  const toSign = ['AWS4-HMAC-SHA256', now, scope, digest].join('\n');
  let k = await hmac(enc.encode(`AWS4${keys.secretKey}`), day);
  for (const part of [REGION, 's3', 'aws4_request']) k = await hmac(k, part);
  const signature = hex(await hmac(k, toSign));
  return `${location.origin}${path}?${qs}&X-Amz-Signature=${signature}`;
}

/** PUTs `file` to a presigned URL, reporting the bytes sent so far (fetch cannot report upload progress). */
export function upload(url: string, file: File, onProgress: (sent: number, total: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    if (file.type) xhr.setRequestHeader('content-type', file.type);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else {
        const code = /<Code>([^<]+)<\/Code>/.exec(xhr.responseText)?.[1];
        const message = /<Message>([^<]+)<\/Message>/.exec(xhr.responseText)?.[1];
        reject(new Error(`Upload of ${file.name} failed (${xhr.status}${code ? ` ${code}` : ''})${message ? `: ${message}` : ''}`));
      }
    };
    xhr.onerror = () => reject(new Error(`Upload of ${file.name} failed: network error`));
    xhr.send(file);
  });
}
