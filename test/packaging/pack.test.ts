// The npm package and the container image, from one pack and one install (the build and the
// install from the npm registry are the slow part): `npm pack` builds and packs the checkout, the
// tarball installs into an empty folder with production dependencies only, `npx slipway serve`
// from there serves the API from the compiled dist/ without tsx, and the Dockerfile builds an
// image from that folder on the local container engine that runs as a non-root user with its
// data in a volume, turns healthy and answers the API with the bootstrap key printed in its logs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { engineSkip } from '../support/container-engine.js';
import { waitFor } from '../helpers/util.js';
import { banner, install, pack } from './support.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const docker = async (...args: string[]) => (await run('docker', args, { maxBuffer: 64 * 1024 * 1024 })).stdout.trim();

const imageSkip = await engineSkip();

describe('packaging', () => {
  const made: string[] = [];
  /** The folder the tarball was installed into. */
  let installed: string;
  before(
    async () => {
      const tarball = await pack();
      made.push(dirname(tarball));
      installed = await install(tarball);
      made.push(installed);
      // Packing builds everything and installing reaches the npm registry: on a loaded 2-core machine
      // this alone came near the runner's default per-test limit (10 minutes).
    },
    { timeout: 25 * 60_000 },
  );
  after(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });

  describe('npm package', () => {
    let child: ChildProcess | undefined;
    // npx runs the server as its child: the whole process group is stopped.
    after(() => {
      if (child?.pid) process.kill(-child.pid, 'SIGTERM');
    });

    it('installs with production dependencies only and serves the API with npx slipway serve', async () => {
      const pkg = join(installed, 'node_modules', 'slipway');
      assert.ok(existsSync(join(pkg, 'dist', 'cli.js')), 'the compiled server is in the package');
      assert.ok(existsSync(join(pkg, 'web', 'dist', 'index.html')), 'the built dashboard is in the package');
      assert.ok(!existsSync(join(pkg, 'src')), 'the sources are not');
      assert.ok(!existsSync(join(installed, 'node_modules', 'tsx')), 'no development dependency is installed');

      let out = '';
      child = spawn('npx', ['--no-install', 'slipway', 'serve', '--port', '0', '--data-dir', join(installed, 'data')], {
        cwd: installed,
        env: { ...process.env, SLIPWAY_RUN_FROM: '', LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      const { base, token } = await waitFor(`the start banner in: ${out}`, () => banner(out), 60_000);

      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      const doc = (await (await fetch(`${base}/v3/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown> };
      assert.match(doc.openapi, /^3\./);
      assert.ok(Object.keys(doc.paths).length > 50);
      assert.equal((await fetch(`${base}/v3/projects`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
      assert.match(await (await fetch(`${base}/`)).text(), /<div id="root">/);
    });
  });

  describe('container image', { skip: imageSkip }, () => {
    const tag = `slipway-image-test:${process.pid}`;
    let container: string | undefined;
    after(async () => {
      if (container) await docker('rm', '-f', '-v', container).catch(() => {});
      await docker('rmi', '-f', tag).catch(() => {});
    });

    it('builds from the installed package, runs as a non-root user with its data in a volume, and answers the API', async () => {
      const context = join(installed, 'image');
      await run('mkdir', ['-p', context]);
      await run('cp', ['-a', join(installed, 'node_modules'), context]);
      for (const f of ['Dockerfile', '.dockerignore']) copyFileSync(join(root, f), join(context, f));
      await docker('build', '-q', '-t', tag, context);

      container = await docker('run', '-d', '-p', '127.0.0.1::8080', tag);
      await waitFor(
        'the container to be healthy',
        async () => (await docker('inspect', '-f', '{{.State.Health.Status}}', container!)) === 'healthy',
        120_000,
        500,
      );
      const logs = async () => {
        const r = await run('docker', ['logs', container!]);
        return r.stdout + r.stderr;
      };
      const { token } = await waitFor('the start banner in the logs', async () => banner(await logs()), 30_000, 200);
      const port = (await docker('port', container, '8080')).split('\n')[0]!.split(':').pop();
      const base = `http://127.0.0.1:${port}`;

      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      const projects = await fetch(`${base}/v3/projects`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(projects.status, 200, await projects.text());
      assert.notEqual(await docker('exec', container, 'id', '-u'), '0');
      assert.match(await docker('exec', container, 'ls', '/data'), /slipway\.db/);
      const mounts = JSON.parse(await docker('inspect', '-f', '{{json .Mounts}}', container)) as { Destination: string; Type: string }[];
      assert.ok(
        mounts.some((m) => m.Destination === '/data' && m.Type === 'volume'),
        JSON.stringify(mounts),
      );
    });
  });
});
