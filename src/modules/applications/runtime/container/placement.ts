// Where an application's containers live besides their image: the engine volumes of its persistent
// volumes (one per volume, named by its id) and its company's private network (a user-defined
// bridge per company, so its applications reach each other by internal hostname while the
// engine's isolation between bridges keeps other companies' containers out). Both are labelled
// with this Slipway's owner mark, so what a deleted volume or application leaves is found by label.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import { enqueue } from '../../../../shared/jobs.js';
import { internalEndpoints, internalHostnames } from '../../../databases/index.js';
import { appById } from '../../storage.js';
import { bridges, DatabaseForwarders } from './databases.js';
import { L, missing } from './engine.js';

export interface Placed {
  mounts: { source: string; target: string }[];
  network?: { name: string; aliases: string[] };
  /** `name:address` lines of the container's /etc/hosts: its company's databases at its bridge's gateway. */
  hosts?: string[];
}

/** The engine volume holding a persistent volume. */
export const volumeName = (volumeId: string) => `slipway-${volumeId}`;

/** How often the volumes' sizes are measured (the engine's disk usage walks every volume). */
const USAGE_EVERY_MS = 30_000;

/** Removes a deleted volume's engine volume, again later while a container still mounts it. */
export const VOLUME_REMOVE_JOB = 'container.volume.remove';
/** The longest wait between two tries of a volume still in use (doubling from 2 s). */
const IN_USE_MAX_WAIT_MS = 300_000;

declare module '../../../../shared/jobs.js' {
  interface JobMap {
    'container.volume.remove': { volumeId: string; waitMs?: number };
  }
}

export class Placement {
  private networks = new Map<string, Promise<string>>();
  private measured = 0;
  /** Containers being placed: a network is not pruned meanwhile (it may be about to be joined). */
  private placing = 0;
  private forwarders: DatabaseForwarders;
  private swept = false;

  constructor(
    private app: AppContext,
    private docker: Docker,
    private owner: string,
  ) {
    this.forwarders = new DatabaseForwarders(app, docker, owner);
    // A volume deleted through the API: its engine volume goes as soon as no container mounts it,
    // through a job queued in the deletion's transaction (so a crash does not forget it).
    app.jobs.register(VOLUME_REMOVE_JOB, { transactional: false, io: true, run: async (_db, job) => this.removeDeleted(job.payload) });
    app.events.on(
      'volume.deleted',
      async (tx, { volumeId }) => void (await enqueue(tx, { kind: VOLUME_REMOVE_JOB, payload: { volumeId }, subjectId: volumeId })),
    );
  }

  private async removeDeleted(p: { volumeId: string; waitMs?: number }) {
    try {
      await this.docker.getVolume(volumeName(p.volumeId)).remove();
    } catch (e) {
      if (missing(e)) return;
      // 409: a container (of the release still serving) mounts it; the next deployment or stop frees it.
      if ((e as { statusCode?: number }).statusCode !== 409) throw e;
      const waitMs = Math.min(IN_USE_MAX_WAIT_MS, (p.waitMs ?? 1000) * 2);
      return { rescheduleAt: new Date(Date.now() + waitMs), payload: { ...p, waitMs } };
    }
  }

  /** Removes the engine volumes whose volume is gone (deleted while Slipway was down or ran another runtime), once after start. */
  private async sweep(): Promise<void> {
    const { Volumes } = await this.docker.listVolumes({ filters: { label: [`${L.owner}=${this.owner}`] } });
    const apps = new Set((Volumes ?? []).flatMap((v) => v.Labels?.[L.app] ?? []));
    for (const appId of apps) {
      const kept = await this.app.ports.volumes.of(this.app.database.db, appId);
      await this.removeVolumes(appId, new Set(kept.map((v) => volumeName(v.id))));
    }
  }

  private labels(more: Record<string, string>): Record<string, string> {
    return { [L.managed]: '1', [L.owner]: this.owner, ...more };
  }

  /**
   * Creates a container of an application with its volumes and network: `processKey` names an
   * instance's process (its internal hostnames become its aliases on the network), null for a run.
   */
  async create<T>(appId: string, processKey: string | null, make: (placed: Placed) => Promise<T>): Promise<T> {
    this.placing++;
    try {
      const placed = await this.of(appId, processKey);
      // The company's databases answer on its bridge before the container starts.
      await this.forwarders.sync();
      return await make(placed);
    } finally {
      this.placing--;
    }
  }

  /** Engine volumes the application no longer has (deleted through the API) are removed on the way. */
  private async of(appId: string, processKey: string | null): Promise<Placed> {
    const db = this.app.database.db;
    const a = await appById(db, appId);
    if (!a) return { mounts: [] };
    const volumes = await this.app.ports.volumes.of(db, appId);
    const mounts = await Promise.all(
      volumes.map(async (v) => {
        // Creating a volume that exists returns it unchanged: its data stays across redeploys.
        await this.docker.createVolume({ Name: volumeName(v.id), Labels: this.labels({ [L.app]: appId, [L.volume]: v.id }) });
        return { source: volumeName(v.id), target: v.mountPath };
      }),
    );
    await this.removeVolumes(appId, new Set(volumes.map((v) => volumeName(v.id))));
    const internal = processKey ? `${a.name}-${processKey}` : null;
    const aliases = internal ? [internal, `${internal}.${a.namespace}.svc.cluster.local`] : [];
    const network = await this.network(a.company_id);
    return { mounts, network: { name: network, aliases }, hosts: await this.databaseHosts(a.company_id) };
  }

  /**
   * The internal hostnames of the company's databases, and those the configured engines give new
   * ones (a database created later resolves too), at the company bridge's gateway, where
   * DatabaseForwarders listens.
   */
  private async databaseHosts(companyId: string): Promise<string[]> {
    const bridge = (await bridges(this.docker, this.owner)).find((b) => b.companyId === companyId);
    if (!bridge) return [];
    const endpoints = await internalEndpoints(this.app, this.app.database.db, companyId);
    const names = new Set([...internalHostnames(this.app), ...endpoints.map((e) => e.host).filter((h) => !isIP(h))]);
    return [...names].map((n) => `${n}:${bridge.gateway}`);
  }

  /** The company's network, created on first use. */
  private network(companyId: string): Promise<string> {
    const name = `slipway-${this.owner.slice(0, 8)}-${createHash('sha256').update(companyId).digest('hex').slice(0, 12)}`;
    let made = this.networks.get(name);
    if (!made) {
      made = (async () => {
        const [found] = (await this.docker.listNetworks({ filters: { name: [name] } })).filter((n) => n.Name === name);
        if (!found) await this.docker.createNetwork({ Name: name, Driver: 'bridge', CheckDuplicate: true, Labels: this.labels({ [L.company]: companyId }) });
        return name;
      })();
      made.catch(() => this.networks.delete(name));
      this.networks.set(name, made);
    }
    return made;
  }

  /** Removes the application's engine volumes not in `keep` (one still mounted stays until its container goes). */
  private async removeVolumes(appId: string, keep: Set<string>): Promise<void> {
    const { Volumes } = await this.docker.listVolumes({ filters: { label: [`${L.app}=${appId}`, `${L.owner}=${this.owner}`] } });
    await Promise.all(
      (Volumes ?? [])
        .filter((v) => !keep.has(v.Name))
        .map((v) =>
          this.docker
            .getVolume(v.Name)
            .remove()
            .catch(() => {}),
        ),
    );
  }

  /** A deleted application's volumes, and the company networks no container uses any more. */
  async removeApp(appId: string): Promise<void> {
    await this.removeVolumes(appId, new Set());
    await this.prune();
  }

  /** Removes this Slipway's company networks that no container uses (after containers were removed). */
  async prune(): Promise<void> {
    if (this.placing) return;
    const networks = await this.docker.listNetworks({ filters: { label: [`${L.managed}=1`, `${L.owner}=${this.owner}`] } });
    for (const n of networks) {
      const inspected = (await this.docker
        .getNetwork(n.Id)
        .inspect()
        .catch(() => null)) as { Containers?: Record<string, unknown> } | null;
      if (!inspected || Object.keys(inspected.Containers ?? {}).length || this.placing) continue;
      this.networks.delete(n.Name);
      await this.docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => {});
    }
    // A removed network's database listeners close (also at Slipway's stop, its last prune).
    await this.forwarders.sync();
  }

  /**
   * Records the bytes each volume holds, from the engine's disk usage (at most every 30 s). The
   * local engine enforces no size: this is what the volume's `used_bytes` reports.
   */
  measure(): void {
    // The listeners follow the company's databases (created and deleted meanwhile) at each sample.
    void this.forwarders.sync();
    if (!this.swept) {
      this.swept = true;
      void this.sweep().catch(() => (this.swept = false));
    }
    const now = Date.now();
    if (now - this.measured < USAGE_EVERY_MS) return;
    this.measured = now;
    void recordVolumeUsage(this.app, this.docker, this.owner).catch(() => {});
  }
}

/** Records the bytes each of this Slipway's volumes on one engine holds, from the engine's disk usage. */
export async function recordVolumeUsage(app: AppContext, docker: Docker, owner: string): Promise<void> {
  const df = (await docker.df()) as { Volumes?: { Labels?: Record<string, string> | null; UsageData?: { Size: number } | null }[] };
  for (const v of df.Volumes ?? []) {
    const id = v.Labels?.[L.volume];
    if (!id || v.Labels?.[L.owner] !== owner) continue;
    const size = v.UsageData?.Size ?? -1;
    await app.ports.volumes.recordUsage(app.database.db, id, size >= 0 ? size : null);
  }
}
