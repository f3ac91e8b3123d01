// Benchmarks: autocannon against a Slipway server running as a child process, on SQLite and then
// on PostgreSQL (a fresh database on DATABASE_URL's server, default the local one). Each read
// scenario is compared with a bare Fastify route serving the same 25-item JSON page in the same
// run (bench/bare-page.mjs), and every target of the performance work is printed with pass/FAIL:
// reads as a share of the bare route, deep offsets against offset 0 (20,000 applications),
// project writes and deployment triggers against the ratios before that work, webhook
// deliveries per second, and the server's RSS with 100,000 resources stored. Then object
// storage throughput (S3 PUT/GET MB/s against the file system). The cold-start scenario times
// `slipway serve` from spawn to the first answered GET /healthz.
//   npm run bench                 # all scenarios, 5 s each
//   BENCH_SECONDS=5 npm run bench
//   BENCH_STORAGE=postgres npm run bench -- throughput   # one storage only (sqlite or postgres)
//   npm run bench -- coldstart    # only the cold start (or: throughput)
//   BENCH_BIN=/elsewhere/bin/slipway.mjs npm run bench -- throughput   # another build (e.g. the
//                                 # one before the performance work) under the same scenarios
// The write targets (3x the build before the performance work) are judged against that build run
// in the same run: commit BEFORE_COMMIT of this checkout's history, extracted and bundled into a
// temporary directory (this checkout's node_modules linked in), BENCH_WRITE_ROUNDS paired rounds
// (default 3), the median judged.
//   BENCH_BEFORE_BIN=/before/bin/slipway.mjs npm run bench -- throughput   # that build instead
//   BENCH_BEFORE_BIN=none npm run bench   # no build before: the shares recorded before are judged
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { execSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { BIN, call, startChild } from '../test/helpers/process.js';
import { objectStorageThroughput } from './object-storage.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
/** Paired rounds of the write scenarios against the build before (the first is this build's only round otherwise). */
const writeRounds = Number(process.env.BENCH_WRITE_ROUNDS ?? 3);

async function run(title: string, url: string, headers: Record<string, string> = {}) {
  const r = await autocannon({ url, connections, duration: seconds, headers });
  printRun(title, r, String(r.latency.p99).padStart(4), String(r.latency.p50).padStart(3));
  return r;
}

/** A read scenario's line: requests per second, the p99 and p50 as given, and any answers not 2xx. */
function printRun(title: string, r: autocannon.Result, p99: string, p50: string) {
  const non2xx = r.non2xx + r.errors;
  console.log(
    `${title.padEnd(44)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p99 ${p99} ms   p50 ${p50} ms${non2xx ? `   (${non2xx} non-2xx/errors!)` : ''}`,
  );
}

/**
 * As `run`, with the p99 of the 2xx answers' latencies to the microsecond. autocannon's own
 * percentiles are whole milliseconds (its histogram counts integers), too coarse to compare two
 * p99s of 2 or 3 ms: a step of one is a ratio of 1.5. Its `response` events carry each latency
 * unrounded.
 */
async function runPrecise(title: string, url: string, headers: Record<string, string> = {}) {
  const latencies: number[] = [];
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ url, connections, duration: seconds, headers }, (e, result) => (e ? reject(e) : resolve(result)));
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
  });
  latencies.sort((a, b) => a - b);
  const p99 = percentile(latencies, 99);
  printRun(title, r, p99.toFixed(2).padStart(7), percentile(latencies, 50).toFixed(2));
  return p99;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
const FINAL = new Set(['success', 'failed', 'cancelled', 'skipped']);

/** Polls the applications' deployment lists until every deployment is final; returns them all. */
async function drained(base: string, token: string, appIds: string[]) {
  const pending = new Set(appIds);
  const finals: { id: string; status: string }[] = [];
  const deadline = Date.now() + 300_000;
  while (pending.size) {
    if (Date.now() > deadline) throw new Error(`deployments of ${pending.size} applications did not drain in time`);
    await pool([...pending], 10, async (id) => {
      const r = await call(base, 'GET', `/applications/${id}/deployments?limit=100`, token);
      if (r.status !== 200) throw new Error(`list deployments: ${r.status} ${JSON.stringify(r.body)}`);
      const list = r.body.data as { id: string; status: string }[];
      if (list.length < r.body.total || !list.every((d) => FINAL.has(d.status))) return;
      pending.delete(id);
      finals.push(...list);
    });
  }
  return finals;
}

/**
 * Deployment throughput with zero phase delays, over 50 applications with 20 triggers in flight
 * (accepted per second, latency), after a warm-up trigger per application: first the 1,000
 * triggers after that warm-up, as the figure before the performance work was measured (the
 * trigger path's code is still being optimised by V8 during them: unoptimised it costs about
 * twice as much), then 3,000 more, the sustained rate. After each burst, the time from its first
 * accepted trigger until the deployment lists show every deployment final.
 */
async function deployments(base: string, token: string, server: CpuOf) {
  // The triggers go out through undici's request on kept-alive connections: fetch cost the load
  // client about three times the CPU per request (1.2 against 0.4 ms per sustained trigger in a
  // paired run), on the same two cores as the server and the database it measures. Both builds
  // are measured with this client.
  const agent = new Agent({ connections: 32 });
  const trigger = async (id: string) => {
    const r = await request(`${base}/v3/applications/${id}/deployments`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const text = await r.body.text();
    return { status: r.statusCode, body: text ? JSON.parse(text) : undefined };
  };
  try {
    return await triggerBursts(base, token, trigger, server);
  } finally {
    await agent.close();
  }
}

async function triggerBursts(base: string, token: string, trigger: (id: string) => Promise<{ status: number; body: any }>, server: CpuOf) {
  const apps = 50;
  const inFlight = 20;
  const clusters = await call(base, 'GET', '/resources/clusters', token);
  const cluster = clusters.body[0].id as string;
  const appIds = await pool(
    Array.from({ length: apps }, (_, i) => i),
    10,
    async (i) => {
      const r = await call(base, 'POST', '/applications', token, {
        display_name: `Bench app ${i}`,
        cluster_id: cluster,
        source: 'publicGit',
        repo_url: `https://github.com/slipway-bench/app-${i}.git`,
      });
      if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    },
  );

  // Warm-up, not measured: one trigger per application (the route's validator and serializer are
  // compiled on first use), drained before the measured bursts.
  const seen = new Set(
    await pool(appIds, inFlight, async (id) => {
      const r = await trigger(id);
      if (r.status !== 200) throw new Error(`warm-up deployment: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    }),
  );
  await drained(base, token, appIds);

  /** `total` triggers spread over the applications, then drained; the deployments it made are added to `seen`. */
  async function burst(title: string, total: number) {
    let firstAccept = 0;
    let rejected = 0;
    const latencies: number[] = [];
    const cpu0 = cpuNow(server);
    const t0 = performance.now();
    await pool(
      Array.from({ length: total }, (_, i) => i),
      inFlight,
      async (i) => {
        const start = performance.now();
        const r = await trigger(appIds[i % apps]!);
        const end = performance.now();
        latencies.push(end - start);
        if (r.status === 200) firstAccept ||= end;
        else rejected++;
      },
    );
    const lastAccept = performance.now();
    const cpu = cpuSince(server, cpu0);
    const accepting = (lastAccept - t0) / 1000;
    latencies.sort((a, b) => a - b);
    console.log(
      `${title.padEnd(44)} ${((total - rejected) / accepting).toFixed(0).padStart(7)} accepted/s   p99 ${String(Math.round(percentile(latencies, 99))).padStart(4)} ms   p50 ${String(Math.round(percentile(latencies, 50))).padStart(3)} ms${rejected ? `   (${rejected} not accepted!)` : ''}`,
    );
    const per = (ms: number) => `${(ms / (total - rejected)).toFixed(2)} ms`;
    console.log(
      `${'  CPU per accepted trigger'.padEnd(44)} server ${per(cpu.server)}${cpu.postgres === undefined ? '' : `, PostgreSQL ${per(cpu.postgres)}`}, load client ${per(cpu.client)}`,
    );
    // Every deployment was accepted before this point, so the lists only need to be polled now.
    const finals = await drained(base, token, appIds);
    const end = performance.now();
    const counts: Record<string, number> = {};
    for (const d of finals) {
      if (seen.has(d.id)) continue;
      seen.add(d.id);
      counts[d.status] = (counts[d.status] ?? 0) + 1;
    }
    const outcome = Object.entries(counts)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
    console.log(
      `${`  drained (immediate phases)`.padEnd(44)} ${((end - firstAccept) / 1000).toFixed(2).padStart(7)} s       (${((end - lastAccept) / 1000).toFixed(2)} s after the last accept; ${outcome})`,
    );
    return { perSecond: (total - rejected) / accepting, p99: percentile(latencies, 99) };
  }

  const first = await burst('POST deployments, first 1,000 (50 apps)', 1000);
  const sustained = await burst('POST deployments, next 3,000 (sustained)', 3000);
  return { first, sustained };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A port that was free a moment ago (the cold-start children must be polled before they say where they listen). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The CPU time (user + system, ms) in a /proc/<pid>/stat text. Clock ticks are 10 ms on Linux. */
function statCpuMs(stat: string): number {
  const fields = stat.split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time (user + system) a process has used so far, in ms; NaN where /proc is missing. */
function cpuMs(pid: number): number {
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return NaN;
  }
}

/** Whose CPU time a trigger burst reports: the server's process, and PostgreSQL's when it is the storage. */
interface CpuOf {
  pid: number;
  postgres: boolean;
}

/** The CpuOf of a bench server on `storage`. */
const cpuOf = (server: { child: { pid?: number } }, storage: 'SQLite' | 'PostgreSQL'): CpuOf => ({
  pid: server.child.pid!,
  postgres: storage === 'PostgreSQL',
});

/**
 * CPU time (ms) of every PostgreSQL process on this machine (its backends, writers and the rest),
 * from /proc: the benchmark's database server is the local one, and nothing else uses it meanwhile.
 */
function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (stat.includes(' (postgres) ')) total += statCpuMs(stat);
  }
  return total;
}

const cpuNow = (of: CpuOf) => ({ server: cpuMs(of.pid), postgres: of.postgres ? postgresCpuMs() : NaN, client: process.cpuUsage() });

/**
 * CPU time spent since `start` (ms) by the server, PostgreSQL (undefined: not the storage, or no
 * /proc) and this process (the load client), all on the same cores: where a burst's time went.
 */
function cpuSince(of: CpuOf, start: ReturnType<typeof cpuNow>) {
  const now = cpuNow(of);
  const client = process.cpuUsage(start.client);
  const postgres = now.postgres - start.postgres;
  return {
    server: now.server - start.server,
    postgres: Number.isNaN(postgres) || postgres <= 0 ? undefined : postgres,
    client: (client.user + client.system) / 1000,
  };
}

/**
 * Milliseconds from spawning `node <args> --port <n>` to the first 200 from GET /healthz (polled
 * every 5 ms), and the CPU time the process had used by then (less sensitive to other load on the
 * machine); then stops it.
 */
async function timeToHealthz(args: string[], env: Record<string, string>): Promise<{ wall: number; cpu: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args, '--port', String(port)], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${stderr}`);
      if (performance.now() - t0 > 30_000) throw new Error(`${args.join(' ')} did not answer /healthz in 30 s:\n${stderr}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return { wall: performance.now() - t0, cpu: cpuMs(child.pid!) };
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * Cold start: `node bin/slipway.mjs serve` on an existing data directory (started and stopped
 * once first), from spawn to the first answered GET /healthz, 5 starts each from dist/ (what
 * `npm start` runs after `npm run build`) and from src/ through tsx; against a bare Fastify app
 * started the same way. Targets: under 1 s, and within 3x of the bare app.
 */
async function coldStart() {
  const runs = Number(process.env.BENCH_COLDSTARTS ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const env = { DATA_DIR: dir, LOG_LEVEL: 'warn', SLIPWAY_BOOTSTRAP_TOKEN: `svl_${randomBytes(32).toString('hex')}` };
  try {
    await (await startChild([], env)).stop(); // creates and migrates the database
    const bare = fileURLToPath(new URL('./bare-healthz.mjs', import.meta.url));
    const compiled = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
    const variants: [string, string[], Record<string, string>][] = [
      ['bare Fastify app (bench/bare-healthz.mjs)', [bare], {}],
      ['slipway serve from dist/ (npm start)', [BIN, 'serve'], { ...env, SLIPWAY_RUN_FROM: 'dist' }],
      ['slipway serve from src/ through tsx', [BIN, 'serve'], { ...env, SLIPWAY_RUN_FROM: 'src' }],
    ];
    await fetch('http://127.0.0.1:1/').catch(() => {}); // loads fetch before the first timing
    const chosen = variants.filter(([title, , vars]) => {
      if (vars.SLIPWAY_RUN_FROM !== 'dist' || existsSync(compiled)) return true;
      console.log(`cold start: ${title}: skipped, no dist/cli.js (npm run build)`);
      return false;
    });
    // Round-robin, so a change in background load touches every variant alike.
    console.log(`cold start, ${runs} starts each, load average ${loadavg()[0]!.toFixed(1)} (spawn to first answered GET /healthz; CPU: the process's own)`);
    const times = new Map<string, { wall: number; cpu: number }[]>(chosen.map(([title]) => [title, []]));
    for (let i = 0; i < runs; i++) for (const [title, args, vars] of chosen) times.get(title)!.push(await timeToHealthz(args, vars));
    const medians: Record<string, number> = {};
    const cpus: Record<string, number> = {};
    for (const [title, ts] of times) {
      const m = (medians[title] = median(ts.map((t) => t.wall)));
      const cpu = (cpus[title] = median(ts.map((t) => t.cpu)));
      const ratio =
        title === variants[0]![0] ? '' : `   ${(m / medians[variants[0]![0]]!).toFixed(1)}x bare (CPU ${(cpu / cpus[variants[0]![0]]!).toFixed(1)}x)`;
      console.log(
        `${title.padEnd(44)} median ${m.toFixed(0).padStart(5)} ms, CPU ${cpu.toFixed(0).padStart(4)} ms   (${ts.map((t) => t.wall.toFixed(0)).join(', ')} ms)${ratio}`,
      );
    }
    const dist = medians[variants[1]![0]];
    if (dist !== undefined) {
      const ratio = dist / medians[variants[0]![0]]!;
      const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
      console.log(
        `cold-start targets: under 1 s ${verdict(dist < 1000)} (${dist.toFixed(0)} ms); within 3x of bare Fastify ${verdict(ratio <= 3)} (${ratio.toFixed(1)}x)`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Write throughput as a share of the bare route, measured before the performance work (README
 * "Benchmarks"), on the machine the issue was filed from. Judged only when the build before cannot
 * run in the same run (BENCH_BEFORE_BIN=none, or BEFORE_COMMIT not in this checkout's history):
 * the bare route's speed and the write path's do not scale alike from machine to machine, so the
 * build before measured in the same run is the share "before" means. NaN: not measured.
 */
const BEFORE: Record<'SQLite' | 'PostgreSQL', { projectWrites: number; deployments: number }> = {
  SQLite: { projectWrites: 12 / 265, deployments: 75 / 2314 },
  PostgreSQL: { projectWrites: Number.NaN, deployments: 46 / 1449 },
};

const mark = (ok: boolean) => (ok ? 'pass' : 'FAIL');
const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

/** Starts bench/bare-page.mjs serving `page` (JSON) on a free port. */
async function bareServer(page: unknown, dir: string) {
  const file = join(dir, 'bare-page.json');
  writeFileSync(file, JSON.stringify(page));
  const port = await freePort();
  const child = spawn(process.execPath, [fileURLToPath(new URL('./bare-page.mjs', import.meta.url)), '--port', String(port), '--page', file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve());
    child.once('exit', (code) => reject(new Error(`bare-page.mjs exited with ${code}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url: `http://127.0.0.1:${port}/page`,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** POST /v3/projects at `connections` for the scenario's duration, each with its own name. */
async function projectWrites(base: string, token: string) {
  let n = 0;
  return autocannon({
    url: `${base}/v3/projects`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ display_name: `Write bench ${n++}` }) }),
      },
    ],
  });
}

/**
 * Rows written straight into the server's database (SQLite file or PostgreSQL): `apps` copies of
 * an application of the bench company (the deep-offset scenario), and `projects` projects of
 * another company, so the server holds 100,000 resources for the memory check.
 */
async function seedRows(dir: string, templateAppId: string, apps: number, projects: number) {
  const { openDatabase } = await import('../src/shared/db/index.js');
  const database = openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: dir });
  const db = database.db as any;
  try {
    const template = await db.selectFrom('applications').selectAll().where('id', '=', templateAppId).executeTakeFirstOrThrow();
    const t0 = Date.parse(template.created_at);
    const id = (prefix: string, i: number) => `${prefix}-0000-4000-8000-${String(i).padStart(12, '0')}`;
    for (let i = 0; i < apps; i += 300) {
      const rows = Array.from({ length: Math.min(300, apps - i) }, (_, j) => {
        const k = i + j;
        const at = new Date(t0 - (apps - k) * 1000).toISOString();
        return {
          ...template,
          id: id('a0000000', k),
          name: `seeded-${k}`,
          display_name: `Seeded ${k}`,
          hook_token: template.hook_token ? `seeded-${k}` : null,
          created_at: at,
          updated_at: at,
        };
      });
      await db.insertInto('applications').values(rows).execute();
    }
    const other = id('c0000000', 1);
    const now = new Date().toISOString();
    await db.insertInto('companies').values({ id: other, name: 'Seeded company', status: 'active', created_at: now, updated_at: now }).execute();
    for (let i = 0; i < projects; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, projects - i) }, (_, j) => ({
        id: id('p0000000', i + j),
        company_id: other,
        name: `seeded-${i + j}`,
        display_name: `Seeded ${i + j}`,
        created_at: now,
        updated_at: now,
      }));
      await db.insertInto('projects').values(rows).execute();
    }
  } finally {
    await database.close();
  }
}

/**
 * PostgreSQL: statistics gathered after a bulk load, as autovacuum would shortly after one (its
 * naptime is a minute; a benchmark starts reading at once). SQLite plans these queries without.
 */
async function analyze(dir: string, databaseUrl = process.env.DATABASE_URL) {
  if (!databaseUrl) return;
  const { openDatabase } = await import('../src/shared/db/index.js');
  const database = openDatabase({ databaseUrl, dataDir: dir });
  try {
    await sql`ANALYZE`.execute(database.db);
  } finally {
    await database.close();
  }
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/**
 * A bench server of build `bin` with default settings (the shipped log level, info: one line per
 * request; the default rate-limit store), the rate limits out of the way, on a fresh data
 * directory (and the database DATABASE_URL names, if set).
 */
async function benchServer(bin: string, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const huge = '1000000000';
  const server = await startChild(
    ['--log-level', 'info'],
    {
      DATA_DIR: dir,
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_RATE_READ: huge,
      SLIPWAY_RATE_GENERAL_WRITE: huge,
      SLIPWAY_RATE_UNAUTHENTICATED: huge,
      SLIPWAY_RATE_SERVICE_CREATION: huge,
      SLIPWAY_RATE_DEPLOYMENT: huge,
      // Deployments advance through their phases without delays (the deployment scenario).
      SLIPWAY_SIM_PROGRESSION: '*=immediate',
      // The webhook receiver holds its first answers until all events exist (webhookDeliveries).
      SLIPWAY_WEBHOOK_TIMEOUT_MS: '300000',
      ...env,
    },
    30_000,
    false,
    bin,
  );
  return { server, dir, token };
}

/**
 * The read scenarios against the bare route, in paired rounds (BENCH_READ_ROUNDS, default 3): each
 * round runs the bare route, then `GET /v3/projects`, then `GET /v3/api-keys/validate`, so every
 * share compares figures taken within seconds of each other (this machine's speed drifts by half
 * between minutes); a share is the median of its rounds'. Before the first round each of the three
 * is warmed up for 2 s, not counted, as the deep-offset scenarios are: a first run would otherwise
 * also time V8 compiling the read path (the bare route has far less code to compile).
 */
async function readRounds(bareUrl: string, base: string, auth: Record<string, string>) {
  const rounds = Number(process.env.BENCH_READ_ROUNDS ?? 3);
  const projectsUrl = `${base}/v3/projects`;
  const validateUrl = `${base}/v3/api-keys/validate`;
  for (const [url, headers] of [
    [bareUrl, {}],
    [projectsUrl, auth],
    [validateUrl, auth],
  ] as const)
    await autocannon({ url, connections, duration: 2, headers });
  const bare: number[] = [];
  const projectShares: number[] = [];
  const validateShares: number[] = [];
  for (let i = 1; i <= rounds; i++) {
    const b = (await run(`bare Fastify route (same 25-item page) #${i}`, bareUrl)).requests.average;
    const p = (await run(`GET /v3/projects (1,000 stored, page of 25) #${i}`, projectsUrl, auth)).requests.average;
    const v = (await run(`GET /v3/api-keys/validate #${i}`, validateUrl, auth)).requests.average;
    bare.push(b);
    projectShares.push(p / b);
    validateShares.push(v / b);
  }
  return { bareRps: median(bare), projects: median(projectShares), validate: median(validateShares), projectShares, validateShares };
}

/** 1,000 projects created through the API, 50 at a time (the list the read scenarios page through). */
async function seedProjects(base: string, token: string) {
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => call(base, 'POST', '/projects', token, { display_name: `Bench project ${i + j}` })));
  }
}

/** The build before the performance work (README "Benchmarks"). */
const BEFORE_COMMIT = '5d44513';

/**
 * The build the write targets are judged against: BENCH_BEFORE_BIN when set ("none": no build, the
 * recorded shares are judged), else BEFORE_COMMIT from this checkout's git history, extracted with
 * `git archive` into a temporary directory, this checkout's node_modules linked in (the build before
 * runs on the same locked dependencies) and bundled with that build's own script. Undefined, with
 * the reason printed, when there is none; `remove` deletes what was made.
 */
function beforeBuild(): { bin: string; remove(): void } | undefined {
  const given = process.env.BENCH_BEFORE_BIN;
  if (given === 'none') return undefined;
  if (given) return { bin: given, remove() {} };
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'slipway-before-'));
  try {
    execSync(`set -o pipefail; git archive ${BEFORE_COMMIT} | tar -x -C ${JSON.stringify(dir)}`, {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
      shell: '/bin/bash',
    });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    execSync(`${JSON.stringify(process.execPath)} scripts/bundle.mjs`, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    const why = (e as { stderr?: Buffer }).stderr?.toString().trim() || (e as Error).message;
    console.log(
      `the build before (${BEFORE_COMMIT}) could not be made (${why.split('\n')[0]}): the write targets are judged against the shares recorded before`,
    );
    return undefined;
  }
  console.log(`the build before: ${BEFORE_COMMIT}, extracted and bundled in ${dir}`);
  return { bin: join(dir, 'bin', 'slipway.mjs'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The write scenarios against the build before (`bin`, from `beforeBuild`), so the 3x write targets are judged
 * within one run. `first` is this build's round on its main server. With BENCH_WRITE_ROUNDS above 1 the two
 * builds then take turns, this build first, until each has that many rounds. Every round but this
 * build's first runs on a server of its own on a fresh database, prepared as the main server was
 * (`writesOnFresh`), so no round measures a database that earlier rounds made larger, and the main
 * server's later scenarios (memory with 100,000 resources) see no extra rows. The pairs of rounds,
 * in order; undefined when there is no build before.
 */
async function writesOfBefore(storage: 'SQLite' | 'PostgreSQL', first: Writes, bin: string | undefined) {
  if (!bin) return undefined;
  console.log(`the build before (${bin}), write scenarios:`);
  const rounds: { now: Writes; then: Writes }[] = [];
  for (let i = 1; i <= writeRounds; i++) {
    if (i > 1) console.log(`paired write round ${i} of ${writeRounds}: this build, then the build before, each on a fresh database`);
    const now = i === 1 ? first : await writesOnFresh(process.env.BENCH_BIN || BIN, storage, `now${i}`, ` (round ${i})`);
    rounds.push({ now, then: await writesOnFresh(bin, storage, `before${i}`, ` (build before, round ${i})`) });
  }
  return rounds;
}

/**
 * One round of the write scenarios on a new server of `bin` with a fresh database (on PostgreSQL
 * one named after DATABASE_URL's with `suffix`), after the load the main server had before its
 * writes (the 1,000 projects, then the two reads), unprinted: no round's write path is measured
 * in a colder process than another's.
 */
async function writesOnFresh(bin: string, storage: 'SQLite' | 'PostgreSQL', suffix: string, label = ''): Promise<Writes> {
  let drop: (() => Promise<void>) | undefined;
  const env: Record<string, string> = {};
  if (storage === 'PostgreSQL') {
    const pg = (await import('pg')).default;
    const server = process.env.DATABASE_URL!;
    const admin = new pg.Client({ connectionString: server });
    await admin.connect();
    const made = await createDatabase(admin, server, `${new URL(server).pathname.slice(1)}_${suffix}`);
    drop = async () => {
      await made.drop();
      await admin.end();
    };
    env.DATABASE_URL = made.url;
  }
  const { server, dir, token } = await benchServer(bin, env);
  try {
    await seedProjects(server.baseUrl, token);
    await analyze(dir, env.DATABASE_URL);
    for (const path of ['/v3/projects', '/v3/api-keys/validate'])
      await autocannon({ url: `${server.baseUrl}${path}`, connections, duration: seconds, headers: { authorization: `Bearer ${token}` } });
    return await writes(server.baseUrl, token, cpuOf(server, storage), label);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    await drop?.();
  }
}

/** A build's write figures in one round, accepted per second (p99s in ms). */
interface Writes {
  projects: number;
  projectsP99: number;
  first: number;
  sustained: number;
  firstP99: number;
  sustainedP99: number;
}

/** One round of a build's write scenarios: `POST /v3/projects` for the scenario's seconds, then the two trigger bursts. */
async function writes(base: string, token: string, server: CpuOf, label = ''): Promise<Writes> {
  const w = await projectWrites(base, token);
  const accepted = w['2xx'] / seconds;
  console.log(
    `${`POST /v3/projects${label}`.padEnd(44)} ${accepted.toFixed(0).padStart(7)} accepted/s   p99 ${String(w.latency.p99).padStart(4)} ms   p50 ${String(w.latency.p50).padStart(3)} ms${w.non2xx + w.errors ? `   (${w.non2xx + w.errors} non-2xx/errors!)` : ''}`,
  );
  const d = await deployments(base, token, server);
  return {
    projects: accepted,
    projectsP99: w.latency.p99,
    first: d.first.perSecond,
    sustained: d.sustained.perSecond,
    firstP99: d.first.p99,
    sustainedP99: d.sustained.p99,
  };
}

/**
 * One storage: the read path against the bare route, deep offsets, writes (against `beforeBin`,
 * the build before, if any), deliveries, memory.
 */
async function throughputOn(storage: 'SQLite' | 'PostgreSQL', beforeBin: string | undefined) {
  const { server, dir, token } = await benchServer(process.env.BENCH_BIN || BIN);
  let bare: Awaited<ReturnType<typeof bareServer>> | undefined;
  try {
    console.log(
      `\nSlipway benchmark — ${storage}, ${connections} connections, ${seconds} s per scenario, node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`,
    );
    const t0 = Date.now();
    await seedProjects(server.baseUrl, token);
    console.log(`seeded 1,000 projects in ${Date.now() - t0} ms`);
    await analyze(dir);
    const auth = { authorization: `Bearer ${token}` };
    const page = await call(server.baseUrl, 'GET', '/projects', token);
    bare = await bareServer(page.body, dir);
    const reads = await readRounds(bare.url, server.baseUrl, auth);
    await bare.stop();
    bare = undefined;
    const bareRps = reads.bareRps;
    const readTarget = storage === 'SQLite' ? 0.6 : 0.3;
    const lines: string[] = [];
    const shares = (xs: number[]) => `(median of ${xs.length} paired rounds: ${xs.map(pct).join(', ')})`;
    lines.push(
      `GET /v3/projects: ${pct(reads.projects)} of bare ${shares(reads.projectShares)} (target >= ${pct(readTarget)}) ${mark(reads.projects >= readTarget)}`,
    );
    lines.push(
      `GET /v3/api-keys/validate: ${pct(reads.validate)} of bare ${shares(reads.validateShares)} (target >= GET /v3/projects) ${mark(reads.validate >= reads.projects * 0.95)}`,
    );

    const w = await writes(server.baseUrl, token, cpuOf(server, storage));
    const rounds = await writesOfBefore(storage, w, beforeBin);
    // The shares recorded before are judged only when the build before did not run here.
    const before = BEFORE[storage];
    const versus = (now: number, then: number) =>
      Number.isNaN(then)
        ? 'no recorded share)'
        : `recorded before ${pct(then)}: ${(now / then).toFixed(1)}x${rounds ? ', not judged: the build before ran in this run, below)' : `, target >= 3x) ${mark(now >= 3 * then)}`}`;
    const wRatio = w.projects / bareRps;
    lines.push(
      `POST /v3/projects: ${pct(wRatio)} of bare (${versus(wRatio, before.projectWrites)}; p99 ${w.projectsP99} ms (target < 50 ms) ${mark(w.projectsP99 < 50)}`,
    );
    for (const [title, perSecond, p99] of [
      ['deployment triggers, first 1,000 (as before was measured)', w.first, w.firstP99],
      ['deployment triggers, sustained (before was measured as above)', w.sustained, w.sustainedP99],
    ] as const) {
      const ratio = perSecond / bareRps;
      lines.push(`${title}: ${pct(ratio)} of bare (${versus(ratio, before.deployments)}; p99 ${p99.toFixed(0)} ms (target < 50 ms) ${mark(p99 < 50)}`);
    }
    if (rounds) {
      // Each round's ratio, and the median of them judged (as the read shares are).
      const x = (pick: (w: Writes) => number) => {
        const ratios = rounds.map((r) => pick(r.now) / pick(r.then));
        const m = median(ratios);
        const each = ratios.length > 1 ? `median of ${ratios.length} paired rounds: ${ratios.map((r) => `${r.toFixed(1)}x`).join(', ')}; ` : '';
        return `${m.toFixed(1)}x (${each}target >= 3x) ${mark(m >= 3)}`;
      };
      lines.push(`against the build before, same run: POST /v3/projects ${x((r) => r.projects)}`);
      lines.push(`against the build before, same run: deployment triggers, first 1,000 ${x((r) => r.first)}`);
      lines.push(`against the build before, same run: deployment triggers, sustained ${x((r) => r.sustained)}`);
    }
    // As for the triggers: the first 1,000 deliveries the server makes (its delivery path is
    // still being compiled by V8 meanwhile), then 1,000 more; the target holds for both.
    for (const round of ['first', 'next'] as const) {
      const hooks = await webhookDeliveries(server.baseUrl, token, round);
      lines.push(`webhook deliveries, ${round} 1,000: ${hooks.toFixed(0)}/s (target >= 1,000/s) ${mark(hooks >= 1000)}`);
    }

    // Deep offsets: 20,000 applications of the bench company, then 100,000 resources in all.
    const apps = await call(server.baseUrl, 'GET', '/applications?limit=1', token);
    const stored = apps.body.total as number;
    const t1 = Date.now();
    await seedRows(dir, apps.body.data[0].id, 20_000, 80_000);
    await analyze(dir);
    console.log(`seeded 20,000 applications (${stored} before) and 80,000 projects of another company in ${Date.now() - t1} ms`);
    // Warm-up of each of the two, not counted: the seeded rows into the caches, and a list's first
    // deep read reads its bookmarks (once per list version).
    const warmed = async (title: string, url: string) => {
      await autocannon({ url, connections, duration: 2, headers: auth });
      return runPrecise(title, url, auth);
    };
    const first = await warmed('GET /v3/applications?offset=0 (20,000+)', `${server.baseUrl}/v3/applications?offset=0`);
    const deep = await warmed('GET /v3/applications?offset=10000', `${server.baseUrl}/v3/applications?offset=10000`);
    const deepRatio = deep / first;
    lines.push(`offset=10000 p99 / offset=0 p99: ${deepRatio.toFixed(2)} (target <= 1.5) ${mark(deepRatio <= 1.5)}`);
    await run('GET /v3/projects (after seeding)', `${server.baseUrl}/v3/projects`, auth);
    const rss = rssMb(server.child.pid!);
    lines.push(`RSS after the read benchmarks, 100,000 resources stored: ${rss.toFixed(0)} MB (target < 200 MB) ${mark(rss < 200)}`);
    console.log(`targets (${storage}):\n  ${lines.join('\n  ')}`);
    if (storage === 'SQLite') await objectStorageThroughput(server.baseUrl, token, dir).catch((e) => console.log(`object storage throughput failed: ${e}`));
  } finally {
    await bare?.stop();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates database `name` on the server `client` is connected to (`server`: a URL of it); the new database's URL, and how to drop it. */
async function createDatabase(client: { query(text: string): Promise<unknown> }, server: string, name: string) {
  await client.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** The throughput scenarios on both storages, with the build before made for them first (`beforeBuild`). */
async function throughput() {
  const made = beforeBuild();
  try {
    await throughputOnBoth(made?.bin);
  } finally {
    made?.remove();
  }
}

/**
 * SQLite, then PostgreSQL on a fresh database (DATABASE_URL names the server to use, default
 * postgres://postgres@127.0.0.1:5432; skipped when unreachable).
 */
async function throughputOnBoth(beforeBin: string | undefined) {
  const only = process.env.BENCH_STORAGE; // sqlite or postgres: just that one
  const given = process.env.DATABASE_URL;
  delete process.env.DATABASE_URL;
  if (only !== 'postgres') await throughputOn('SQLite', beforeBin);
  if (only === 'sqlite') return;
  const admin = given ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const pg = (await import('pg')).default;
  const name = `slipway_bench_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  try {
    await client.connect();
  } catch (e) {
    console.log(`\nPostgreSQL: skipped (${admin} not reachable: ${(e as Error).message})`);
    return;
  }
  const made = await createDatabase(client, admin, name);
  process.env.DATABASE_URL = made.url;
  try {
    await throughputOn('PostgreSQL', beforeBin);
  } finally {
    await made.drop();
    await client.end();
    if (given === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = given;
  }
}

const SCENARIOS: Record<string, () => Promise<void>> = { coldstart: coldStart, throughput };

async function main() {
  const chosen = process.argv.slice(2);
  const unknown = chosen.filter((c) => !(c in SCENARIOS));
  if (unknown.length) throw new Error(`unknown scenario ${unknown.join(', ')}; choose from ${Object.keys(SCENARIOS).join(', ')}`);
  for (const name of chosen.length ? chosen : Object.keys(SCENARIOS)) await SCENARIOS[name]!();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

/**
 * Webhook delivery throughput: a local receiver (204, no delay), one webhook subscribed to
 * APP_CREATE, 1,000 application creations (20 in flight). The receiver holds its answers until
 * every event exists (so the deliveries are not paced by how fast events are created: the first
 * attempts wait, the rest queue as jobs), then answers at once; reports deliveries per second from
 * that moment until the last of the 1,000 events arrived.
 */
async function webhookDeliveries(base: string, token: string, round: 'first' | 'next'): Promise<number> {
  const { createServer } = await import('node:http');
  const total = 1000;
  const seen = new Set<string>();
  let last = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  let held: (() => void)[] | undefined = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
        res.writeHead(204).end();
        const id = JSON.parse(Buffer.concat(chunks).toString('utf8')).event_id as string;
        last = performance.now();
        seen.add(id);
        if (seen.size === total) done();
      };
      if (held) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const port = (receiver.address() as { port: number }).port;
    const hook = await call(base, 'POST', '/webhooks', token, { allowed_events: ['APP_CREATE'], endpoint: `http://127.0.0.1:${port}/hook` });
    if (hook.status !== 201) throw new Error(`create webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
    const clusters = await call(base, 'GET', '/resources/clusters', token);
    const cluster = clusters.body[0].id as string;
    const t0 = performance.now();
    await pool(
      Array.from({ length: total }, (_, i) => i),
      20,
      async (i) => {
        const r = await call(base, 'POST', '/applications', token, {
          display_name: `Hook bench ${round} ${i}`,
          cluster_id: cluster,
          source: 'dockerImage',
          docker_image: 'nginx:1.27',
        });
        if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
      },
    );
    const created = performance.now();
    const first = created;
    const waiting = held!;
    held = undefined;
    for (const answer of waiting) answer();
    // A guard that does not keep the bench alive once the deliveries are in (the run would wait out its 2 minutes).
    await Promise.race([
      all,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen.size}/${total} deliveries arrived`)), 120_000).unref()),
    ]);
    const rate = total / ((last - first) / 1000);
    // The next round's events go to its own webhook only.
    const gone = await call(base, 'DELETE', `/webhooks/${hook.body.id}`, token);
    if (gone.status !== 200) throw new Error(`delete webhook: ${gone.status} ${JSON.stringify(gone.body)}`);
    console.log(
      `${`webhook deliveries, ${round} 1,000 (local rx)`.padEnd(44)} ${rate.toFixed(0).padStart(7)} deliveries/s   (events created at ${(total / ((created - t0) / 1000)).toFixed(0)}/s; last delivery ${((last - created) / 1000).toFixed(2)} s after the last event)`,
    );
    return rate;
  } finally {
    receiver.close();
  }
}
