// What a real applications driver runs its instances, runs, builds and shells on: the host of
// processes (`local/`: supervised host processes) or of containers (`container/`). The rest of a
// real driver is shared (real.ts): the phases' wiring, rollouts, the edge, hibernation, sync with
// the application's state, cron and job runs (runs.ts), log batching (logs.ts).
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import type { CallContext } from '../../../shared/context.js';
import type { MetricPoint } from '../../../shared/runtime/driver.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../shared/runtime/shell.js';
import type { ApplicationsTable, DeploymentsTable } from '../storage.js';
import type { Release } from './release.js';
import type { BuildSpec } from './source.js';

export interface InstanceSpec {
  processId: string;
  key: string;
  type: 'web' | 'worker';
  /** The command ('' for an image's own command). */
  command: string;
  index: number;
  /** The process's resource type (its CPU and memory limits where the host enforces them). */
  resourceTypeId?: string;
}

export interface Instance extends InstanceSpec {
  /** The port the edge reaches a web instance on, at `address`. */
  port: number | null;
  /** Where `port` is: 127.0.0.1 unless the instance runs on another machine (a swarm node). */
  address?: string;
  /** The child (local host; null for an instance adopted from a previous Slipway). */
  child: ChildProcess | null;
  /** The pid of its process group (local host; null before it started). */
  pid?: number | null;
  /** What the local host records of it in its registry. */
  meta?: unknown;
  /** The id of its container (container host). */
  container?: string;
  startedAt: number;
  restarts: number;
  stopping: boolean;
  /** Requests the edge has in flight to this instance. */
  inflight: number;
  exited: Promise<void>;
}

/** An instance not yet started (or adopted): its spec, its port, and the rest at rest. */
export function newInstance(spec: InstanceSpec, port: number | null, more: Partial<Instance> = {}): Instance {
  return { ...spec, port, child: null, startedAt: 0, restarts: 0, stopping: false, inflight: 0, exited: Promise.resolve(), ...more };
}

export interface Group {
  appId: string;
  deploymentId: string;
  releaseId: string;
  instances: Instance[];
  /** Round-robin position of the edge. */
  next: number;
}

/** Where a host sends what its instances print and what happens to them. */
export interface HostOutput {
  line(g: Group, i: Instance, line: string, stream: 'stdout' | 'stderr'): void;
  note(g: Group, i: Instance, message: string, severity: 'info' | 'warning' | 'error'): void;
}

/** A process that runs to completion (a cron or job run). */
export interface OneOff {
  /** Resolves with the exit code (128 + signal number when a signal ended it) and whether the time limit ended it. */
  done: Promise<{ code: number; timedOut: boolean }>;
  /** Kills it now. */
  kill(): void;
}

export interface RunSpec {
  command: string;
  release: Release;
  env: Record<string, string>;
  limitMs: number;
  line: (text: string, stream: 'stdout' | 'stderr') => void;
  /** What the run belongs to (labels of a run's container). */
  appId: string;
  processId: string;
  resourceTypeId?: string;
}

export interface InstanceHost {
  /**
   * Whether instances keep running when Slipway stops (containers, swarm services: a restart or an
   * upgrade of the control plane does not take applications down; the next start adopts them).
   * Host processes stop with Slipway. SLIPWAY_APPS_STOP_ON_EXIT overrides either way.
   */
  readonly outlivesSlipway: boolean;
  /**
   * The work of a deployment's build phase (for an image source: its checkout phase), read inside
   * the step's transaction and run outside it; it leaves the release (release.ts) behind.
   */
  buildPhase(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable, spec: BuildSpec): Promise<() => Promise<void>>;
  /** The environment instances, runs and shells get from the application's resolved variables. */
  env(vars: Record<string, string>): Record<string, string>;
  /** Starts a release's instances; with `adopt`, takes over what a previous Slipway left running for it. */
  startGroup(g: Omit<Group, 'instances' | 'next'>, specs: InstanceSpec[], release: Release, env: Record<string, string>, adopt?: boolean): Promise<Group>;
  /** Stops a group: SIGTERM, SIGKILL after the grace period. */
  stopGroup(g: Group, graceMs: number): Promise<void>;
  /** Runs a command to completion (a cron or job run). */
  runOnce(o: RunSpec): OneOff;
  /** Ends the cron and job runs a previous Slipway left; its instances wait for `startGroup` or `killLeftovers`. */
  killOrphans(): Promise<number>;
  /** Ends the instances a previous Slipway left that no group adopted. */
  killLeftovers(): Promise<number>;
  /** The web ports of instances a previous Slipway left for an application, not yet adopted (the edge routes to them meanwhile). */
  leftPorts(appId: string): number[];
  /** Removes what the host keeps of a deleted application (releases, caches, images, output). */
  removeApp(appId: string): Promise<void>;
  /** An interactive shell in the release, with the environment. */
  openShell(release: Release, spec: ShellSpec, env: Record<string, string>, io: ShellIO): ShellSession;
  /** Samples the usage of the serving instances and the runs (from a timer). */
  sample(serving: Iterable<Group>, runs: Iterable<{ processId: string; run: OneOff }>): void;
  /** Measured usage of a process (a fresh sample asked for first when the last is old). */
  series(processId: string, metric: 'cpu-usage' | 'memory-usage' | 'instance-count', from: Date, to: Date, intervalSeconds: number): MetricPoint[];
  /** Whether samples are older than `ms`. */
  staleAfter(ms: number): boolean;
}

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The status of GET `path` on a port (of the loopback interface unless `host`), or null when nothing answers. */
export function probe(port: number, path: string, host = '127.0.0.1'): Promise<number | null> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method: 'GET', timeout: 2000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}

/** Waits until every web instance answers HTTP (any status; the readiness probe's path must answer below 400); false on timeout. */
export async function waitReady(g: Group, timeoutMs: number, path: (i: Instance) => string | null): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (const i of g.instances) {
    if (i.type !== 'web') continue;
    for (;;) {
      if (Date.now() > deadline || i.stopping) return false;
      const p = path(i);
      const status = i.port ? await probe(i.port, p ?? '/', i.address) : null;
      if (status !== null && (p === null || status < 400)) break;
      await sleep(100);
    }
  }
  return true;
}
