// The object-storage area's per-server state: its settings, the blob store behind the data plane
// and the clock that decides when rotated keys expire (tests move it forward instead of waiting).
import { join } from 'node:path';
import type { AppContext } from '../../shared/context.js';
import { FileSystemBlobStore, type BlobStore } from './blobs.js';
import { UpstreamBlobStore } from './blobs-s3.js';
import { objectStorageSettings, type ObjectStorageSettings } from './settings.js';

export interface ObjectStorageRuntime {
  settings: ObjectStorageSettings;
  store: BlobStore;
  /** Milliseconds added to the wall clock when deciding whether a rotated key has expired. */
  clockOffsetMs: number;
  now(): number;
}

declare module '../../shared/context.js' {
  interface Runtimes {
    /** Object storage's settings, blob store and clock. */
    objectStorage: ObjectStorageRuntime;
  }
}

export function createRuntime(app: AppContext): ObjectStorageRuntime {
  const settings = objectStorageSettings(app.config);
  const store = settings.upstream ? new UpstreamBlobStore(settings.upstream) : new FileSystemBlobStore(join(app.config.dataDir, 'object-storage'));
  const rt: ObjectStorageRuntime = {
    settings,
    store,
    clockOffsetMs: 0,
    now: () => Date.now() + rt.clockOffsetMs,
  };
  app.runtimes.objectStorage = rt;
  return rt;
}

export function runtime(app: AppContext): ObjectStorageRuntime {
  const rt = app.runtimes.objectStorage;
  if (!rt) throw new Error('object storage is not set up on this server');
  return rt;
}
