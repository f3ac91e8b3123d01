// What a runtime driver of applications needs from the volumes module, which is built on
// applications: the volumes module fills `app.ports.volumes` at setup, so a driver mounts an
// application's persistent volumes without importing that module.
import type { Tx } from '../../shared/db/index.js';

/** A persistent volume as a driver mounts it into every process instance of its application. */
export interface MountedVolume {
  id: string;
  name: string;
  /** Absolute and normalised; no two volumes of an application nest. */
  mountPath: string;
  sizeGb: number;
}

export interface VolumesPort {
  /** The application's volumes, oldest first: mount all of them into each container it starts. */
  of(tx: Tx, appId: string): Promise<MountedVolume[]>;
  /** Records the bytes a volume holds, as the driver measured them (`used_bytes`; null when unknown). */
  recordUsage(tx: Tx, volumeId: string, usedBytes: number | null): Promise<void>;
}

declare module '../../shared/context.js' {
  interface Ports {
    volumes: VolumesPort;
  }
}

declare module '../../shared/events.js' {
  interface SignalMap {
    /** A volume was deleted through the API (in its transaction): a driver removes what holds its content. */
    'volume.deleted': { appId: string; volumeId: string };
  }
}
