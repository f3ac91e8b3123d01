// Benchmarks: autocannon against a Slipway server running as a child process (SQLite by
// default, PostgreSQL when DATABASE_URL is set). Prints req/s and p99 latency per scenario, then
// deployment throughput: triggers accepted per second and the time to drain them all, webhook
// deliveries, and object storage throughput (S3 PUT/GET MB/s against the file system).
//   npm run bench                 # all scenarios, 10 s each
//   BENCH_SECONDS=5 npm run bench
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, startChild } from '../test/helpers/process.js';
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
  const appIds = await pool(Array.from({ length: apps }, (_, i) => i), 10, async (i) => {
    const r = await call(base, 'POST', '/applications', token, { display_name: `Bench app ${i}`, cluster_id: cluster, source: 'publicGit', repo_url: `https://github.com/slipway-bench/app-${i}.git` });
    if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id as string;
  });

  let firstAccept = 0;
  let rejected = 0;
  const latencies: number[] = [];
  const t0 = performance.now();
  await pool(Array.from({ length: total }, (_, i) => i), inFlight, async (i) => {
    const start = performance.now();
    const r = await call(base, 'POST', `/applications/${appIds[i % apps]}/deployments`, token, {});
    const end = performance.now();
    latencies.push(end - start);
    if (r.status === 200) firstAccept ||= end;
    else rejected++;
  });
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
  const outcome = Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ');
  console.log(
    `${'drain 1,000 deployments (immediate phases)'.padEnd(44)} ${((end - firstAccept) / 1000).toFixed(2).padStart(7)} s       (${((end - lastAccept) / 1000).toFixed(2)} s after the last accept; ${outcome})`,
  );
}

async function main() {
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
    await pool(Array.from({ length: total }, (_, i) => i), 20, async (i) => {
      const r = await call(base, 'POST', '/applications', token, { display_name: `Hook bench ${i}`, cluster_id: cluster, source: 'dockerImage', docker_image: 'nginx:1.27' });
      if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
    });
    const created = performance.now();
    await Promise.race([all, new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen.size}/${total} deliveries arrived`)), 120_000))]);
    console.log(
      `${'webhook deliveries (1,000 events, local rx)'.padEnd(44)} ${(total / ((last - first) / 1000)).toFixed(0).padStart(7)} deliveries/s   (events created at ${(total / ((created - t0) / 1000)).toFixed(0)}/s; last delivery ${((last - created) / 1000).toFixed(2)} s after the last event)`,
    );
  } finally {
    receiver.close();
  }
}
