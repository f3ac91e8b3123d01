// A real multi-node Docker Swarm (scripts/start-swarm.sh: one engine per network namespace) through
// the engine's API as a swarm driver would use it: the nodes and their region labels, a replicated
// service spread over the nodes with host-mode published ports answering from the host (this
// kernel has no IPVS: no routing mesh, no virtual IPs, so `dnsrr` and `mode: host`), an attachable
// overlay network reaching tasks on other nodes by `tasks.<service>`, placement by region label,
// scaling, SMTP ports closed to containers, and a lost node's tasks running elsewhere.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type AddressInfo, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { waitFor } from '../helpers/util.js';
import { killNode, restartNodes, runningTasks, swarmClient, swarmNodes, swarmSkip, tasksPerNode, type SwarmNode, holdSwarm } from '../support/swarm.js';

const IMAGE = 'python:3.11-slim-bookworm';
/** Answers every GET with the hostname of the node its task runs on (NODE, a template the node fills). */
const SERVER = `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = os.environ["NODE"].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("", 8000), H).serve_forever()`;
const SECOND = 1_000_000_000;
const SMTP = [25, 465, 587];

const run = randomBytes(4).toString('hex');
const LABEL = 'slipway.test';

interface ServiceOptions {
  replicas: number;
  /** A host-mode published port: fixed, or 0 for one the node picks per task. */
  publish?: number;
  network?: string;
  constraints?: string[];
}

/** The spec of a replicated HTTP service on port 8000, reached by DNS round robin (no VIP here). */
function serviceSpec(name: string, o: ServiceOptions): Docker.CreateServiceOptions {
  return {
    Name: name,
    Labels: { [LABEL]: run },
    TaskTemplate: {
      // An init process: python as PID 1 would ignore SIGTERM and each stop wait out the grace period.
      ContainerSpec: { Image: IMAGE, Command: ['python', '-c', SERVER], Env: ['NODE={{.Node.Hostname}}'], Init: true },
      // Restarted 1 s after a failure (or a lost node), the delay the measured move includes.
      RestartPolicy: { Condition: 'any', Delay: SECOND },
      Placement: { Constraints: o.constraints ?? [] },
      Networks: o.network ? [{ Target: o.network }] : [],
    },
    Mode: { Replicated: { Replicas: o.replicas } },
    EndpointSpec: {
      Mode: 'dnsrr',
      Ports: o.publish === undefined ? [] : [{ Protocol: 'tcp', TargetPort: 8000, PublishedPort: o.publish || undefined, PublishMode: 'host' }],
    },
  };
}

/** GET http://address:port/ from the host: the answering node's hostname. */
async function ask(address: string, port: number): Promise<string> {
  const res = await fetch(`http://${address}:${port}/`, { signal: AbortSignal.timeout(3000) });
  assert.equal(res.status, 200);
  return res.text();
}

/** Runs a Python script in a container of the node's own engine (on `network` if given): its exit code and output lines. */
async function runOn(node: SwarmNode, script: string, network?: string): Promise<{ code: number; lines: string[] }> {
  const engine = swarmClient(node.dockerHost);
  const container = await engine.createContainer({
    Image: IMAGE,
    Cmd: ['python', '-c', script],
    Tty: true,
    HostConfig: network ? { NetworkMode: network } : {},
    Labels: { [LABEL]: run },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const lines = (await container.logs({ stdout: true, stderr: true })).toString().trim().split(/\r?\n/);
    return { code: StatusCode, lines };
  } finally {
    await container.remove({ force: true });
  }
}

/** Listens on address:port answering "ok"; null when another process holds that port already. */
function listen(address: string, port: number): Promise<Server | null> {
  return new Promise((resolve, reject) => {
    const s = createServer((c) => {
      c.on('error', () => {});
      c.end('ok\n');
    });
    s.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(null) : reject(e)));
    s.listen(port, address, () => resolve(s));
  });
}

/** Whether the host itself connects to address:port. */
function connects(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ host: address, port, timeout: 3000 }, () => (c.destroy(), resolve(true)));
    c.on('error', () => resolve(false));
    c.on('timeout', () => (c.destroy(), resolve(false)));
  });
}

/** Waits until `service` has `count` running tasks (and none more) and returns them. */
function untilRunning(
  docker: Docker,
  service: string,
  count: number,
  ok: (t: Awaited<ReturnType<typeof runningTasks>>) => boolean = () => true,
  timeoutMs = 30_000,
) {
  return waitFor(
    `${count} running tasks of ${service}`,
    async () => {
      const tasks = await runningTasks(docker, service);
      return tasks.length === count && ok(tasks) && tasks;
    },
    timeoutMs,
    200,
  );
}

describe('docker swarm (several engines on this machine)', { skip: await swarmSkip() }, () => {
  // One suite at a time on the swarm (they kill nodes); taken before anything else of this suite.
  let release: () => void = () => {};
  before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
  let docker: Docker;
  let nodes: SwarmNode[];
  const name = (what: string) => `slipway-test-${run}-${what}`;

  before(() => {
    docker = swarmClient();
    nodes = swarmNodes();
  });

  after(async () => {
    // What the suite made, by its label; a node killed by a failed test comes back.
    await restartNodes();
    release();
    for (const s of await docker.listServices({ filters: { label: [`${LABEL}=${run}`] } })) await docker.getService(s.ID).remove();
    const networks = await docker.listNetworks({ filters: { label: [`${LABEL}=${run}`] } });
    // An overlay is removable once its tasks are gone from every node.
    for (const n of networks)
      await waitFor(
        `network ${n.Name} removed`,
        () =>
          docker
            .getNetwork(n.Id)
            .remove()
            .then(
              () => true,
              () => false,
            ),
        30_000,
        500,
      );
  });

  it('has every node Ready, at its address, with a region label, and three managers', async () => {
    assert.ok(nodes.length >= 3, `SLIPWAY_SWARM_NODES names ${nodes.length} nodes; the suite needs 3`);
    const listed = (await docker.listNodes()) as {
      Description: { Hostname: string };
      Status: { State: string; Addr: string };
      Spec: { Labels?: Record<string, string>; Role: string };
      ManagerStatus?: { Reachability: string };
    }[];
    for (const n of nodes) {
      const found = listed.find((l) => l.Description.Hostname === n.name);
      assert.ok(found, `${n.name} is not in the swarm`);
      assert.equal(found.Status.State, 'ready', `${n.name}`);
      assert.equal(found.Status.Addr, n.address);
      assert.ok(found.Spec.Labels?.['slipway.region'], `${n.name} has no slipway.region label`);
    }
    assert.equal(listed.filter((l) => l.ManagerStatus?.Reachability === 'reachable').length, 3);
    // Every node has the image the suite runs (scripts/start-swarm.sh load).
    for (const n of nodes) await swarmClient(n.dockerHost).getImage(IMAGE).inspect();
  });

  it('spreads a 3-replica service with host-mode ports over the nodes, each answering from the host', async () => {
    const service = name('web');
    // Any port: each node's ports are its own namespace's.
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    await docker.createService(serviceSpec(service, { replicas: 3, publish: port }));
    const tasks = await untilRunning(docker, service, 3);
    const on = new Set(tasks.map((t) => t.node));
    assert.ok(on.size >= 2, `all tasks on ${[...on].join(', ')}`);
    for (const node of on) {
      const address = nodes.find((n) => n.name === node)?.address;
      assert.ok(address, `a task on ${node}, not a node of SLIPWAY_SWARM_NODES`);
      // The task answers from the node it runs on: host-mode ports reach that node's task only.
      assert.equal(await waitFor(`${node} answering on ${port}`, () => ask(address, port).catch(() => ''), 20_000, 200), node);
    }
  });

  it('reaches tasks on other nodes over an attachable overlay network, by tasks.<service>', async () => {
    const network = name('net');
    await docker.createNetwork({ Name: network, Driver: 'overlay', Attachable: true, Labels: { [LABEL]: run } });
    const service = name('echo');
    await docker.createService(serviceSpec(service, { replicas: 3, network }));
    const tasks = await untilRunning(docker, service, 3);
    const first = nodes[0]!;
    assert.ok(
      tasks.some((t) => t.node !== first.name),
      'every task runs on the node the client runs on',
    );
    // A container on the first node resolves every task's overlay address and asks each one; DNS
    // lists a task once it is attached on the network, which may come after it runs.
    const client = `import socket, time, urllib.request
for _ in range(60):
    try:
        ips = sorted({a[4][0] for a in socket.getaddrinfo("tasks.${service}", 8000, proto=socket.IPPROTO_TCP)})
    except socket.gaierror:
        ips = []
    if len(ips) == 3:
        break
    time.sleep(0.5)
for ip in ips:
    print(ip, urllib.request.urlopen("http://%s:8000/" % ip, timeout=5).read().decode())`;
    const { code, lines } = await runOn(first, client, network);
    assert.equal(code, 0, lines.join('\n'));
    const answered = new Set(lines.map((l) => l.split(' ')[1]));
    assert.deepEqual(answered, new Set(tasks.map((t) => t.node)), lines.join('\n'));
  });

  it("refuses SMTP ports to a node's containers and keeps other ports open", async () => {
    // The host's address on the swarm's bridge (<net>.0.1): what a container reaches through its node.
    const host = nodes[0]!.address.replace(/\.\d+$/, '.1');
    const servers = (await Promise.all([...SMTP, 0].map((p) => listen(host, p)))).filter((x): x is Server => x !== null);
    try {
      const open = (servers.at(-1)!.address() as AddressInfo).port;
      const ports = [...SMTP, open];
      // Each port listens on the host (ours, or another process's), so a refusal is the node's rule.
      for (const p of ports) assert.ok(await connects(host, p), `nothing answers on ${host}:${p} on the host`);
      const probe = `import socket
for p in ${JSON.stringify(ports)}:
    try:
        socket.create_connection(("${host}", p), timeout=5).close()
        print(p, "open")
    except OSError:
        print(p, "refused")`;
      const { lines } = await runOn(nodes[1]!, probe);
      assert.deepEqual(lines, [...SMTP.map((p) => `${p} refused`), `${open} open`]);
    } finally {
      for (const s of servers) s.close();
    }
  });

  it('places the tasks of a service on the nodes of its region label only', async () => {
    const labels = new Map(
      ((await docker.listNodes()) as { Description: { Hostname: string }; Spec: { Labels?: Record<string, string> } }[]).map((n) => [
        n.Description.Hostname,
        n.Spec.Labels?.['slipway.region'],
      ]),
    );
    const region = labels.get(nodes[0]!.name);
    const inRegion = [...labels].filter(([, r]) => r === region).map(([h]) => h);
    assert.ok(inRegion.length < labels.size, `every node is in ${region}: nothing to tell apart`);
    const service = name('region');
    await docker.createService(serviceSpec(service, { replicas: 4, constraints: [`node.labels.slipway.region==${region}`] }));
    const tasks = await untilRunning(docker, service, 4);
    assert.deepEqual(new Set(tasks.map((t) => t.node)), new Set(inRegion));
  });

  it('scales a service 3 → 1 → 3', async () => {
    const service = name('scale');
    const created = await docker.createService(serviceSpec(service, { replicas: 3 }));
    await untilRunning(docker, service, 3);
    const scale = async (replicas: number) => {
      const current = (await created.inspect()) as { Version: { Index: number }; Spec: Docker.CreateServiceOptions };
      await created.update({ _query: { version: current.Version.Index }, _body: { ...current.Spec, Mode: { Replicated: { Replicas: replicas } } } });
    };
    await scale(1);
    await untilRunning(docker, service, 1);
    await scale(3);
    await untilRunning(docker, service, 3);
    assert.ok((await tasksPerNode(docker, service)).size >= 2, 'scaled back up onto one node');
  });

  it("runs a lost node's tasks on the other nodes, answering on their own published ports", async (t) => {
    const service = name('move');
    // Ports the nodes pick per task: a fixed port would be taken on every node that survives.
    await docker.createService(serviceSpec(service, { replicas: 3, publish: 0 }));
    const before = await untilRunning(docker, service, 3);
    const lost = nodes.find((n) => n !== nodes[0] && before.some((b) => b.node === n.name));
    assert.ok(lost, 'no task outside the manager the suite talks to');
    const started = Date.now();
    await killNode(lost);
    try {
      const moved = await untilRunning(docker, service, 3, (tasks) => tasks.every((x) => x.node !== lost.name), 30_000);
      t.diagnostic(`tasks of the lost node ${lost.name} running elsewhere after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      for (const task of moved) {
        const published = task.Status.PortStatus?.Ports?.find((p) => p.TargetPort === 8000)?.PublishedPort;
        assert.ok(published, `task ${task.ID} on ${task.node} publishes no port`);
        const address = nodes.find((n) => n.name === task.node)!.address;
        assert.equal(await waitFor(`${task.node}:${published} answering`, () => ask(address, published).catch(() => ''), 20_000, 200), task.node);
      }
    } finally {
      await restartNodes();
    }
    await waitFor(
      `${lost.name} Ready again`,
      async () =>
        ((await docker.listNodes()) as { Description: { Hostname: string }; Status: { State: string } }[]).some(
          (n) => n.Description.Hostname === lost.name && n.Status.State === 'ready',
        ),
      60_000,
      500,
    );
  });
});
