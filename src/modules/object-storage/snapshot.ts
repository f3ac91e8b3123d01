// Objects in state snapshots (src/shared/snapshots): the bytes that object rows and the parts of
// open multipart uploads name, read from the blob store as base64 and written back as new blobs
// (fresh ids, so an import never overwrites a blob the importing server holds). A snapshot carries
// the bytes in memory, so it carries at most SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES of them.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { AppContext } from '../../shared/context.js';
import { intSetting } from '../../shared/config.js';
import { badRequest, conflict } from '../../shared/errors.js';
import type { ExternalBytes, Row, Rows } from '../../shared/snapshots/index.js';
import { newBlobId } from './objects.js';
import { runtime } from './runtime.js';

const OBJECTS = 'object_storage_objects';
const UPLOADS = 'object_storage_uploads';
const PARTS = 'object_storage_parts';

/** Default bytes a snapshot carries: its JSON (base64, a third larger) stays far below V8's ~512 MiB string limit. */
export const SNAPSHOT_MAX_BYTES_DEFAULT = 64 * 1024 * 1024;
/** The largest setting: 256 MiB of bytes are ~342 MiB of base64, beside the rows. */
const SNAPSHOT_MAX_BYTES_CEILING = 256 * 1024 * 1024;
const CONCURRENCY = 8;

/** One stored blob a row names: the bucket it lives in, its id and its size (and MD5 when the row's ETag is one). */
interface BlobRef {
  bucket: string;
  blob: string;
  size: number;
  md5: string | null;
  table: string;
  key: string;
}

/** Every blob the rows name; parts find their bucket through their upload. */
function refs(rows: Rows): BlobRef[] {
  const uploads = new Map((rows[UPLOADS] ?? []).map((u) => [String(u.id), String(u.bucket_id)]));
  const out: BlobRef[] = [];
  const md5 = (etag: unknown) => (typeof etag === 'string' && /^[0-9a-f]{32}$/.test(etag) ? etag : null);
  for (const o of rows[OBJECTS] ?? [])
    out.push({ bucket: String(o.bucket_id), blob: String(o.blob), size: Number(o.size), md5: md5(o.etag), table: OBJECTS, key: String(o.key) });
  for (const p of rows[PARTS] ?? []) {
    const bucket = uploads.get(String(p.upload_id));
    if (!bucket) throw badRequest(`tables.${PARTS} names upload ${String(p.upload_id)}, which tables.${UPLOADS} does not hold`);
    out.push({
      bucket,
      blob: String(p.blob),
      size: Number(p.size),
      md5: md5(p.etag),
      table: PARTS,
      key: `${String(p.upload_id)} part ${String(p.part_number)}`,
    });
  }
  return out;
}

/** Runs `fn` over `items`, `CONCURRENCY` at a time; after a failure starts no more, and settles every running call before throwing it. */
async function each<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const results = await Promise.allSettled(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (!failed && next < items.length)
        await fn(items[next++]!).catch((e: unknown) => {
          failed = true;
          throw e;
        });
    }),
  );
  const failure = results.find((r) => r.status === 'rejected');
  if (failure) throw failure.reason;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The snapshot limit from the operator's environment (checked when the snapshot surface is set up). */
export function snapshotMaxBytes(app: AppContext): number {
  const name = 'SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES';
  const v = intSetting(app.config.objectStorage.env, name, SNAPSHOT_MAX_BYTES_DEFAULT, 0);
  if (v > SNAPSHOT_MAX_BYTES_CEILING) throw new Error(`${name} must be at most ${SNAPSHOT_MAX_BYTES_CEILING} (a snapshot is one JSON document)`);
  return v;
}

/** Object storage's part of state snapshots: its objects' bytes. */
export function snapshotObjects(app: AppContext): ExternalBytes {
  const limit = snapshotMaxBytes(app);
  const store = () => runtime(app).store;
  return {
    tables: [OBJECTS, UPLOADS, PARTS],

    checkSize(rows) {
      const all = refs(rows);
      const total = all.reduce((n, r) => n + r.size, 0);
      if (total > limit)
        throw badRequest(
          `The buckets hold ${total} bytes in ${all.length} objects and parts, more than a snapshot carries (${limit} bytes, ` +
            'SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES): export without objects, or copy the buckets with an S3 client',
        );
    },

    async read(rows) {
      const out: Record<string, string> = {};
      await each(refs(rows), async (r) => {
        let bytes: Buffer;
        try {
          bytes = await readAll(await store().read(r.bucket, r.blob));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as { name?: string }).name === 'NoSuchKey')
            throw conflict(`The bytes of ${r.table} ${r.key} (bucket ${r.bucket}) are gone: it changed during the export; export again`);
          throw e;
        }
        out[r.blob] = bytes.toString('base64');
      });
      return out;
    },

    async write(rows, blobs) {
      const all = refs(rows);
      const fresh = new Map<string, string>();
      const made: { bucket: string; blob: string }[] = [];
      const undo = async () => {
        const byBucket = new Map<string, string[]>();
        for (const m of made) byBucket.set(m.bucket, (byBucket.get(m.bucket) ?? []).concat(m.blob));
        for (const [bucket, list] of byBucket) await store().remove(bucket, list);
      };
      try {
        await each(all, async (r) => {
          const b64 = blobs[r.blob];
          if (b64 === undefined) throw badRequest(`blobs holds no bytes for ${r.table} ${r.key} (blob ${r.blob})`);
          const bytes = Buffer.from(b64, 'base64');
          if (bytes.length !== r.size) throw badRequest(`blobs.${r.blob} holds ${bytes.length} bytes; ${r.table} ${r.key} has size ${r.size}`);
          if (r.md5 && createHash('md5').update(bytes).digest('hex') !== r.md5)
            throw badRequest(`blobs.${r.blob} does not match the ETag of ${r.table} ${r.key}`);
          const blob = newBlobId();
          made.push({ bucket: r.bucket, blob });
          await store().put(r.bucket, blob, Readable.from([bytes]), bytes.length);
          fresh.set(r.blob, blob);
        });
      } catch (e) {
        await undo().catch(() => {});
        throw e;
      }
      const renamed = (list: Row[] | undefined) => (list ?? []).map((row) => ({ ...row, blob: fresh.get(String(row.blob)) ?? row.blob }));
      return { rows: { ...rows, [OBJECTS]: renamed(rows[OBJECTS]), [PARTS]: renamed(rows[PARTS]) }, undo };
    },

    async free(rows) {
      const byBucket = new Map<string, string[]>();
      for (const r of refs(rows)) {
        const list = byBucket.get(r.bucket) ?? [];
        list.push(r.blob);
        byBucket.set(r.bucket, list);
      }
      for (const [bucket, list] of byBucket) await store().remove(bucket, list);
    },
  };
}
