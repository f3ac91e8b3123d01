// Where object bytes live. Metadata (keys, sizes, ETags, user metadata, multipart bookkeeping) is
// always in the database; a BlobStore only keeps immutable blobs, each named by a fresh id inside
// its bucket's space. A write is visible only once its metadata row is committed, which happens
// after the blob is durable; whatever a crash leaves behind (unfinished writes, blobs no row
// refers to) is removed by `recover` at start.
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { link, mkdir, open, readdir, rename, rm, stat, unlink, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface BlobStore {
  readonly kind: 'filesystem' | 's3';
  /**
   * Streams `body` into the new blob `blob` of the bucket and resolves with its size once it is
   * durable. `check` runs after the last byte and before the blob becomes readable; if it throws,
   * the blob is discarded and the error rethrown (digest mismatches).
   */
  put(bucketId: string, blob: string, body: Readable, size: number | null, check?: () => void): Promise<number>;
  /** Makes the new blob `blob` from the concatenation of `parts` (multipart completion). */
  compose(bucketId: string, blob: string, parts: readonly { blob: string; size: number }[]): Promise<number>;
  /** Makes the new blob `to` with the bytes of `from` (CopyObject). */
  copy(bucketId: string, from: string, to: string): Promise<void>;
  read(bucketId: string, blob: string, range?: ByteRange): Promise<Readable>;
  remove(bucketId: string, blobs: readonly string[]): Promise<void>;
  removeBucket(bucketId: string): Promise<void>;
  /**
   * Start-up recovery: drops unfinished writes and blobs no metadata refers to. `live` answers the
   * blobs a bucket's metadata refers to, or null when the bucket no longer exists. Only files older
   * than `graceMs` are touched (other processes sharing the store may be writing).
   */
  recover(live: (bucketId: string) => Promise<Set<string> | null>, graceMs: number): Promise<void>;
}

const TMP = '.tmp-';
const ignoreMissing = (e: NodeJS.ErrnoException) => {
  if (e.code !== 'ENOENT') throw e;
};

async function fsyncDir(dir: string): Promise<void> {
  const d = await open(dir, constants.O_RDONLY);
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** The embedded store: one directory per bucket under `<data dir>/object-storage`. */
export class FileSystemBlobStore implements BlobStore {
  readonly kind = 'filesystem' as const;
  constructor(readonly root: string) {}

  dir(bucketId: string): string {
    return join(this.root, bucketId);
  }

  path(bucketId: string, blob: string): string {
    return join(this.root, bucketId, blob);
  }

  private async bucketDir(bucketId: string): Promise<string> {
    const dir = this.dir(bucketId);
    const made = await mkdir(dir, { recursive: true });
    if (made) await fsyncDir(this.root);
    return dir;
  }

  /** Writes `source` to a temporary file, syncs it, runs `check`, then renames it into place. */
  private async write(bucketId: string, blob: string, source: Readable | AsyncIterable<Buffer>, check?: () => void): Promise<number> {
    const dir = await this.bucketDir(bucketId);
    const tmp = join(dir, `${TMP}${blob}`);
    try {
      // `flush`: the file is fsynced before its descriptor closes.
      const ws = createWriteStream(tmp, { flags: 'wx', flush: true });
      await pipeline(source, ws);
      if (!ws.closed) await once(ws, 'close');
      check?.();
      await rename(tmp, join(dir, blob));
      await fsyncDir(dir);
      return ws.bytesWritten;
    } catch (e) {
      await unlink(tmp).catch(() => {});
      throw e;
    }
  }

  put(bucketId: string, blob: string, body: Readable, _size: number | null, check?: () => void): Promise<number> {
    return this.write(bucketId, blob, body, check);
  }

  compose(bucketId: string, blob: string, parts: readonly { blob: string; size: number }[]): Promise<number> {
    const paths = parts.map((p) => this.path(bucketId, p.blob));
    return this.write(
      bucketId,
      blob,
      (async function* () {
        for (const p of paths) for await (const chunk of createReadStream(p)) yield chunk as Buffer;
      })(),
    );
  }

  async copy(bucketId: string, from: string, to: string): Promise<void> {
    const dir = await this.bucketDir(bucketId);
    // Blobs never change once written, so a second name for the same file is a copy.
    try {
      await link(join(dir, from), join(dir, to));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw e;
      const tmp = join(dir, `${TMP}${to}`);
      await copyFile(join(dir, from), tmp);
      const fh = await open(tmp, 'r+');
      await fh.sync();
      await fh.close();
      await rename(tmp, join(dir, to));
    }
    await fsyncDir(dir);
  }

  async read(bucketId: string, blob: string, range?: ByteRange): Promise<Readable> {
    // Opened now: a concurrent delete of the name does not cut the stream short.
    const fh = await open(this.path(bucketId, blob), 'r');
    return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async remove(bucketId: string, blobs: readonly string[]): Promise<void> {
    for (const b of blobs) await unlink(this.path(bucketId, b)).catch(ignoreMissing);
  }

  async removeBucket(bucketId: string): Promise<void> {
    await rm(this.dir(bucketId), { recursive: true, force: true });
  }

  async recover(live: (bucketId: string) => Promise<Set<string> | null>, graceMs: number): Promise<void> {
    let buckets: string[];
    try {
      buckets = await readdir(this.root);
    } catch (e) {
      ignoreMissing(e as NodeJS.ErrnoException);
      return;
    }
    const cutoff = Date.now() - graceMs;
    for (const bucketId of buckets) {
      const keep = await live(bucketId);
      if (!keep) {
        await this.removeBucket(bucketId);
        continue;
      }
      for (const name of await readdir(this.dir(bucketId))) {
        if (!name.startsWith(TMP) && keep.has(name)) continue;
        const p = join(this.dir(bucketId), name);
        const s = await stat(p).catch(() => null);
        if (s && s.mtimeMs <= cutoff) await unlink(p).catch(ignoreMissing);
      }
    }
  }
}
