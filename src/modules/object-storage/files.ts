// Public functions for other modules that keep files in a bucket on the platform's own behalf (a
// database's external backups go to the bucket of its backup target). They use the metadata and
// the blob store the S3 endpoint uses, so the files are ordinary objects: listed, downloadable
// with the bucket's keys, removed with the bucket.
import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { AppContext } from '../../shared/context.js';
import { newBlobId, withFreedBlobs } from './objects.js';
import { deleteObjectRows, findObject, putObjectRow } from './objects-storage.js';
import { runtime } from './runtime.js';
import { bucketExists } from './storage.js';

export class BucketGone extends Error {}

/** Stores `body` as the object `key` of the bucket (replacing one of that key); answers its size. Throws BucketGone when the bucket no longer exists. */
export async function putObjectStream(app: AppContext, bucketId: string, key: string, body: Readable, contentType: string): Promise<number> {
  const md5 = createHash('md5');
  const hashed = body.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        md5.update(chunk);
        done(null, chunk);
      },
    }),
  );
  body.once('error', (e) => hashed.destroy(e));
  const { store } = runtime(app);
  const blob = newBlobId();
  const size = await store.put(bucketId, blob, hashed, null);
  try {
    await withFreedBlobs(app, bucketId, async (tx) => {
      if (!(await bucketExists(tx, bucketId))) throw new BucketGone('the bucket no longer exists');
      const replaced = await putObjectRow(tx, {
        bucket_id: bucketId,
        key,
        blob,
        size,
        etag: md5.digest('hex'),
        content_type: contentType,
        metadata: '{}',
        updated_at: new Date().toISOString(),
      });
      return { result: null, freed: replaced ? [replaced] : [] };
    });
  } catch (e) {
    await store.remove(bucketId, [blob]).catch(() => {});
    throw e;
  }
  return size;
}

/** The content of the object `key` of the bucket, or undefined when there is none. */
export async function readObjectStream(app: AppContext, bucketId: string, key: string): Promise<Readable | undefined> {
  const o = await findObject(app.database.db, bucketId, key);
  return o ? runtime(app).store.read(bucketId, o.blob) : undefined;
}

/** Removes the object `key` of the bucket (nothing when it is gone already). */
export async function deleteObjectKey(app: AppContext, bucketId: string, key: string): Promise<void> {
  await withFreedBlobs(app, bucketId, async (tx) => ({ result: null, freed: (await deleteObjectRows(tx, bucketId, [key])).blobs }));
}
