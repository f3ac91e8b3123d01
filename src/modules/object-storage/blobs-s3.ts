// The pass-through store: blobs live in one bucket of an external S3-compatible service (MinIO,
// Ceph, AWS S3, R2) under `<prefix><bucket id>/<blob>`, written and read through the AWS SDK.
// Metadata stays in Slipway's database exactly as with the embedded store.
import type { Readable } from 'node:stream';
import type * as Sdk from '@aws-sdk/client-s3';
import { lazy } from '../../shared/lazy.js';
import type { BlobStore, ByteRange } from './blobs.js';
import { S3Error } from './s3-errors.js';
import type { UpstreamSettings } from './settings.js';

const sdk = lazy<typeof Sdk>('@aws-sdk/client-s3');

export class UpstreamBlobStore implements BlobStore {
  readonly kind = 's3' as const;
  private client: Sdk.S3Client;
  constructor(private s: UpstreamSettings) {
    this.client = new (sdk().S3Client)({
      endpoint: s.endpoint,
      region: s.region,
      forcePathStyle: s.forcePathStyle,
      credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private key(bucketId: string, blob = ''): string {
    return `${this.s.prefix}${bucketId}/${blob}`;
  }

  async put(bucketId: string, blob: string, body: Readable, size: number | null, check?: () => void): Promise<number> {
    if (size === null) throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
    await this.client.send(new (sdk().PutObjectCommand)({ Bucket: this.s.bucket, Key: this.key(bucketId, blob), Body: body, ContentLength: size }));
    try {
      check?.();
    } catch (e) {
      await this.remove(bucketId, [blob]);
      throw e;
    }
    return size;
  }

  async compose(bucketId: string, blob: string, parts: readonly { blob: string; size: number }[]): Promise<number> {
    const Bucket = this.s.bucket;
    const Key = this.key(bucketId, blob);
    const source = (b: string) => `${Bucket}/${encodeURIComponent(this.key(bucketId, b)).replace(/%2F/g, '/')}`;
    const total = parts.reduce((n, p) => n + p.size, 0);
    if (parts.length === 1) {
      await this.client.send(new (sdk().CopyObjectCommand)({ Bucket, Key, CopySource: source(parts[0]!.blob) }));
      return total;
    }
    const { UploadId } = await this.client.send(new (sdk().CreateMultipartUploadCommand)({ Bucket, Key }));
    try {
      const done = [];
      for (const [i, p] of parts.entries()) {
        const r = await this.client.send(new (sdk().UploadPartCopyCommand)({ Bucket, Key, UploadId, PartNumber: i + 1, CopySource: source(p.blob) }));
        done.push({ PartNumber: i + 1, ETag: r.CopyPartResult?.ETag });
      }
      await this.client.send(new (sdk().CompleteMultipartUploadCommand)({ Bucket, Key, UploadId, MultipartUpload: { Parts: done } }));
    } catch (e) {
      await this.client.send(new (sdk().AbortMultipartUploadCommand)({ Bucket, Key, UploadId })).catch(() => {});
      throw e;
    }
    return total;
  }

  async copy(bucketId: string, from: string, to: string): Promise<void> {
    await this.compose(bucketId, to, [{ blob: from, size: 0 }]);
  }

  async read(bucketId: string, blob: string, range?: ByteRange): Promise<Readable> {
    const r = await this.client.send(
      new (sdk().GetObjectCommand)({ Bucket: this.s.bucket, Key: this.key(bucketId, blob), Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
    );
    return r.Body as Readable;
  }

  async remove(bucketId: string, blobs: readonly string[]): Promise<void> {
    for (let i = 0; i < blobs.length; i += 1000) {
      const Objects = blobs.slice(i, i + 1000).map((b) => ({ Key: this.key(bucketId, b) }));
      await this.client.send(new (sdk().DeleteObjectsCommand)({ Bucket: this.s.bucket, Delete: { Objects, Quiet: true } }));
    }
  }

  /** Every blob under `prefix`, with its age. */
  private async *list(prefix: string): AsyncGenerator<{ key: string; modified: number }> {
    let ContinuationToken: string | undefined;
    do {
      const r = await this.client.send(new (sdk().ListObjectsV2Command)({ Bucket: this.s.bucket, Prefix: prefix, ContinuationToken }));
      for (const o of r.Contents ?? []) if (o.Key) yield { key: o.Key, modified: o.LastModified?.getTime() ?? 0 };
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async removeBucket(bucketId: string): Promise<void> {
    const blobs: string[] = [];
    for await (const o of this.list(this.key(bucketId))) blobs.push(o.key.slice(this.key(bucketId).length));
    await this.remove(bucketId, blobs);
  }

  async recover(live: (bucketId: string) => Promise<Set<string> | null>, graceMs: number): Promise<void> {
    const cutoff = Date.now() - graceMs;
    const known = new Map<string, Set<string> | null>();
    const doomed = new Map<string, string[]>();
    for await (const o of this.list(this.s.prefix)) {
      const [bucketId, blob] = o.key.slice(this.s.prefix.length).split('/', 2);
      if (!bucketId || !blob || o.modified > cutoff) continue;
      if (!known.has(bucketId)) known.set(bucketId, await live(bucketId));
      if (known.get(bucketId)?.has(blob)) continue;
      doomed.set(bucketId, [...(doomed.get(bucketId) ?? []), blob]);
    }
    for (const [bucketId, blobs] of doomed) await this.remove(bucketId, blobs);
  }
}
