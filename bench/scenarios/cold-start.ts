// Cold start: `node bin/slipway.mjs serve` on an existing SQLite data directory, from spawn to
// the first answered GET /healthz, from dist/ (what `npm start` runs after `npm run build`) and
// from src/ through tsx, against a bare Fastify app started the same way (bare-healthz.mjs).
// The three start in turn, so a change in the machine's load touches them alike.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, startChild } from '../../test/helpers/process.js';
import { type Scenario } from '../lib/bench.js';
import { median } from '../lib/load.js';
import { cpuMs, freePort } from '../lib/proc.js';
import { line, type Result } from '../lib/report.js';

/** Loading the server's code and opening its database: what a restart or a new process costs. */
const MAX_RATIO = 3;
const MAX_MS = 1000;

export const coldStart: Scenario = {
  name: 'cold-start',
  only: 'sqlite',
  async run() {
    const starts = Number(process.env.BENCH_COLDSTARTS ?? 5);
    const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
    const env = { DATA_DIR: dir, LOG_LEVEL: 'warn', SLIPWAY_BOOTSTRAP_TOKEN: `svl_${randomBytes(32).toString('hex')}` };
    try {
      await (await startChild([], env)).stop(); // creates and migrates the database
      const hasDist = existsSync(fileURLToPath(new URL('../../dist/cli.js', import.meta.url)));
      const variants = [
        { title: 'bare Fastify app', args: [fileURLToPath(new URL('../lib/bare-healthz.mjs', import.meta.url))], env: {} },
        { title: 'slipway serve from dist/', args: [BIN, 'serve'], env: { ...env, SLIPWAY_RUN_FROM: 'dist' }, judged: true },
        { title: 'slipway serve from src/ through tsx', args: [BIN, 'serve'], env: { ...env, SLIPWAY_RUN_FROM: 'src' } },
      ]
        .filter((v) => hasDist || !v.judged)
        .map((v) => ({ ...v, times: [] as { wall: number; cpu: number }[] }));
      await fetch('http://127.0.0.1:1/').catch(() => {}); // loads fetch before the first timing
      for (let i = 0; i < starts; i++) for (const v of variants) v.times.push(await timeToHealthz(v.args, v.env));
      const [bare, ...servers] = variants.map((v) => ({ ...v, wall: median(v.times.map((t) => t.wall)), cpu: median(v.times.map((t) => t.cpu)) }));
      for (const v of [bare!, ...servers])
        line(
          `cold start, ${v.title}`,
          `median ${v.wall.toFixed(0).padStart(5)} ms, CPU ${v.cpu.toFixed(0).padStart(4)} ms   (${v.times.map((t) => t.wall.toFixed(0)).join(', ')} ms)`,
        );
      const results: Result[] = servers.map((v) => {
        const ratio = v.wall / bare!.wall;
        return {
          title: `cold start, ${v.title}`,
          figure: `${v.wall.toFixed(0)} ms`,
          ratio: `${ratio.toFixed(1)}x bare`,
          target: v.judged ? `<= ${MAX_RATIO}x, < ${MAX_MS} ms` : '',
          ok: v.judged ? ratio <= MAX_RATIO && v.wall < MAX_MS : undefined,
        };
      });
      if (!hasDist) results.push({ title: 'cold start, slipway serve from dist/', figure: 'no dist/cli.js', ratio: '', target: 'npm run build', ok: false });
      return results;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/**
 * Milliseconds from spawning `node <args> --port <n>` to the first 200 from GET /healthz (polled
 * every 5 ms), and the CPU time the process had used by then (less sensitive to the machine's
 * other load); then stops it.
 */
async function timeToHealthz(args: string[], env: Record<string, string>) {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args, '--port', String(port)], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((r) => child.once('exit', r));
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
