// Object metadata rules, shared by the control plane (list and delete objects) and the S3 data
// plane: listing in byte order with prefix, delimiter and a resumable bound; a transaction whose
// freed blobs are removed after its commit, or by a sweep job; multipart ids and ETags. The
// queries are in objects-storage.ts.
import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { newId } from '../../shared/ids.js';
import { enqueue } from '../../shared/jobs.js';
import { insertUpload, listObjectsFrom, type ObjectRow } from './objects-storage.js';
import { runtime } from './runtime.js';

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
  const page = (b: Bound, n: number) => listObjectsFrom(tx, bucketId, b, upper, n);
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

/** Opens a multipart upload of `key`; answers its id. */
export async function createUpload(tx: Tx, bucketId: string, key: string, contentType: string | null, metadata: Record<string, string>): Promise<string> {
  const id = newUploadId();
  await insertUpload(tx, { id, bucket_id: bucketId, key, content_type: contentType, metadata: JSON.stringify(metadata), created_at: new Date().toISOString() });
  return id;
}

/** The ETag of a multipart object: MD5 of the parts' binary MD5s, then `-<number of parts>`. */
export function multipartEtag(partEtags: readonly string[]): string {
  const h = createHash('md5');
  for (const e of partEtags) h.update(Buffer.from(e, 'hex'));
  return `${h.digest('hex')}-${partEtags.length}`;
}
