// Supervised processes of the local runtime. Each instance is a child in its own process group
// (`detached`), restarted with exponential backoff when it exits unasked. Live processes are listed
// in `<root>/instances.json` (pid and kernel start time; for an instance also its application,
// release, process, index and port), so a Slipway that was killed finds what it left behind when it
// starts again: the instances of a release still serving are adopted (same pid, same port, so the
// edge routes as before), the rest (cron and job runs, other releases, dead ones) killed. An
// instance's stdout/stderr go to files under `<root>/instance-logs/` (a pipe would die with
// Slipway), which are tailed into the runtime log, by whichever Slipway runs, and freed as they
// are read (followFile).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { constants as osConstants } from 'node:os';
import { statFields } from './usage.js';
import { freePort, newInstance, type Group, type HostOutput, type Instance, type InstanceSpec, type OneOff } from '../host.js';

export { freePort, newInstance, type Group, type Instance, type InstanceSpec };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The gate `launch` starts commands behind: the shell (`sh -c GATE <command>`, so `$0` is the
 * command) reads one line, then becomes the command (same pid, so the same process group) with
 * stdin from /dev/null; no line (the pipe closed by a Slipway that died) ends it with status 125.
 */
export const GATE = 'IFS= read -r _ || exit 125; exec /bin/sh -c "$0" </dev/null';

/** The kernel start time of a process (field 22 of /proc/<pid>/stat), or null when it is gone (or a zombie). */
function startTimeOf(pid: number): string | null {
  const f = statFields(pid);
  if (!f || f[0] === 'Z') return null;
  return f[19] ?? null;
}

/** What the registry says of an instance (besides its pid and start time). */
export interface InstanceRecord {
  appId: string;
  deploymentId: string;
  releaseId: string;
  processId: string;
  key: string;
  type: 'web' | 'worker';
  index: number;
  command: string;
  port: number | null;
  startedAt: number;
}

type Entry = { child: ChildProcess | null; pid?: number | null; meta?: unknown };
type Rec = { pid: number; start: string } & Partial<InstanceRecord>;

/** Whether something accepts TCP connections on a loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (v: boolean) => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Output read is given back to the file system in steps of this much (see followFile). */
export const FREE_READ_BYTES = 4 * 1024 * 1024;

/**
 * Follows a file from an offset, calling `line` with each complete non-blank line. An instance
 * writes its output straight into its file (so it outlives Slipway), which would grow for ever:
 * what has been read is punched out (`fallocate --punch-hole`) every `freeBytes`, so the file keeps
 * its size and offsets (nothing the instance writes meanwhile is lost, a restarted Slipway resumes
 * at the same offset) while its disk use stays about `freeBytes`.
 */
export function followFile(path: string, from: number, line: (text: string) => void, freeBytes = FREE_READ_BYTES): { stop(): void } {
  let offset = from;
  let partial = '';
  let freed = 0;
  let freeing = false;
  const buf = Buffer.alloc(64 * 1024);
  const free = () => {
    const upTo = Math.floor(offset / 4096) * 4096;
    if (freeing || upTo - freed < freeBytes) return;
    freeing = true;
    execFile('fallocate', ['--punch-hole', '--offset', '0', '--length', String(upTo), path], (e) => {
      freeing = false;
      // A file system without hole punching keeps the whole file; the next try comes a step later.
      freed = e ? upTo : Math.max(freed, upTo);
    });
  };
  const read = () => {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return;
    }
    try {
      if (fstatSync(fd).size < offset) offset = freed = 0;
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, offset);
        if (n <= 0) break;
        offset += n;
        const lines = (partial + buf.subarray(0, n).toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) line(l);
      }
    } finally {
      closeSync(fd);
    }
    free();
  };
  const timer = setInterval(read, 250).unref();
  return {
    stop() {
      clearInterval(timer);
      read();
      if (partial.trim()) line(partial);
      partial = '';
    },
  };
}

function sizeOf(path: string): number {
  try {
    const fd = openSync(path, 'r');
    try {
      return fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  } catch {
    return 0;
  }
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

/** A cron or job run's process (its child: usage is sampled over its process group). */
export interface LocalOneOff extends OneOff {
  child: ChildProcess;
}

export class Supervisor {
  /** What runs now (instances and one-off processes), for the registry of pids. */
  private live = new Set<Entry>();
  private registry: string;
  private logDir: string;
  /** What a previous Slipway left running (same pid and start time as recorded), not yet adopted or killed. */
  private left: Rec[] = [];
  constructor(
    root: string,
    private out: HostOutput,
  ) {
    this.registry = join(root, 'instances.json');
    this.logDir = join(root, 'instance-logs');
    try {
      const list = JSON.parse(readFileSync(this.registry, 'utf8')) as Rec[];
      this.left = list.filter((e) => startTimeOf(e.pid) === e.start);
    } catch {
      /* nothing recorded */
    }
  }

  private async killRecord(e: Rec) {
    if (startTimeOf(e.pid) !== e.start) return;
    killGroup(e.pid, 'SIGKILL');
    for (let i = 0; i < 50 && startTimeOf(e.pid) === e.start; i++) await sleep(20);
  }

  /** Kills the cron and job runs a previous Slipway left running; its instances wait for `startGroup` (adopted) or `killLeftovers`. */
  async killOrphans(): Promise<number> {
    const runs = this.left.filter((e) => !e.appId);
    this.left = this.left.filter((e) => e.appId);
    for (const e of runs) await this.killRecord(e);
    this.save();
    return runs.length;
  }

  /** Kills the instances left by a previous Slipway that no serving group adopted. */
  async killLeftovers(): Promise<number> {
    const rest = this.left;
    this.left = [];
    for (const e of rest) await this.killRecord(e);
    this.save();
    return rest.length;
  }

  /** The web ports of the instances a previous Slipway left for an application, not yet adopted (the edge routes to them meanwhile). */
  leftPorts(appId: string): number[] {
    return this.left.filter((e) => e.appId === appId && e.port && startTimeOf(e.pid) === e.start).map((e) => e.port!);
  }

  /**
   * Records what runs now. Written synchronously at once after each spawn and exit (a small file),
   * so a Slipway killed right after starting a process still finds it; replaced whole by a rename,
   * so a kill mid-write never leaves a half-written list.
   */
  private save(): void {
    const entries: Rec[] = [...this.live].flatMap((e) => {
      const pid = e.child?.pid ?? e.pid;
      return pid ? [{ pid, start: startTimeOf(pid) ?? '', ...(e.meta as InstanceRecord | undefined) }] : [];
    });
    entries.push(...this.left);
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
  private launch(entry: Entry, command: string, cwd: string, env: Record<string, string>, output?: [number, number]): ChildProcess {
    const child = spawn('/bin/sh', ['-c', GATE, command], { cwd, env, detached: true, stdio: ['pipe', output?.[0] ?? 'pipe', output?.[1] ?? 'pipe'] });
    entry.child = child;
    entry.pid = child.pid ?? null;
    this.live.add(entry);
    this.save();
    child.stdin!.on('error', () => {
      /* it exited before the gate opened: its close event reports that */
    });
    child.stdin!.end('\n');
    return child;
  }

  /**
   * Starts the instances of a release (web instances on free ports). With `adopt`, an instance a
   * previous Slipway left for the same release, process, index and command, still alive and
   * accepting connections on its port, is taken over instead of started; the other instances it
   * left for the application are killed.
   */
  async startGroup(g: Omit<Group, 'instances' | 'next'>, specs: InstanceSpec[], cwd: string, env: Record<string, string>, adopt = false): Promise<Group> {
    const group: Group = { ...g, instances: [], next: 0 };
    for (const s of specs) {
      const found = adopt
        ? this.left.find(
            (e) =>
              e.appId === g.appId &&
              e.releaseId === g.releaseId &&
              e.processId === s.processId &&
              e.index === s.index &&
              e.command === s.command &&
              e.type === s.type,
          )
        : undefined;
      if (found && startTimeOf(found.pid) === found.start && (s.type !== 'web' || (found.port && (await accepts(found.port))))) {
        this.left = this.left.filter((e) => e !== found);
        const inst = newInstance(s, found.port ?? null, { pid: found.pid, startedAt: found.startedAt ?? Date.now() });
        group.instances.push(inst);
        this.adopt(group, inst, found.start, cwd, env);
        continue;
      }
      const inst = newInstance(s, s.type === 'web' ? await freePort() : null);
      group.instances.push(inst);
      this.spawn(group, inst, cwd, env);
    }
    if (adopt) {
      const rest = this.left.filter((e) => e.appId === g.appId);
      this.left = this.left.filter((e) => e.appId !== g.appId);
      for (const e of rest) await this.killRecord(e);
      this.save();
    }
    return group;
  }

  /** Removes the output files of an application's instances (it was deleted). */
  async dropLogs(appId: string): Promise<void> {
    const names = await readdir(this.logDir).catch(() => [] as string[]);
    await Promise.all(names.filter((n) => n.startsWith(`${appId}-`)).map((n) => rm(join(this.logDir, n), { force: true })));
  }

  /** Whether an instance's process runs now (spawned or adopted, not yet seen exiting). */
  running(i: Instance): boolean {
    return this.live.has(i);
  }

  private meta(g: Group, i: Instance): InstanceRecord {
    const { appId, deploymentId, releaseId } = g;
    return {
      appId,
      deploymentId,
      releaseId,
      processId: i.processId,
      key: i.key,
      type: i.type,
      index: i.index,
      command: i.command,
      port: i.port,
      startedAt: i.startedAt,
    };
  }

  private logPaths(g: Group, i: Instance): [string, string] {
    const base = join(this.logDir, `${g.appId}-${i.processId}-${i.index}`);
    return [`${base}.out`, `${base}.err`];
  }

  /** Follows an instance's output files from the given offsets into the runtime log. */
  private follow(g: Group, i: Instance, from: [number, number]) {
    const [out, err] = this.logPaths(g, i);
    const t = [followFile(out, from[0], (l) => this.out.line(g, i, l, 'stdout')), followFile(err, from[1], (l) => this.out.line(g, i, l, 'stderr'))];
    return () => t.forEach((x) => x.stop());
  }

  /** After an instance exited: restarted with exponential backoff unless it was being stopped. */
  private exitedUnasked(g: Group, i: Instance, how: string, cwd: string, env: Record<string, string>) {
    if (i.stopping) return;
    // An instance that ran a while starts over with a short delay.
    if (Date.now() - i.startedAt > 30_000) i.restarts = 0;
    i.restarts++;
    const delay = Math.min(10_000, 250 * 2 ** (i.restarts - 1));
    this.out.note(g, i, `Instance ${i.key}#${i.index} exited (${how}); restarting in ${delay} ms (restart ${i.restarts})`, 'warning');
    setTimeout(() => {
      if (!i.stopping) this.spawn(g, i, cwd, env);
    }, delay).unref();
  }

  /** Takes over an instance a previous Slipway started: its exit is seen by polling /proc (it is not our child). */
  private adopt(g: Group, i: Instance, start: string, cwd: string, env: Record<string, string>) {
    i.meta = this.meta(g, i);
    this.live.add(i);
    this.save();
    const [out, err] = this.logPaths(g, i);
    const stopTail = this.follow(g, i, [sizeOf(out), sizeOf(err)]);
    const pid = i.pid!;
    i.exited = new Promise((resolve) => {
      const timer = setInterval(() => {
        if (startTimeOf(pid) === start) return;
        clearInterval(timer);
        stopTail();
        this.live.delete(i);
        this.save();
        resolve();
        this.exitedUnasked(g, i, 'gone', cwd, env);
      }, 200);
    });
  }

  private spawn(g: Group, i: Instance, cwd: string, env: Record<string, string>) {
    i.startedAt = Date.now();
    i.meta = this.meta(g, i);
    const [out, err] = this.logPaths(g, i);
    let fds: [number, number];
    try {
      mkdirSync(this.logDir, { recursive: true });
      fds = [openSync(out, 'w'), openSync(err, 'w')];
    } catch (e) {
      this.out.note(g, i, `Instance ${i.key}#${i.index} could not start: ${(e as Error).message}`, 'error');
      return;
    }
    let child: ChildProcess;
    try {
      child = this.launch(i, i.command, cwd, { ...env, ...(i.port ? { PORT: String(i.port) } : {}) }, fds);
    } finally {
      for (const fd of fds) closeSync(fd);
    }
    const stopTail = this.follow(g, i, [0, 0]);
    i.exited = new Promise((resolve) => {
      child.on('error', (e) => this.out.note(g, i, `Instance ${i.key}#${i.index} could not start: ${e.message}`, 'error'));
      child.on('close', (code, signal) => {
        stopTail();
        this.live.delete(i);
        this.save();
        resolve();
        this.exitedUnasked(g, i, signal ?? `code ${code}`, cwd, env);
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
  }): LocalOneOff {
    const entry: Entry = { child: null };
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

  /** Stops a group: SIGTERM to each process group, SIGKILL after the grace period. */
  async stopGroup(g: Group, graceMs: number): Promise<void> {
    await Promise.all(
      g.instances.map(async (i) => {
        i.stopping = true;
        const pid = i.child?.pid ?? i.pid;
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
