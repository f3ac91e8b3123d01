// The multi-node Docker Swarm the cluster suites run on (scripts/start-swarm.sh): its nodes from the
// environment that script prints, a client of its manager, whether it answers, losing and bringing
// back one node, and where a service's tasks run.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { engineAddress } from './container-engine.js';
import { LOCAL_ENV } from '../apps-real/support.js';

const exec = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/start-swarm.sh', import.meta.url));

export interface SwarmNode {
  /** Its network namespace and hostname, the swarm's name for it: slipway-swarm-<index>. */
  name: string;
  /** 1-based, the script's node number. */
  index: number;
  /** Its address on the swarm's bridge, reachable from the host (host-mode published ports). */
  address: string;
  /** Its own engine's DOCKER_HOST. */
  dockerHost: string;
}

/** The nodes of SLIPWAY_SWARM_NODES (`<name>=<address>=<docker host>`, space-separated). */
export function swarmNodes(): SwarmNode[] {
  return (process.env.SLIPWAY_SWARM_NODES ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((entry) => {
      const [name = '', address = '', dockerHost = ''] = entry.split('=');
      return { name, index: Number(name.slice(name.lastIndexOf('-') + 1)), address, dockerHost };
    });
}

/** A dockerode client of the engine at `dockerHost` (default the swarm's manager, SLIPWAY_SWARM_DOCKER_HOST). */
export function swarmClient(dockerHost = process.env.SLIPWAY_SWARM_DOCKER_HOST): Docker {
  const address = engineAddress(dockerHost);
  if (!address) throw new Error(`not a docker host: ${dockerHost}`);
  return new Docker(address);
}

/**
 * The describe() skip option: a reason when no swarm manager answers at SLIPWAY_SWARM_DOCKER_HOST,
 * unless SLIPWAY_REQUIRE_SWARM=1 (then the tests run and fail).
 */
export async function swarmSkip(): Promise<string | false> {
  if (process.env.SLIPWAY_REQUIRE_SWARM === '1') return false;
  const howTo = 'eval "$(scripts/start-swarm.sh)"; SLIPWAY_REQUIRE_SWARM=1 makes this a failure';
  if (!process.env.SLIPWAY_SWARM_DOCKER_HOST || !swarmNodes().length) return `SLIPWAY_SWARM_DOCKER_HOST or SLIPWAY_SWARM_NODES is not set (${howTo})`;
  try {
    const info = (await swarmClient().info()) as { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean } };
    if (info.Swarm?.LocalNodeState === 'active' && info.Swarm.ControlAvailable) return false;
    return `the engine at SLIPWAY_SWARM_DOCKER_HOST is not a swarm manager (${howTo})`;
  } catch (e) {
    return `no engine answers at SLIPWAY_SWARM_DOCKER_HOST=${process.env.SLIPWAY_SWARM_DOCKER_HOST}: ${(e as Error).message} (${howTo})`;
  }
}

/** Kills every process of a node at once (engine, containerd, shims, containers): a lost machine. */
export async function killNode(node: SwarmNode): Promise<void> {
  await exec(script, ['kill', String(node.index)]);
}

/** Starts the engines of the swarm's nodes that are not running (a killed node rejoins by itself). */
export async function restartNodes(): Promise<void> {
  await exec(script, [String(swarmNodes().length)]);
}

/** What the suites read of a task (the engine's API; dockerode leaves tasks untyped). */
export interface SwarmTask {
  ID: string;
  NodeID?: string;
  Slot?: number;
  DesiredState: string;
  Status: { State: string; PortStatus?: { Ports?: { TargetPort: number; PublishedPort: number }[] } };
  /** The hostname of the task's node. */
  node: string;
}

/** The hostnames of the swarm's nodes by node id. */
export async function nodeNames(docker: Docker): Promise<Map<string, string>> {
  const nodes = (await docker.listNodes()) as { ID: string; Description?: { Hostname?: string } }[];
  return new Map(nodes.map((n) => [n.ID, n.Description?.Hostname ?? '']));
}

/** A service's tasks that are meant to run and do, with their node's hostname. */
export async function runningTasks(docker: Docker, service: string): Promise<SwarmTask[]> {
  const [tasks, names] = await Promise.all([
    docker.listTasks({ filters: { service: [service], 'desired-state': ['running'] } }) as Promise<Omit<SwarmTask, 'node'>[]>,
    nodeNames(docker),
  ]);
  return tasks.filter((t) => t.Status.State === 'running').map((t) => ({ ...t, node: names.get(t.NodeID ?? '') ?? '' }));
}

/** How many running tasks of a service each node holds, by hostname. */
export async function tasksPerNode(docker: Docker, service: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const t of await runningTasks(docker, service)) counts.set(t.node, (counts.get(t.node) ?? 0) + 1);
  return counts;
}

const LOCK = join(tmpdir(), 'slipway-swarm-suite.lock');

/**
 * Holds the test swarm for one suite: the suites kill and restart nodes, so two of them on the one
 * swarm at once (the runner runs files side by side) would fail each other. A lock directory with
 * its holder's pid; a dead holder's lock is taken over. Returns the release.
 */
export async function holdSwarm(): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
    } catch {
      // Being written: looked at again below.
    }
    if (holder && !alive(holder)) rmSync(LOCK, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 500));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A server's environment on the test swarm (scripts/start-swarm.sh's variables). */
export const SWARM_ENV = {
  ...LOCAL_ENV,
  SLIPWAY_RUNTIME: 'swarm',
  // Builds, image copies to every node and tasks starting on a loaded machine.
  SLIPWAY_APPS_READY_TIMEOUT_MS: '120000',
  SLIPWAY_SWARM_DOCKER_HOST: process.env.SLIPWAY_SWARM_DOCKER_HOST ?? '',
  SLIPWAY_SWARM_NODES: process.env.SLIPWAY_SWARM_NODES ?? '',
};

/** The node label a region's placement constraint names. */
export const REGION_LABEL = 'slipway.region';

/** A Python server's build files (Dockerfile, server.py) answering `<word> <container hostname>`. */
export const wordApp = (word: string) => ({
  Dockerfile: ['FROM python:3.11-slim-bookworm', 'WORKDIR /srv', 'COPY server.py .', 'CMD ["python3", "server.py"]'].join('\n'),
  'server.py': [
    'import http.server, os, socket',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    `        body = ('${word} ' + socket.gethostname()).encode()`,
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)",
    '    def log_message(self, *a):',
    '        pass',
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
  ].join('\n'),
});

/** The references of a node engine's images naming `repo` (tags and digests). */
export async function imageRefs(docker: Docker, repo: string): Promise<string[]> {
  const images = await docker.listImages({ filters: { reference: [repo] } });
  return images.flatMap((i) => [...(i.RepoTags ?? []), ...(i.RepoDigests ?? [])]).filter((r) => r.startsWith(`${repo}:`) || r.startsWith(`${repo}@`));
}

/**
 * Labels node 3 with `region` (the test swarm leaves it in another), so that a suite's tasks spread
 * over all three nodes; answers what puts its label back.
 */
export async function thirdNodeInRegion(region: string): Promise<() => Promise<void>> {
  const third = swarmNodes().find((n) => n.index === 3);
  if (!third) return async () => {};
  const onManager = { env: { ...process.env, DOCKER_HOST: process.env.SLIPWAY_SWARM_DOCKER_HOST } };
  const node = (await swarmClient().getNode(third.name).inspect()) as { Spec: { Labels?: Record<string, string> } };
  const was = node.Spec.Labels?.[REGION_LABEL] ?? '';
  await exec('docker', ['node', 'update', '--label-add', `${REGION_LABEL}=${region}`, third.name], onManager);
  return async () => {
    if (was) await exec('docker', ['node', 'update', '--label-add', `${REGION_LABEL}=${was}`, third.name], onManager).catch(() => {});
  };
}

/**
 * Asserts that at least 2 nodes besides the manager (which built the image) run `tasks`, and that
 * each of them holds the app's image by the registry's name and digest (pulled from the registry:
 * an image loaded from a file has no digest) and no copy of the build's own tag.
 */
export async function assertPulledFromRegistry(tasks: SwarmTask[], registry: string, appId: string): Promise<void> {
  const manager = swarmNodes().find((n) => n.dockerHost === process.env.SLIPWAY_SWARM_DOCKER_HOST)!;
  const pullers = [...new Set(tasks.map((t) => t.node))].filter((n) => n !== manager.name);
  assert.ok(pullers.length >= 2, `tasks on ${tasks.map((t) => t.node).join(', ')}: at least 2 nodes besides the manager that built the image`);
  for (const name of pullers) {
    const node = swarmClient(swarmNodes().find((n) => n.name === name)!.dockerHost);
    const pulled = await imageRefs(node, `${registry}/slipway/${appId}`);
    assert.ok(
      pulled.some((r) => r.startsWith(`${registry}/slipway/${appId}@sha256:`)),
      `${name} holds the image by the registry's name and digest: ${pulled.join(', ')}`,
    );
    assert.deepEqual(await imageRefs(node, `slipway/${appId}`), [], `${name} has no copy of the build's own tag`);
  }
}

/** The tags the registry holds of an application's images (none: the registry does not know the repository). */
export async function registryTags(registry: string, appId: string, login?: { user: string; password: string }): Promise<string[]> {
  const headers: Record<string, string> = login ? { authorization: `Basic ${Buffer.from(`${login.user}:${login.password}`).toString('base64')}` } : {};
  const r = await fetch(`http://${registry}/v2/slipway/${appId}/tags/list`, { headers });
  if (r.status === 404) return [];
  assert.equal(r.status, 200, `the registry's list of slipway/${appId}'s tags`);
  return ((await r.json()) as { tags: string[] | null }).tags ?? [];
}
