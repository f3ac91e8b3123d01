// Cron and job runs of a real driver: a run is a command started once (by the host: a process
// group or a container) in the application's current release with its runtime environment, its output in the runtime log (a job run by a
// deployment: in that deployment's build log), killed when replaced or when its application stops.
// A `beforeDeployment` job runs here too, inside a rollout, before any instance starts.
import type { AppContext } from '../../../shared/context.js';
import { systemCall } from '../../../shared/context.js';
import type { LogLine } from '../../../shared/runtime/logs.js';
import type { RunExit } from './driver.js';
import type { RunProcess } from '../ports.js';
import { currentRelease } from '../deployments-storage.js';
import { appById, type DeploymentsTable } from '../storage.js';
import { BuildError } from '../../../shared/runtime/build.js';
import type { InstanceHost, OneOff } from './host.js';
import type { LogBatcher } from './logs.js';
import { commandOf, readRelease, type Release } from './release.js';

export class Runs {
  /** Cron and job runs whose processes run now, by run id. */
  private running = new Map<string, { appId: string; processId: string; run: OneOff }>();
  /** Runs to kill as soon as their process starts (killed while still being set up). */
  private doomed = new Set<string>();
  private stopped = false;
  /** Runs start once the previous Slipway's leftovers are dealt with (`boot`, from the runtime's start). */
  boot!: () => void;
  private booted = new Promise<void>((resolve) => (this.boot = resolve));

  constructor(
    private app: AppContext,
    private root: string,
    private host: InstanceHost,
    private logs: LogBatcher,
  ) {}

  /**
   * Runs a started cron or job run as a real process in the application's current release, with
   * its runtime environment; `onExit` ends the run. Output goes to the runtime log (a job run by a
   * deployment: to that deployment's log).
   */
  start(r: { runId: string; process: RunProcess; limitMs: number; deploymentId?: string }, onExit: (exit: RunExit) => Promise<void>): void {
    const p = r.process;
    void (async () => {
      await this.booted;
      const setup = await this.setup(p);
      if (typeof setup === 'string') return onExit({ code: 127, timedOut: false, note: setup });
      const base = {
        companyId: p.company_id,
        appId: p.app_id,
        kind: r.deploymentId ? ('build' as const) : ('runtime' as const),
        deploymentId: r.deploymentId ?? null,
      };
      const one = this.host.runOnce({
        ...setup,
        appId: p.app_id,
        processId: p.id,
        resourceTypeId: p.resource_type_id,
        limitMs: r.limitMs,
        line: (message, stream) =>
          this.logs.queue(base, { message, severity: stream === 'stderr' ? 'error' : 'info', processId: p.id, attributes: { run_id: r.runId } }),
      });
      this.running.set(r.runId, { appId: p.app_id, processId: p.id, run: one });
      // Replaced (or its application stopped) while it was being set up.
      if (this.doomed.delete(r.runId)) one.kill();
      const exit = await one.done;
      this.running.delete(r.runId);
      this.doomed.delete(r.runId);
      if (!this.stopped) await onExit(exit);
    })().catch((e: Error) => this.app.log.warn({ err: e.message, run: r.runId }, 'cron run failed to start or end'));
  }

  /** Kills the process of a run (replaced, or its application stopped). */
  kill(runId: string): void {
    const r = this.running.get(runId);
    if (r) r.run.kill();
    else this.doomed.add(runId);
  }

  /** Kills the processes of the application's runs (it stopped). */
  killOf(appId: string): void {
    for (const r of this.running.values()) if (r.appId === appId) r.run.kill();
  }

  /** The runs whose processes run now (usage sampling). */
  all(): Iterable<{ processId: string; run: OneOff }> {
    return this.running.values();
  }

  /** At stop: kills every run; their ends are not recorded (the next start ends them). */
  stop(): void {
    this.stopped = true;
    for (const r of this.running.values()) r.run.kill();
  }

  /** Where and how a run of the process runs, or why it cannot. */
  private async setup(p: RunProcess): Promise<{ command: string; release: Release; env: Record<string, string> } | string> {
    return this.app.database.db.transaction().execute(async (tx) => {
      const a = await appById(tx, p.app_id);
      const current = await currentRelease(tx, p.app_id);
      if (!a || !current) return 'the application has no running release';
      if (a.is_suspended || a.status === 'deleting') return 'the application is not running';
      const releaseId = current.build_of ?? current.id;
      const release = await readRelease(this.root, a.id, releaseId);
      if (!release) return `the release of deployment ${releaseId} is not on this machine`;
      const command = commandOf(p, release.info);
      if (command === null) return `process ${p.key} has no command (no entrypoint, no Procfile entry)`;
      const ctx = systemCall(this.app, tx, a.company_id);
      const env = (await this.app.ports.environment.application(ctx, a, this.app.ports.environment.system(this.app.config.brandPrefix, a, current), 'runtime'))
        .vars;
      return { command, release, env: this.host.env(env) };
    });
  }

  /**
   * A `beforeDeployment` job process: runs to completion in the new release before any instance
   * starts, its output in the deployment's build log; a non-zero exit fails the deployment (the
   * previous release keeps serving). The run is recorded like the process's other runs.
   */
  async beforeDeployment(
    p: RunProcess,
    d: DeploymentsTable,
    release: Release,
    env: Record<string, string>,
    log: (l: LogLine[]) => Promise<void>,
    signal: AbortSignal,
  ) {
    if (signal.aborted) throw new BuildError('The deployment ended before its jobs ran');
    const command = commandOf(p, release.info);
    if (command === null) {
      await log([{ message: `Job process ${p.key} has no command (no entrypoint, no Procfile entry); not run`, severity: 'warning', processId: p.id }]);
      return;
    }
    const started = await this.app.ports.processes.startDeploymentRun(p.id, d.id);
    if (started.outcome === 'skipped')
      throw new BuildError(`Job process ${p.key} could not run before the rollout: its previous run is still running; the previous release keeps serving`);
    await log([{ message: `Running job process ${p.key} before the rollout: ${command}`, processId: p.id }]);
    let chain = Promise.resolve();
    const attributes = started.runId ? { run_id: started.runId } : {};
    const one = this.host.runOnce({
      command,
      release,
      env,
      appId: p.app_id,
      processId: p.id,
      resourceTypeId: p.resource_type_id,
      limitMs: 0,
      line: (message, stream) => {
        chain = chain.then(() => log([{ message, severity: stream === 'stderr' ? 'error' : 'info', processId: p.id, attributes }]));
      },
    });
    const stop = () => one.kill();
    signal.addEventListener('abort', stop);
    const exit = await one.done;
    signal.removeEventListener('abort', stop);
    await chain;
    if (started.runId) await this.app.ports.processes.endRun(started.runId, exit);
    if (exit.code !== 0)
      throw new BuildError(
        `Job process ${p.key} exited with code ${exit.code} before the rollout; the deployment stops and the previous release keeps serving`,
      );
    await log([{ message: `Job process ${p.key} completed`, processId: p.id }]);
  }
}
