// The local application runtime (SLIPWAY_RUNTIME=local): deployments build from git into release
// directories and roll out as supervised processes behind the edge. The phases of a deployment run
// here instead of on the simulated driver: each phase starts a task in the background (outside any
// transaction) and the deployment's job polls it until it ends; a Slipway restart loses the task and
// the next poll starts the phase again (every phase can run twice: the checkout starts from an
// empty directory, a release directory is replaced whole, a rollout stops what it started).
// Suspension, activation and deletion reach the processes through the `app.runtime.sync` job.
import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AppContext, CallContext } from '../../../shared/context.js';
import { systemCall } from '../../../shared/context.js';
import type { PhaseRequest, PhaseResult } from '../../../shared/runtime/driver.js';
import { writeLogs, type LogLine } from '../../../shared/runtime/logs.js';
import { enqueue, type JobKind } from '../../../shared/jobs.js';
import * as envVars from '../../env-vars/service.js';
import { serviceOfHostname } from '../../domains/service.js';
import { runnableProcesses } from '../../processes/service.js';
import { edgeSettings } from '../settings.js';
import { appById, currentRelease, type ApplicationsTable, type DeploymentsTable } from '../storage.js';
import { appReleasesDir, build, BuildError, checkout, commandOf, readRelease, releaseDir, buildDir } from './build.js';
import { createEdge, type Route } from './edge.js';
import { localSettings, type LocalSettings } from './settings.js';
import { runtimes } from './registry.js';
import { Supervisor, type Group, type InstanceSpec } from './supervisor.js';

export const SYNC_JOB = 'app.runtime.sync';

declare module '../../../shared/jobs.js' {
  interface JobMap {
    /** Makes an application's processes match its state (suspended, active, deleted). */
    'app.runtime.sync': { appId: string };
  }
}

type Outcome = { ok: true } | { ok: false; reason: string };
interface Task {
  phase: string;
  outcome?: Outcome;
}

export { localRuntime } from './registry.js';

export class LocalRuntime {
  readonly settings: LocalSettings;
  readonly supervisor: Supervisor;
  private tasks = new Map<string, Task>();
  private serving = new Map<string, Group>();
  /** Applications whose processes are being changed (one change at a time per application). */
  private locks = new Map<string, Promise<unknown>>();
  private edge: Server | null = null;
  edgePort = 0;
  private pendingLogs = new Map<string, { base: Parameters<typeof writeLogs>[1]; lines: LogLine[] }>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(private app: AppContext) {
    this.settings = localSettings(app.config);
    this.supervisor = new Supervisor(
      this.settings.root,
      (g, i, line, stream) =>
        this.queueLog(g, { message: line, severity: stream === 'stderr' ? 'error' : 'info', processId: i.processId, attributes: { instance: i.index } }),
      (g, i, message, severity) => this.queueLog(g, { message, severity, processId: i.processId, attributes: { instance: i.index } }),
    );
  }

  // ---- Logs ----------------------------------------------------------------------------------

  private companyOf = new Map<string, string>();

  /** Runtime log lines are written in small batches (one short transaction each). */
  private queueLog(g: Group, line: LogLine) {
    const companyId = this.companyOf.get(g.appId);
    if (!companyId) return;
    const key = `${g.appId}:${g.deploymentId}`;
    const entry = this.pendingLogs.get(key) ?? { base: { companyId, appId: g.appId, kind: 'runtime' as const, deploymentId: g.deploymentId }, lines: [] };
    entry.lines.push(line);
    this.pendingLogs.set(key, entry);
    this.flushTimer ??= setTimeout(() => void this.flushLogs(), 100);
  }

  private async flushLogs() {
    this.flushTimer = null;
    const batches = [...this.pendingLogs.values()];
    this.pendingLogs.clear();
    for (const b of batches)
      await writeLogs(this.app.database.db, b.base, b.lines).catch((e: Error) => this.app.log.warn({ err: e.message }, 'runtime log lines lost'));
  }

  private buildLog(d: DeploymentsTable, phase: string) {
    return (lines: LogLine[]) =>
      writeLogs(
        this.app.database.db,
        { companyId: d.company_id, appId: d.app_id, kind: 'build', deploymentId: d.id },
        lines.map((l) => ({ ...l, attributes: { phase, ...(l.attributes ?? {}) } })),
      );
  }

  // ---- Phases --------------------------------------------------------------------------------

  /** Advances a deployment's phase: starts its task once, then reports it until it ends. */
  async advance(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable, req: PhaseRequest): Promise<PhaseResult> {
    const key = `${d.id}:${req.phase}`;
    let task = this.tasks.get(key);
    if (!task) {
      task = { phase: req.phase };
      this.tasks.set(key, task);
      const t = task;
      let work: () => Promise<void>;
      try {
        work = await this.prepare(ctx, d, a, req.phase);
      } catch (e) {
        this.tasks.delete(key);
        throw e;
      }
      void work()
        .then(() => (t.outcome = { ok: true }))
        .catch((e: Error) => {
          if (!(e instanceof BuildError)) this.app.log.warn({ err: e, deployment: d.id }, 'local runtime phase failed');
          t.outcome = { ok: false, reason: e.message };
        })
        .finally(() => this.app.jobs.wake());
    }
    if (!task.outcome) return { state: 'running', checkAfterMs: 100 };
    // The result is reported until the deployment moves on; then the task is forgotten.
    setTimeout(() => this.tasks.delete(key), 60_000).unref();
    if (task.outcome.ok) return { state: 'done', lines: [] };
    return { state: 'failed', reason: task.outcome.reason, lines: [{ message: task.outcome.reason, severity: 'error' }] };
  }

  /** Reads what a phase needs (inside the step's transaction) and returns the work to run outside it. */
  private async prepare(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable, phase: string): Promise<() => Promise<void>> {
    const root = this.settings.root;
    const log = this.buildLog(d, phase);
    const fail = (message: string) => async () => {
      throw new BuildError(message);
    };
    const system = envVars.systemVariables(this.app.config.brandPrefix, a, d);
    if (phase === 'checkout' || phase === 'build') {
      if (a.source === 'dockerImage') return fail('Deploying a Docker image needs the container driver, which the local runtime does not have');
      if (a.build_type === 'dockerfile') return fail('Building a Dockerfile needs the container driver, which the local runtime does not have');
      if (!d.repo_url) return fail('The application has no repository to build');
      const env = phase === 'build' ? (await envVars.resolveEnvironment(ctx, a, system, 'build')).vars : {};
      const spec = {
        appId: a.id,
        deploymentId: d.id,
        repoUrl: d.repo_url,
        branch: d.branch ?? 'main',
        env,
        timeoutMs: this.settings.buildTimeoutMs,
        log,
        signal: new AbortController().signal,
      };
      if (phase === 'checkout') {
        return async () => {
          const c = await checkout(root, spec);
          await this.app.database.db
            .updateTable('deployments')
            .set({ commit_sha: c.sha, commit_message: c.message.slice(0, 1000) })
            .where('id', '=', d.id)
            .execute();
        };
      }
      return async () => void (await build(root, spec, { sha: d.commit_sha ?? '', message: d.commit_message ?? '' }));
    }
    // rollout
    const releaseId = d.build_of ?? d.id;
    const info = await readRelease(root, a.id, releaseId);
    if (!info) return fail(`The release of deployment ${releaseId} is not on this machine (built by another runtime); deploy again`);
    const env = { ...(await envVars.resolveEnvironment(ctx, a, system, 'runtime')).vars };
    const procs = await runnableProcesses(ctx.tx, a.id);
    const specs: InstanceSpec[] = [];
    const paths = new Map<string, string | null>();
    for (const p of procs) {
      const command = commandOf(p, info);
      if (!command) {
        await log([{ message: `Process ${p.key} has no command (no entrypoint, no Procfile entry); not started`, severity: 'warning' }]);
        continue;
      }
      paths.set(p.id, p.readinessPath);
      for (let i = 0; i < p.instances; i++) specs.push({ processId: p.id, key: p.key, type: p.type, command, index: i });
    }
    this.companyOf.set(a.id, a.company_id);
    return () =>
      this.exclusive(a.id, async () => {
        await log([{ message: `Starting ${specs.length} instance(s) of release ${releaseId}` }]);
        const g = await this.supervisor.startGroup(
          { appId: a.id, deploymentId: d.id, releaseId },
          specs,
          releaseDir(root, a.id, releaseId),
          this.processEnv(env),
        );
        const ready = await this.supervisor.waitReady(g, this.settings.readyTimeoutMs, (i) => paths.get(i.processId) ?? null);
        const still = await this.app.database.db.selectFrom('deployments').select('status').where('id', '=', d.id).executeTakeFirst();
        if (!ready || still?.status !== 'inProgress') {
          await this.supervisor.stopGroup(g, this.settings.stopGraceMs);
          if (!ready)
            throw new BuildError(
              `Health check failed: the new instances did not accept HTTP within ${this.settings.readyTimeoutMs} ms; the previous release keeps serving`,
            );
          throw new BuildError('The deployment ended during the rollout; the previous release keeps serving');
        }
        await log([{ message: 'All instances accept HTTP; switching traffic' }]);
        const old = this.serving.get(a.id);
        this.serving.set(a.id, g);
        if (old) await this.retire(old);
      });
  }

  private processEnv(env: Record<string, string>): Record<string, string> {
    return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', LANG: process.env.LANG ?? 'C.UTF-8', ...env };
  }

  /** Stops a group no longer routed: waits (up to the grace period) for its requests in flight, then stops it. */
  private async retire(g: Group) {
    const until = Date.now() + this.settings.stopGraceMs;
    while (Date.now() < until && g.instances.some((i) => i.inflight > 0)) await new Promise((r) => setTimeout(r, 50));
    await this.supervisor.stopGroup(g, this.settings.stopGraceMs);
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
        if (serving) {
          this.serving.delete(appId);
          await this.supervisor.stopGroup(serving, this.settings.stopGraceMs);
        }
        if (!a) await rm(appReleasesDir(this.settings.root, appId), { recursive: true, force: true });
        return;
      }
      if (serving) return;
      const current = await currentRelease(db, appId);
      if (!current) return;
      const releaseId = current.build_of ?? current.id;
      const info = await readRelease(this.settings.root, appId, releaseId);
      if (!info) return;
      this.companyOf.set(appId, a.company_id);
      const { env, specs, paths } = await db.transaction().execute(async (tx) => {
        const ctx = systemCall(this.app, tx, a.company_id);
        const vars = (await envVars.resolveEnvironment(ctx, a, envVars.systemVariables(this.app.config.brandPrefix, a, current), 'runtime')).vars;
        const procs = await runnableProcesses(tx, appId);
        const specs: InstanceSpec[] = [];
        const paths = new Map<string, string | null>();
        for (const p of procs) {
          const command = commandOf(p, info);
          if (!command) continue;
          paths.set(p.id, p.readinessPath);
          for (let i = 0; i < p.instances; i++) specs.push({ processId: p.id, key: p.key, type: p.type, command, index: i });
        }
        return { env: vars, specs, paths };
      });
      const g = await this.supervisor.startGroup(
        { appId, deploymentId: current.id, releaseId },
        specs,
        releaseDir(this.settings.root, appId, releaseId),
        this.processEnv(env),
      );
      // Route at once: the edge answers 502 rather than 503 for the instants before they listen.
      this.serving.set(appId, g);
      await this.supervisor.waitReady(g, this.settings.readyTimeoutMs, (i) => paths.get(i.processId) ?? null);
    });
  }

  /** The serving group of an application (the edge). */
  servingGroup(appId: string): Group | undefined {
    return this.serving.get(appId);
  }

  private async route(host: string): Promise<Route | null> {
    const db = this.app.database.db;
    const suffix = `.${this.settings.baseDomain}`;
    let a: ApplicationsTable | undefined;
    if (host.endsWith(suffix) && !host.slice(0, -suffix.length).includes('.')) {
      a = await db
        .selectFrom('applications')
        .selectAll()
        .where('name', '=', host.slice(0, -suffix.length))
        .orderBy('created_at')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
    } else {
      const id = await serviceOfHostname(db, host);
      a = id ? await appById(db, id) : undefined;
    }
    if (!a || a.status === 'deleting') return null;
    return { appId: a.id, ...(await edgeSettings(db, a)) };
  }

  // ---- Start and stop ------------------------------------------------------------------------

  async start(): Promise<void> {
    const killed = await this.supervisor.killOrphans();
    if (killed) this.app.log.warn({ killed }, 'killed application processes left by a previous run');
    this.edge = createEdge({ resolve: (h) => this.route(h), serving: (id) => this.serving.get(id), trustedProxies: this.settings.trustedProxies });
    await new Promise<void>((resolve, reject) => {
      this.edge!.once('error', reject);
      this.edge!.listen(this.settings.edgePort, this.settings.edgeHost, () => resolve());
    });
    this.edgePort = (this.edge.address() as { port: number }).port;
    // Every application that was serving serves again (its current release, started afresh).
    const apps = await this.app.database.db.selectFrom('applications').select('id').where('is_suspended', '=', 0).execute();
    for (const a of apps) void this.sync(a.id).catch((e: Error) => this.app.log.warn({ err: e.message, app: a.id }, 'could not start the application'));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.edge ? this.edge.close(() => resolve()) : resolve()));
    this.edge?.closeAllConnections();
    await Promise.all([...this.serving.values()].map((g) => this.supervisor.stopGroup(g, this.settings.stopGraceMs)));
    this.serving.clear();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    await this.flushLogs();
  }

  /** Removes what an unfinished build left behind. */
  async dropBuild(deploymentId: string): Promise<void> {
    await rm(buildDir(this.settings.root, deploymentId), { recursive: true, force: true });
  }
}

/** Wires the local runtime into a server when SLIPWAY_RUNTIME=local (from the module's setup). */
export function setupLocalRuntime(app: AppContext): void {
  if (app.config.runtime !== 'local') return;
  const rt = new LocalRuntime(app);
  runtimes.set(app, rt);
  const sync: JobKind<typeof SYNC_JOB> = { transactional: false, run: async (_db, job) => void (await rt.sync(job.payload.appId)) };
  app.jobs.register(SYNC_JOB, sync);
  const later = async (tx: Parameters<typeof enqueue>[0], appId: string) => void (await enqueue(tx, { kind: SYNC_JOB, payload: { appId }, subjectId: appId }));
  app.events.on('application.stopped', (tx, { application }) => later(tx, application.id));
  app.events.on('application.removed', (tx, { application }) => later(tx, application.id));
  // Activation (no deployment) starts the current release; a deployment's rollout already did.
  app.events.on('application.released', async (tx, { application, deploymentId }) => (deploymentId ? undefined : later(tx, application.id)));
}
