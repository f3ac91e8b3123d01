// The applications runtime: what runs an application's deployments, processes, cron and job runs,
// terminal and usage metrics. One interface, one folder per driver (`simulated/`, `local/`), one
// driver per server chosen at start from SLIPWAY_RUNTIME (`index.ts`) and reached as
// `app.runtimes.applications`; the deployment phase machine and the processes module call only
// this interface.
import type { CallContext } from '../../../shared/context.js';
import type { MetricPoint } from '../../../shared/runtime/driver.js';
import type { PhaseRuntime } from '../../../shared/runtime/phases.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../shared/runtime/shell.js';
import type { RunProcess } from '../ports.js';
import type { ApplicationsTable, DeploymentsTable } from '../storage.js';

/** How a real run ended: exit code, whether its time limit killed it, and why it could not start. */
export interface RunExit {
  code: number;
  timedOut: boolean;
  note?: string;
}

export interface ApplicationsRuntime extends PhaseRuntime<DeploymentsTable, ApplicationsTable> {
  readonly name: 'simulated' | 'local' | 'container' | 'swarm';
  /**
   * Whether cron and job runs are real processes of this driver (it starts them with `startRun`
   * and their exit ends them), and `beforeDeployment` jobs run inside the rollout; otherwise their
   * length and outcome are simulated.
   */
  readonly runsProcesses: boolean;
  /** Starts a started run's process after its start committed (killed after `limitMs` unless 0); `onExit` ends the run. */
  startRun(r: { runId: string; process: RunProcess; limitMs: number; deploymentId?: string }, onExit: (exit: RunExit) => Promise<void>): void;
  /** Kills the process of a run (replaced, or its application stopped). */
  killRun(runId: string): void;
  /** Measured usage of a process's instances and runs; null where the driver measures none (the simulated series apply). */
  usageSeries(processId: string, metric: 'cpu-usage' | 'memory-usage' | 'instance-count', from: Date, to: Date, intervalSeconds: number): MetricPoint[] | null;
  /** An interactive shell in the release `releaseId` of the application, with the process's environment. */
  openShell(ctx: CallContext, appId: string, releaseId: string, spec: ShellSpec, io: ShellIO): ShellSession;
  /** At start (after the job engine): re-adopts or restarts what was running. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

declare module '../../../shared/context.js' {
  interface Runtimes {
    applications: ApplicationsRuntime;
  }
}
