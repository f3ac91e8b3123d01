// The simulated runtime (`app.simulated`). Long-running operations are split into phases; the
// control plane asks a driver to advance a phase and records what it reports (`PhaseResult`).
// Each service kind with a runtime has its own driver interface and one folder per driver
// (`applications/runtime/`, `static-sites/runtime/`, `databases/runtime/`, object storage's blob
// stores), chosen at start and reached through `app.runtimes`; their `simulated` drivers, and the
// operations that are only ever simulated (domain checks, teardowns, simulated database work),
// use this one, which decides from the simulation settings (progression and fault rules) and
// writes realistic log lines.
import type { CompiledQuery } from 'kysely';
import type { Tx } from '../db/index.js';
import type { LogLine } from './logs.js';
import { SimulatedShell, type ShellIO, type ShellSession, type ShellSpec } from './shell.js';
import { phaseDone, type SettingsRow, type Simulation } from './simulation.js';

export interface PhaseRequest {
  /** Operation kind: `deployment`, `restart`, `restore`, `backup`, `cron`, ... */
  operation: string;
  phase: string;
  phaseIndex: number;
  phaseCount: number;
  /** The resource the operation acts on (application, database, process), for fault rules. */
  targetId: string;
  /** When the phase began, and how often the resource was read since. */
  startedAt: string;
  reads: number;
  /** Free-form facts for the log lines (app name, branch, image, ...). */
  details?: Record<string, unknown>;
}

export type PhaseResult =
  | { state: 'running'; checkAfterMs: number }
  | { state: 'done'; lines: LogLine[] }
  | { state: 'failed'; reason: string; lines: LogLine[] }
  /** The operation has nothing to do (a static site deployment whose commit changes no deploy path): it ends `skipped`. */
  | { state: 'skipped'; lines: LogLine[] };

export interface MetricPoint {
  time: string;
  value: number;
}

export interface RuntimeDriver {
  readonly name: string;
  /**
   * Advances one phase of a long-running operation. `read`: the rows of `phaseReads`' statements,
   * when the caller read them (in this transaction, with its own reads).
   */
  advance(tx: Tx, req: PhaseRequest, read?: unknown[][]): Promise<PhaseResult>;
  /** Statements whose rows `advance` uses, for a caller to read with its own (see `together`) and pass on. */
  phaseReads?(tx: Tx): CompiledQuery[];
  /** A metric series of a running resource between two instants. */
  series(
    resourceId: string,
    metric: string,
    from: Date,
    to: Date,
    intervalSeconds: number,
    shape: { base: number; spread: number; running: (t: Date) => boolean },
  ): MetricPoint[];
  /** An interactive shell in a running instance of a process (the process terminal). */
  openShell(spec: ShellSpec, io: ShellIO): ShellSession;
}

const PHASE_LINES: Record<string, (d: Record<string, unknown>) => string[]> = {
  'deployment:checkout': (d) =>
    d.docker_image
      ? [`Pulling image ${d.docker_image}`, 'Image pulled']
      : [`Cloning ${d.repo_url ?? 'repository'} (branch ${d.branch ?? 'main'})`, `Checked out commit ${String(d.commit_sha ?? '').slice(0, 7)}`],
  'deployment:build': (d) =>
    d.skip_build
      ? [`Reusing the build of deployment ${d.reused_deployment_id}; build step skipped`]
      : [`Building with ${d.build_type ?? 'nixpacks'}`, 'Installing dependencies', 'Running build command', `Build finished; image ${d.image ?? 'built'}`],
  'deployment:rollout': (d) => [`Rolling out ${d.process_count ?? 1} process(es)`, 'Waiting for health checks', 'Rollout complete'],
  'static_site_deployment:checkout': (d) => [
    `Cloning ${d.repo_url ?? 'repository'} (branch ${d.branch ?? 'main'})`,
    ...(d.git_lfs_enabled ? ['Fetching Git LFS objects'] : []),
    `Checked out commit ${String(d.commit_sha ?? '').slice(0, 7)}`,
  ],
  'static_site_deployment:build': (d) => [
    `Using Node.js ${d.node_version ?? '20'}${d.root_directory ? ` in ${d.root_directory}` : ''}`,
    `Installing dependencies: ${d.install_command ?? 'npm install'}`,
    `Building: ${d.build_command ?? 'npm run build'}`,
    `Build finished; output in ${d.published_directory ?? 'dist'}`,
  ],
  'static_site_deployment:publish': (d) => [
    ...(d.reused_deployment_id ? [`Publishing the files of deployment ${d.reused_deployment_id}`] : ['Uploading files to the edge']),
    `Published at ${d.url}`,
  ],
};

/** A deterministic pseudo-random number in [0, 1) from a string seed. */
export function seeded(seed: string): number {
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619);
  return ((h >>> 0) % 100000) / 100000;
}

export class SimulatedDriver implements RuntimeDriver {
  readonly name = 'simulated';
  constructor(private sim: Simulation) {}

  phaseReads(tx: Tx): CompiledQuery[] {
    return this.sim.settingsReads(tx);
  }

  async advance(tx: Tx, req: PhaseRequest, read?: unknown[][]): Promise<PhaseResult> {
    const { progression: p, faults } = await this.sim.forPhase(req.operation, tx, read?.[0]?.[0] as SettingsRow | undefined);
    const done = phaseDone(p, req.phaseCount, Date.now() - Date.parse(req.startedAt), req.reads);
    if (!done.done) return { state: 'running', checkAfterMs: done.checkAfterMs };
    const lines = (PHASE_LINES[`${req.operation}:${req.phase}`]?.(req.details ?? {}) ?? [`${req.operation}: ${req.phase} finished`]).map((message) => ({
      message,
    }));
    const fault = await this.sim.shouldFail(tx, req.operation, req.targetId, req.phase, Math.random, faults);
    if (fault) return { state: 'failed', reason: fault, lines: [...lines.slice(0, 1), { message: fault, severity: 'error' as const }] };
    return { state: 'done', lines };
  }

  openShell(spec: ShellSpec, io: ShellIO): ShellSession {
    return new SimulatedShell(spec, io);
  }

  series(
    resourceId: string,
    metric: string,
    from: Date,
    to: Date,
    intervalSeconds: number,
    shape: { base: number; spread: number; running: (t: Date) => boolean },
  ): MetricPoint[] {
    const out: MetricPoint[] = [];
    const step = Math.max(1, intervalSeconds) * 1000;
    const start = Math.floor(from.getTime() / step) * step;
    for (let t = start; t <= to.getTime() && out.length < 10_000; t += step) {
      const at = new Date(t);
      const v = shape.running(at) ? shape.base + shape.spread * seeded(`${resourceId}:${metric}:${t}`) : 0;
      out.push({ time: at.toISOString(), value: Math.round(v * 100) / 100 });
    }
    return out;
  }
}
