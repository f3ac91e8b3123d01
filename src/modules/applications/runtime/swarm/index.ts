// The swarm host (SLIPWAY_RUNTIME=swarm, docs/scaling.md): the container host's images, built on the
// manager's engine and made available to every node (images.ts), run as Swarm services of the swarm
// whose manager is at SLIPWAY_SWARM_DOCKER_HOST (else DOCKER_HOST). A release's process is one
// service (services.ts): replicas = its instance count, the instance of index i the task of slot
// i + 1; Swarm restarts and reschedules tasks (also while Slipway is down, and when a node is lost).
// Slipway follows the task list every SLIPWAY_SWARM_POLL_MS: a web instance is reached at its
// task's node address and the port that node published, and the edge is told when one moves.
// Services are the state: a Slipway that starts again adopts each application's current release's
// services by their labels and removes the rest. Cron and job runs are replicated-job services,
// removed when replaced or at their maximum run time. Each company's services share an overlay
// network of its own, where internal hostnames resolve across nodes, removed with their last
// service. A task's terminal and CPU and memory are its container's `exec` and stats on its node's
// own engine (SLIPWAY_SWARM_NODES): the manager's API proxies neither. An application with
// volumes is pinned to one node, where its local volumes live (volumes.ts).
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { AppContext } from '../../../../shared/context.js';
import { BuildError } from '../../../../shared/runtime/build.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../../shared/runtime/shell.js';
import { CLUSTER_BY_ID } from '../../../resources/index.js';
import { appById, type ApplicationsTable } from '../../storage.js';
import { buildPhase } from '../container/build.js';
import { containerUsage, engineClient, execShell, follow, imageTag, L, releaseImage } from '../container/engine.js';
import { newInstance, type Group, type HostOutput, type Instance, type InstanceHost, type InstanceSpec, type OneOff, type RunSpec } from '../host.js';
import { setupRealRuntime, type RealRuntime } from '../real.js';
import { appReleasesDir, type Release } from '../release.js';
import type { AppsSettings } from '../settings.js';
import { appCacheDir } from '../source.js';
import { UsageSeries } from '../usage-series.js';
import { distribute, forgetRepository, imageRef } from './images.js';
import { envFile, serviceSpec, wrapped } from './services.js';
import { swarmSettings, type SwarmSettings } from './settings.js';
import { SwarmVolumes, type SwarmNode } from './volumes.js';

/** What the host reads of a task (dockerode leaves tasks untyped). */
interface Task {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  Slot?: number;
  DesiredState: string;
  Status: {
    Timestamp?: string;
    State: string;
    Err?: string;
    ContainerStatus?: { ContainerID?: string; ExitCode?: number };
    PortStatus?: { Ports?: { TargetPort: number; PublishedPort: number }[] };
  };
}

/** Where a task runs: its node (the swarm's id) and its container there. */
interface Where {
  node: string;
  container: string;
}

/** A run's service (its task's container once running: usage is sampled from it). */
interface SwarmRun extends OneOff {
  where?: Where;
}

/** What a service of an application is made of. */
interface ServiceInput {
  image: string;
  command: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  key: string;
  /** A process's replicas; null for a run. */
  replicas: number | null;
  web: boolean;
  resourceTypeId?: string;
}

/** A managed service a previous Slipway left, not yet adopted or removed. */
interface Left {
  id: string;
  labels: Record<string, string>;
  replicas: number | null;
}

/** The services of a serving group, and the failed tasks already noted. */
interface Live {
  group: Group;
  services: { id: string; processId: string }[];
  failed: Set<string>;
  /** Whether the task list was read once (failures before that are not news). */
  seen: boolean;
  /** Ends the log streams (a removed service's stream does not end by itself). */
  logs: AbortController;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowSeconds = () => Math.floor(Date.now() / 1000);
const REGION = 'slipway.region';
const ENDED = ['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove'];

/** A node's address the host reaches: managers may report 0.0.0.0 as their status address. */
function nodeAddress(n: SwarmNode): string | undefined {
  const addr = n.Status?.Addr;
  if (addr && addr !== '0.0.0.0') return addr;
  return n.ManagerStatus?.Addr?.replace(/:\d+$/, '');
}

class SwarmHost extends UsageSeries implements InstanceHost {
  readonly outlivesSlipway = true;
  private docker: Docker;
  private settings: SwarmSettings;
  /** The nodes' own engines (images are copied there without a registry). */
  private nodes: Map<string, Docker>;
  /** The same engines by the nodes' addresses (a node whose hostname is not its name there). */
  private nodeAt: Map<string, Docker>;
  private owner: string;
  private left: Left[] = [];
  private live = new Map<Group, Live>();
  private networks = new Map<string, Promise<string>>();
  /** Company networks being removed (prune()), by company. */
  private removing = new Map<string, Promise<unknown>>();
  /** Services being created: no network is removed meanwhile (one may be about to be joined). */
  private placing = 0;
  private pruning: Promise<void> | null = null;
  private pruneAgain = false;
  private poller: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  /** Running tasks per process at the last listing (instance counts). */
  private running = new Map<string, number>();
  /** The swarm's nodes by id at the last listing: their hostname and address name their engine in SLIPWAY_SWARM_NODES. */
  private nodeInfo = new Map<string, SwarmNode>();
  private sampling = false;
  private volumes: SwarmVolumes;

  constructor(
    private app: AppContext,
    private apps: AppsSettings,
    private out: HostOutput,
  ) {
    super();
    this.settings = swarmSettings(app.config);
    this.docker = engineClient(this.settings.manager);
    this.nodes = new Map(this.settings.nodes.map((n) => [n.name, engineClient({ ...this.settings.manager, engine: n.engine })]));
    this.nodeAt = new Map(this.settings.nodes.map((n) => [n.address, this.nodes.get(n.name)!]));
    this.owner = createHash('sha256').update(app.config.dataDir).digest('hex').slice(0, 16);
    this.volumes = new SwarmVolumes(app, this.docker, [...this.nodes.values()], this.owner);
  }

  /** The container host's build on the manager's engine, then the image on every node. */
  buildPhase: InstanceHost['buildPhase'] = async (ctx, d, a, spec) => {
    const work = await buildPhase(this.docker, this.settings.manager, this.apps.root, ctx, d, a, spec);
    return async () => {
      await work();
      await this.ensureImage(imageTag(a.id, d.id), (message) => void spec.log([{ message }]).catch(() => {}));
    };
  };

  env(vars: Record<string, string>): Record<string, string> {
    return { ...vars };
  }

  /** The image on every node (a node added since the build, a rollback's older image); the reference services name. */
  private async ensureImage(tag: string, say: (message: string) => void = () => {}): Promise<string> {
    await distribute(this.docker, this.settings.registry, this.settings.registryAuth, this.nodes, tag, say);
    return imageRef(this.settings.registry, tag);
  }

  /**
   * The company's overlay network (created on first use, removed with its last service: prune()):
   * its services reach each other there, other companies' not.
   */
  private network(companyId: string): Promise<string> {
    let found = this.networks.get(companyId);
    if (!found) {
      const name = `slipway-company-${companyId}`;
      found = (async () => {
        // A removal under way ends first: the network is then made again rather than found gone.
        await this.removing.get(companyId);
        const existing = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
        if (existing) return existing.Id;
        const created = await this.docker.createNetwork({
          Name: name,
          Driver: 'overlay',
          CheckDuplicate: true,
          Labels: { [L.managed]: '1', [L.owner]: this.owner, 'slipway.company': companyId },
        });
        return created.id;
      })();
      found.catch(() => this.networks.delete(companyId));
      this.networks.set(companyId, found);
    }
    return found;
  }

  /** The region constraint of an application: its cluster's name, when any node carries a region label. */
  private async constraints(a: ApplicationsTable): Promise<string[]> {
    const nodes = (await this.docker.listNodes()) as SwarmNode[];
    const cluster = CLUSTER_BY_ID.get(a.cluster_id);
    return cluster && nodes.some((n) => n.Spec?.Labels?.[REGION]) ? [`node.labels.${REGION}==${cluster.name}`] : [];
  }

  /** The variables as a new secret (immutable: one per service, removed with it). */
  private async secret(appId: string, env: Record<string, string>): Promise<{ id: string; name: string }> {
    const name = `slipway-env-${randomBytes(8).toString('hex')}`;
    const s = (await this.docker.createSecret({
      Name: name,
      Labels: { [L.managed]: '1', [L.owner]: this.owner, [L.app]: appId },
      Data: Buffer.from(envFile(env)).toString('base64'),
    })) as { id: string };
    return { id: s.id, name };
  }

  /** Creates a service of the application's release image (a process's, or a run's when `replicas` is null). */
  private async createService(a: ApplicationsTable, o: ServiceInput): Promise<string> {
    this.placing++;
    try {
      return await this.placeService(a, o);
    } catch (e) {
      // A network removed behind Slipway's back is looked up again next time.
      this.networks.delete(a.company_id);
      throw e;
    } finally {
      this.placing--;
    }
  }

  private async placeService(a: ApplicationsTable, o: ServiceInput): Promise<string> {
    const region = await this.constraints(a);
    const [network, placed, secret, config] = await Promise.all([
      this.network(a.company_id),
      this.volumes.place(a, region),
      this.secret(a.id, o.env),
      o.command
        ? Promise.resolve({})
        : this.docker
            .getImage(o.image.slice(o.image.indexOf('slipway/')))
            .inspect()
            .then((i) => i.Config),
    ]);
    const internal = `${a.name}-${o.key}`;
    const spec = serviceSpec({
      name: `slipway-${internal.slice(0, 30)}-${randomBytes(4).toString('hex')}`.replace(/[^a-zA-Z0-9-]/g, '-'),
      image: o.image,
      command: wrapped(o.command, config),
      labels: { [L.managed]: '1', [L.owner]: this.owner, 'slipway.secret': secret.name, ...o.labels },
      secret,
      resourceTypeId: o.resourceTypeId,
      replicas: o.replicas,
      web: o.web,
      network,
      aliases: o.replicas === null ? [] : [internal, `${internal}.${a.namespace}.svc.cluster.local`],
      constraints: [...region, ...placed.constraints],
      mounts: placed.mounts,
      graceMs: this.apps.stopGraceMs,
    }) as unknown as Docker.ServiceSpec;
    // With the registry's login the manager hands it to the nodes that pull the image (the
    // X-Registry-Auth header, as `docker service create --with-registry-auth`): in no env or label.
    const auth = this.settings.registryAuth;
    const svc = await (auth ? this.docker.createService(auth, spec) : this.docker.createService(spec as Docker.CreateServiceOptions)).catch((e: unknown) => {
      void this.removeSecret(secret.name);
      throw e;
    });
    return svc.id as string;
  }

  async startGroup(g: Omit<Group, 'instances' | 'next'>, specs: InstanceSpec[], release: Release, env: Record<string, string>, adopt = false): Promise<Group> {
    const a = await appById(this.app.database.db, g.appId);
    if (!a) throw new BuildError('The application is gone');
    // Instances have no port until their task runs and its node published one (refresh()).
    const image = await this.ensureImage(releaseImage(release));
    const group: Group = { ...g, instances: specs.map((s) => newInstance(s, null, { startedAt: Date.now() })), next: 0 };
    const live: Live = { group, services: [], failed: new Set(), seen: false, logs: new AbortController() };
    this.live.set(group, live);
    const processes = new Map<string, Instance[]>();
    for (const i of group.instances) processes.set(i.processId, [...(processes.get(i.processId) ?? []), i]);
    for (const [processId, instances] of processes) {
      const first = instances[0]!;
      const labels = {
        [L.app]: g.appId,
        [L.deployment]: g.deploymentId,
        [L.release]: g.releaseId,
        [L.process]: processId,
        [L.type]: first.type,
        [L.command]: first.command,
      };
      const found = adopt
        ? this.left.find((e) => e.replicas === instances.length && Object.entries(labels).every(([k, v]) => k === L.deployment || e.labels[k] === v))
        : undefined;
      try {
        let id: string;
        if (found) {
          this.left = this.left.filter((e) => e !== found);
          id = found.id;
        } else {
          id = await this.createService(a, {
            image,
            command: first.command,
            env,
            labels,
            key: first.key,
            replicas: instances.length,
            web: first.type === 'web',
            resourceTypeId: first.resourceTypeId,
          });
        }
        live.services.push({ id, processId });
        this.followLogs(live, id, first, found ? nowSeconds() : 0);
      } catch (e) {
        this.out.note(group, first, `Process ${first.key} could not start: ${(e as Error).message}`, 'error');
      }
    }
    if (adopt) {
      const rest = this.left.filter((e) => e.labels[L.app] === g.appId);
      this.left = this.left.filter((e) => e.labels[L.app] !== g.appId);
      await Promise.all(rest.map((e) => this.removeService(e.id)));
    }
    this.poll();
    await this.refresh();
    return group;
  }

  /**
   * A service's output stream (every task's, from the manager), read as a container's (same
   * options, same multiplexed stream) until `signal` ends it.
   */
  private logsOf(id: string, signal: AbortSignal): Docker.Container {
    const svc = this.docker.getService(id);
    return { logs: (o: object) => svc.logs({ ...o, abortSignal: signal }) } as unknown as Docker.Container;
  }

  /** Follows a service's output into the runtime log, as its first instance's, until the group stops. */
  private followLogs(live: Live, id: string, i: Instance, since: number): void {
    const svc = this.logsOf(id, live.logs.signal);
    i.exited = (async () => {
      let from = since;
      while (!i.stopping) {
        await follow(this.docker, svc, from, (line, stream) => this.out.line(live.group, i, line, stream)).catch(() => {});
        from = nowSeconds();
        if (i.stopping) break;
        await sleep(1000);
      }
    })();
  }

  /** Lists the tasks every SLIPWAY_SWARM_POLL_MS while groups serve. */
  private poll(): void {
    if (this.poller) return;
    this.poller = setInterval(() => void this.refresh().catch(() => {}), this.settings.pollMs).unref();
  }

  /**
   * Reads where each serving instance's task runs: the newest running task of its slot on a node
   * that is ready gives its address and published port; none (moving, node lost) leaves it without
   * a port until the replacement runs. The edge is told when an address changed.
   */
  private refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const ids = [...this.live.values()].flatMap((l) => l.services.map((s) => s.id));
      if (!ids.length) return;
      const [tasks, nodes] = await Promise.all([
        this.docker.listTasks({ filters: { service: ids } }) as Promise<Task[]>,
        this.docker.listNodes() as Promise<SwarmNode[]>,
      ]);
      this.learnNodes(nodes);
      const addresses = new Map(nodes.filter((n) => n.Status?.State === 'ready').map((n) => [n.ID, nodeAddress(n)]));
      let moved = false;
      this.running.clear();
      for (const live of this.live.values()) {
        for (const svc of live.services) {
          const mine = tasks.filter((t) => t.ServiceID === svc.id);
          for (const i of live.group.instances.filter((x) => x.processId === svc.processId)) {
            const slot = mine.filter((t) => t.Slot === i.index + 1);
            const task = slot
              .filter((t) => t.DesiredState === 'running' && t.Status.State === 'running' && addresses.get(t.NodeID ?? ''))
              .sort((x, y) => (y.Status.Timestamp ?? '').localeCompare(x.Status.Timestamp ?? ''))[0];
            if (task) this.running.set(i.processId, (this.running.get(i.processId) ?? 0) + 1);
            const container = task?.Status.ContainerStatus?.ContainerID;
            i.meta = task && container ? ({ node: task.NodeID!, container } satisfies Where) : undefined;
            for (const t of slot.filter((x) => ['failed', 'rejected'].includes(x.Status.State) && !live.failed.has(x.ID))) {
              live.failed.add(t.ID);
              if (!live.seen || i.stopping) continue;
              i.restarts++;
              const why =
                t.Status.ContainerStatus?.ExitCode !== undefined
                  ? `exited (code ${t.Status.ContainerStatus.ExitCode})`
                  : `failed (${t.Status.Err ?? t.Status.State})`;
              this.out.note(live.group, i, `Instance ${i.key}#${i.index} ${why}; the swarm restarts it (restart ${i.restarts})`, 'warning');
            }
            if (i.type !== 'web' || i.stopping) continue;
            const port = task?.Status.PortStatus?.Ports?.[0]?.PublishedPort ?? null;
            const address = task ? addresses.get(task.NodeID ?? '') : undefined;
            if (port !== i.port || address !== i.address) {
              i.port = port;
              i.address = address;
              moved = true;
            }
          }
        }
        live.seen = true;
      }
      if (moved) await this.app.runtimes.edge?.changed();
    })().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** Removes a service (its tasks get SIGTERM, SIGKILL after the grace period), then its secret once no task holds it. */
  private async removeService(id: string): Promise<void> {
    const svc = this.docker.getService(id);
    const info = (await svc.inspect().catch(() => null)) as { Spec?: { Labels?: Record<string, string> } } | null;
    await svc.remove().catch(() => {});
    const secret = info?.Spec?.Labels?.['slipway.secret'];
    if (secret) void this.removeSecret(secret);
    this.prune();
  }

  /** Removes the company networks no service of this Slipway uses any more (in the background; asked again while running, it runs again). */
  private prune(): void {
    this.pruneAgain = true;
    this.pruning ??= (async () => {
      while (this.pruneAgain) {
        this.pruneAgain = false;
        await this.pruneOnce().catch(() => {});
      }
    })().finally(() => (this.pruning = null));
  }

  /**
   * A network is in use until the tasks of its removed services are gone (their stop grace period):
   * its removal is tried again every second for a while, each time only if no service joined it
   * meanwhile.
   */
  private async pruneOnce(): Promise<void> {
    const mine = [`${L.managed}=1`, `${L.owner}=${this.owner}`];
    for (let attempt = 0; attempt < 90; attempt++) {
      if (attempt) await sleep(1000);
      if (this.placing) continue;
      const [networks, services] = await Promise.all([
        this.docker.listNetworks({ filters: { label: mine, driver: ['overlay'] } }),
        this.docker.listServices({ filters: { label: mine } }),
      ]);
      const used = new Set(
        services
          .flatMap((svc) => (svc as unknown as { Spec: { TaskTemplate?: { Networks?: { Target: string }[] } } }).Spec.TaskTemplate?.Networks ?? [])
          .map((n) => n.Target),
      );
      const idle = networks.filter((n) => !used.has(n.Id) && !used.has(n.Name));
      if (!idle.length) return;
      let left = false;
      for (const n of idle) {
        const company = n.Labels?.['slipway.company'] ?? n.Name;
        // Created meanwhile: the service is about to join it.
        if (this.placing) {
          left = true;
          break;
        }
        this.networks.delete(company);
        const removal = this.docker
          .getNetwork(n.Id)
          .remove()
          .then(() => true)
          .catch((e: { statusCode?: number }) => e.statusCode === 404);
        this.removing.set(company, removal);
        if (!(await removal)) left = true;
        if (this.removing.get(company) === removal) this.removing.delete(company);
      }
      if (!left) return;
    }
  }

  /** A secret in use by a task that is still stopping cannot be removed yet: tried again for a while. */
  private async removeSecret(name: string): Promise<void> {
    for (let attempt = 0; attempt < 60; attempt++) {
      const done = await this.docker
        .getSecret(name)
        .remove()
        .then(() => true)
        .catch((e: { statusCode?: number }) => e.statusCode === 404);
      if (done) return;
      await sleep(1000);
    }
  }

  async stopGroup(g: Group, _graceMs: number): Promise<void> {
    for (const i of g.instances) i.stopping = true;
    const live = this.live.get(g);
    this.live.delete(g);
    if (!this.live.size && this.poller) {
      clearInterval(this.poller);
      this.poller = null;
    }
    // The grace period is the services' StopGracePeriod (the same setting).
    await Promise.all((live?.services ?? []).map((s) => this.removeService(s.id)));
    live?.logs.abort();
    await Promise.all(g.instances.map((i) => i.exited));
  }

  runOnce(o: RunSpec): SwarmRun {
    let id: string | undefined;
    let ended: 'killed' | 'timedOut' | null = null;
    const end = (why: 'killed' | 'timedOut') => {
      ended ??= why;
      if (id) void this.removeService(id);
    };
    const logs = new AbortController();
    const run: SwarmRun = { done: Promise.resolve({ code: 0, timedOut: false }), kill: () => end('killed') };
    run.done = (async () => {
      let timer: NodeJS.Timeout | null = null;
      try {
        const a = await appById(this.app.database.db, o.appId);
        if (!a) throw new Error('the application is gone');
        const image = await this.ensureImage(releaseImage(o.release));
        id = await this.createService(a, {
          image,
          command: o.command,
          env: o.env,
          labels: { [L.app]: o.appId, [L.process]: o.processId, [L.release]: o.release.id, [L.run]: '1' },
          key: o.processId,
          replicas: null,
          web: false,
          resourceTypeId: o.resourceTypeId,
        });
        if (ended) end(ended);
        const output = follow(this.docker, this.logsOf(id, logs.signal), 0, o.line).catch(() => {});
        if (o.limitMs > 0) timer = setTimeout(() => end('timedOut'), o.limitMs);
        let task: Task | undefined;
        while (!ended && !task) {
          await sleep(500);
          const tasks = (await this.docker.listTasks({ filters: { service: [id] } }).catch(() => [])) as Task[];
          task = tasks.find((t) => ENDED.includes(t.Status.State));
          // Where it runs, for its usage.
          const up = tasks.find((t) => t.Status.State === 'running' && t.NodeID && t.Status.ContainerStatus?.ContainerID);
          run.where = up ? { node: up.NodeID!, container: up.Status.ContainerStatus!.ContainerID! } : undefined;
          // A node not listed yet (no serving group lists them): its engine is found once it is.
          if (up && !this.nodeInfo.has(up.NodeID!)) void (this.docker.listNodes() as Promise<SwarmNode[]>).then((n) => this.learnNodes(n)).catch(() => {});
        }
        // The output of a task that ended has reached the manager within a moment.
        await Promise.race([output, sleep(1000)]);
        logs.abort();
        await this.removeService(id);
        if (ended === 'timedOut') return { code: 137, timedOut: true };
        if (ended === 'killed') return { code: 143, timedOut: false };
        if (task!.Status.State === 'rejected') o.line(`could not start: ${task!.Status.Err ?? 'rejected by the swarm'}`, 'stderr');
        return { code: task!.Status.ContainerStatus?.ExitCode ?? (task!.Status.State === 'complete' ? 0 : 127), timedOut: false };
      } catch (e) {
        o.line(`could not start: ${(e as Error).message}`, 'stderr');
        if (id) await this.removeService(id);
        return { code: 127, timedOut: false };
      } finally {
        if (timer) clearTimeout(timer);
        logs.abort();
      }
    })();
    return run;
  }

  /** Lists what a previous Slipway left: its runs' services are removed, its processes' kept for adoption. */
  async killOrphans(): Promise<number> {
    const list = await this.docker.listServices({ filters: { label: [`${L.managed}=1`, `${L.owner}=${this.owner}`] } });
    const labels = (s: Docker.Service) => (s as unknown as { Spec: { Labels: Record<string, string> } }).Spec.Labels ?? {};
    const runs = list.filter((s) => labels(s)[L.run]);
    await Promise.all(runs.map((s) => this.removeService(s.ID)));
    this.left = list
      .filter((s) => !labels(s)[L.run])
      .map((s) => ({
        id: s.ID,
        labels: labels(s),
        replicas: (s as unknown as { Spec: { Mode?: { Replicated?: { Replicas?: number } } } }).Spec.Mode?.Replicated?.Replicas ?? null,
      }));
    return runs.length;
  }

  async killLeftovers(): Promise<number> {
    const rest = this.left;
    this.left = [];
    await Promise.all(rest.map((e) => this.removeService(e.id)));
    return rest.length;
  }

  /** Until adopted, what a previous Slipway left is not routed (the edge answers from the origin meanwhile): its tasks are not on the loopback interface. */
  leftPorts(): number[] {
    return [];
  }

  /** Removes a deleted application's release records, cache, services, secrets and images (on the manager and every node). */
  async removeApp(appId: string): Promise<void> {
    await rm(appReleasesDir(this.apps.root, appId), { recursive: true, force: true });
    await rm(appCacheDir(this.apps.root, appId), { recursive: true, force: true });
    const services = await this.docker.listServices({ filters: { label: [`${L.app}=${appId}`, `${L.owner}=${this.owner}`] } });
    await Promise.all(services.map((s) => this.removeService(s.ID)));
    await this.volumes.removeApp(appId);
    // Its tags, and with a registry the registry's name of them: tagged on the manager for the push,
    // and on a node that pulled, a digest (a service names its image by digest).
    const repos = [imageRef(null, `slipway/${appId}`), ...(this.settings.registry ? [imageRef(this.settings.registry, `slipway/${appId}`)] : [])];
    if (this.settings.registry) {
      // A registry that cannot be reached keeps them: said in the log, the deletion goes on.
      await forgetRepository(this.settings.registry, this.settings.registryAuth, `slipway/${appId}`).catch((e: Error) =>
        this.app.log.warn({ app: appId, err: e.message }, "the registry's copies of a deleted application's images were not deleted"),
      );
    }
    const ours = (ref: string) => repos.some((repo) => ref.startsWith(`${repo}:`) || ref.startsWith(`${repo}@`));
    for (const engine of new Set([this.docker, ...this.nodes.values()])) {
      const images = await engine.listImages({ filters: { reference: repos } }).catch(() => []);
      for (const img of images)
        for (const ref of [...(img.RepoTags ?? []), ...(img.RepoDigests ?? [])].filter(ours))
          // A tag still used by a task that is stopping is removed by force: the layers go with the container.
          await engine
            .getImage(ref)
            .remove({ force: true })
            .catch(() => {});
    }
  }

  /** Keeps the swarm's nodes of a listing (their engines are found by hostname or address). */
  private learnNodes(nodes: SwarmNode[]): void {
    this.nodeInfo = new Map(nodes.map((n) => [n.ID, n]));
  }

  /** The engine of a node (by its swarm id), from SLIPWAY_SWARM_NODES: by hostname, else by address. */
  private engineOn(nodeId: string): Docker | undefined {
    const n = this.nodeInfo.get(nodeId);
    if (!n) return undefined;
    return this.nodes.get(n.Description?.Hostname ?? '') ?? this.nodeAt.get(nodeAddress(n) ?? '');
  }

  /** The task's container on its node's engine (undefined when that node's engine is not known). */
  private containerOf(where: Where | undefined): Docker.Container | undefined {
    return where ? this.engineOn(where.node)?.getContainer(where.container) : undefined;
  }

  /** `exec` of a shell with a TTY in a running task of the release, through the engine of the task's node. */
  openShell(release: Release, spec: ShellSpec, env: Record<string, string>, io: ShellIO): ShellSession {
    return execShell(
      async () => {
        const services = (await this.docker.listServices({ filters: { label: [`${L.release}=${release.id}`, `${L.owner}=${this.owner}`] } })).filter(
          (svc) => !(svc as unknown as { Spec: { Labels?: Record<string, string> } }).Spec.Labels?.[L.run],
        );
        const none = `no instance of release ${release.id} is running`;
        if (!services.length) return none;
        const [tasks, nodes] = await Promise.all([
          this.docker.listTasks({ filters: { service: services.map((svc) => svc.ID), 'desired-state': ['running'] } }) as Promise<Task[]>,
          this.docker.listNodes() as Promise<SwarmNode[]>,
        ]);
        this.learnNodes(nodes);
        const running = tasks.filter((t) => t.Status.State === 'running' && t.NodeID && t.Status.ContainerStatus?.ContainerID);
        for (const t of running) {
          const c = this.containerOf({ node: t.NodeID!, container: t.Status.ContainerStatus!.ContainerID! });
          if (c) return c;
        }
        return running.length ? `the engine of the node running release ${release.id} is not known (SLIPWAY_SWARM_NODES)` : none;
      },
      spec,
      env,
      io,
    );
  }

  /**
   * CPU (cores) and memory (bytes, without the page cache) of every task of the serving groups and
   * the runs, from the stats of their containers on their nodes' engines; running instances from
   * the last task listing.
   */
  sample(_serving: Iterable<Group>, runs: Iterable<{ processId: string; run: OneOff }>): void {
    this.volumes.measure();
    if (this.sampling) return;
    this.sampling = true;
    const byProcess = new Map<string, { cpu: number; memory: number; instances: number }>();
    const targets: { processId: string; c: Docker.Container; run: boolean }[] = [];
    for (const live of this.live.values()) {
      for (const svc of live.services) byProcess.set(svc.processId, { cpu: 0, memory: 0, instances: this.running.get(svc.processId) ?? 0 });
      for (const i of live.group.instances) {
        const c = i.stopping ? undefined : this.containerOf(i.meta as Where | undefined);
        if (c) targets.push({ processId: i.processId, c, run: false });
      }
    }
    for (const r of runs) {
      const c = this.containerOf((r.run as SwarmRun).where);
      if (c) targets.push({ processId: r.processId, c, run: true });
    }
    void Promise.all(targets.map(async (t) => ({ ...t, ...(await containerUsage(t.c)) })))
      .then((rows) => {
        const now = Date.now();
        for (const r of rows) {
          const p = byProcess.get(r.processId) ?? { cpu: 0, memory: 0, instances: 0 };
          p.cpu += r.cpu;
          p.memory += r.memory;
          if (r.run && r.up) p.instances++;
          byProcess.set(r.processId, p);
        }
        for (const [processId, p] of byProcess) this.record(processId, { t: now, ...p });
        this.sampled(now);
      })
      .catch(() => {})
      .finally(() => (this.sampling = false));
  }
}

/** The swarm runtime of a server with SLIPWAY_RUNTIME=swarm, wired in (from the module's setup, through runtime/index.ts). */
export function setupSwarmRuntime(app: AppContext): RealRuntime {
  return setupRealRuntime(app, 'swarm', (settings, out) => new SwarmHost(app, settings, out));
}
