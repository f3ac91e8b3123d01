// AWS Signature Version 2 on the S3 data plane, what AWS CLI v1's `aws s3 presign` produces:
// presigned URLs (AWSAccessKeyId, Signature, Expires) and `Authorization: AWS key:signature`
// requests, signed here by a small signer written from the S3 documentation (no AWS SDK signs
// V2 any more), and the rules V2 shares with V4: expiry, clock skew, keys of other buckets,
// rotated-out keys. Path-style and virtual-hosted addressing; with AWS CLI v1 installed, its own
// presigned URLs too.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { client, createBucket, expectStatus, type Bucket } from './support.js';

interface Keys {
  access_key: string;
  secret_key: string;
}

/**
 * The V2 signature as the S3 documentation defines it: HMAC-SHA1 over
 * `VERB\nContent-MD5\nContent-Type\nDate-or-Expires\n` + the x-amz-* headers (lowercased, sorted,
 * `name:value\n`) + the canonicalized resource, base64.
 */
function sign(
  secret: string,
  s: { method: string; contentMd5?: string; contentType?: string; date: string; amz?: Record<string, string>; resource: string },
): string {
  const amz = Object.entries(s.amz ?? {})
    .map(([k, v]) => [k.toLowerCase(), v.trim()] as const)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}:${v}\n`)
    .join('');
  const toSign = `${s.method}\n${s.contentMd5 ?? ''}\n${s.contentType ?? ''}\n${s.date}\n${amz}${s.resource}`;
  return createHmac('sha1', secret).update(toSign, 'utf8').digest('base64');
}

/** A key's path segments percent-encoded, its slashes kept (as clients send them). */
const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/');
const md5 = (b: string) => createHash('md5').update(b).digest('base64');
const unix = (offsetSeconds: number) => String(Math.floor(Date.now() / 1000) + offsetSeconds);

/** A path-style presigned URL; `resource` is what was signed (by default `/<bucket>/<key>`, as botocore signs). */
function presign(
  b: Bucket,
  keys: Keys,
  o: { method?: string; key: string; expires?: string; resource?: string; query?: Record<string, string>; contentType?: string },
): string {
  const path = `/${b.bucket_name}/${encodeKey(o.key)}`;
  const expires = o.expires ?? unix(300);
  const sub = Object.entries(o.query ?? {})
    .sort(([a], [c]) => (a < c ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const signature = sign(keys.secret_key, {
    method: o.method ?? 'GET',
    contentType: o.contentType,
    date: expires,
    resource: (o.resource ?? path) + (sub ? `?${sub}` : ''),
  });
  const q = new URLSearchParams({ ...(o.query ?? {}), AWSAccessKeyId: keys.access_key, Signature: signature, Expires: expires });
  return `${b.endpoint}${path}?${q.toString().replace(/\+/g, '%20')}`;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request: any header (Date, Host) exactly as given. */
function send(url: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: o.method ?? 'GET', headers: o.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A header-signed path-style request; `resource` defaults to `/<bucket>/<key>` plus the signed `sub`-resources. */
function signedRequest(
  b: Bucket,
  keys: Keys,
  o: {
    method: string;
    key?: string;
    query?: string;
    sub?: string;
    headers?: Record<string, string>;
    body?: string;
    amzDate?: boolean;
    date?: Date;
    resource?: string;
    host?: string;
  },
): Promise<Answer> {
  const path = o.key === undefined ? `/${b.bucket_name}` : `/${b.bucket_name}/${encodeKey(o.key)}`;
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  const date = (o.date ?? new Date()).toUTCString();
  if (o.amzDate) headers['x-amz-date'] = date;
  else headers.date = date;
  const amz = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase().startsWith('x-amz-')));
  const signature = sign(keys.secret_key, {
    method: o.method,
    contentMd5: headers['content-md5'],
    contentType: headers['content-type'],
    // With x-amz-date the Date line is empty (S3's rule).
    date: o.amzDate ? '' : date,
    amz,
    resource: (o.resource ?? (o.key === undefined ? `${path}/` : path)) + (o.sub ? `?${o.sub}` : ''),
  });
  headers.authorization = `AWS ${keys.access_key}:${signature}`;
  const query = o.query ?? o.sub;
  return send(`${b.endpoint}${path}${query ? `?${query}` : ''}`, { method: o.method, headers, body: o.body });
}

function assertS3Error(r: Answer, status: number, code: string, message?: RegExp) {
  assert.equal(r.status, status, r.body);
  assert.match(String(r.headers['content-type']), /application\/xml/);
  assert.match(r.body, new RegExp(`<Error><Code>${code}</Code>`));
  if (message) assert.match(r.body, message);
}

describe('the test signer', () => {
  it("reproduces the S3 documentation's Signature Version 2 examples", () => {
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const resource = '/johnsmith/photos/puppy.jpg';
    assert.equal(sign(secret, { method: 'GET', date: 'Tue, 27 Mar 2007 19:36:42 +0000', resource }), 'bWq2s1WEIj+Ydj0vQ697zp+IXMU=');
    assert.equal(sign(secret, { method: 'PUT', contentType: 'image/jpeg', date: 'Tue, 27 Mar 2007 21:15:45 +0000', resource }), 'MyyxeRY7whkBe+bq8fHCL/2kKUg=');
    assert.equal(sign(secret, { method: 'GET', date: '1175139620', resource }), 'NpgCjnDzrM+WFzoENXmpNDUsSn8=');
  });
});

for (const kind of DB_KINDS) {
  describe(`object storage: AWS Signature Version 2 [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });
    let b: Bucket;
    before(async () => {
      b = await createBucket(s);
      await client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'docs/report 1 é.txt', Body: 'report body', ContentType: 'text/plain' }));
    });

    it('a presigned GET reads the object; signed response overrides apply; the path as sent may be signed too', async () => {
      const r = await send(presign(b, b, { key: 'docs/report 1 é.txt' }));
      assert.equal(r.status, 200, r.body);
      assert.equal(r.body, 'report body');
      assert.equal(r.headers['content-type'], 'text/plain');
      const disposition = 'attachment; filename="r 1.txt"';
      const overridden = await send(presign(b, b, { key: 'docs/report 1 é.txt', query: { 'response-content-disposition': disposition } }));
      assert.equal(overridden.status, 200, overridden.body);
      assert.equal(overridden.headers['content-disposition'], disposition);
      // Clients that sign their URL's own path include the endpoint's /s3 prefix.
      const asSent = `${new URL(b.endpoint).pathname}/${b.bucket_name}/${encodeKey('docs/report 1 é.txt')}`;
      assert.equal((await send(presign(b, b, { key: 'docs/report 1 é.txt', resource: asSent }))).body, 'report body');
    });

    it('a presigned PUT stores the body under the signed content type', async () => {
      const url = presign(b, b, { method: 'PUT', key: 'up/presigned.txt', contentType: 'text/markdown' });
      const put = await send(url, { method: 'PUT', headers: { 'content-type': 'text/markdown' }, body: '# up' });
      assert.equal(put.status, 200, put.body);
      const got = await send(presign(b, b, { key: 'up/presigned.txt' }));
      assert.deepEqual([got.status, got.body, got.headers['content-type']], [200, '# up', 'text/markdown']);
      // Another content type than the one signed is refused.
      assertS3Error(await send(url, { method: 'PUT', headers: { 'content-type': 'text/html' }, body: '<p>' }), 403, 'SignatureDoesNotMatch');
    });

    it('header-signed PUT, GET, HEAD, list and DELETE (Authorization: AWS key:signature)', async () => {
      const body = 'signed with version 2';
      const headers = { 'content-type': 'text/plain', 'content-md5': md5(body), 'x-amz-meta-owner': 'ann' };
      const put = await signedRequest(b, b, { method: 'PUT', key: 'v2/hello.txt', headers, body });
      assert.equal(put.status, 200, put.body);
      assert.equal(put.headers.etag, `"${createHash('md5').update(body).digest('hex')}"`);
      // Dated by x-amz-date: the Date line is empty and the time is signed among the x-amz-* headers.
      const got = await signedRequest(b, b, { method: 'GET', key: 'v2/hello.txt', amzDate: true });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual([got.body, got.headers['content-type'], got.headers['x-amz-meta-owner']], [body, 'text/plain', 'ann']);
      assert.equal((await signedRequest(b, b, { method: 'HEAD', key: 'v2/hello.txt' })).headers['content-length'], String(body.length));
      // The bucket's own resource is `/<bucket>/`; list parameters are not signed.
      const list = await signedRequest(b, b, { method: 'GET', query: 'list-type=2&prefix=v2%2F' });
      assert.equal(list.status, 200, list.body);
      assert.match(list.body, /<Key>v2\/hello.txt<\/Key>/);
      assert.equal((await signedRequest(b, b, { method: 'DELETE', key: 'v2/hello.txt' })).status, 204);
      assert.equal((await signedRequest(b, b, { method: 'GET', key: 'v2/hello.txt' })).status, 404);
    });

    it('a multipart upload signs its sub-resources (uploads, partNumber, uploadId)', async () => {
      const init = await signedRequest(b, b, { method: 'POST', key: 'mp/file.bin', sub: 'uploads' });
      assert.equal(init.status, 200, init.body);
      const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(init.body)![1]!;
      const part = await signedRequest(b, b, { method: 'PUT', key: 'mp/file.bin', sub: `partNumber=1&uploadId=${uploadId}`, body: 'one part' });
      assert.equal(part.status, 200, part.body);
      const xml = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers.etag}</ETag></Part></CompleteMultipartUpload>`;
      const done = await signedRequest(b, b, { method: 'POST', key: 'mp/file.bin', sub: `uploadId=${uploadId}`, body: xml });
      assert.equal(done.status, 200, done.body);
      assert.equal((await signedRequest(b, b, { method: 'GET', key: 'mp/file.bin' })).body, 'one part');
      // A sub-resource left out of the signature does not match.
      const unsigned = await signedRequest(b, b, { method: 'POST', key: 'mp/other.bin', query: 'uploads' });
      assertS3Error(unsigned, 403, 'SignatureDoesNotMatch');
    });

    it('an expired URL is 403 AccessDenied "Request has expired"; one valid for more than 7 days is refused', async () => {
      assertS3Error(await send(presign(b, b, { key: 'docs/report 1 é.txt', expires: unix(-5) })), 403, 'AccessDenied', /Request has expired/);
      assertS3Error(await send(presign(b, b, { key: 'docs/report 1 é.txt', expires: unix(8 * 24 * 3600) })), 403, 'AccessDenied');
      assertS3Error(await send(presign(b, b, { key: 'docs/report 1 é.txt', expires: 'tomorrow' })), 403, 'AccessDenied');
    });

    it('a wrong signature is 403 SignatureDoesNotMatch', async () => {
      const wrong = { access_key: b.access_key, secret_key: 'not-the-secret' };
      assertS3Error(await send(presign(b, wrong, { key: 'docs/report 1 é.txt' })), 403, 'SignatureDoesNotMatch');
      assertS3Error(await signedRequest(b, wrong, { method: 'GET', key: 'docs/report 1 é.txt' }), 403, 'SignatureDoesNotMatch');
      // The URL of one object does not open another.
      const url = presign(b, b, { key: 'docs/report 1 é.txt' });
      assertS3Error(await send(url.replace('report%201', 'report%202')), 403, 'SignatureDoesNotMatch');
      // Every x-amz-* header is signed: one added to a presigned URL's request does not match.
      assertS3Error(await send(url, { headers: { 'x-amz-meta-extra': '1' } }), 403, 'SignatureDoesNotMatch');
      // Nor does a later expiry than the one signed.
      const expires = /Expires=(\d+)/.exec(url)![1]!;
      assertS3Error(await send(url.replace(`Expires=${expires}`, `Expires=${Number(expires) + 60}`)), 403, 'SignatureDoesNotMatch');
    });

    it('a header-signed request must be dated within the allowed clock skew', async () => {
      const late = new Date(Date.now() - 16 * 60_000);
      assertS3Error(await signedRequest(b, b, { method: 'GET', key: 'docs/report 1 é.txt', date: late }), 403, 'RequestTimeTooSkewed');
      assertS3Error(await signedRequest(b, b, { method: 'GET', key: 'docs/report 1 é.txt', date: late, amzDate: true }), 403, 'RequestTimeTooSkewed');
      const undated = await send(`${b.endpoint}/${b.bucket_name}/x`, { headers: { authorization: `AWS ${b.access_key}:${'A'.repeat(27)}=` } });
      assertS3Error(undated, 403, 'AccessDenied', /Date or x-amz-date/);
      assertS3Error(await send(`${b.endpoint}/${b.bucket_name}/x`, { headers: { authorization: 'AWS no-colon' } }), 400, 'InvalidArgument');
    });

    it('a key opens only its own bucket; unknown and rotated-out keys are refused', async () => {
      const other = await createBucket(s);
      await client(other, other).send(new PutObjectCommand({ Bucket: other.bucket_name, Key: 'theirs.txt', Body: 'theirs' }));
      // b's key, correctly signed, against the other bucket.
      assertS3Error(await send(presign(other, b, { key: 'theirs.txt' })), 403, 'AccessDenied');
      assertS3Error(await signedRequest(other, b, { method: 'PUT', key: 'mine.txt', body: 'x' }), 403, 'AccessDenied');
      const unknown = { access_key: 'SVLAAAAAAAAAAAAAAAAA', secret_key: b.secret_key };
      assertS3Error(await send(presign(b, unknown, { key: 'docs/report 1 é.txt' })), 403, 'InvalidAccessKeyId');
      // A URL signed before a rotation without grace period stops working with the old key.
      const url = presign(other, other, { key: 'theirs.txt' });
      assert.equal((await send(url)).body, 'theirs');
      const rotated = expectStatus(await s.post(`/object-storage/${other.id}/rotate-credentials`, { old_keys_ttl_hours: 0 }), 200);
      assertS3Error(await send(url), 403, 'InvalidAccessKeyId');
      assert.equal((await send(presign(other, rotated, { key: 'theirs.txt' }))).body, 'theirs');
    });

    it('a request carrying two signatures is refused', async () => {
      const url = presign(b, b, { key: 'docs/report 1 é.txt' });
      assertS3Error(
        await send(url, { headers: { authorization: `AWS ${b.access_key}:${'A'.repeat(27)}=` } }),
        400,
        'InvalidArgument',
        /Only one auth mechanism/,
      );
    });
  });
}

describe('object storage: AWS Signature Version 2, virtual-hosted addressing [sqlite]', () => {
  const s = useServer({ rateLimits: GENEROUS, env: { SLIPWAY_OBJECT_STORAGE_BASE_DOMAIN: 's3.slipway.test' } });

  it('the bucket named by the Host is part of the signed resource', async () => {
    const b = await createBucket(s);
    await client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'v/hosted.txt', Body: 'virtual' }));
    const port = new URL(s.baseUrl).port;
    const virtual = (path: string, resource: string) => {
      const date = new Date().toUTCString();
      const signature = sign(b.secret_key, { method: 'GET', date, resource });
      return send(`${s.baseUrl}${path}`, {
        headers: { host: `${b.bucket_name}.s3.slipway.test:${port}`, date, authorization: `AWS ${b.access_key}:${signature}` },
      });
    };
    const got = await virtual('/v/hosted.txt', `/${b.bucket_name}/v/hosted.txt`);
    assert.equal(got.status, 200, got.body);
    assert.equal(got.body, 'virtual');
    const list = await virtual('/?list-type=2', `/${b.bucket_name}/`);
    assert.equal(list.status, 200, list.body);
    assert.match(list.body, /<Key>v\/hosted.txt<\/Key>/);
    // Without the bucket the resource names nothing of this bucket's.
    assertS3Error(await virtual('/v/hosted.txt', '/v/hosted.txt'), 403, 'SignatureDoesNotMatch');
    // Path-style on the base domain itself.
    const date = new Date().toUTCString();
    const resource = `/${b.bucket_name}/v/hosted.txt`;
    const path = await send(`${s.baseUrl}${resource}`, {
      headers: { host: `s3.slipway.test:${port}`, date, authorization: `AWS ${b.access_key}:${sign(b.secret_key, { method: 'GET', date, resource })}` },
    });
    assert.equal(path.body, 'virtual');
  });
});

const run = promisify(execFile);
/** AWS CLI v1 (`aws s3 presign` signs with Version 2; v2 of the CLI does not). */
async function awsCliV1(): Promise<false | string> {
  try {
    const { stdout, stderr } = await run('aws', ['--version']);
    const version = `${stdout}${stderr}`.trim();
    return /^aws-cli\/1\./.test(version) ? false : `AWS CLI v1 is not installed (found ${version}); its Signature Version 2 requests are not tried`;
  } catch {
    return 'AWS CLI v1 (aws) is not installed; its Signature Version 2 requests are not tried';
  }
}

describe('object storage: AWS CLI v1 [sqlite]', { skip: await awsCliV1() }, () => {
  const s = useServer({ rateLimits: GENEROUS });
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-awscli-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('`aws s3 presign` URLs (Signature Version 2 by default) read the object', async () => {
    const b = await createBucket(s);
    await client(b, b).send(new PutObjectCommand({ Bucket: b.bucket_name, Key: 'cli/read me.txt', Body: 'for the cli' }));
    // The CLI reads nothing of this machine's own AWS configuration.
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      AWS_ACCESS_KEY_ID: b.access_key,
      AWS_SECRET_ACCESS_KEY: b.secret_key,
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_CONFIG_FILE: join(dir, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    const presigned = await run('aws', ['s3', 'presign', `s3://${b.bucket_name}/cli/read me.txt`, '--expires-in', '300', '--endpoint-url', b.endpoint], {
      env,
    });
    const url = presigned.stdout.trim();
    assert.match(url, /[?&]AWSAccessKeyId=[^&]+&Signature=[^&]+&Expires=\d+$/);
    const got = await send(url);
    assert.equal(got.status, 200, got.body);
    assert.equal(got.body, 'for the cli');
  });
});
