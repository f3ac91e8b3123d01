// A real applications driver (SLIPWAY_RUNTIME=local or container): deployments build into
// releases and roll out as supervised instances behind the edge, on a host (host.ts: host processes
// in local/, containers in container/) that builds, starts, stops and runs them; everything else is
// here, the same for both. The phases of a deployment run
// here instead of on the simulated driver: each phase starts a task in the background (outside any
// transaction) and the deployment's job polls it until it ends; a Slipway restart loses the task and
// the next poll starts the phase again (every phase can run twice: the checkout starts from an
// empty directory, a release directory is replaced whole, a rollout stops what it started).
// Suspension, activation and deletion reach the processes through the `app.runtime.sync` job.
// It implements `ApplicationsRuntime` (../driver.ts): the phase machine and the processes module
// reach it only as `app.runtimes.applications`. Cron and job runs are in runs.ts, the batching of
// the processes' log lines in logs.ts, these drivers' queries in runtime-storage.ts.
import { rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CompiledQuery } from 'kysely';
import type { AppContext, CallContext } from '../../../shared/context.js';
import type { ApplicationsRuntime } from './driver.js';
import { systemCall } from '../../../shared/context.js';
import type { MetricPoint, PhaseRequest, PhaseResult } from '../../../shared/runtime/driver.js';
import { buildLogOf, type LogLine } from '../../../shared/runtime/logs.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../shared/runtime/shell.js';
import { enqueue, type JobKind } from '../../../shared/jobs.js';
import { PhaseTasks } from '../../../shared/runtime/tasks.js';
import type { RunProcess } from '../ports.js';
import type { RunExit } from './driver.js';
import { currentRelease } from '../deployments-storage.js';
import { edgeSettings } from '../settings.js';
import { appById, type ApplicationsTable, type DeploymentsTable } from '../storage.js';
import { BuildError } from '../../../shared/runtime/build.js';
import { appCacheDir, buildDir, checkout, type BuildSpec } from './source.js';
import { commandOf, readRelease } from './release.js';
import { registerExisting } from '../../domains/index.js';
import type { EdgeRequest, EdgeSite } from '../../../shared/edge/index.js';
import { badGateway } from '../../../shared/edge/pages.js';
import { describeGroup } from './edge.js';
import { Hibernation } from './hibernation.js';
import { LogBatcher } from './logs.js';
import { Runs } from './runs.js';
import { activeAppIds, appsToRegister, deploymentStatus, setDeploymentCommit } from './runtime-storage.js';
import { appsSettings, type AppsSettings } from './settings.js';
import { newInstance, waitReady, type Group, type HostOutput, type InstanceHost, type InstanceSpec } from './host.js';

export const SYNC_JOB = 'app.runtime.sync';

declare module '../../../shared/jobs.js' {
  interface JobMap {
    /** Makes an application's processes match its state (suspended, active, deleted). */
    'app.runtime.sync': { appId: string };
  }
}

export class RealRuntime implements ApplicationsRuntime {
  readonly runsProcesses = true;
  readonly settings: AppsSettings;
  readonly host: InstanceHost;
  readonly hibernation: Hibernation;
  private tasks: PhaseTasks;
  private serving = new Map<string, Group>();
  /** Applications whose processes are being changed (one change at a time per application). */
  private locks = new Map<string, Promise<unknown>>();
  private logs: LogBatcher;
  /** Cron and job runs. */
  private runs: Runs;
  private usageTimer: NodeJS.Timeout | null = null;
  /** Runs interrupted before this time were the previous Slipway's (`start`). */
  private readonly createdAt = new Date().toISOString();

  constructor(
    private app: AppContext,
    readonly name: 'local' | 'container' | 'swarm',
    makeHost: (settings: AppsSettings, out: HostOutput) => InstanceHost,
  ) {
    this.tasks = new PhaseTasks(app);
    this.settings = appsSettings(app.config);
    this.hibernation = new Hibernation(app, this);
    this.logs = new LogBatcher(app);
    this.host = makeHost(this.settings, {
      line: (g, i, line, stream) =>
        this.queueLog(g, { message: line, severity: stream === 'stderr' ? 'error' : 'info', processId: i.processId, attributes: { instance: i.index } }),
      note: (g, i, message, severity) => this.queueLog(g, { message, severity, processId: i.processId, attributes: { instance: i.index } }),
    });
    this.runs = new Runs(app, this.settings.root, this.host, this.logs);
  }

  // ---- Logs ----------------------------------------------------------------------------------

  private companyOf = new Map<string, string>();

  /** An instance's line goes to its application's runtime log, in small batches (logs.ts). */
  private queueLog(g: Group, line: LogLine) {
    const companyId = this.companyOf.get(g.appId);
    if (companyId) this.logs.queue({ companyId, appId: g.appId, kind: 'runtime', deploymentId: g.deploymentId }, line);
  }

  // ---- Phases --------------------------------------------------------------------------------

  /** Real phases judge nothing from the simulation's settings. */
  phaseReads(): CompiledQuery[] {
    return [];
  }

  /** Advances a deployment's phase: starts its task once, then reports it until it ends. */
  advance(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable, req: PhaseRequest): Promise<PhaseResult> {
    return this.tasks.advance(`${d.id}:${req.phase}`, async (signal) => {
      const work = await this.prepare(ctx, d, a, req.phase, signal);
      return async () => {
        const watch = this.watchCancel(d, req.phase, signal);
        try {
          await work();
        } finally {
          clearInterval(watch);
          if (signal.aborted) await this.dropBuild(d.id);
        }
      };
    });
  }

  /**
   * While a phase runs, looks at its deployment (committed state, so it works whatever server
   * cancelled it): once it is final (cancelled) the phase's command (clone, build, a
   * `beforeDeployment` job) is killed with its process group.
   */
  private watchCancel(d: DeploymentsTable, phase: string, signal: AbortSignal): NodeJS.Timeout {
    const timer = setInterval(() => {
      void deploymentStatus(this.app.database.db, d.id)
        .then(async (row) => {
          if (signal.aborted || (row && row.status === 'inProgress')) return;
          this.tasks.abort(d.id);
          await buildLogOf(
            this.app.database.db,
            { companyId: d.company_id, ownerId: d.app_id, deploymentId: d.id },
            phase,
          )([{ message: `The deployment ended during the ${phase}: its command was stopped`, severity: 'warning' }]);
        })
        .catch(() => {});
    }, this.settings.cancelCheckMs);
    return timer.unref();
  }

  /** Reads what a phase needs (inside the step's transaction) and returns the work to run outside it. */
  private async prepare(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable, phase: string, signal: AbortSignal): Promise<() => Promise<void>> {
    const root = this.settings.root;
    const log = buildLogOf(this.app.database.db, { companyId: d.company_id, ownerId: d.app_id, deploymentId: d.id }, phase);
    const fail = (message: string) => async () => {
      throw new BuildError(message);
    };
    const system = this.app.ports.environment.system(this.app.config.brandPrefix, a, d);
    if (phase === 'checkout' || phase === 'build') {
      const image = a.source === 'dockerImage';
      if (!image && !d.repo_url) return fail('The application has no repository to build');
      const env = phase === 'build' ? (await this.app.ports.environment.application(ctx, a, system, 'build')).vars : {};
      const spec: BuildSpec = {
        appId: a.id,
        deploymentId: d.id,
        repoUrl: d.repo_url,
        branch: d.branch ?? 'main',
        env,
        timeoutMs: this.settings.buildTimeoutMs,
        log,
        signal,
        cacheDir: a.build_cache_enabled ? appCacheDir(root, a.id) : null,
        access: phase === 'checkout' && d.repo_url ? await this.app.ports.gitAccess.env(ctx, d.repo_url) : undefined,
      };
      if (phase === 'checkout' && !image) {
        return async () => {
          const c = await checkout(root, spec);
          await setDeploymentCommit(this.app.database.db, d.id, c.sha, c.message.slice(0, 1000));
        };
      }
      return this.host.buildPhase(ctx, d, a, spec);
    }
    // rollout
    const releaseId = d.build_of ?? d.id;
    const release = await readRelease(root, a.id, releaseId);
    if (!release) return fail(`The release of deployment ${releaseId} is not on this machine (built by another runtime); deploy again`);
    const env = { ...(await this.app.ports.environment.application(ctx, a, system, 'runtime')).vars };
    const procs = await this.app.ports.processes.serving(ctx.tx, a.id);
    const specs: InstanceSpec[] = [];
    const paths = new Map<string, string | null>();
    for (const p of procs) {
      const command = commandOf(p, release.info);
      if (command === null) {
        await log([{ message: `Process ${p.key} has no command (no entrypoint, no Procfile entry); not started`, severity: 'warning' }]);
        continue;
      }
      paths.set(p.id, p.readinessPath);
      for (let i = 0; i < p.instances; i++) specs.push({ processId: p.id, key: p.key, type: p.type, command, index: i, resourceTypeId: p.resourceTypeId });
    }
    const jobs = await this.app.ports.processes.beforeDeployment(ctx.tx, a.id);
    this.companyOf.set(a.id, a.company_id);
    return () =>
      this.exclusive(a.id, async () => {
        for (const p of jobs) await this.runs.beforeDeployment(p, d, release, this.host.env(env), log, signal);
        await log([{ message: `Starting ${specs.length} instance(s) of release ${releaseId}` }]);
        const g = await this.host.startGroup({ appId: a.id, deploymentId: d.id, releaseId }, specs, release, this.host.env(env));
        const ready = await waitReady(g, this.settings.readyTimeoutMs, (i) => paths.get(i.processId) ?? null);
        const still = await deploymentStatus(this.app.database.db, d.id);
        if (!ready || still?.status !== 'inProgress') {
          await this.host.stopGroup(g, this.settings.stopGraceMs);
          if (!ready)
            throw new BuildError(
              `Health check failed: the new instances did not accept HTTP within ${this.settings.readyTimeoutMs} ms; the previous release keeps serving`,
            );
          throw new BuildError('The deployment ended during the rollout; the previous release keeps serving');
        }
        await log([{ message: 'All instances accept HTTP; switching traffic' }]);
        const old = this.serving.get(a.id);
        this.serving.set(a.id, g);
        // The old instances stop only once the edge sends nothing new to them.
        await this.edgeChanged();
        if (old) await this.retire(old);
      });
  }

  // ---- Terminal ----------------------------------------------------------------------------------

  /** A real shell in the release with the process's environment (the simulated one when the release is not on this machine). */
  openShell(_ctx: CallContext, appId: string, releaseId: string, spec: ShellSpec, io: ShellIO): ShellSession {
    let closed = false;
    let session: ShellSession | null = null;
    const pending: string[] = [];
    // The release's facts are read from disk first; input meanwhile is kept for the shell.
    void readRelease(this.settings.root, appId, releaseId).then((release) => {
      if (closed) return;
      session = release ? this.host.openShell(release, spec, this.host.env(spec.env), io) : this.app.simulated.openShell(spec, io);
      for (const text of pending.splice(0)) session.input(text);
    });
    return {
      input: (text) => (session ? session.input(text) : void pending.push(text)),
      close: () => {
        closed = true;
        session?.close();
      },
    };
  }

  // ---- Metrics ---------------------------------------------------------------------------------

  /** Samples the usage of every serving instance and run. */
  private sampleUsage(): void {
    this.host.sample(this.serving.values(), this.runs.all());
  }

  /** Measured CPU (cores), memory (bytes) or running instances of a process (a fresh sample first when the last is old). */
  usageSeries(processId: string, metric: 'cpu-usage' | 'memory-usage' | 'instance-count', from: Date, to: Date, intervalSeconds: number): MetricPoint[] {
    if (this.host.staleAfter(1000)) this.sampleUsage();
    return this.host.series(processId, metric, from, to, intervalSeconds);
  }

  // ---- Cron and job runs ------------------------------------------------------------------------

  /** Starts a started cron or job run's process (runs.ts). */
  startRun(r: { runId: string; process: RunProcess; limitMs: number; deploymentId?: string }, onExit: (exit: RunExit) => Promise<void>): void {
    this.runs.start(r, onExit);
  }

  /** Kills the process of a run (replaced, or its application stopped). */
  killRun(runId: string): void {
    this.runs.kill(runId);
  }

  // ---- Process groups ----------------------------------------------------------------------------

  /** Stops a group no longer routed: waits (up to the grace period) for its requests in flight, then stops it. */
  private async retire(g: Group) {
    // A proxy in front (nginx) finishes the requests it sent before the switch on its own; they
    // are not counted in `inflight`: a moment for them before the instances are told to stop.
    if (this.app.runtimes.edge?.driver === 'nginx') await new Promise((r) => setTimeout(r, 1000));
    const until = Date.now() + this.settings.stopGraceMs;
    while (Date.now() < until && g.instances.some((i) => i.inflight > 0)) await new Promise((r) => setTimeout(r, 50));
    await this.host.stopGroup(g, this.settings.stopGraceMs);
  }

  private exclusive<T>(appId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(appId) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.locks.set(appId, next);
    void next
      .finally(() => {
        if (this.locks.get(appId) === next) this.locks.delete(appId);
      })
      .catch(() => {});
    return next;
  }

  // ---- Keeping processes in line with the application ------------------------------------------

  /** Stops, starts or removes an application's processes to match its state. */
  sync(appId: string): Promise<void> {
    return this.exclusive(appId, async () => {
      const db = this.app.database.db;
      const a = await appById(db, appId);
      const serving = this.serving.get(appId);
      if (!a || a.is_suspended || a.status === 'deleting') {
        this.runs.killOf(appId);
        if (serving) {
          this.serving.delete(appId);
          await this.edgeChanged();
          await this.host.stopGroup(serving, this.settings.stopGraceMs);
        }
        if (!a) await this.host.removeApp(appId);
        return;
      }
      if (serving) return;
      const current = await currentRelease(db, appId);
      if (!current) return;
      const releaseId = current.build_of ?? current.id;
      const release = await readRelease(this.settings.root, appId, releaseId);
      if (!release) return;
      this.companyOf.set(appId, a.company_id);
      const { env, specs, paths } = await db.transaction().execute(async (tx) => {
        const ctx = systemCall(this.app, tx, a.company_id);
        const vars = (
          await this.app.ports.environment.application(ctx, a, this.app.ports.environment.system(this.app.config.brandPrefix, a, current), 'runtime')
        ).vars;
        const procs = await this.app.ports.processes.serving(tx, appId);
        const specs: InstanceSpec[] = [];
        const paths = new Map<string, string | null>();
        for (const p of procs) {
          const command = commandOf(p, release.info);
          if (command === null) continue;
          paths.set(p.id, p.readinessPath);
          for (let i = 0; i < p.instances; i++) specs.push({ processId: p.id, key: p.key, type: p.type, command, index: i, resourceTypeId: p.resourceTypeId });
        }
        return { env: vars, specs, paths };
      });
      // What a previous Slipway left running for this release is adopted (same instances, same ports).
      const g = await this.host.startGroup({ appId, deploymentId: current.id, releaseId }, specs, release, this.host.env(env), true);
      // Route at once: the edge answers 502 rather than 503 for the instants before they listen.
      this.serving.set(appId, g);
      await waitReady(g, this.settings.readyTimeoutMs, (i) => paths.get(i.processId) ?? null);
      await this.edgeChanged();
    });
  }

  /** Waits for the edge to serve the current serving groups (a proxy in front is reconfigured). */
  private edgeChanged(): Promise<void> {
    return this.app.runtimes.edge?.changed() ?? Promise.resolve();
  }

  /** The serving group of an application (the edge). */
  servingGroup(appId: string): Group | undefined {
    return this.serving.get(appId);
  }

  /** The applications with a serving group. */
  servingApps(): string[] {
    return [...this.serving.keys()];
  }

  /** Stops an application's processes until the next request (hibernation.ts); false when it has requests in flight or is not serving. */
  hibernate(appId: string): Promise<boolean> {
    return this.exclusive(appId, async () => {
      const g = this.serving.get(appId);
      if (!g || g.instances.some((i) => i.inflight > 0)) return false;
      this.serving.delete(appId);
      // A proxy in front sends the next request to the origin, which wakes the application.
      await this.edgeChanged();
      await this.host.stopGroup(g, this.settings.stopGraceMs);
      return true;
    });
  }

  /** A stand-in group of the web instances a previous Slipway left for an application, not yet adopted (for the edge's table). */
  private leftGroup(appId: string): Group | undefined {
    const ports = this.host.leftPorts(appId);
    if (!ports.length) return undefined;
    return {
      appId,
      deploymentId: '',
      releaseId: '',
      next: 0,
      instances: ports.map((port, index) => newInstance({ processId: '', key: '', type: 'web', command: '', index }, port)),
    };
  }

  /** The edge site of an application (null: unknown or being deleted). */
  private async site(a: ApplicationsTable | undefined): Promise<EdgeSite | null> {
    if (!a || a.status === 'deleting') return null;
    const { maintenance, ipRestriction, cdn } = await edgeSettings(this.app.database.db, a);
    const serve = (req: IncomingMessage, res: ServerResponse, info: EdgeRequest) => this.hibernation.serve(a, req, res, info);
    return {
      owner: { kind: 'app', id: a.id, companyId: a.company_id },
      maintenance,
      ipRestriction,
      // With the CDN on, responses the application marks cacheable are answered from the edge cache.
      serve: cdn.enabled
        ? (req, res, info) =>
            this.app.runtimes.edge!.cache.serve(req, res, info, { owner: a.id, version: cdn.version, purgedAt: cdn.purgedAt }, async () => {
              if ((await serve(req, res, info)) === 'refused') badGateway(res, 'The application could not be reached.');
            })
        : serve,
    };
  }

  /** Registers the applications with the edge (from setup()); which hostname names which application is the domains registry's. */
  registerEdge(): void {
    const edge = this.app.runtimes.edge!;
    edge.register({
      kind: 'app',
      byId: async (id) => this.site(await appById(this.app.database.db, id)),
      describe: async (id) => {
        const a = await appById(this.app.database.db, id);
        if (!a || a.status === 'deleting') return null;
        // Suspended: the origin answers (503) even while its instances are still being stopped.
        // Until `start` adopted them, the instances a previous Slipway left keep their ports at the edge.
        const g = this.serving.get(id) ?? this.leftGroup(id);
        return describeGroup(a.is_suspended ? undefined : g, await edgeSettings(this.app.database.db, a));
      },
    });
    // Requests a proxy in front answered keep an application awake as those the origin answered.
    edge.onServed((s) => s.owner.kind === 'app' && this.hibernation.seen(s.owner.id));
  }

  // ---- Start and stop ------------------------------------------------------------------------

  async start(): Promise<void> {
    const killed = await this.host.killOrphans();
    if (killed) this.app.log.warn({ killed }, 'killed cron and job processes left by a previous run');
    this.usageTimer = setInterval(() => this.sampleUsage(), this.settings.metricsIntervalMs).unref();
    const ended = await this.app.ports.processes.endInterruptedRuns(this.createdAt);
    if (ended) this.app.log.warn({ ended }, 'cron and job runs interrupted by the previous run ended');
    this.runs.boot();
    await registerExisting(this.app, 'app', await appsToRegister(this.app.database.db));
    // Every application that was serving serves again (its current release): the instances the
    // previous Slipway left for it are adopted when still alive, the missing ones started.
    const apps = await activeAppIds(this.app.database.db);
    const syncs = apps.map((a) => this.sync(a.id).catch((e: Error) => this.app.log.warn({ err: e.message, app: a.id }, 'could not start the application')));
    // What no application adopted (stopped, deleted, another release) is killed once they all did.
    void Promise.all(syncs)
      .then(() => this.host.killLeftovers())
      .then((n) => n && this.app.log.warn({ killed: n }, 'killed application instances left by a previous run'))
      .catch(() => {});
    this.hibernation.start();
  }

  async stop(): Promise<void> {
    this.hibernation.stop();
    if (this.usageTimer) clearInterval(this.usageTimer);
    this.runs.stop();
    // Instances that outlive Slipway are left running and adopted by the next start, as after a kill.
    if (this.settings.stopOnExit ?? !this.host.outlivesSlipway)
      await Promise.all([...this.serving.values()].map((g) => this.host.stopGroup(g, this.settings.stopGraceMs)));
    this.serving.clear();
    await this.logs.stop();
  }

  /** Removes what an unfinished build left behind. */
  async dropBuild(deploymentId: string): Promise<void> {
    await rm(buildDir(this.settings.root, deploymentId), { recursive: true, force: true });
  }
}

/** A real driver on `host`, wired in (from the module's setup, through runtime/index.ts). */
export function setupRealRuntime(app: AppContext, name: RealRuntime['name'], makeHost: (settings: AppsSettings, out: HostOutput) => InstanceHost): RealRuntime {
  const rt = new RealRuntime(app, name, makeHost);
  rt.registerEdge();
  const sync: JobKind<typeof SYNC_JOB> = { transactional: false, run: async (_db, job) => void (await rt.sync(job.payload.appId)) };
  app.jobs.register(SYNC_JOB, sync);
  const later = async (tx: Parameters<typeof enqueue>[0], appId: string) => void (await enqueue(tx, { kind: SYNC_JOB, payload: { appId }, subjectId: appId }));
  app.events.on('application.stopped', (tx, { application }) => later(tx, application.id));
  app.events.on('application.removed', (tx, { application }) => later(tx, application.id));
  // Activation (no deployment) starts the current release; a deployment's rollout already did.
  app.events.on('application.released', async (tx, { application, deploymentId }) => (deploymentId ? undefined : later(tx, application.id)));
  return rt;
}
