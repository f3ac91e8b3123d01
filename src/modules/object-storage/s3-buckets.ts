// Operations of the S3 data plane addressed to a bucket rather than one object: ListBuckets (a key
// lists its own bucket only), ListObjects and ListObjectsV2 (prefix, delimiter, markers or
// continuation tokens, at most 1000 keys a page) and DeleteObjects (at most 1000 keys, one
// transaction). Buckets themselves are created and deleted through the JSON API, not here.
import { decodeBound, encodeBound, listEntries, withFreedBlobs, type Bound } from './objects.js';
import { deleteObjectRows } from './objects-storage.js';
import { invalidArgument, malformedXml } from './s3-errors.js';
import { isoSeconds, maxOf, NS, one, quoted, sendXml, xmlBody, type S3Request, type VerifiedRequest } from './s3-request.js';

export function listBuckets({ reply, bucket: b }: S3Request) {
  return sendXml(reply, 200, {
    ListAllMyBucketsResult: {
      '@_xmlns': NS,
      Owner: { ID: b.company_id, DisplayName: '' },
      Buckets: { Bucket: [{ Name: b.bucket_name, CreationDate: isoSeconds(b.created_at) }] },
    },
  });
}

export async function listObjects({ app, reply, target: t, bucket: b }: S3Request, v2: boolean) {
  const q = t.query;
  const prefix = one(q, 'prefix') ?? '';
  const delimiter = one(q, 'delimiter') ?? '';
  const max = maxOf(one(q, 'max-keys'), 'max-keys', 1000);
  const url = one(q, 'encoding-type') === 'url';
  if (one(q, 'encoding-type') !== undefined && !url) throw invalidArgument('Invalid Encoding Method specified in Request');
  const enc = (s: string) => (url ? encodeURIComponent(s).replace(/%2F/g, '/') : s);
  let after: Bound | null = null;
  const token = one(q, 'continuation-token');
  if (v2 && token !== undefined) {
    after = decodeBound(token);
    if (!after) throw invalidArgument('The continuation token provided is incorrect');
  } else {
    const start = v2 ? one(q, 'start-after') : one(q, 'marker');
    if (start) after = { key: start, inclusive: false };
  }
  const { entries, next } = await listEntries(app.database.db, b.id, { prefix, delimiter, after, max });
  const contents = entries.flatMap((e) =>
    'object' in e
      ? [
          {
            Key: enc(e.object.key),
            LastModified: isoSeconds(e.object.updated_at),
            ETag: quoted(e.object.etag),
            Size: Number(e.object.size),
            StorageClass: 'STANDARD',
          },
        ]
      : [],
  );
  const prefixes = entries.flatMap((e) => ('prefix' in e ? [{ Prefix: enc(e.prefix) }] : []));
  const common = {
    '@_xmlns': NS,
    Name: b.bucket_name,
    Prefix: enc(prefix),
    ...(delimiter ? { Delimiter: enc(delimiter) } : {}),
    MaxKeys: max,
    ...(url ? { EncodingType: 'url' } : {}),
    IsTruncated: next !== null,
  };
  const last = entries.at(-1);
  const body = v2
    ? {
        ...common,
        KeyCount: entries.length,
        ...(token !== undefined ? { ContinuationToken: token } : {}),
        ...(next ? { NextContinuationToken: encodeBound(next) } : {}),
        ...(one(q, 'start-after') ? { StartAfter: enc(one(q, 'start-after')!) } : {}),
      }
    : {
        ...common,
        Marker: enc(one(q, 'marker') ?? ''),
        ...(next && delimiter && last ? { NextMarker: enc('object' in last ? last.object.key : last.prefix) } : {}),
      };
  return sendXml(reply, 200, { ListBucketResult: { ...body, Contents: contents, CommonPrefixes: prefixes } });
}

export async function deleteObjects(r: VerifiedRequest) {
  const { app, reply, bucket: b } = r;
  const doc = (await xmlBody(r)).Delete as { Object?: { Key?: unknown }[]; Quiet?: string } | undefined;
  const objects = doc?.Object ?? [];
  if (!doc || !objects.length || objects.length > 1000 || objects.some((o) => typeof o.Key !== 'string')) throw malformedXml();
  const keys = objects.map((o) => o.Key as string);
  await withFreedBlobs(app, b.id, async (tx) => {
    const { blobs } = await deleteObjectRows(tx, b.id, keys);
    return { result: null, freed: blobs };
  });
  const quiet = doc.Quiet?.trim().toLowerCase() === 'true';
  return sendXml(reply, 200, { DeleteResult: { '@_xmlns': NS, Deleted: quiet ? [] : keys.map((k) => ({ Key: k })) } });
}
