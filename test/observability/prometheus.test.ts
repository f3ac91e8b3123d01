// Debian's prometheus scrapes a running Slipway (scrape every second, with the metrics token) and
// its query API returns Slipway's series. Skipped when prometheus is not installed
// (scripts/install-prometheus.sh), unless SLIPWAY_REQUIRE_PROMETHEUS=1 (CI), which fails instead.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';

const REQUIRED = process.env.SLIPWAY_REQUIRE_PROMETHEUS === '1';
const installed = spawnSync('prometheus', ['--version']).status === 0;
if (!installed && REQUIRED) throw new Error('prometheus is required (SLIPWAY_REQUIRE_PROMETHEUS=1) but not installed: run scripts/install-prometheus.sh');
const skip = installed ? false : 'prometheus is not installed (scripts/install-prometheus.sh; SLIPWAY_REQUIRE_PROMETHEUS=1 fails instead)';

/** A port free now on 127.0.0.1 (prometheus takes its listen address from its command line). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('prometheus scrapes slipway', { skip }, () => {
  const TOKEN = 'prometheus-scrape-token';
  const s = useServer({ env: { SLIPWAY_METRICS_TOKEN: TOKEN } });
  const dir = mkdtempSync(join(tmpdir(), 'slipway-prometheus-'));
  let prometheus: ChildProcess | undefined;
  let log = '';
  after(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus!.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('its query API returns slipway_http_requests_total by operation', async () => {
    expectStatus(await s.get('/projects'), 200);
    const target = new URL(s.baseUrl).host;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: slipway',
        '    authorization:',
        `      credentials: ${TOKEN}`,
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheus = spawn(
      'prometheus',
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout!.on('data', (c: Buffer) => (log += c));
    prometheus.stderr!.on('data', (c: Buffer) => (log += c));
    const query = async (q: string) => {
      if (prometheus!.exitCode !== null) throw new Error(`prometheus exited: ${log.slice(-2000)}`);
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => undefined);
      if (!res?.ok) return [];
      return ((await res.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }).data.result;
    };
    const series = await waitFor(
      'slipway_http_requests_total in prometheus',
      async () => {
        const r = await query('slipway_http_requests_total{operation="listProjectsV3"}');
        return r.length ? r : undefined;
      },
      60_000,
      250,
    );
    assert.equal(series[0]!.metric.job, 'slipway');
    assert.equal(series[0]!.metric.method, 'GET');
    assert.ok(Number(series[0]!.value[1]) >= 1);
    // The scrape itself succeeded with the token (up == 1), and the process metrics came along.
    const up = await query('up{job="slipway"}');
    assert.equal(up[0]?.value[1], '1', log.slice(-2000));
    assert.ok((await query('process_resident_memory_bytes{job="slipway"}')).length > 0);
  });
});
