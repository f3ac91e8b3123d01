// Helpers of the object-storage suites: buckets through the API, S3 clients (the official AWS SDK
// v3) holding a bucket's keys, and where the embedded store keeps a bucket's files.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import type { TestServer } from '../helpers/server.js';
import { expectStatus, uniqueName } from '../helpers/util.js';

export * from '../helpers/util.js';

export interface Bucket {
  id: string;
  name: string;
  bucket_name: string;
  endpoint: string;
  access_key: string;
  secret_key: string;
  domain: string | null;
  [k: string]: unknown;
}

export async function createBucket(s: TestServer, body: Record<string, unknown> = {}, token?: string): Promise<Bucket> {
  return expectStatus(await s.post('/object-storage', { display_name: uniqueName('Bucket'), ...body }, { token }), 201);
}

export function client(b: { endpoint: string }, keys: { access_key: string; secret_key: string }, opts: { region?: string } = {}): S3Client {
  return new S3Client({
    endpoint: b.endpoint,
    region: opts.region ?? 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: keys.access_key, secretAccessKey: keys.secret_key },
    // A refused request is an answer, not something to retry.
    maxAttempts: 1,
  });
}

/** The files the embedded store holds for a bucket (none once the directory is gone). */
export function bucketFiles(dataDir: string, bucketId: string): string[] {
  const dir = join(dataDir, 'object-storage', bucketId);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** The S3 error a rejected SDK call raised: its code and HTTP status. */
export async function s3Error(p: Promise<unknown>): Promise<{ name: string; status: number | undefined }> {
  try {
    await p;
  } catch (e) {
    const err = e as { name: string; $metadata?: { httpStatusCode?: number } };
    return { name: err.name, status: err.$metadata?.httpStatusCode };
  }
  throw new Error('the S3 call succeeded but was expected to fail');
}
