// What the real builds of every kind share (applications, static sites): commands run in their own
// process group with their output streamed into the build log line by line as it happens, a
// deadline and an abort signal; and the clone of a repository at a branch. Nothing here holds a
// database transaction.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { CallContext } from '../context.js';
import type { LogLine } from './logs.js';

/** Writes build log lines (streamed). */
export type BuildLog = (lines: LogLine[]) => Promise<void>;

/** A build step that failed for a reason the user can act on (its message goes to the build log). */
export class BuildError extends Error {}

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  log: BuildLog;
  /** Epoch ms after which the command is killed. */
  deadline: number;
  /** Aborted when the deployment is cancelled. */
  signal: AbortSignal;
}

/** Runs a command in its own process group, streaming its output as build log lines; rejects on a non-zero exit, timeout or abort. */
export function runStreamed(cmd: string, args: string[], o: RunOptions): Promise<string> {
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

/** The environment every build command starts from (nothing of Slipway's own). */
export const baseEnv = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? '/tmp',
  LANG: process.env.LANG ?? 'C.UTF-8',
});

export const gitEnv = () => ({ ...baseEnv(), GIT_TERMINAL_PROMPT: '0' });

/** A command whose output is wanted but not logged (git plumbing). */
export const quietly = (cmd: string, args: string[], o: Omit<RunOptions, 'log'>) => runStreamed(cmd, args, { ...o, log: async () => {} });

export interface CloneSpec {
  repoUrl: string;
  branch: string;
  log: BuildLog;
  deadline: number;
  signal: AbortSignal;
  /** Added to git's environment. */
  env?: Record<string, string>;
  /**
   * Git's access to a private repository (`app.ports.gitAccess`): added to the environment of the
   * clone only, never to a build command's, so the token is in no command line, address or log.
   */
  access?: Record<string, string>;
}

/** The access git needs to clone a company's private repository (the git-hooks module answers). */
export interface GitAccessPort {
  /** Variables for git's environment that authenticate to `repoUrl` for the company ({} when it set none). */
  env(ctx: CallContext, repoUrl: string): Promise<Record<string, string>>;
}

declare module '../context.js' {
  interface Ports {
    gitAccess: GitAccessPort;
  }
}

/** Clones the branch's latest commit into `<dir>/src` (`dir` must exist and be empty); returns the commit. */
export async function cloneBranch(dir: string, s: CloneSpec): Promise<{ sha: string; message: string }> {
  const o = { env: { ...gitEnv(), ...s.env }, deadline: s.deadline, signal: s.signal };
  await s.log([{ message: `Cloning ${s.repoUrl} (branch ${s.branch})` }]);
  await runStreamed('git', ['clone', '--depth', '1', '--branch', s.branch, '--single-branch', '--', s.repoUrl, 'src'], {
    ...o,
    env: { ...o.env, ...s.access },
    cwd: dir,
    log: s.log,
  });
  const src = join(dir, 'src');
  const sha = (await quietly('git', ['rev-parse', 'HEAD'], { ...o, cwd: src })).trim();
  const message = (await quietly('git', ['log', '-1', '--format=%s'], { ...o, cwd: src })).trim();
  await s.log([{ message: `Checked out commit ${sha.slice(0, 7)}: ${message}` }]);
  return { sha, message };
}
