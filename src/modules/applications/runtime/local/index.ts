// The local host (SLIPWAY_RUNTIME=local): applications built from git into release directories
// (build.ts) and run as supervised host processes (supervisor.ts) on loopback ports behind the
// edge; usage read from /proc (usage.ts), the terminal a shell over pipes (shell.ts). Everything
// a real driver does besides is shared (../real.ts).
import { rm } from 'node:fs/promises';
import type { AppContext } from '../../../../shared/context.js';
import { BuildError } from '../../../../shared/runtime/build.js';
import type { InstanceHost } from '../host.js';
import { setupRealRuntime, type RealRuntime } from '../real.js';
import { appReleasesDir } from '../release.js';
import { appCacheDir } from '../source.js';
import { build } from './build.js';
import { openLocalShell } from './shell.js';
import { Supervisor, type LocalOneOff } from './supervisor.js';
import { UsageSampler } from './usage.js';

export type LocalRuntime = RealRuntime;

/** The environment of every process the local host starts (instances, runs, shells): the host's basics, then `vars`. */
function processEnv(vars: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', LANG: process.env.LANG ?? 'C.UTF-8', ...vars };
}

/** The local runtime of a server with SLIPWAY_RUNTIME=local, wired in (from the module's setup, through runtime/index.ts). */
export function setupLocalRuntime(app: AppContext): RealRuntime {
  return setupRealRuntime(app, 'local', (settings, out): InstanceHost => {
    const root = settings.root;
    const supervisor = new Supervisor(root, out);
    const usage = new UsageSampler();
    return {
      outlivesSlipway: false,
      async buildPhase(_ctx, d, a, spec) {
        const refuse = (message: string) => async () => {
          throw new BuildError(message);
        };
        if (a.source === 'dockerImage') return refuse('Deploying a Docker image needs the container driver (SLIPWAY_RUNTIME=container)');
        if (a.build_type === 'dockerfile') return refuse('Building a Dockerfile needs the container driver (SLIPWAY_RUNTIME=container)');
        return async () => void (await build(root, spec, { sha: d.commit_sha ?? '', message: d.commit_message ?? '' }));
      },
      env: processEnv,
      startGroup: (g, specs, release, env, adopt) => supervisor.startGroup(g, specs, release.dir, env, adopt),
      stopGroup: (g, graceMs) => supervisor.stopGroup(g, graceMs),
      runOnce: (o) => supervisor.runOnce({ command: o.command, cwd: o.release.dir, env: o.env, limitMs: o.limitMs, line: o.line }),
      killOrphans: () => supervisor.killOrphans(),
      killLeftovers: () => supervisor.killLeftovers(),
      leftPorts: (appId) => supervisor.leftPorts(appId),
      async removeApp(appId) {
        await rm(appReleasesDir(root, appId), { recursive: true, force: true });
        await rm(appCacheDir(root, appId), { recursive: true, force: true });
        await supervisor.dropLogs(appId);
      },
      openShell: (release, spec, env, io) => openLocalShell(spec, release.dir, env, io),
      // Every instance and run is a process group: its usage is summed over the group's members.
      sample(serving, runs) {
        const groups = new Map<string, number[]>();
        const add = (processId: string, pid: number | null | undefined) => {
          if (!pid) return;
          const list = groups.get(processId);
          if (list) list.push(pid);
          else groups.set(processId, [pid]);
        };
        for (const g of serving) for (const i of g.instances) if (supervisor.running(i)) add(i.processId, i.child?.pid ?? i.pid);
        for (const r of runs) add(r.processId, (r.run as LocalOneOff).child.pid);
        usage.sample(groups);
      },
      series: (processId, metric, from, to, intervalSeconds) => usage.series(processId, metric, from, to, intervalSeconds),
      staleAfter: (ms) => usage.staleAfter(ms),
    };
  });
}
