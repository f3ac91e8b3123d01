// Objects in state snapshots (src/shared/snapshots): the bytes that object rows and the parts of
// open multipart uploads name, streamed from the blob store into the document and from the
// document into new blobs (fresh ids, so an import never overwrites a blob the importing server
// holds), checked against their rows (size, MD5 ETag) as they are written. Nothing holds a whole
// object: SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES (unset: no limit) bounds what a snapshot carries.
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

/** The snapshot limit from the operator's environment (checked when the snapshot surface is set up); unset: no limit. */
export function snapshotMaxBytes(app: AppContext): number {
  return intSetting(app.config.objectStorage.env, 'SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES', Infinity, 0);
}

/** Object storage's part of state snapshots: its objects' bytes, streamed from and into the blob store. */
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

    contents(rows) {
      const seen = new Set<string>();
      return refs(rows)
        .filter((r) => !seen.has(r.blob) && !!seen.add(r.blob))
        .map((r) => ({
          id: r.blob,
          size: r.size,
          async open() {
            try {
              return await store().read(r.bucket, r.blob);
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as { name?: string }).name === 'NoSuchKey')
                throw conflict(`The bytes of ${r.table} ${r.key} (bucket ${r.bucket}) are gone: it changed during the export; export again`);
              throw e;
            }
          },
        }));
    },

    receiver(rows) {
      const byBlob = new Map<string, BlobRef>();
      for (const r of refs(rows)) if (!byBlob.has(r.blob)) byBlob.set(r.blob, r);
      const fresh = new Map<string, string>();
      const made: { bucket: string; blob: string }[] = [];
      return {
        async put(id, body) {
          const r = byBlob.get(id);
          if (!r) throw badRequest(`blobs.${id} is named by no object or part of the snapshot's rows`);
          if (fresh.has(id)) throw badRequest(`blobs.${id} appears twice`);
          const blob = newBlobId();
          made.push({ bucket: r.bucket, blob });
          const hash = r.md5 ? createHash('md5') : null;
          let n = 0;
          const tooLong = () => badRequest(`blobs.${id} holds more than ${r.size} bytes; ${r.table} ${r.key} has size ${r.size}`);
          const counted = async function* () {
            for await (const c of body) {
              n += c.length;
              if (n > r.size) throw tooLong();
              hash?.update(c);
              yield c;
            }
          };
          await store().put(r.bucket, blob, Readable.from(counted(), { objectMode: false }), r.size, () => {
            if (n !== r.size) throw badRequest(`blobs.${id} holds ${n} bytes; ${r.table} ${r.key} has size ${r.size}`);
            if (hash && hash.digest('hex') !== r.md5) throw badRequest(`blobs.${id} does not match the ETag of ${r.table} ${r.key}`);
          });
          fresh.set(id, blob);
        },
        finish() {
          for (const r of byBlob.values()) if (!fresh.has(r.blob)) throw badRequest(`blobs holds no bytes for ${r.table} ${r.key} (blob ${r.blob})`);
          const renamed = (list: Row[] | undefined) => (list ?? []).map((row) => ({ ...row, blob: fresh.get(String(row.blob)) ?? row.blob }));
          return { ...rows, [OBJECTS]: renamed(rows[OBJECTS]), [PARTS]: renamed(rows[PARTS]) };
        },
        async undo() {
          const byBucket = new Map<string, string[]>();
          for (const m of made) byBucket.set(m.bucket, (byBucket.get(m.bucket) ?? []).concat(m.blob));
          for (const [bucket, list] of byBucket) await store().remove(bucket, list);
        },
      };
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
