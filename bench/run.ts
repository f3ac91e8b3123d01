// Benchmarks: autocannon against a Slipway server running as a child process (SQLite by
// default, PostgreSQL when DATABASE_URL is set). Prints req/s and p99 latency per scenario, then
// deployment throughput: triggers accepted per second and the time to drain them all, webhook
// deliveries, and object storage throughput (S3 PUT/GET MB/s against the file system). The
// cold-start scenario times `slipway serve` from spawn to the first answered GET /healthz.
//   npm run bench                 # all scenarios, 10 s each
//   BENCH_SECONDS=5 npm run bench
//   npm run bench -- coldstart    # only the cold start (or: throughput)
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, call, startChild } from '../test/helpers/process.js';
import { objectStorageThroughput } from './object-storage.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);

async function run(title: string, url: string, headers: Record<string, string> = {}) {
  const r = await autocannon({ url, connections, duration: seconds, headers });
  const non2xx = r.non2xx + r.errors;
  console.log(
    `${title.padEnd(44)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p99 ${String(r.latency.p99).padStart(4)} ms   p50 ${String(r.latency.p50).padStart(3)} ms${non2xx ? `   (${non2xx} non-2xx/errors!)` : ''}`,
  );
  return r;
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

/**
 * Deployment throughput with zero phase delays: 1,000 triggers spread over 50 applications with
 * bounded concurrency (accepted per second), then the time from the first accepted trigger until
 * the deployment lists show every deployment final.
 */
async function deployments(base: string, token: string) {
  const apps = 50;
  const total = 1000;
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

  let firstAccept = 0;
  let rejected = 0;
  const latencies: number[] = [];
  const t0 = performance.now();
  await pool(
    Array.from({ length: total }, (_, i) => i),
    inFlight,
    async (i) => {
      const start = performance.now();
      const r = await call(base, 'POST', `/applications/${appIds[i % apps]}/deployments`, token, {});
      const end = performance.now();
      latencies.push(end - start);
      if (r.status === 200) firstAccept ||= end;
      else rejected++;
    },
  );
  const lastAccept = performance.now();
  const accepting = (lastAccept - t0) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    `${'POST deployments (50 apps, 20 in flight)'.padEnd(44)} ${((total - rejected) / accepting).toFixed(0).padStart(7)} accepted/s   p99 ${String(Math.round(percentile(latencies, 99))).padStart(4)} ms   p50 ${String(Math.round(percentile(latencies, 50))).padStart(3)} ms${rejected ? `   (${rejected} not accepted!)` : ''}`,
  );

  // Every deployment was accepted before this point, so the lists only need to be polled now.
  const pending = new Set(appIds);
  const counts: Record<string, number> = {};
  const deadline = Date.now() + 300_000;
  while (pending.size) {
    if (Date.now() > deadline) throw new Error(`deployments of ${pending.size} applications did not drain in time`);
    await pool([...pending], 10, async (id) => {
      const r = await call(base, 'GET', `/applications/${id}/deployments?limit=100`, token);
      if (r.status !== 200) throw new Error(`list deployments: ${r.status} ${JSON.stringify(r.body)}`);
      const list = r.body.data as { status: string }[];
      if (list.length < r.body.total || !list.every((d) => FINAL.has(d.status))) return;
      pending.delete(id);
      for (const d of list) counts[d.status] = (counts[d.status] ?? 0) + 1;
    });
  }
  const end = performance.now();
  const outcome = Object.entries(counts)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
  console.log(
    `${'drain 1,000 deployments (immediate phases)'.padEnd(44)} ${((end - firstAccept) / 1000).toFixed(2).padStart(7)} s       (${((end - lastAccept) / 1000).toFixed(2)} s after the last accept; ${outcome})`,
  );
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

/** CPU time (user + system) a process has used so far, in ms; NaN where /proc is missing. Clock ticks are 10 ms on Linux. */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
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

async function throughput() {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const huge = '1000000000';
  const server = await startChild([], {
    DATA_DIR: dir,
    SLIPWAY_BOOTSTRAP_TOKEN: token,
    LOG_LEVEL: 'warn',
    SLIPWAY_RATE_READ: huge,
    SLIPWAY_RATE_GENERAL_WRITE: huge,
    SLIPWAY_RATE_UNAUTHENTICATED: huge,
    SLIPWAY_RATE_SERVICE_CREATION: huge,
    SLIPWAY_RATE_DEPLOYMENT: huge,
    // Deployments advance through their phases without delays (the last scenario).
    SLIPWAY_SIM_PROGRESSION: '*=immediate',
  });
  try {
    const storage = process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite';
    console.log(`Slipway benchmark — ${storage}, ${connections} connections, ${seconds} s per scenario, node ${process.version}`);
    const t0 = Date.now();
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => call(server.baseUrl, 'POST', '/projects', token, { display_name: `Bench project ${i + j}` })));
    }
    console.log(`seeded 1,000 projects in ${Date.now() - t0} ms`);
    const auth = { authorization: `Bearer ${token}` };
    await run('GET /healthz (bare route, no auth)', `${server.baseUrl}/healthz`);
    await run('GET /v3/api-keys/validate', `${server.baseUrl}/v3/api-keys/validate`, auth);
    await run('GET /v3/projects (1,000 stored, page of 25)', `${server.baseUrl}/v3/projects`, auth);
    await run('GET /v3/projects?offset=975', `${server.baseUrl}/v3/projects?offset=975`, auth);
    await deployments(server.baseUrl, token);
    await webhookDeliveries(server.baseUrl, token);
    await objectStorageThroughput(server.baseUrl, token, dir);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
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
 * APP_CREATE, 1,000 application creations (20 in flight); reports deliveries per second from
 * the first delivery received to the last, and how long after the last creation the last arrived.
 */
async function webhookDeliveries(base: string, token: string) {
  const { createServer } = await import('node:http');
  const total = 1000;
  const seen = new Set<string>();
  let first = 0;
  let last = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(204).end();
      const id = JSON.parse(Buffer.concat(chunks).toString('utf8')).event_id as string;
      first ||= performance.now();
      last = performance.now();
      seen.add(id);
      if (seen.size === total) done();
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
          display_name: `Hook bench ${i}`,
          cluster_id: cluster,
          source: 'dockerImage',
          docker_image: 'nginx:1.27',
        });
        if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
      },
    );
    const created = performance.now();
    await Promise.race([all, new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen.size}/${total} deliveries arrived`)), 120_000))]);
    console.log(
      `${'webhook deliveries (1,000 events, local rx)'.padEnd(44)} ${(total / ((last - first) / 1000)).toFixed(0).padStart(7)} deliveries/s   (events created at ${(total / ((created - t0) / 1000)).toFixed(0)}/s; last delivery ${((last - created) / 1000).toFixed(2)} s after the last event)`,
    );
  } finally {
    receiver.close();
  }
}
