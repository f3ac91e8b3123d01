// Where real backups (dumps and snapshots) are kept: a storage interface, with files under the
// data directory as the only implementation today (<data dir>/database-backups/<database id>/).
// An object-storage bucket can implement the same interface once buckets exist.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface BackupStore {
  /** A fresh local path to write a dump to before `put`. */
  scratch(): Promise<string>;
  /** Keeps the dump written at `file` as backup `backupId` of the database; returns its size. */
  put(databaseId: string, backupId: string, file: string): Promise<number>;
  /** A local file holding the backup (undefined when it is gone). */
  fetch(databaseId: string, backupId: string): Promise<string | undefined>;
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

  async remove(databaseId: string, backupId: string): Promise<void> {
    await rm(this.file(databaseId, backupId), { force: true });
  }

  async removeAll(databaseId: string): Promise<void> {
    await rm(this.dir(databaseId), { recursive: true, force: true });
  }
}
