// Runs Slipway's own nginx (the edge's data plane) from a directory: applies whole configurations
// (checked first with `nginx -t`, then a graceful reload or a start), and finds a master a previous
// Slipway left running. nginx daemonizes itself, so it outlives the Node process that started it and
// keeps serving the last configuration while Slipway restarts.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { request } from 'node:http';
import { delimiter, dirname, join, normalize, sep } from 'node:path';
import { internalDir } from './balance.js';
import { statusSocket } from './config.js';

/** The part of a pino/Fastify logger used here. */
export interface NginxLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The nginx executable: SLIPWAY_NGINX (null when it names nothing), else `nginx` on PATH or in the sbin directories (Debian's is /usr/sbin/nginx). */
export function nginxBinary(): string | null {
  const chosen = process.env.SLIPWAY_NGINX;
  if (chosen) return existsSync(chosen) ? chosen : null;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  for (const d of dirs) if (d && existsSync(join(d, 'nginx'))) return join(d, 'nginx');
  return null;
}

/** A dynamic module of Debian's nginx packages (`/usr/lib/nginx/modules`, or SLIPWAY_NGINX_MODULES), or null when it is not installed. */
export function nginxModule(file: string): string | null {
  const p = join(process.env.SLIPWAY_NGINX_MODULES ?? '/usr/lib/nginx/modules', file);
  return existsSync(p) ? p : null;
}

/** The module that serves a file's brotli copy beside it (libnginx-mod-http-brotli-static). */
export const brotliStaticModule = () => nginxModule('ngx_http_brotli_static_module.so');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `pid` is a live nginx master (not a zombie; on Linux, checked in /proc). */
function isMaster(pid: number, conf: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (!existsSync('/proc/self/stat')) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/\)\s+[ZX]\s/.test(stat)) return false;
    // The master's title: "nginx: master process /usr/sbin/nginx -c <conf> ...".
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return cmd.includes('nginx: master process') && cmd.includes(conf);
  } catch {
    return false;
  }
}

/**
 * Whether the workers of `master` that still accept connections number `count` (Linux; elsewhere
 * assumed). After a reload the old workers close their listening sockets as they turn into
 * "worker process is shutting down": until then they may still answer with the old configuration.
 */
function onlyNewWorkers(master: number, count: number): boolean {
  if (!existsSync('/proc/self/stat')) return true;
  let accepting = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== master) continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim() === 'nginx: worker process') accepting++;
    } catch {
      // gone meanwhile
    }
  }
  return accepting === count;
}

/** GET a path of the status socket (`/generation`, `/status`): the body, or null when nothing answers. */
export function status(socketPath: string, path: string): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path, agent: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? body : null));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}

export class NginxProcess {
  readonly confPath: string;
  readonly pidPath: string;
  readonly errorLogPath: string;
  readonly socketPath: string;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    private log: NginxLog,
    readonly bin: string | null = nginxBinary(),
    /** How long a start or reload may take to answer the new generation. */
    private readyTimeoutMs = 15_000,
  ) {
    this.confPath = join(dir, 'nginx.conf');
    this.pidPath = join(dir, 'nginx.pid');
    this.errorLogPath = join(dir, 'error.log');
    this.socketPath = statusSocket(dir);
  }

  /** Tells the running master to reopen its log files (SIGUSR1; after a rotation): false when none runs. */
  reopenLogs(): boolean {
    const pid = this.masterPid();
    if (!pid) return false;
    try {
      process.kill(pid, 'SIGUSR1');
      return true;
    } catch {
      return false;
    }
  }

  /** The pid of this directory's running master, or null. */
  masterPid(): number | null {
    let pid: number;
    try {
      pid = Number(readFileSync(this.pidPath, 'utf8').trim());
    } catch {
      return null;
    }
    return Number.isInteger(pid) && pid > 0 && isMaster(pid, this.confPath) ? pid : null;
  }

  /** The generation the running configuration answers, or null when nothing answers. */
  async generation(): Promise<number | null> {
    const body = await status(this.socketPath, '/generation');
    return body !== null && /^\d+$/.test(body) ? Number(body) : null;
  }

  /** Whether a master a previous Slipway started is running here (it keeps serving; apply() reloads it). */
  async adopt(): Promise<boolean> {
    const pid = this.masterPid();
    if (!pid) return false;
    this.log.info({ pid, generation: await this.generation() }, 'edge: adopted the running nginx');
    return true;
  }

  /**
   * Makes `conf` the running configuration and waits until it answers `generation`. `files`
   * (paths relative to the directory, e.g. from nginxFiles) are written first. A configuration
   * nginx refuses throws with nginx's message, and the running one keeps serving.
   */
  apply(conf: string, generation: number, files: Record<string, string> = {}): Promise<void> {
    const run = this.queue.then(() => this.applyNow(conf, generation, files));
    this.queue = run.catch(() => {});
    return run;
  }

  private async applyNow(conf: string, generation: number, files: Record<string, string>): Promise<void> {
    const bin = this.need();
    mkdirSync(join(this.dir, 'tmp'), { recursive: true });
    mkdirSync(join(this.dir, 'pages'), { recursive: true });
    // nginx's workers run as another user when it starts as root: they must reach the pages and temp paths.
    chmodSync(this.dir, 0o755);
    // The load balancers' internal sockets (balance.ts): whoever connects there is believed about the client, so Slipway's user alone.
    mkdirSync(internalDir(this.dir), { recursive: true, mode: 0o700 });
    chmodSync(internalDir(this.dir), 0o700);
    for (const [rel, content] of Object.entries(files)) this.writeFile(rel, content);
    const candidate = `${this.confPath}.next`;
    // It holds the origin secret (config.ts): readable by Slipway's user (and root) alone.
    writeFileSync(candidate, conf, { mode: 0o600 });
    chmodSync(candidate, 0o600);
    const test = await this.run(bin, ['-t', '-q', '-c', candidate, ...this.common()]);
    if (test.code !== 0) {
      rmSync(candidate, { force: true });
      throw new Error(`nginx refused the configuration: ${test.output.trim() || `exit ${test.code}`}`);
    }
    const pid = this.masterPid();
    const previous = pid ? readFileSync(this.confPath, 'utf8') : null;
    renameSync(candidate, this.confPath);
    if (pid) {
      process.kill(pid, 'SIGHUP');
    } else {
      // A socket file left by a master that was killed would make the new one's bind fail.
      rmSync(this.socketPath, { force: true });
      for (const name of readdirSync(internalDir(this.dir))) rmSync(join(internalDir(this.dir), name), { force: true });
      const start = await this.run(bin, ['-c', this.confPath, ...this.common()]);
      if (start.code !== 0) throw new Error(`nginx did not start: ${start.output.trim() || `exit ${start.code}`}`);
    }
    try {
      await this.waitFor(generation, pid ? 'reload' : 'start', Number(/^worker_processes (\d+);/m.exec(conf)?.[1] ?? 1));
    } catch (e) {
      // A reload nginx could not carry out (a port taken, say) leaves the old configuration running: so must the file.
      if (previous !== null) this.writeFile('nginx.conf', previous, 0o600);
      throw e;
    }
    this.log.info({ generation, pid: this.masterPid(), reloaded: !!pid }, 'edge: nginx configuration applied');
    this.collectPages(conf);
  }

  /** Quits gracefully (in-flight requests finish, up to worker_shutdown_timeout), then harder after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
    await this.queue;
    const pid = this.masterPid();
    if (!pid) return;
    const steps: [NodeJS.Signals, number][] = [
      ['SIGQUIT', timeoutMs],
      ['SIGTERM', 5_000],
      ['SIGKILL', 2_000],
    ];
    for (const [signal, wait] of steps) {
      try {
        process.kill(pid, signal);
      } catch {
        return;
      }
      const until = Date.now() + wait;
      while (Date.now() < until) {
        if (!isMaster(pid, this.confPath)) return void this.log.info({ pid, signal }, 'edge: nginx stopped');
        await sleep(25);
      }
      this.log.warn({ pid, signal }, 'edge: nginx did not stop in time');
    }
  }

  private need(): string {
    if (!this.bin) throw new Error('nginx is not installed (scripts/install-edge.sh installs it)');
    return this.bin;
  }

  /** The prefix and the error log before the configuration names its own. */
  private common(): string[] {
    return ['-p', this.dir + sep, '-e', this.errorLogPath];
  }

  private writeFile(rel: string, content: string, mode = 0o644) {
    const path = normalize(join(this.dir, rel));
    if (!path.startsWith(this.dir + sep) || rel.includes('..')) throw new Error(`edge: file ${rel} is outside ${this.dir}`);
    mkdirSync(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, content, { mode });
    renameSync(tmp, path);
  }

  /** Removes pages no longer named by the running configuration. */
  private collectPages(conf: string) {
    const dir = join(this.dir, 'pages');
    for (const name of readdirSync(dir)) if (!conf.includes(`pages/${name}`)) rmSync(join(dir, name), { force: true });
  }

  /** Runs nginx in the foreground part of its life (a test, or the start that then daemonizes). */
  private run(bin: string, args: string[]): Promise<{ code: number; output: string }> {
    // Output goes to a file: the daemon keeps what it was given, and a pipe would stay open with it.
    const outPath = join(this.dir, 'nginx.out');
    const fd = openSync(outPath, 'w');
    return new Promise((resolve) => {
      const child = spawn(bin, args, { stdio: ['ignore', fd, fd], detached: true });
      const done = (code: number, extra = '') => {
        closeSync(fd);
        let output = extra;
        try {
          output = readFileSync(outPath, 'utf8') + extra;
        } catch {
          // nothing written
        }
        resolve({ code, output });
      };
      child.once('error', (e) => done(-1, e.message));
      child.once('exit', (code, signal) => done(code ?? (signal ? 128 : -1)));
    });
  }

  private async waitFor(generation: number, what: string, workers: number): Promise<void> {
    const until = Date.now() + this.readyTimeoutMs;
    let seen: number | null = null;
    while (Date.now() < until) {
      seen = await this.generation();
      const pid = seen === generation ? this.masterPid() : null;
      if (pid && onlyNewWorkers(pid, workers)) return;
      await sleep(25);
    }
    throw new Error(`nginx ${what} did not take effect (answering generation ${seen ?? 'nothing'}, expected ${generation}): ${this.errorTail()}`);
  }

  private errorTail(): string {
    try {
      return readFileSync(this.errorLogPath, 'utf8').trim().split('\n').slice(-5).join('\n');
    } catch {
      return 'no error log';
    }
  }
}
