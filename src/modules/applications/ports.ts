// What the applications module needs from the processes module, which is built on it: the
// processes module provides this port at setup (`app.ports.processes`), so applications (its
// settings, deployments and runtime drivers) never import processes.
import type { Tx } from '../../shared/db/index.js';
import type { RunExit } from './runtime/driver.js';

/** A process as a runtime runs it once (a cron or job run); the processes module owns its rows. */
export interface RunProcess {
  id: string;
  app_id: string;
  company_id: string;
  key: string;
  type: string;
  entrypoint: string;
  resource_type_id: string;
}

/** A web or worker process as a runtime keeps it running. */
export interface ServingProcess {
  id: string;
  key: string;
  type: 'web' | 'worker';
  entrypoint: string;
  instances: number;
  readinessPath: string | null;
  resourceTypeId: string;
}

export interface ProcessesPort {
  /** How many processes the application has. */
  count(tx: Tx, appId: string): Promise<number>;
  /** One process of the application, or undefined. */
  find(tx: Tx, appId: string, processId: string): Promise<{ id: string; type: string } | undefined>;
  /** The web and worker processes, oldest first. */
  serving(tx: Tx, appId: string): Promise<ServingProcess[]>;
  /** The job processes that run inside a deployment's rollout, before any instance starts. */
  beforeDeployment(tx: Tx, appId: string): Promise<RunProcess[]>;
  /** Records the start of such a job's run for a deployment ('skipped' when its previous run still runs). */
  startDeploymentRun(processId: string, deploymentId: string): Promise<{ outcome: 'started' | 'skipped' | 'duplicate'; runId?: string }>;
  /** Ends a run from its real process's exit. */
  endRun(runId: string, exit: RunExit): Promise<void>;
  /** Ends the runs recorded as running before `before` (their processes died with the previous server). */
  endInterruptedRuns(before: string): Promise<number>;
}

declare module '../../shared/context.js' {
  interface Ports {
    processes: ProcessesPort;
  }
}
