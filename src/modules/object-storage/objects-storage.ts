// Queries on object metadata and multipart uploads: a bucket's keys in byte order from a bound,
// an object's row (stored, replaced, deleted) and an upload's rows and parts. Writes that replace
// or free blobs answer those blobs; the caller removes them once its transaction has committed.
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import type { ObjectStorageObjectsTable, ObjectStoragePartsTable, ObjectStorageUploadsTable } from './storage.js';

export type ObjectRow = ObjectStorageObjectsTable;
export type UploadRow = ObjectStorageUploadsTable;
export type PartRow = ObjectStoragePartsTable;

// --- Objects ----------------------------------------------------------------------------------

/** Up to `limit` of the bucket's objects in key order, from `from` (at or after its key) and below `upper` when given. */
export async function listObjectsFrom(
  tx: Tx,
  bucketId: string,
  from: { key: string; inclusive: boolean },
  upper: string | null,
  limit: number,
): Promise<ObjectRow[]> {
  let q = tx
    .selectFrom('object_storage_objects')
    .selectAll()
    .where('bucket_id', '=', bucketId)
    .where('key', from.inclusive ? '>=' : '>', from.key);
  if (upper) q = q.where('key', '<', upper);
  return q.orderBy('key').limit(limit).execute();
}

export async function findObject(tx: Tx, bucketId: string, key: string): Promise<ObjectRow | undefined> {
  return tx.selectFrom('object_storage_objects').selectAll().where('bucket_id', '=', bucketId).where('key', '=', key).executeTakeFirst();
}

/** Stores (or replaces) the object row; answers the blob it replaced, if any. */
export async function putObjectRow(tx: Tx, row: ObjectRow): Promise<string | null> {
  await lockFor(tx, `object:${row.bucket_id}:${row.key}`);
  const old = await findObject(tx, row.bucket_id, row.key);
  if (old) {
    const { bucket_id, key, ...rest } = row;
    await tx.updateTable('object_storage_objects').set(rest).where('bucket_id', '=', bucket_id).where('key', '=', key).execute();
  } else await tx.insertInto('object_storage_objects').values(row).execute();
  return old && old.blob !== row.blob ? old.blob : null;
}

/** Deletes the objects with these keys (500 at a time); answers the deleted keys and the freed blobs. */
export async function deleteObjectRows(tx: Tx, bucketId: string, keys: readonly string[]): Promise<{ deleted: string[]; blobs: string[] }> {
  const deleted: string[] = [];
  const blobs: string[] = [];
  for (let i = 0; i < keys.length; i += 500) {
    const slice = [...new Set(keys.slice(i, i + 500))];
    const rows = await tx.selectFrom('object_storage_objects').select(['key', 'blob']).where('bucket_id', '=', bucketId).where('key', 'in', slice).execute();
    if (!rows.length) continue;
    await tx
      .deleteFrom('object_storage_objects')
      .where('bucket_id', '=', bucketId)
      .where(
        'key',
        'in',
        rows.map((r) => r.key),
      )
      .execute();
    deleted.push(...rows.map((r) => r.key));
    blobs.push(...rows.map((r) => r.blob));
  }
  return { deleted, blobs };
}

/** Every blob a bucket's metadata refers to (objects and parts of open uploads). */
export async function liveBlobs(tx: Tx, bucketId: string): Promise<Set<string>> {
  const objects = await tx.selectFrom('object_storage_objects').select('blob').where('bucket_id', '=', bucketId).execute();
  const parts = await tx
    .selectFrom('object_storage_parts')
    .innerJoin('object_storage_uploads', 'object_storage_uploads.id', 'object_storage_parts.upload_id')
    .select('object_storage_parts.blob')
    .where('object_storage_uploads.bucket_id', '=', bucketId)
    .execute();
  return new Set([...objects.map((o) => o.blob), ...parts.map((p) => p.blob)]);
}

// --- Multipart uploads -----------------------------------------------------------------------

export async function insertUpload(tx: Tx, row: UploadRow): Promise<void> {
  await tx.insertInto('object_storage_uploads').values(row).execute();
}

/** The upload, if it is the bucket's and for this key. */
export async function findUpload(tx: Tx, bucketId: string, uploadId: string, key: string): Promise<UploadRow | undefined> {
  return tx
    .selectFrom('object_storage_uploads')
    .selectAll()
    .where('id', '=', uploadId)
    .where('bucket_id', '=', bucketId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/** The upload's parts by part number. */
export async function listParts(tx: Tx, uploadId: string): Promise<PartRow[]> {
  return tx.selectFrom('object_storage_parts').selectAll().where('upload_id', '=', uploadId).orderBy('part_number').execute();
}

/** Records a part (replacing one with the same number); answers the blob it replaced. Null upload: gone. */
export async function putPartRow(tx: Tx, part: PartRow): Promise<{ replaced: string | null } | null> {
  await lockFor(tx, `upload:${part.upload_id}`);
  const upload = await tx.selectFrom('object_storage_uploads').select('id').where('id', '=', part.upload_id).executeTakeFirst();
  if (!upload) return null;
  const old = await tx
    .selectFrom('object_storage_parts')
    .select('blob')
    .where('upload_id', '=', part.upload_id)
    .where('part_number', '=', part.part_number)
    .executeTakeFirst();
  if (old) await tx.deleteFrom('object_storage_parts').where('upload_id', '=', part.upload_id).where('part_number', '=', part.part_number).execute();
  await tx.insertInto('object_storage_parts').values(part).execute();
  return { replaced: old?.blob ?? null };
}

/** Removes an upload and its parts; answers the parts' blobs (null: no such upload). */
export async function dropUpload(tx: Tx, uploadId: string): Promise<string[] | null> {
  await lockFor(tx, `upload:${uploadId}`);
  const upload = await tx.selectFrom('object_storage_uploads').select('id').where('id', '=', uploadId).executeTakeFirst();
  if (!upload) return null;
  const parts = await listParts(tx, uploadId);
  await tx.deleteFrom('object_storage_parts').where('upload_id', '=', uploadId).execute();
  await tx.deleteFrom('object_storage_uploads').where('id', '=', uploadId).execute();
  return parts.map((p) => p.blob);
}
