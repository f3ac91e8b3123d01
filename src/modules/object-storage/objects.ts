// Object metadata, shared by the control plane (list and delete objects) and the S3 data plane:
// listing in byte order with prefix, delimiter and a resumable bound; committing and deleting
// objects; multipart bookkeeping. Blobs a commit replaces or a delete frees are returned to the
// caller, which removes them once its transaction has committed.
import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { newId } from '../../shared/ids.js';
import { enqueue } from '../../shared/jobs.js';
import { runtime } from './runtime.js';
import type { ObjectStorageObjectsTable, ObjectStoragePartsTable, ObjectStorageUploadsTable } from './storage.js';

export type ObjectRow = ObjectStorageObjectsTable;
export type UploadRow = ObjectStorageUploadsTable;
export type PartRow = ObjectStoragePartsTable;

/** Where a listing resumes: after (or at) a key. */
export interface Bound {
  key: string;
  inclusive: boolean;
}

export const encodeBound = (b: Bound) => Buffer.from(`${b.inclusive ? 'i' : 'e'}${b.key}`, 'utf8').toString('base64url');
export function decodeBound(token: string): Bound | null {
  if (!/^[A-Za-z0-9_-]*$/.test(token)) return null;
  const s = Buffer.from(token, 'base64url').toString('utf8');
  if (s[0] !== 'i' && s[0] !== 'e') return null;
  return { key: s.slice(1), inclusive: s[0] === 'i' };
}

/** The smallest string greater than every string that starts with `s` (in code point order). */
const successor = (s: string) => s.slice(0, -1) + String.fromCharCode(s.charCodeAt(s.length - 1) + 1);

export type ListEntry = { prefix: string } | { object: ObjectRow };

/**
 * One page of a bucket's keys under `prefix`, keys sharing a `delimiter` after the prefix rolled
 * up into one common prefix (S3 semantics). `next` is where the following page starts, null when
 * nothing follows.
 */
export async function listEntries(
  tx: Tx,
  bucketId: string,
  o: { prefix: string; delimiter: string; after: Bound | null; max: number },
): Promise<{ entries: ListEntry[]; next: Bound | null }> {
  const entries: ListEntry[] = [];
  if (o.max <= 0) return { entries, next: null };
  const upper = o.prefix ? successor(o.prefix) : null;
  let low: Bound = o.after && o.after.key >= o.prefix ? o.after : { key: o.prefix, inclusive: true };
  const page = (b: Bound, n: number) => {
    let q = tx
      .selectFrom('object_storage_objects')
      .selectAll()
      .where('bucket_id', '=', bucketId)
      .where('key', b.inclusive ? '>=' : '>', b.key);
    if (upper) q = q.where('key', '<', upper);
    return q.orderBy('key').limit(n).execute();
  };
  for (;;) {
    const want = o.max - entries.length;
    if (want === 0) return { entries, next: (await page(low, 1)).length ? low : null };
    const rows = await page(low, want);
    let jumped = false;
    for (const r of rows) {
      const i = o.delimiter ? r.key.indexOf(o.delimiter, o.prefix.length) : -1;
      if (i >= 0) {
        const common = r.key.slice(0, i + o.delimiter.length);
        entries.push({ prefix: common });
        low = { key: successor(common), inclusive: true };
        jumped = true;
        break;
      }
      entries.push({ object: r });
      low = { key: r.key, inclusive: false };
    }
    if (!jumped && rows.length < want) return { entries, next: null };
  }
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

/** Deletes the objects with these keys; answers the freed blobs. */
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

/**
 * Runs `fn` in a transaction, then removes the blobs it freed (after the commit: a crash in
 * between leaves orphans, which start-up recovery removes).
 */
export async function withFreedBlobs<T>(app: AppContext, bucketId: string, fn: (tx: Tx) => Promise<{ result: T; freed: string[] }>): Promise<T> {
  const { result, freed } = await app.database.db.transaction().execute(fn);
  if (freed.length)
    await runtime(app)
      .store.remove(bucketId, freed)
      .catch((e) => app.log.warn({ err: e, bucketId }, 'object storage: could not remove freed blobs'));
  return result;
}

// --- Blob removal after control-plane transactions (a durable job) -----------------------------

export const SWEEP_JOB = 'object-storage.sweep' as const;
declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Removes freed blobs of a bucket, or (blobs null) everything the deleted bucket held. */
    [SWEEP_JOB]: { bucket_id: string; blobs: string[] | null };
  }
}

export async function sweepLater(tx: Tx, bucketId: string, blobs: string[] | null): Promise<void> {
  if (blobs && !blobs.length) return;
  await enqueue(tx, { kind: SWEEP_JOB, payload: { bucket_id: bucketId, blobs }, subjectId: bucketId });
}

export function sweepJob(app: AppContext) {
  return {
    transactional: false,
    async run(_tx: Tx, job: { payload: { bucket_id: string; blobs: string[] | null } }) {
      const { store } = runtime(app);
      if (job.payload.blobs) await store.remove(job.payload.bucket_id, job.payload.blobs);
      else await store.removeBucket(job.payload.bucket_id);
    },
  };
}

// --- Multipart uploads -----------------------------------------------------------------------

export const newBlobId = () => newId();
const newUploadId = () => randomBytes(24).toString('base64url');

export async function createUpload(tx: Tx, bucketId: string, key: string, contentType: string | null, metadata: Record<string, string>): Promise<string> {
  const id = newUploadId();
  await tx
    .insertInto('object_storage_uploads')
    .values({ id, bucket_id: bucketId, key, content_type: contentType, metadata: JSON.stringify(metadata), created_at: new Date().toISOString() })
    .execute();
  return id;
}

export async function findUpload(tx: Tx, bucketId: string, uploadId: string, key: string): Promise<UploadRow | undefined> {
  return tx
    .selectFrom('object_storage_uploads')
    .selectAll()
    .where('id', '=', uploadId)
    .where('bucket_id', '=', bucketId)
    .where('key', '=', key)
    .executeTakeFirst();
}

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

/** The ETag of a multipart object: MD5 of the parts' binary MD5s, then `-<number of parts>`. */
export function multipartEtag(partEtags: readonly string[]): string {
  const h = createHash('md5');
  for (const e of partEtags) h.update(Buffer.from(e, 'hex'));
  return `${h.digest('hex')}-${partEtags.length}`;
}
