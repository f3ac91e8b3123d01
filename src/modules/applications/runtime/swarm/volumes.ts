// Persistent volumes on the swarm (docs/scaling.md "Volumes live on one node"): a Swarm `local`
// volume exists on one node only, so an application with volumes is pinned to one node, and all its
// tasks and runs run there and share the data. The pin is a node label of the swarm itself,
// `slipway.pin.<app id>=volumes`, set on the first placement with volumes (a ready, active node of
// the application's region holding the fewest pins) and kept until the application is deleted: it
// survives Slipway's restarts, and an operator moves it by moving the label (and the data). Each
// volume is the engine volume the container host names (`slipway-<volume id>`), created by the node
// when the first task mounts it, labelled so its size is measured (from the disk usage of each
// node's engine) and so it is found for removal.
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import type { ApplicationsTable } from '../../storage.js';
import { L } from '../container/engine.js';
import { recordVolumeUsage, volumeName } from '../container/placement.js';

/** What the host reads of a node (dockerode leaves nodes untyped). */
export interface SwarmNode {
  ID: string;
  Version?: { Index?: number };
  Description?: { Hostname?: string };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Addr?: string };
  Spec?: { Labels?: Record<string, string>; Availability?: string; Role?: string; Name?: string };
}

/** A volume mount of a service's tasks. */
export interface ServiceMount {
  Type: 'volume';
  Source: string;
  Target: string;
  VolumeOptions: { Labels: Record<string, string> };
}

const PIN = 'slipway.pin.';
const pinLabel = (appId: string) => `${PIN}${appId}`;
const USAGE_EVERY_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class SwarmVolumes {
  /** Pins being chosen, by application: one choice at a time per application. */
  private pinning = new Map<string, Promise<string>>();
  private measured = 0;

  constructor(
    private app: AppContext,
    private docker: Docker,
    private engines: Docker[],
    private owner: string,
  ) {}

  /**
   * The mounts of an application's volumes and the constraint that pins its tasks to their node
   * (none without volumes). `region` is the application's region constraint: a first pin is
   * chosen among that region's nodes.
   */
  async place(a: ApplicationsTable, region: string[]): Promise<{ mounts: ServiceMount[]; constraints: string[] }> {
    const volumes = await this.app.ports.volumes.of(this.app.database.db, a.id);
    if (!volumes.length) return { mounts: [], constraints: [] };
    await this.pin(a.id, region);
    const labels = (volumeId: string) => ({ [L.managed]: '1', [L.owner]: this.owner, [L.app]: a.id, [L.volume]: volumeId });
    // Volumes the application no longer has (deleted through the API) go once no task holds them.
    void this.removeVolumes(a.id, new Set(volumes.map((v) => volumeName(v.id))));
    return {
      mounts: volumes.map((v) => ({ Type: 'volume', Source: volumeName(v.id), Target: v.mountPath, VolumeOptions: { Labels: labels(v.id) } })),
      constraints: [`node.labels.${pinLabel(a.id)}==volumes`],
    };
  }

  /** The node the application is pinned to (its id), pinning it first when it is not. */
  private pin(appId: string, region: string[]): Promise<string> {
    let p = this.pinning.get(appId);
    if (!p) {
      p = this.choose(appId, region).finally(() => this.pinning.delete(appId));
      this.pinning.set(appId, p);
    }
    return p;
  }

  private async choose(appId: string, region: string[]): Promise<string> {
    const key = pinLabel(appId);
    for (let attempt = 0; ; attempt++) {
      const nodes = (await this.docker.listNodes()) as SwarmNode[];
      const pinned = nodes.find((n) => n.Spec?.Labels?.[key]);
      if (pinned) return pinned.ID;
      // The region constraint is `node.labels.slipway.region==<name>`: the same test on the labels.
      const wanted = region.map((c) => /^node\.labels\.([^=]+)==(.*)$/.exec(c)).filter((m) => m !== null);
      const candidates = nodes
        .filter((n) => n.Status?.State === 'ready' && (n.Spec?.Availability ?? 'active') === 'active')
        .filter((n) => wanted.every((m) => n.Spec?.Labels?.[m[1]!] === m[2]))
        .map((n) => ({ n, pins: Object.keys(n.Spec?.Labels ?? {}).filter((k) => k.startsWith(PIN)).length }))
        .sort((x, y) => x.pins - y.pins || (x.n.Description?.Hostname ?? '').localeCompare(y.n.Description?.Hostname ?? ''));
      const node = candidates[0]?.n;
      if (!node) throw new Error("No ready node in the application's region to hold its volumes");
      const done = await this.label(node, { ...node.Spec?.Labels, [key]: 'volumes' });
      if (done) return node.ID;
      // Another writer changed the node meanwhile (its version moved on): read again.
      if (attempt >= 10) throw new Error(`Could not pin the application's volumes to node ${node.Description?.Hostname ?? node.ID}`);
    }
  }

  /** Writes a node's labels at the version read; false when the node changed since. */
  private async label(node: SwarmNode, labels: Record<string, string>): Promise<boolean> {
    return this.docker
      .getNode(node.ID)
      .update({ version: node.Version?.Index, ...node.Spec, Labels: labels })
      .then(() => true)
      .catch((e: { statusCode?: number; message?: string }) => {
        if (e.statusCode === 500 && /out of sequence|update out of/.test(e.message ?? '')) return false;
        throw e;
      });
  }

  /** Removes this Slipway's volumes of an application not in `keep` from every node (one a stopping task still holds is tried again for a while). */
  private async removeVolumes(appId: string, keep: Set<string>, attempts = 1): Promise<void> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt) await sleep(1000);
      const left = await Promise.all(
        this.engines.map(async (engine) => {
          const { Volumes } = await engine
            .listVolumes({ filters: { label: [`${L.app}=${appId}`, `${L.owner}=${this.owner}`] } })
            .catch(() => ({ Volumes: [] }));
          const gone = await Promise.all(
            (Volumes ?? [])
              .filter((v) => !keep.has(v.Name))
              .map((v) =>
                engine
                  .getVolume(v.Name)
                  .remove()
                  .then(() => true)
                  .catch((e: { statusCode?: number }) => e.statusCode === 404),
              ),
          );
          return gone.some((g) => !g);
        }),
      );
      if (!left.some(Boolean)) return;
    }
  }

  /** A deleted application: its volumes on every node (once its tasks are gone), then its pin. */
  async removeApp(appId: string): Promise<void> {
    await this.removeVolumes(appId, new Set(), 60);
    const key = pinLabel(appId);
    for (let attempt = 0; attempt < 10; attempt++) {
      const nodes = ((await this.docker.listNodes()) as SwarmNode[]).filter((n) => n.Spec?.Labels?.[key]);
      if (!nodes.length) return;
      const done = await Promise.all(
        nodes.map((n) => {
          const labels = { ...n.Spec?.Labels };
          delete labels[key];
          return this.label(n, labels);
        }),
      );
      if (done.every(Boolean)) return;
    }
  }

  /**
   * Records the bytes each volume holds, from the disk usage of every node's engine (at most every
   * 30 s: it walks every volume); no engine enforces a size, as on the container host.
   */
  measure(): void {
    const now = Date.now();
    if (now - this.measured < USAGE_EVERY_MS) return;
    this.measured = now;
    for (const engine of this.engines) void recordVolumeUsage(this.app, engine, this.owner).catch(() => {});
  }
}
