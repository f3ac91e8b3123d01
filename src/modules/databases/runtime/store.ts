// Where real backups (dumps and snapshots) are kept: a storage interface, with files under the
// data directory (<data dir>/database-backups/<database id>/) for the platform's own backups, and
// a bucket of the object-storage module for external backups whose target is one of its buckets
// (objects `database-backups/<database id>/<backup id>`, gzip-compressed, as the `.sql.gz` name says).
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { AppContext } from '../../../shared/context.js';
import { deleteObjectKey, putObjectStream, readObjectStream } from '../../object-storage/index.js';

export interface BackupStore {
  /** A fresh local path to write a dump to before `put`. */
  scratch(): Promise<string>;
  /** Keeps the dump written at `file` as backup `backupId` of the database; returns its size. */
  put(databaseId: string, backupId: string, file: string): Promise<number>;
  /** A local file holding the backup (undefined when it is gone); `release` it once read. */
  fetch(databaseId: string, backupId: string): Promise<string | undefined>;
  release(file: string): Promise<void>;
  remove(databaseId: string, backupId: string): Promise<void>;
  removeAll(databaseId: string): Promise<void>;
}

export class FileBackupStore implements BackupStore {
  constructor(private root: string) {}

  private dir = (databaseId: string) => join(this.root, databaseId);
  private file = (databaseId: string, backupId: string) => join(this.dir(databaseId), encodeURIComponent(backupId));

  async scratch(): Promise<string> {
    await mkdir(join(this.root, '.tmp'), { recursive: true, mode: 0o700 });
    return join(this.root, '.tmp', randomBytes(8).toString('hex'));
  }

  async put(databaseId: string, backupId: string, file: string): Promise<number> {
    await mkdir(this.dir(databaseId), { recursive: true, mode: 0o700 });
    const dest = this.file(databaseId, backupId);
    await rename(file, dest);
    return (await stat(dest)).size;
  }

  async fetch(databaseId: string, backupId: string): Promise<string | undefined> {
    const f = this.file(databaseId, backupId);
    return (await stat(f).then(
      () => true,
      () => false,
    ))
      ? f
      : undefined;
  }

  async release(): Promise<void> {
    // The file is the backup itself.
  }

  async remove(databaseId: string, backupId: string): Promise<void> {
    await rm(this.file(databaseId, backupId), { force: true });
  }

  async removeAll(databaseId: string): Promise<void> {
    await rm(this.dir(databaseId), { recursive: true, force: true });
  }
}

/** Backups kept in one bucket of the object-storage module; local files only while they are written or read. */
export class BucketBackupStore implements BackupStore {
  constructor(
    private app: AppContext,
    private bucketId: string,
    private local: FileBackupStore,
  ) {}

  private key = (databaseId: string, backupId: string) => `database-backups/${databaseId}/${backupId}`;

  scratch = () => this.local.scratch();

  async put(databaseId: string, backupId: string, file: string): Promise<number> {
    const size = await putObjectStream(this.app, this.bucketId, this.key(databaseId, backupId), createReadStream(file).pipe(createGzip()), 'application/gzip');
    await rm(file, { force: true });
    return size;
  }

  async fetch(databaseId: string, backupId: string): Promise<string | undefined> {
    const body = await readObjectStream(this.app, this.bucketId, this.key(databaseId, backupId));
    if (!body) return undefined;
    const file = await this.scratch();
    try {
      await pipeline(body, createGunzip(), createWriteStream(file, { mode: 0o600 }));
    } catch (e) {
      await rm(file, { force: true });
      throw e;
    }
    return file;
  }

  async release(file: string): Promise<void> {
    await rm(file, { force: true });
  }

  async remove(databaseId: string, backupId: string): Promise<void> {
    await deleteObjectKey(this.app, this.bucketId, this.key(databaseId, backupId));
  }

  async removeAll(): Promise<void> {
    // External backups stay in the customer's bucket when the database goes, as when a target is detached.
  }
}
