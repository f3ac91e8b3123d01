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

const runtimes = new WeakMap<AppContext, ObjectStorageRuntime>();

export function createRuntime(app: AppContext): ObjectStorageRuntime {
  const settings = objectStorageSettings(app.config);
  const store = settings.upstream ? new UpstreamBlobStore(settings.upstream) : new FileSystemBlobStore(join(app.config.dataDir, 'object-storage'));
  const rt: ObjectStorageRuntime = {
    settings,
    store,
    clockOffsetMs: 0,
    now: () => Date.now() + rt.clockOffsetMs,
  };
  runtimes.set(app, rt);
  return rt;
}

export function runtime(app: AppContext): ObjectStorageRuntime {
  const rt = runtimes.get(app);
  if (!rt) throw new Error('object storage is not set up on this server');
  return rt;
}
