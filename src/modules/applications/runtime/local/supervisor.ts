// Supervised processes of the local runtime. Each instance is a child in its own process group
// (`detached`), restarted with exponential backoff when it exits unasked; its stdout/stderr lines
// go to the runtime log. Live instances are listed in `<root>/instances.json` (pid and kernel start
// time), so a Slipway that was killed finds and kills what it left behind when it starts again.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { constants as osConstants } from 'node:os';
import { statFields } from './usage.js';

export interface InstanceSpec {
  processId: string;
  key: string;
  type: 'web' | 'worker';
  command: string;
  index: number;
}

export interface Instance extends InstanceSpec {
  port: number | null;
  child: ChildProcess | null;
  startedAt: number;
  restarts: number;
  stopping: boolean;
  /** Requests the edge has in flight to this instance. */
  inflight: number;
  exited: Promise<void>;
}

export interface Group {
  appId: string;
  deploymentId: string;
  releaseId: string;
  instances: Instance[];
  /** Round-robin position of the edge. */
  next: number;
}

export type LineSink = (g: Group, i: Instance, line: string, stream: 'stdout' | 'stderr') => void;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/**
 * The gate `launch` starts commands behind: the shell (`sh -c GATE <command>`, so `$0` is the
 * command) reads one line, then becomes the command (same pid, so the same process group) with
 * stdin from /dev/null; no line (the pipe closed by a Slipway that died) ends it with status 125.
 */
export const GATE = 'IFS= read -r _ || exit 125; exec /bin/sh -c "$0" </dev/null';

/** The kernel start time of a process (field 22 of /proc/<pid>/stat), or null when it is gone. */
function startTimeOf(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/** Calls `line` with each non-blank output line of a child (a last line without a newline too). */
function eachLine(child: ChildProcess, line: (text: string, stream: 'stdout' | 'stderr') => void) {
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream]!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (l.trim()) line(l, stream);
    });
    child[stream]!.on('end', () => {
      if (partial.trim()) line(partial, stream);
    });
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals) {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** A process that runs to completion (a cron or job run). */
export interface OneOff {
  child: ChildProcess;
  /** Resolves with the exit code (128 + signal number when a signal ended it) and whether the time limit killed it. */
  done: Promise<{ code: number; timedOut: boolean }>;
  /** Kills its process group now. */
  kill(): void;
}

export class Supervisor {
  /** What runs now (instances and one-off processes), for the registry of pids. */
  private live = new Set<{ child: ChildProcess | null }>();
  private registry: string;
  constructor(
    root: string,
    private sink: LineSink,
    private note: (g: Group, i: Instance, message: string, severity: 'info' | 'warning' | 'error') => void,
  ) {
    this.registry = join(root, 'instances.json');
  }

  /** Kills the instances a previous Slipway left running (same pid and start time as recorded). */
  async killOrphans(): Promise<number> {
    let list: { pid: number; start: string }[] = [];
    try {
      list = JSON.parse(await readFile(this.registry, 'utf8')) as typeof list;
    } catch {
      return 0;
    }
    let n = 0;
    for (const e of list) {
      if (startTimeOf(e.pid) !== e.start) continue;
      killGroup(e.pid, 'SIGKILL');
      n++;
      for (let i = 0; i < 50 && startTimeOf(e.pid) === e.start; i++) await sleep(20);
    }
    this.save();
    return n;
  }

  /**
   * Records what runs now. Written synchronously at once after each spawn and exit (a small file),
   * so a Slipway killed right after starting a process still finds it; replaced whole by a rename,
   * so a kill mid-write never leaves a half-written list.
   */
  private save(): void {
    const entries = [...this.live].flatMap((i) => (i.child?.pid ? [{ pid: i.child.pid, start: startTimeOf(i.child.pid) ?? '' }] : []));
    try {
      mkdirSync(join(this.registry, '..'), { recursive: true });
      writeFileSync(`${this.registry}.tmp`, JSON.stringify(entries));
      renameSync(`${this.registry}.tmp`, this.registry);
    } catch {
      /* the next save tries again */
    }
  }

  /**
   * Starts a command in its own process group and records it in the registry before it runs: the
   * shell waits at a gate (a line on its stdin) that opens only once the registry holds its pid.
   * A Slipway killed between the spawn and the registry's write closes the gate's pipe instead, and
   * the shell exits without running the command, so no process ever runs unrecorded.
   */
  private launch(entry: { child: ChildProcess | null }, command: string, cwd: string, env: Record<string, string>): ChildProcess {
    const child = spawn('/bin/sh', ['-c', GATE, command], { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    entry.child = child;
    this.live.add(entry);
    this.save();
    child.stdin!.on('error', () => {
      /* it exited before the gate opened: its close event reports that */
    });
    child.stdin!.end('\n');
    return child;
  }

  /** Starts the instances of a release (web instances on free ports). */
  async startGroup(g: Omit<Group, 'instances' | 'next'>, specs: InstanceSpec[], cwd: string, env: Record<string, string>): Promise<Group> {
    const group: Group = { ...g, instances: [], next: 0 };
    for (const s of specs) {
      const inst: Instance = {
        ...s,
        port: s.type === 'web' ? await freePort() : null,
        child: null,
        startedAt: 0,
        restarts: 0,
        stopping: false,
        inflight: 0,
        exited: Promise.resolve(),
      };
      group.instances.push(inst);
      this.spawn(group, inst, cwd, env);
    }
    return group;
  }

  private spawn(g: Group, i: Instance, cwd: string, env: Record<string, string>) {
    const child = this.launch(i, i.command, cwd, { ...env, ...(i.port ? { PORT: String(i.port) } : {}) });
    i.startedAt = Date.now();
    eachLine(child, (l, stream) => this.sink(g, i, l, stream));
    i.exited = new Promise((resolve) => {
      child.on('error', (e) => this.note(g, i, `Instance ${i.key}#${i.index} could not start: ${e.message}`, 'error'));
      child.on('close', (code, signal) => {
        this.live.delete(i);
        this.save();
        resolve();
        if (i.stopping) return;
        // An instance that ran a while starts over with a short delay.
        if (Date.now() - i.startedAt > 30_000) i.restarts = 0;
        i.restarts++;
        const delay = Math.min(10_000, 250 * 2 ** (i.restarts - 1));
        this.note(g, i, `Instance ${i.key}#${i.index} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms (restart ${i.restarts})`, 'warning');
        setTimeout(() => {
          if (!i.stopping) this.spawn(g, i, cwd, env);
        }, delay).unref();
      });
    });
  }

  /**
   * Runs a command to completion in its own process group (a cron or job run). The time limit
   * (0 = none) is enforced by killing the whole group with SIGKILL.
   */
  runOnce(o: {
    command: string;
    cwd: string;
    env: Record<string, string>;
    limitMs: number;
    line: (text: string, stream: 'stdout' | 'stderr') => void;
  }): OneOff {
    const entry: { child: ChildProcess | null } = { child: null };
    const child = this.launch(entry, o.command, o.cwd, o.env);
    eachLine(child, o.line);
    let timedOut = false;
    const timer =
      o.limitMs > 0
        ? setTimeout(() => {
            timedOut = true;
            killGroup(child.pid, 'SIGKILL');
          }, o.limitMs)
        : null;
    const done = new Promise<{ code: number; timedOut: boolean }>((resolve) => {
      child.on('error', (e) => {
        o.line(`could not start: ${e.message}`, 'stderr');
      });
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        // Whatever the shell started in its group goes with it.
        killGroup(child.pid, 'SIGKILL');
        this.live.delete(entry);
        this.save();
        resolve({ code: code ?? 128 + (signal ? (osConstants.signals[signal] ?? 9) : 9), timedOut });
      });
    });
    return { child, done, kill: () => killGroup(child.pid, 'SIGKILL') };
  }

  /** Waits until every web instance answers HTTP (any status; the readiness probe's path must answer below 400); false on timeout. */
  async waitReady(g: Group, timeoutMs: number, path: (i: Instance) => string | null): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (const i of g.instances) {
      if (i.type !== 'web') continue;
      for (;;) {
        if (Date.now() > deadline || i.stopping) return false;
        const p = path(i);
        const status = await probe(i.port!, p ?? '/');
        if (status !== null && (p === null || status < 400)) break;
        await sleep(100);
      }
    }
    return true;
  }

  /** Stops a group: SIGTERM to each process group, SIGKILL after the grace period. */
  async stopGroup(g: Group, graceMs: number): Promise<void> {
    await Promise.all(
      g.instances.map(async (i) => {
        i.stopping = true;
        const pid = i.child?.pid;
        if (!pid || !this.live.has(i)) return;
        killGroup(pid, 'SIGTERM');
        const t = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
        await i.exited;
        clearTimeout(t);
        killGroup(pid, 'SIGKILL');
      }),
    );
  }
}

/** The status of GET `path` on a local port, or null when nothing answers. */
function probe(port: number, path: string): Promise<number | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', timeout: 2000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}
