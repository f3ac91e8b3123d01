// Builds of the local runtime: clone the repository at the deployment's branch, detect how to
// build (Node: `npm ci` with a lock file, else `npm install`; `npm run build` when defined), read
// the Procfile, and turn the result into an immutable release directory
// (`<root>/releases/<app>/<deployment>`). Every command's output is streamed into the build log
// line by line as it happens. Nothing here holds a database transaction.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogLine } from '../../../shared/runtime/logs.js';

export interface BuildSpec {
  appId: string;
  deploymentId: string;
  repoUrl: string;
  branch: string;
  /** Build-time environment (resolved variables). */
  env: Record<string, string>;
  timeoutMs: number;
  /** Writes build log lines (streamed). */
  log: (lines: LogLine[]) => Promise<void>;
  /** Aborted when the deployment is cancelled. */
  signal: AbortSignal;
}

export interface ReleaseInfo {
  commitSha: string;
  commitMessage: string;
  /** Procfile entries (process key -> command). */
  procfile: Record<string, string>;
}

export const buildDir = (root: string, deploymentId: string) => join(root, 'builds', deploymentId);
export const releaseDir = (root: string, appId: string, releaseId: string) => join(root, 'releases', appId, releaseId);
export const appReleasesDir = (root: string, appId: string) => join(root, 'releases', appId);

export class BuildError extends Error {}

/** Runs a command in its own process group, streaming its output as build log lines; rejects on a non-zero exit, timeout or abort. */
export function runStreamed(
  cmd: string,
  args: string[],
  o: { cwd: string; env: Record<string, string>; log: BuildSpec['log']; deadline: number; signal: AbortSignal },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: o.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let pending = Promise.resolve();
    const feed = (severity: LogLine['severity']) => {
      let partial = '';
      return (chunk: Buffer) => {
        const text = partial + chunk.toString();
        out += chunk.toString();
        const lines = text.split('\n');
        partial = lines.pop() ?? '';
        const msgs = lines.filter((l) => l.trim()).map((message): LogLine => ({ message, severity }));
        if (msgs.length) pending = pending.then(() => o.log(msgs)).catch(() => {});
      };
    };
    child.stdout!.on('data', feed('info'));
    child.stderr!.on('data', feed('info'));
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    let why: string | null = null;
    const timer = setTimeout(
      () => {
        why = 'the build timed out';
        kill();
      },
      Math.max(1, o.deadline - Date.now()),
    );
    const onAbort = () => {
      why = 'the deployment was cancelled';
      kill();
    };
    o.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new BuildError(`${cmd}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      void pending.then(() => {
        if (why) reject(new BuildError(`${cmd} ${args.join(' ')}: ${why}`));
        else if (code !== 0) reject(new BuildError(`${cmd} ${args.join(' ')} exited with code ${code}`));
        else resolve(out);
      });
    });
  });
}

/** Parses a Procfile (`key: command` lines). */
export function parseProcfile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_-]+)\s*:\s*(.+)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

const baseEnv = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? '/tmp',
  LANG: process.env.LANG ?? 'C.UTF-8',
});

/** Clones the repository into the deployment's build directory; returns the commit. */
export async function checkout(root: string, s: BuildSpec): Promise<{ sha: string; message: string }> {
  const dir = buildDir(root, s.deploymentId);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const deadline = Date.now() + s.timeoutMs;
  const env = { ...baseEnv(), GIT_TERMINAL_PROMPT: '0' };
  await s.log([{ message: `Cloning ${s.repoUrl} (branch ${s.branch})` }]);
  await runStreamed('git', ['clone', '--depth', '1', '--branch', s.branch, '--single-branch', s.repoUrl, 'src'], {
    cwd: dir,
    env,
    log: s.log,
    deadline,
    signal: s.signal,
  });
  const src = join(dir, 'src');
  const quiet = async () => {};
  const sha = (await runStreamed('git', ['rev-parse', 'HEAD'], { cwd: src, env, log: quiet, deadline, signal: s.signal })).trim();
  const message = (await runStreamed('git', ['log', '-1', '--format=%s'], { cwd: src, env, log: quiet, deadline, signal: s.signal })).trim();
  await s.log([{ message: `Checked out commit ${sha.slice(0, 7)}: ${message}` }]);
  return { sha, message };
}

/** Builds the checked-out source and moves it into its release directory (immutable from then on). */
export async function build(root: string, s: BuildSpec, commit: { sha: string; message: string }): Promise<ReleaseInfo> {
  const src = join(buildDir(root, s.deploymentId), 'src');
  if (!existsSync(src)) throw new BuildError('The checkout is missing; deploy again');
  const deadline = Date.now() + s.timeoutMs;
  const env = { ...baseEnv(), ...s.env, CI: 'true' };
  const run = (args: string[]) => runStreamed('npm', args, { cwd: src, env, log: s.log, deadline, signal: s.signal });
  const pkgPath = join(src, 'package.json');
  if (existsSync(pkgPath)) {
    const pkg = JSON.parse(await readFile(pkgPath, 'utf8')) as { scripts?: Record<string, string> };
    const lock = existsSync(join(src, 'package-lock.json')) || existsSync(join(src, 'npm-shrinkwrap.json'));
    await s.log([{ message: `Node.js project detected; installing dependencies with npm ${lock ? 'ci' : 'install'}` }]);
    await run(lock ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund']);
    if (pkg.scripts?.build) {
      await s.log([{ message: 'Running npm run build' }]);
      await run(['run', 'build']);
    }
  } else {
    await s.log([{ message: 'No package.json: no build step (processes run their Procfile or entrypoint commands)' }]);
  }
  const procfile = existsSync(join(src, 'Procfile')) ? parseProcfile(await readFile(join(src, 'Procfile'), 'utf8')) : {};
  if (Object.keys(procfile).length) await s.log([{ message: `Procfile: ${Object.keys(procfile).join(', ')}` }]);
  const info: ReleaseInfo = { commitSha: commit.sha, commitMessage: commit.message, procfile };
  await writeFile(join(src, '.slipway-release.json'), JSON.stringify(info));
  const target = releaseDir(root, s.appId, s.deploymentId);
  await mkdir(appReleasesDir(root, s.appId), { recursive: true });
  await rm(target, { recursive: true, force: true });
  await rename(src, target);
  await rm(buildDir(root, s.deploymentId), { recursive: true, force: true });
  await s.log([{ message: `Release ${s.deploymentId} ready` }]);
  return info;
}

/** The release's facts, or undefined when the directory is missing (e.g. built by the simulated runtime). */
export async function readRelease(root: string, appId: string, releaseId: string): Promise<ReleaseInfo | undefined> {
  try {
    return JSON.parse(await readFile(join(releaseDir(root, appId, releaseId), '.slipway-release.json'), 'utf8')) as ReleaseInfo;
  } catch {
    return undefined;
  }
}

/** The command of a process: its entrypoint, else the Procfile's entry for its key (or `web` for the web process), else `npm start`. */
export function commandOf(p: { key: string; type: string; entrypoint: string }, info: ReleaseInfo): string | null {
  if (p.entrypoint.trim()) return p.entrypoint.trim();
  const fromProcfile = info.procfile[p.key] ?? (p.type === 'web' ? info.procfile.web : undefined);
  if (fromProcfile) return fromProcfile;
  return p.type === 'web' ? 'npm start' : null;
}
