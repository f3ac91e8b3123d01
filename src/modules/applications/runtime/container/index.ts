// The container host (SLIPWAY_RUNTIME=container): releases are images (build.ts), every instance a
// container of the engine at DOCKER_HOST labelled with what it is (engine.ts), web instances
// published on a loopback port the edge proxies to. The engine restarts an instance that exits
// (restart policy `unless-stopped`, its own backoff), also while Slipway is down; Slipway follows
// each container's output into the runtime log and notes the restarts. A Slipway that starts again
// adopts the containers of each application's current release by their labels (same container,
// same port) and removes every other managed container (runs, other releases, deleted
// applications). Cron and job runs are containers of the release's image, ended by a stop at their
// time limit; the terminal is `exec` with a TTY in a running instance; usage is the engine's stats.
// Volumes and the company's private network of each container: placement.ts; TCP proxies: proxies.ts.
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../../shared/runtime/shell.js';
import { freePort, newInstance, type Group, type HostOutput, type Instance, type InstanceHost, type InstanceSpec, type OneOff, type RunSpec } from '../host.js';
import { setupRealRuntime, type RealRuntime } from '../real.js';
import { appReleasesDir, type Release } from '../release.js';
import type { AppsSettings } from '../settings.js';
import { appCacheDir } from '../source.js';
import { UsageSeries } from '../usage-series.js';
import { buildPhase } from './build.js';
import { CONTAINER_PORT, containerUsage, createContainer, engineClient, execShell, exitCodes, follow, L, missing, releaseImage } from './engine.js';
import { Placement } from './placement.js';
import { TcpProxies } from './proxies.js';
import { containerSettings, type ContainerSettings } from './settings.js';

/** A managed container a previous Slipway left, not yet adopted or removed. */
interface Left {
  id: string;
  labels: Record<string, string>;
  running: boolean;
  port: number | null;
}

/** A run's container (its id once created: usage is sampled from it). */
interface ContainerRun extends OneOff {
  container?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowSeconds = () => Math.floor(Date.now() / 1000);

class ContainerHost extends UsageSeries implements InstanceHost {
  readonly outlivesSlipway = true;
  private docker: Docker;
  private settings: ContainerSettings;
  private left: Left[] = [];
  private sampling = false;
  /** This Slipway's mark on its containers (from its data directory): what another Slipway on the engine runs is not touched. */
  private owner: string;
  private placement: Placement;
  private proxies: TcpProxies;

  constructor(
    app: AppContext,
    private apps: AppsSettings,
    private out: HostOutput,
  ) {
    super();
    this.settings = containerSettings(app.config);
    this.docker = engineClient(this.settings);
    this.owner = createHash('sha256').update(app.config.dataDir).digest('hex').slice(0, 16);
    this.placement = new Placement(app, this.docker, this.owner);
    this.proxies = new TcpProxies(app, this.docker);
  }

  buildPhase: InstanceHost['buildPhase'] = (ctx, d, a, spec) => buildPhase(this.docker, this.settings, this.apps.root, ctx, d, a, spec);

  /** Containers get the application's variables only: the image's own PATH, HOME and locale stay. */
  env(vars: Record<string, string>): Record<string, string> {
    return { ...vars };
  }

  async startGroup(g: Omit<Group, 'instances' | 'next'>, specs: InstanceSpec[], release: Release, env: Record<string, string>, adopt = false): Promise<Group> {
    const image = releaseImage(release);
    const group: Group = { ...g, instances: [], next: 0 };
    for (const s of specs) {
      const found = adopt
        ? this.left.find(
            (e) =>
              e.running &&
              e.labels[L.app] === g.appId &&
              e.labels[L.release] === g.releaseId &&
              e.labels[L.process] === s.processId &&
              e.labels[L.instance] === String(s.index) &&
              e.labels[L.command] === s.command &&
              e.labels[L.type] === s.type,
          )
        : undefined;
      if (found) {
        this.left = this.left.filter((e) => e !== found);
        const inst = newInstance(s, found.port, { container: found.id, startedAt: Date.now() });
        await this.reachDirectly(inst);
        group.instances.push(inst);
        this.watch(group, inst, nowSeconds());
        continue;
      }
      const inst = newInstance(s, s.type === 'web' ? await freePort() : null, { startedAt: Date.now() });
      group.instances.push(inst);
      try {
        // Started while placed: the network it joins is not pruned before it is on it.
        await this.placement.create(g.appId, s.key, async (placed) => {
          const c = await createContainer(this.docker, {
            ...placed,
            owner: this.owner,
            image,
            command: s.command,
            env,
            resourceTypeId: s.resourceTypeId,
            hostPort: inst.port,
            restart: true,
            labels: {
              [L.app]: g.appId,
              [L.deployment]: g.deploymentId,
              [L.release]: g.releaseId,
              [L.process]: s.processId,
              [L.instance]: String(s.index),
              [L.type]: s.type,
              [L.command]: s.command,
              ...(inst.port ? { [L.port]: String(inst.port) } : {}),
            },
          });
          inst.container = c.id;
          await c.start();
          await this.reachDirectly(inst);
        });
        this.watch(group, inst, 0);
      } catch (e) {
        this.out.note(group, inst, `Instance ${s.key}#${s.index} could not start: ${(e as Error).message}`, 'error');
      }
    }
    if (adopt) {
      const rest = this.left.filter((e) => e.labels[L.app] === g.appId);
      this.left = this.left.filter((e) => e.labels[L.app] !== g.appId);
      await Promise.all(rest.map((e) => this.remove(e.id)));
    }
    return group;
  }

  /**
   * Points the edge at a web instance's address on its company's bridge (port 8080), which the host
   * reaches: the published loopback port goes through the engine's userland proxy, which in the
   * bench cost about three quarters of the throughput. The published port stays for what a
   * restarted Slipway routes to before it adopts the container (leftPorts).
   */
  private async reachDirectly(inst: Instance): Promise<void> {
    if (!inst.port || !inst.container) return;
    const c = await this.docker
      .getContainer(inst.container)
      .inspect()
      .catch(() => null);
    const address = c && Object.values(c.NetworkSettings.Networks)[0]?.IPAddress;
    if (!address) return;
    inst.address = address;
    inst.port = CONTAINER_PORT;
  }

  /**
   * Follows an instance's output into the runtime log until it is stopped; each time the output
   * ends while the instance is not being stopped the container exited, and the engine restarts it.
   * The engine restarts within milliseconds, so an exit is told by its restart count, and the code
   * comes from the engine's announcement of the exit (the state of a restarted container no longer
   * has it).
   */
  private watch(g: Group, i: Instance, since: number): void {
    const c = this.docker.getContainer(i.container!);
    const exits = exitCodes(this.docker, i.container!, nowSeconds());
    i.exited = (async () => {
      try {
        let from = since;
        let exit: Promise<number | null> | null = null;
        let seen = (await c.inspect().catch(() => null))?.RestartCount ?? 0;
        while (!i.stopping) {
          exit ??= exits.next();
          // The output ends when the container exits; should the engine keep the stream open across
          // a fast restart, the exit itself ends it (after a moment for the last lines).
          const ac = new AbortController();
          const followed = follow(this.docker, c, from, (line, stream) => this.out.line(g, i, line, stream), ac.signal).catch(() => {});
          const ended = exit;
          const exited = await Promise.race([followed.then(() => false), ended.then((code) => code !== null)]);
          if (exited) {
            await Promise.race([followed, sleep(2000)]);
            ac.abort();
          }
          await followed;
          from = nowSeconds();
          if (i.stopping) break;
          const state = await c.inspect().catch((e: unknown) => (missing(e) ? null : undefined));
          if (state === null) {
            this.out.note(g, i, `Instance ${i.key}#${i.index} is gone (its container was removed)`, 'error');
            break;
          }
          if (state && (!state.State.Running || state.RestartCount > seen)) {
            // The announcement may come late on a loaded engine; a restarted container's own state
            // says 0, not the code it exited with, so it is used only for one that stays down.
            const waited = await Promise.race([exit, sleep(10_000).then(() => null)]);
            const code = waited ?? (state.State.Running ? null : state.State.ExitCode);
            exit = null;
            i.restarts += Math.max(1, state.RestartCount - seen);
            seen = state.RestartCount;
            this.out.note(
              g,
              i,
              `Instance ${i.key}#${i.index} exited (${code === null ? 'code unknown' : `code ${code}`}); the engine restarts it (restart ${i.restarts})`,
              'warning',
            );
            // A restarted container keeps its address on the bridge; read again all the same.
            await this.reachDirectly(i);
          }
          await sleep(500);
        }
      } finally {
        exits.close();
      }
    })();
  }

  private async remove(id: string): Promise<void> {
    await this.docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => {});
  }

  async stopGroup(g: Group, graceMs: number): Promise<void> {
    await Promise.all(
      g.instances.map(async (i) => {
        i.stopping = true;
        if (!i.container) return;
        // The engine sends SIGTERM, then SIGKILL after the grace period.
        await this.docker
          .getContainer(i.container)
          .stop({ t: Math.ceil(graceMs / 1000) })
          .catch(() => {});
        await this.remove(i.container);
        await i.exited;
      }),
    );
    await this.placement.prune();
  }

  runOnce(o: RunSpec): ContainerRun {
    let c: Docker.Container | undefined;
    let killed = false;
    let timedOut = false;
    const run: ContainerRun = {
      done: Promise.resolve({ code: 0, timedOut: false }),
      kill: () => {
        killed = true;
        void c?.kill().catch(() => {});
      },
    };
    run.done = (async () => {
      let timer: NodeJS.Timeout | null = null;
      try {
        // Started while placed (see startGroup); `c` is set before the start, for its removal.
        c = await this.placement.create(o.appId, null, async (placed) => {
          const made = await createContainer(this.docker, {
            ...placed,
            owner: this.owner,
            image: releaseImage(o.release),
            command: o.command,
            env: o.env,
            resourceTypeId: o.resourceTypeId,
            restart: false,
            labels: { [L.app]: o.appId, [L.process]: o.processId, [L.release]: o.release.id, [L.run]: '1' },
          });
          c = made;
          run.container = made.id;
          await made.start();
          return made;
        });
        if (killed) await c.kill().catch(() => {});
        const output = follow(this.docker, c, 0, o.line).catch(() => {});
        if (o.limitMs > 0)
          timer = setTimeout(() => {
            timedOut = true;
            void c!.stop({ t: 0 }).catch(() => {});
          }, o.limitMs);
        const exit = (await c.wait()) as { StatusCode: number };
        await output;
        return { code: exit.StatusCode, timedOut };
      } catch (e) {
        o.line(`could not start: ${(e as Error).message}`, 'stderr');
        return { code: 127, timedOut: false };
      } finally {
        if (timer) clearTimeout(timer);
        if (c) await this.remove(c.id);
      }
    })();
    return run;
  }

  /** Lists what a previous Slipway left: its runs' containers are removed, its instances kept for adoption. */
  async killOrphans(): Promise<number> {
    const list = await this.docker.listContainers({ all: true, filters: { label: [`${L.managed}=1`, `${L.owner}=${this.owner}`] } });
    const runs = list.filter((c) => c.Labels[L.run]);
    await Promise.all(runs.map((c) => this.remove(c.Id)));
    this.left = list
      .filter((c) => !c.Labels[L.run])
      .map((c) => ({ id: c.Id, labels: c.Labels, running: c.State === 'running', port: c.Labels[L.port] ? Number(c.Labels[L.port]) : null }));
    return runs.length;
  }

  async killLeftovers(): Promise<number> {
    const rest = this.left;
    this.left = [];
    await Promise.all(rest.map((e) => this.remove(e.id)));
    return rest.length;
  }

  leftPorts(appId: string): number[] {
    return this.left.filter((e) => e.labels[L.app] === appId && e.running && e.port).map((e) => e.port!);
  }

  /** Removes a deleted application's release records, cache, containers, images and volumes. */
  async removeApp(appId: string): Promise<void> {
    await rm(appReleasesDir(this.apps.root, appId), { recursive: true, force: true });
    await rm(appCacheDir(this.apps.root, appId), { recursive: true, force: true });
    const containers = await this.docker.listContainers({ all: true, filters: { label: [`${L.app}=${appId}`] } });
    await Promise.all(containers.map((c) => this.remove(c.Id)));
    await this.placement.removeApp(appId);
    const images = await this.docker.listImages({ filters: { reference: [`slipway/${appId}`] } });
    for (const img of images)
      for (const tag of img.RepoTags ?? [])
        await this.docker
          .getImage(tag)
          .remove()
          .catch(() => {});
  }

  /** `exec` of a shell with a TTY in a running instance of the release. */
  openShell(release: Release, spec: ShellSpec, env: Record<string, string>, io: ShellIO): ShellSession {
    return execShell(
      async () => {
        const [running] = await this.docker.listContainers({ filters: { label: [`${L.release}=${release.id}`], status: ['running'] } });
        return running ? this.docker.getContainer(running.Id) : `no instance of release ${release.id} is running`;
      },
      spec,
      env,
      io,
    );
  }

  /** CPU (cores) and memory (bytes, without the page cache) of every instance and run, from the engine's stats. */
  sample(serving: Iterable<Group>, runs: Iterable<{ processId: string; run: OneOff }>): void {
    // An iterator of the serving map: read once.
    const groups = [...serving];
    this.placement.measure();
    this.proxies.sync(groups);
    if (this.sampling) return;
    this.sampling = true;
    const targets: { processId: string; container: string }[] = [];
    for (const g of groups) for (const i of g.instances) if (i.container && !i.stopping) targets.push({ processId: i.processId, container: i.container });
    for (const r of runs) {
      const container = (r.run as ContainerRun).container;
      if (container) targets.push({ processId: r.processId, container });
    }
    void Promise.all(targets.map(async (t) => ({ ...t, ...(await containerUsage(this.docker.getContainer(t.container))) })))
      .then((rows) => {
        const now = Date.now();
        const byProcess = new Map<string, { cpu: number; memory: number; instances: number }>();
        for (const r of rows) {
          const p = byProcess.get(r.processId) ?? { cpu: 0, memory: 0, instances: 0 };
          p.cpu += r.cpu;
          p.memory += r.memory;
          if (r.up) p.instances++;
          byProcess.set(r.processId, p);
        }
        for (const [processId, p] of byProcess) this.record(processId, { t: now, ...p });
        this.sampled(now);
      })
      .catch(() => {})
      .finally(() => (this.sampling = false));
  }
}

/** The container runtime of a server with SLIPWAY_RUNTIME=container, wired in (from the module's setup, through runtime/index.ts). */
export function setupContainerRuntime(app: AppContext): RealRuntime {
  return setupRealRuntime(app, 'container', (settings, out) => new ContainerHost(app, settings, out));
}
