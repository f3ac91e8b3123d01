// The container runtime (issue #48), on the engine at DOCKER_HOST (skipped with a message without
// one), with two Slipway servers of its own: one on the container runtime, one on the local
// (host process) runtime, each with its edge, and the same small Node app (the edge scenarios'
// ~200-byte answer) deployed on both from one git repository.
// - Build-to-serving of a prebuilt image: the app's image, pushed to the local registry, deployed
//   as a `dockerImage` application; from the deploy call to the first 200 through the edge. The
//   reference is `docker run` of the same image on the same engine (create, start, first 200 on its
//   published port): what any platform pays to start that container, so the ratio is what Slipway
//   adds (pull check, tag, deployment phases, readiness, the edge's switch).
// - Throughput through the edge to the container against the edge to the host process, in paired
//   rounds: what the container's network path (published port, the engine's proxy) costs.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, startChild, type ChildServer } from '../../test/helpers/process.js';
import { git } from '../../test/apps-real/support.js';
import { engineAddress, testRegistry } from '../../test/support/container-engine.js';
import { type Scenario } from '../lib/bench.js';
import { EDGE_CONNECTIONS } from '../lib/edge.js';
import { load, median, rounds } from '../lib/load.js';
import { freePort } from '../lib/proc.js';
import { int, pct, type Result } from '../lib/report.js';

/** Slipway's deploy of a prebuilt image within 3x a bare `docker run` of it (both include the app's own start). */
const MAX_DEPLOY_RATIO = 3;
/** The edge to a container within 80% of the edge to the same app as a host process. */
const MIN_CONTAINER_SHARE = 0.8;
const DEPLOYS = 3;

const SERVER_JS = `const body = 'Hello from a small app behind the edge. '.padEnd(205, 'The same 206 bytes on every request. ') + '\\n';
const server = require('http').createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 65000;
server.listen(Number(process.env.PORT), '0.0.0.0', () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`;

/** The status of GET / at 127.0.0.1:port (Host `host`), or 0 when nothing answers. */
function status(port: number, host?: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, timeout: 2000, headers: host ? { host } : {} }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function until200(port: number, host?: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await status(port, host)) !== 200) {
    if (Date.now() > deadline) throw new Error(`no 200 from 127.0.0.1:${port} (${host ?? 'direct'}) in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Server {
  s: ChildServer;
  token: string;
  edgePort: number;
  dir: string;
}

async function slipway(runtime: 'container' | 'local'): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), `slipway-bench-${runtime}-`));
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const edgePort = await freePort();
  const huge = '1000000000';
  const s = await startChild(
    [],
    {
      DATA_DIR: dir,
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_RUNTIME: runtime,
      SLIPWAY_EDGE_PORT: String(edgePort),
      SLIPWAY_APPS_READY_TIMEOUT_MS: '60000',
      SLIPWAY_RATE_READ: huge,
      SLIPWAY_RATE_GENERAL_WRITE: huge,
      SLIPWAY_RATE_DEPLOYMENT: huge,
      SLIPWAY_RATE_SERVICE_CREATION: huge,
    },
    60_000,
    false,
  );
  return { s, token, edgePort, dir };
}

async function api(x: Server, method: string, path: string, body?: unknown) {
  const r = await call(x.s.baseUrl, method, path, x.token, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function cluster(x: Server): Promise<string> {
  return (await api(x, 'GET', '/resources/clusters'))[0].id as string;
}

/** Deploys and waits for success; the deployment's id. */
async function deployed(x: Server, appId: string): Promise<string> {
  const d = await api(x, 'POST', `/applications/${appId}/deployments`, {});
  for (;;) {
    const got = await api(x, 'GET', `/applications/${appId}/deployments/${d.id}`);
    if (got.status === 'success') return d.id as string;
    if (['failed', 'cancelled', 'skipped'].includes(got.status)) throw new Error(`deployment ${d.id}: ${got.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function repoApp(x: Server, repoUrl: string): Promise<{ id: string; host: string }> {
  const a = await api(x, 'POST', '/applications', {
    display_name: `bench box ${randomBytes(3).toString('hex')}`,
    cluster_id: await cluster(x),
    source: 'publicGit',
    git_type: 'github',
    repo_url: repoUrl,
    default_branch: 'main',
  });
  return { id: a.id, host: `${a.name}.localhost` };
}

export const containers: Scenario = {
  name: 'containers',
  only: 'sqlite',
  async run() {
    const address = engineAddress();
    const docker = new Docker(address ?? undefined);
    const up = address
      ? await docker.ping().then(
          () => true,
          () => false,
        )
      : false;
    if (!up) {
      console.log(
        `  skipped: no container engine answers at DOCKER_HOST=${process.env.DOCKER_HOST ?? '(unset)'} (eval "$(scripts/start-container-engine.sh)")`,
      );
      return [];
    }
    const undo: (() => unknown)[] = [];
    try {
      const repo = mkdtempSync(join(tmpdir(), 'slipway-bench-box-'));
      undo.push(() => rmSync(repo, { recursive: true, force: true }));
      git(repo, 'init', '-q', '-b', 'main');
      writeFileSync(join(repo, 'package.json'), JSON.stringify({ name: 'bench-box', version: '1.0.0', scripts: { start: 'node server.js' } }));
      writeFileSync(join(repo, 'server.js'), SERVER_JS);
      git(repo, 'add', '.');
      git(repo, 'commit', '-q', '-m', 'app');

      const boxes = await slipway('container');
      undo.push(async () => {
        await boxes.s.stop();
        rmSync(boxes.dir, { recursive: true, force: true });
      });
      const host = await slipway('local');
      undo.push(async () => {
        await host.s.stop();
        rmSync(host.dir, { recursive: true, force: true });
      });
      const inBox = await repoApp(boxes, `file://${repo}`);
      const onHost = await repoApp(host, `file://${repo}`);
      const built = await deployed(boxes, inBox.id);
      await deployed(host, onHost.id);
      await until200(boxes.edgePort, inBox.host);
      await until200(host.edgePort, onHost.host);

      // Throughput, paired rounds after a warm-up of each.
      const edgeLoad = (x: Server, h: string, title?: string) =>
        load({ url: `http://127.0.0.1:${x.edgePort}/`, headers: { host: h }, connections: EDGE_CONNECTIONS, ...(title ? { title } : { duration: 2 }) });
      await edgeLoad(boxes, inBox.host);
      await edgeLoad(host, onHost.host);
      const shares: number[] = [];
      const boxRps: number[] = [];
      const hostRps: number[] = [];
      let failed = 0;
      for (let i = 0; i < rounds; i++) {
        const b = await edgeLoad(boxes, inBox.host, `edge to the container, round ${i + 1}`);
        const h = await edgeLoad(host, onHost.host, `edge to the host process, round ${i + 1}`);
        boxRps.push(b.rps);
        hostRps.push(h.rps);
        shares.push(b.rps / h.rps);
        failed += b.failed + h.failed;
      }
      const share = median(shares);
      const results: Result[] = [
        { title: 'edge to the app as a host process', figure: `${int(median(hostRps))} req/s`, ratio: '', target: '' },
        {
          title: 'edge to the app in a container',
          figure: `${int(median(boxRps))} req/s`,
          ratio: `${pct(share)} of host`,
          target: `>= ${pct(MIN_CONTAINER_SHARE)} of host`,
          ok: share >= MIN_CONTAINER_SHARE && failed === 0,
        },
      ];

      const reg = testRegistry();
      if (!reg) {
        console.log('  build-to-serving skipped: SLIPWAY_TEST_REGISTRY(_USER, _PASSWORD) not set (scripts/start-container-engine.sh prints them)');
        return results;
      }
      // The built image, pushed to the registry: a prebuilt image, present in the engine (the pull checks it).
      const image = `${reg.host}/slipway-bench/box:${randomBytes(4).toString('hex')}`;
      const [repoName, tag] = [image.slice(0, image.lastIndexOf(':')), image.slice(image.lastIndexOf(':') + 1)];
      await docker.getImage(`slipway/${inBox.id}:${built}`).tag({ repo: repoName, tag });
      const auth = { username: reg.user, password: reg.password, serveraddress: reg.host };
      await new Promise<void>((resolve, reject) =>
        docker
          .getImage(image)
          .push({ authconfig: auth })
          .then((s) => docker.modem.followProgress(s, (e: Error | null) => (e ? reject(e) : resolve())), reject),
      );
      undo.push(() =>
        docker
          .getImage(image)
          .remove()
          .catch(() => {}),
      );
      const credential = await api(boxes, 'POST', '/docker-registries', {
        name: 'bench registry',
        registry: 'custom',
        username: reg.user,
        secret: reg.password,
      });

      const slipwayMs: number[] = [];
      const dockerMs: number[] = [];
      for (let i = 0; i < DEPLOYS; i++) {
        const a = await api(boxes, 'POST', '/applications', {
          display_name: `bench image ${i} ${randomBytes(3).toString('hex')}`,
          cluster_id: await cluster(boxes),
          source: 'dockerImage',
          docker_image: image,
          docker_registry_credential_id: credential.id,
        });
        const t0 = performance.now();
        await api(boxes, 'POST', `/applications/${a.id}/deployments`, {});
        await until200(boxes.edgePort, `${a.name}.localhost`);
        slipwayMs.push(performance.now() - t0);
        await api(boxes, 'DELETE', `/applications/${a.id}`);

        const port = await freePort();
        const t1 = performance.now();
        const c = await docker.createContainer({
          Image: image,
          Env: ['PORT=8080'],
          ExposedPorts: { '8080/tcp': {} },
          HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] } },
        });
        try {
          await c.start();
          await until200(port);
          dockerMs.push(performance.now() - t1);
        } finally {
          await c.remove({ force: true }).catch(() => {});
        }
        console.log(`  deploy ${i + 1}: Slipway ${int(slipwayMs[i]!)} ms to the first 200 through the edge, docker run ${int(dockerMs[i]!)} ms`);
      }
      const ratio = median(slipwayMs) / median(dockerMs);
      results.push(
        { title: 'docker run of a prebuilt image, to first 200', figure: `${int(median(dockerMs))} ms`, ratio: '', target: '' },
        {
          title: 'deploy of a prebuilt image, to first 200 at edge',
          figure: `${int(median(slipwayMs))} ms`,
          ratio: `${ratio.toFixed(1)}x docker run`,
          target: `<= ${MAX_DEPLOY_RATIO}x docker run`,
          ok: ratio <= MAX_DEPLOY_RATIO,
        },
      );
      return results;
    } finally {
      for (const step of undo.reverse()) await Promise.resolve(step()).catch((e: Error) => console.log(`  cleanup: ${e.message}`));
    }
  },
};
