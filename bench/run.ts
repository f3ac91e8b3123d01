// Benchmarks: autocannon against a Slipway server running as a child process (SQLite by
// default, PostgreSQL when DATABASE_URL is set). Prints req/s and p99 latency per scenario.
//   npm run bench                 # all scenarios, 10 s each
//   BENCH_SECONDS=5 npm run bench
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, startChild } from '../test/helpers/process.js';

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
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
