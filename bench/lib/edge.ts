// What the edge scenarios start: the small app they proxy to (edge-app.mjs), Debian's nginx with a
// plain hand-written configuration (the reference), the edge as Slipway configures it (the
// subject: renderNginx of an EdgeTable, run by NginxProcess, its access log file tailed in a
// process of its own), and idle keep-alive connections held by another process (idle-holder.mjs).
// Everything started is stopped by a Cleanup, last first, whether the scenario ends or throws.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { nginxFiles, renderNginx, statusSocket } from '../../src/shared/edge/nginx/config.js';
import { nginxBinary, NginxProcess, status } from '../../src/shared/edge/nginx/process.js';
import type { EdgeHost, EdgeTarget } from '../../src/shared/edge/table.js';
import { load, median, rounds, seconds, type Load } from './load.js';
import { childrenOf, cpuMs, freePort } from './proc.js';
import { pct } from './report.js';

/** Connections of every edge load (issue #47's measurements: 50). */
export const EDGE_CONNECTIONS = 50;

/** Undo steps, run last first; one that fails is reported and the others still run. */
export class Cleanup {
  private readonly steps: (() => unknown)[] = [];

  add(step: () => unknown) {
    this.steps.push(step);
  }

  /** `thing`, stopped at `run`. */
  keep<T extends { stop(): Promise<unknown> }>(thing: T): T {
    this.add(() => thing.stop());
    return thing;
  }

  /** A fresh temporary directory (readable by nginx's workers, which run as `nobody` under root), removed at `run`. */
  dir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    this.add(() => rmSync(dir, { recursive: true, force: true }));
    chmodSync(dir, 0o755);
    return dir;
  }

  async run() {
    while (this.steps.length) {
      const step = this.steps.pop()!;
      await Promise.resolve()
        .then(step)
        .catch((e) => console.log(`cleanup: ${(e as Error).message ?? e}`));
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `pid` is gone (polled) or `ms` passed; whether it is gone. */
async function gone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > until) return false;
    await sleep(20);
  }
}

/** A child that speaks in lines on stdout: started when a line matches `ready`, asked through stdin. */
class LineChild {
  private readonly waiting: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void; reject: (e: Error) => void }[] = [];
  private stderr = '';
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly what: string,
  ) {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      for (const [i, w] of this.waiting.entries()) {
        const m = w.pattern.exec(l);
        if (m) return void this.waiting.splice(i, 1)[0]!.resolve(m);
      }
    });
    child.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    this.exited = new Promise((r) =>
      child.once('exit', (code, signal) => {
        for (const w of this.waiting.splice(0)) w.reject(new Error(`${what} exited (${signal ?? code}): ${this.stderr.trim()}`));
        r();
      }),
    );
  }

  get pid() {
    return this.child.pid!;
  }

  /** `command args`, once it printed a line matching `ready` (in `timeoutMs`): its match. */
  static async start(what: string, command: string, args: string[], ready: RegExp, timeoutMs = 30_000): Promise<{ child: LineChild; match: RegExpMatchArray }> {
    const child = new LineChild(spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] }), what);
    try {
      return { child, match: await child.next(ready, timeoutMs) };
    } catch (e) {
      await child.stop();
      throw e;
    }
  }

  /** The next line matching `pattern`, after writing `ask` (a line) to stdin. */
  next(pattern: RegExp, timeoutMs = 30_000, ask?: string): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const waiter = {
        pattern,
        resolve: (m: RegExpMatchArray) => (clearTimeout(timer), resolve(m)),
        reject: (e: Error) => (clearTimeout(timer), reject(e)),
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(new Error(`${this.what}: no line matching ${pattern} in ${timeoutMs} ms: ${this.stderr.trim()}`));
      }, timeoutMs);
      this.waiting.push(waiter);
      if (ask !== undefined) this.child.stdin!.write(`${ask}\n`);
    });
  }

  /** Closes its stdin and sends SIGTERM, then SIGKILL after 5 s. */
  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin!.end();
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The small app (edge-app.mjs, ~200-byte text answers) in a process of its own. */
export async function startApp(): Promise<{ port: number; url: string; pid: number; stop(): Promise<void> }> {
  const { child, match } = await LineChild.start(
    'edge-app.mjs',
    process.execPath,
    [fileURLToPath(new URL('./edge-app.mjs', import.meta.url))],
    /^listening (\d+)$/,
  );
  const port = Number(match[1]);
  return { port, url: `http://127.0.0.1:${port}/`, pid: child.pid, stop: () => child.stop() };
}

/** An nginx to load (stopped by the Cleanup it was started with): its port, and the headers a request to it sends. */
export interface RunningNginx {
  port: number;
  url: string;
  headers: Record<string, string>;
  /** "Active connections" of nginx's stub_status, or null where there is none. */
  activeConnections(): Promise<number | null>;
  /** CPU time (ms) used so far by the processes that serve, by part ("nginx", "log tailer"). */
  cpu(): Record<string, number>;
}

/** What a reference nginx serves: a proxy to `upstream` (host:port), or the files under `root`. */
export type Reference = { upstream: string } | { root: string };

/**
 * Debian's nginx with a plain hand-written configuration, in the foreground (`daemon off`) as the
 * bench's child: one worker, access log off, client connections kept for 10,000 requests as the
 * edge keeps them, nginx's defaults otherwise; a proxy keeps its upstream connections alive. Stopped gracefully (SIGQUIT), then harder, its workers too.
 */
export async function referenceNginx(what: Reference, cleanup: Cleanup): Promise<RunningNginx> {
  const bin = nginxBinary();
  if (!bin) throw new Error('nginx is not installed (scripts/install-edge.sh installs it)');
  const dir = cleanup.dir('slipway-bench-nginx-');
  const port = await freePort();
  const q = (p: string) => `'${p}'`;
  const site =
    'upstream' in what
      ? [
          `  upstream app {`,
          `    server ${what.upstream};`,
          `    keepalive 32;`,
          `  }`,
          `  server {`,
          `    listen 127.0.0.1:${port};`,
          `    location / {`,
          `      proxy_pass http://app;`,
          `      proxy_http_version 1.1;`,
          `      proxy_set_header Connection '';`,
          `    }`,
          `  }`,
        ]
      : [`  server {`, `    listen 127.0.0.1:${port};`, `    root ${q(what.root)};`, `    index index.html;`, `  }`];
  const conf = [
    `daemon off;`,
    `worker_processes 1;`,
    `pid ${q(join(dir, 'nginx.pid'))};`,
    `error_log ${q(join(dir, 'error.log'))} warn;`,
    `events {`,
    `  worker_connections 4096;`,
    `}`,
    `http {`,
    `  types {`,
    `    text/html html;`,
    `  }`,
    `  default_type application/octet-stream;`,
    `  sendfile on;`,
    `  access_log off;`,
    // As the edge's: nginx's default (1000) closes each load connection every 1,000 answers, and
    // autocannon writes its next request on the closing connection (a failure, and a reconnect).
    `  keepalive_requests 10000;`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${q(join(dir, 'tmp', t))};`),
    ...site,
    `}`,
    '',
  ].join('\n');
  mkdirSync(join(dir, 'tmp'));
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child = spawn(bin, ['-p', `${dir}/`, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const pid = child.pid!;
  cleanup.add(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const workers = childrenOf(pid);
    for (const [signal, ms] of [
      ['SIGQUIT', 10_000],
      ['SIGTERM', 5000],
    ] as const) {
      child.kill(signal);
      if (await gone(pid, ms)) break;
    }
    for (const p of [pid, ...workers]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await exited;
  });
  const url = `http://127.0.0.1:${port}/`;
  await untilAnswering(url, () => (child.exitCode !== null ? `nginx exited with ${child.exitCode}: ${stderr.trim() || errorLog(dir)}` : null));
  return { port, url, headers: {}, activeConnections: async () => null, cpu: () => ({ nginx: cpuOf([pid, ...childrenOf(pid)]) }) };
}

/** CPU time (ms) of `pids`, each counted while it lives. */
const cpuOf = (pids: number[]) => pids.reduce((sum, p) => sum + cpuMs(p), 0);

const errorLog = (dir: string) => {
  try {
    return readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return 'no error log';
  }
};

/** Polls `url` until anything answers (10 s); `failed()` says why to stop early. */
async function untilAnswering(url: string, failed: () => string | null) {
  const until = Date.now() + 10_000;
  for (;;) {
    const why = failed();
    if (why) throw new Error(why);
    if (
      await fetch(url).then(
        () => true,
        () => false,
      )
    )
      return;
    if (Date.now() > until) throw new Error(`nothing answers ${url} after 10 s`);
    await sleep(20);
  }
}

/** A hostname of the edge table: the app's, or the site's. */
export function edgeHost(hostname: string, target: EdgeTarget): EdgeHost {
  return {
    hostname,
    owner: { kind: target.type === 'static' ? 'static-sites' : 'applications', id: `bench-${hostname}`, companyId: 'bench-company' },
    target,
    ipRestriction: null,
    maintenance: null,
    cache: null,
    tls: null,
    httpsRedirect: false,
  };
}

/** How many connections the edge must take: NginxOptions.workerConnections and openFiles. */
export interface EdgeLimits {
  workerConnections?: number;
  openFiles?: number;
}

/** The edge with `hosts`; requests to it name the first host. */
export type StartEdge = (hosts: EdgeHost[], cleanup: Cleanup, limits?: EdgeLimits) => Promise<RunningNginx & { title: string; accessLog(): Promise<string> }>;

/**
 * The edge as Slipway configures it, without Slipway: the whole configuration renderNginx writes
 * for the table (one worker), applied by NginxProcess (which starts nginx as a daemon), its access
 * log file tailed by AccessLogTailer in a process of its own (edge-log-sink.ts) as Slipway would.
 */
export const nginxEdge: StartEdge = async (hosts, cleanup, limits = {}) => {
  const dir = cleanup.dir('slipway-bench-edge-');
  const { child: sink, match } = await LineChild.start(
    'edge-log-sink.ts',
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./edge-log-sink.ts', import.meta.url)), dir],
    /^tailing (\S+)$/,
  );
  cleanup.keep(sink);
  const port = await freePort();
  const table = { hosts };
  const conf = renderNginx(table, {
    dir,
    http: { host: '127.0.0.1', port },
    https: null,
    origin: '',
    trustedProxies: [],
    accessLog: match[1]!,
    generation: 1,
    workers: 1,
    ...limits,
  });
  const nginx = new NginxProcess(dir, { info: () => {}, warn: (o, m) => console.log(`nginx: ${m} ${JSON.stringify(o)}`) });
  cleanup.add(() => nginx.stop(10_000));
  await nginx.apply(conf, 1, nginxFiles(table));
  const url = `http://127.0.0.1:${port}/`;
  return {
    title: 'the edge',
    port,
    url,
    headers: { host: hosts[0]!.hostname },
    cpu: () => {
      const master = nginx.masterPid();
      return { nginx: master ? cpuOf([master, ...childrenOf(master)]) : NaN, 'log tailer': cpuOf([sink.pid]) };
    },
    activeConnections: async () => {
      const body = await status(statusSocket(dir), '/status');
      const m = body && /Active connections:\s*(\d+)/.exec(body);
      return m ? Number(m[1]) : null;
    },
    accessLog: async () => {
      const m = await sink.next(/^received .*$/, 10_000, 'count');
      return m[0];
    },
  };
};

/**
 * The subject every edge scenario measures. Measuring Slipway in front (its own edge, started and
 * configured through the API) instead is this one line, with a StartEdge that does so.
 */
export const edgeSubject: StartEdge = nginxEdge;

/** The open file limits of this process (`ulimit -Sn`, `ulimit -Hn`); Infinity for unlimited. */
export function openFileLimits(): { soft: number; hard: number } {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const n = (v: string | undefined) => (v === undefined || v === 'unlimited' ? Infinity : Number(v));
  return { soft: n(m?.[1]), hard: n(m?.[2]) };
}

/**
 * `count` idle keep-alive connections to the edge, each after one answered request, held by
 * idle-holder.mjs, whose soft open file limit is raised to `openFiles` first (`ulimit -S -n`: up to
 * the hard limit, as any process may).
 */
export async function holdIdle(edge: RunningNginx, count: number, openFiles: number, cleanup: Cleanup) {
  const holder = fileURLToPath(new URL('./idle-holder.mjs', import.meta.url));
  const args = ['--port', String(edge.port), '--host', edge.headers.host ?? '127.0.0.1', '--count', String(count)];
  const { child, match } = await LineChild.start(
    'idle-holder.mjs',
    '/bin/sh',
    ['-c', `ulimit -S -n ${openFiles} && exec "$0" "$@"`, process.execPath, holder, ...args],
    /^opened (\d+) failed (\d+)(.*)$/,
    120_000,
  );
  cleanup.keep(child);
  return {
    opened: Number(match[1]),
    failed: Number(match[2]),
    firstError: match[3]!.trim(),
    /** Those the edge has not closed. */
    open: async () => Number((await child.next(/^open \d+$/, 10_000, 'count'))[0].split(' ')[1]),
    stop: () => child.stop(),
  };
}

/** What a paired comparison loads. */
export interface Loaded {
  title: string;
  url: string;
  headers: Record<string, string>;
  cpu(): Record<string, number>;
}

/**
 * `subject` against `reference` in paired rounds (BENCH_READ_ROUNDS), 50 connections, each warmed
 * up for 2 s first; the rounds alternate which goes first, so a machine's drift touches both alike.
 * The median of the rounds' rates, p99s, shares and p99 ratios; the CPU time each used per 1,000
 * answers is printed (where the time goes: nginx, and the edge's access log tailer).
 */
export async function compareEdge(reference: Loaded, subject: Loaded) {
  for (const t of [reference, subject]) await load({ url: t.url, headers: t.headers, connections: EDGE_CONNECTIONS, duration: 2 });
  const runs = { reference: [] as Load[], subject: [] as Load[] };
  const cpu = { reference: {} as Record<string, number>, subject: {} as Record<string, number> };
  for (let i = 1; i <= rounds; i++) {
    const order = i % 2 ? (['reference', 'subject'] as const) : (['subject', 'reference'] as const);
    for (const which of order) {
      const t = which === 'reference' ? reference : subject;
      const before = t.cpu();
      runs[which].push(await load({ url: t.url, headers: t.headers, connections: EDGE_CONNECTIONS, title: `${t.title} #${i}` }));
      for (const [part, ms] of Object.entries(t.cpu())) cpu[which][part] = (cpu[which][part] ?? 0) + ms - before[part]!;
    }
  }
  const answers = (ls: Load[]) => ls.reduce((n, l) => n + l.rps * seconds, 0) / 1000;
  const perThousand = (which: 'reference' | 'subject') =>
    Object.entries(cpu[which])
      .map(([part, ms]) => `${part} ${(ms / answers(runs[which])).toFixed(1)} ms`)
      .join(' + ');
  console.log(`  CPU per 1,000 answers: nginx (reference) ${perThousand('reference').replace(/^nginx /, '')}; the edge: ${perThousand('subject')}`);
  const shares = runs.subject.map((s, i) => s.rps / runs.reference[i]!.rps);
  const p99s = runs.subject.map((s, i) => s.p99 / runs.reference[i]!.p99);
  const failed = runs.subject.reduce((n, s) => n + s.failed, 0);
  console.log(`  shares of nginx: ${shares.map(pct).join(', ')}; p99 ratios: ${p99s.map((x) => `${x.toFixed(2)}x`).join(', ')}; the medians judged`);
  const med = (ls: Load[]) => ({ rps: median(ls.map((l) => l.rps)), p99: median(ls.map((l) => l.p99)) });
  return { reference: med(runs.reference), subject: med(runs.subject), share: median(shares), p99Ratio: median(p99s), failed };
}
