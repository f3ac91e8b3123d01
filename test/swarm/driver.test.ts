// The swarm runtime end to end (SLIPWAY_RUNTIME=swarm) on the multi-node swarm of
// scripts/start-swarm.sh, through the API and the edge: a Dockerfile app with 3 instances runs on
// at least 2 nodes and answers through the edge, its variables in a Swarm secret rather than the
// service's spec; a redeploy under continuous requests loses none; scaling 3 -> 1 -> 3 through the
// processes API (applied by the next deployment); an app of the same company reaches every task of
// another by its internal name over the company's overlay, across nodes, and one of another company
// cannot resolve it; CPU and memory from each task's container and the terminal in one, through
// the engine of the task's node; a lost node's tasks run elsewhere while the app keeps answering (failed
// requests during the loss are counted and printed); cron runs as one-off services; deletion
// leaves nothing on any node.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, sleep, waitFor } from '../helpers/util.js';
import { createProcess, cron, exitCodes, processPath, RT, runtimeLogs } from '../processes/support.js';
import { createRealApp, deploy, edgeGet, openTerminal, underLoad } from '../apps-real/support.js';
import { repoOf } from '../containers/support.js';
import { killNode, restartNodes, runningTasks, swarmClient, swarmNodes, swarmSkip, holdSwarm, SWARM_ENV } from '../support/swarm.js';

/** A Python server answering `<ANSWER> <container hostname> <FROM_ENV>`. */
const app = (answer: string) => ({
  Dockerfile: ['FROM python:3.11-slim-bookworm', 'WORKDIR /srv', 'COPY server.py .', `ENV ANSWER=${answer}`, 'CMD ["python3", "server.py"]'].join('\n'),
  'server.py': [
    'import http.server, os, socket',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    "        body = ' '.join([os.environ['ANSWER'], socket.gethostname(), os.environ.get('FROM_ENV', '')]).encode()",
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)",
    '    def log_message(self, *a):',
    '        pass',
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
  ].join('\n'),
});

/**
 * A Python server that asks each address TARGET resolves to (dnsrr: every task's) on port 8080 and
 * answers what came back at /ask: the container names, or the error.
 */
const peer = () => ({
  Dockerfile: ['FROM python:3.11-slim-bookworm', 'WORKDIR /srv', 'COPY server.py .', 'CMD ["python3", "server.py"]'].join('\n'),
  'server.py': [
    'import http.server, os, socket, urllib.request',
    'def ask():',
    '    try:',
    "        ips = sorted({a[4][0] for a in socket.getaddrinfo(os.environ['TARGET'], 8080, proto=socket.IPPROTO_TCP)})",
    "        return ' '.join(urllib.request.urlopen('http://' + ip + ':8080/', timeout=3).read().decode().split(' ')[1] for ip in ips)",
    '    except Exception as e:',
    "        return 'error:' + type(e).__name__",
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    // Readiness probes ask `/`: answered at once (a name that does not resolve may take seconds).
    "        body = ask().encode() if self.path == '/ask' else b'ready'",
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)",
    '    def log_message(self, *a):',
    '        pass',
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
  ].join('\n'),
});

const DEPLOY_MS = 300_000;

describe('swarm runtime', { skip: await swarmSkip() }, () => {
  // One suite at a time on the swarm (they kill nodes); taken before anything else of this suite.
  let release: () => void = () => {};
  before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: SWARM_ENV });
  let docker: Docker;
  let port: number;
  let appId: string;
  let webId: string;
  let host: string;
  const repo = repoOf(app('one'));

  /** The running tasks of the application's web services, with their node's hostname. */
  const tasks = async () => {
    const services = await docker.listServices({ filters: { label: [`slipway.app=${appId}`] } });
    return (await Promise.all(services.map((svc) => runningTasks(docker, svc.ID)))).flat();
  };
  /** The overlay networks of a company on the swarm. */
  const companyNetworks = async (companyId: string) => docker.listNetworks({ filters: { label: [`slipway.company=${companyId}`] } });
  const scale = async (n: number) =>
    expectStatus(await s.patch(`/applications/${appId}/processes/${webId}`, { scaling_strategy: { type: 'manual', config: { instanceCount: n } } }), 200);
  const deployed = async () => {
    const d = await deploy(s, appId, 'deployments', {}, DEPLOY_MS);
    const logs = JSON.stringify(expectStatus(await s.get(`/applications/${appId}/deployments/${d.id}/logs`), 200));
    assert.equal(d.status, 'success', logs);
    return d;
  };

  before(async () => {
    docker = swarmClient();
    port = s.app.runtimes.edge!.port;
    const a = await createRealApp(s, repo.url, 'swarm-web');
    appId = a.id;
    host = `${a.name}.localhost`;
    expectStatus(await s.patch(`/applications/${appId}`, { build_type: 'dockerfile' }), 200);
    expectStatus(await s.post(`/applications/${appId}/env-vars`, { key: 'FROM_ENV', value: 'kept-secret' }), 201);
    const [web] = expectStatus(await s.get(`/applications/${appId}/processes`), 200).data;
    webId = web.id;
    expectStatus(await s.patch(`/applications/${appId}/processes/${webId}`, { resource_type_id: RT.hobby!.id }), 200);
  });

  after(async () => {
    await restartNodes();
    release();
  });

  it('3 instances run on at least 2 nodes of the region and answer through the edge; variables are in a secret, not in the spec', async () => {
    await scale(3);
    await deployed();
    const running = await tasks();
    assert.equal(running.length, 3);
    const nodes = new Set(running.map((t) => t.node));
    assert.ok(nodes.size >= 2, `tasks on ${[...nodes].join(', ')}`);
    // DEFAULT_CLUSTER's label is on nodes 1 and 2 (SLIPWAY_SWARM_REGIONS), not on node 3.
    const region = swarmNodes()
      .filter((n) => n.index <= 2)
      .map((n) => n.name);
    for (const n of nodes) assert.ok(region.includes(n), `${n} is not in ${DEFAULT_CLUSTER.name}`);
    const containers = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const r = await edgeGet(port, host);
      assert.equal(r.status, 200);
      const [answer, container, fromEnv] = r.body.split(' ');
      assert.equal(answer, 'one');
      assert.equal(fromEnv, 'kept-secret');
      containers.add(container!);
    }
    assert.equal(containers.size, 3, 'round robin over the 3 tasks');
    const [svc] = await docker.listServices({ filters: { label: [`slipway.app=${appId}`] } });
    const spec = JSON.stringify(svc!.Spec);
    assert.doesNotMatch(spec, /kept-secret/);
    assert.match(spec, /"Order":"start-first"/);
  });

  it("CPU and memory come from the stats of each task's container on its node's engine; the terminal is a TTY in a task's container there", async () => {
    const containers = (await tasks()).map(
      (t) => (t as unknown as { Status: { ContainerStatus?: { ContainerID?: string } } }).Status.ContainerStatus?.ContainerID?.slice(0, 12) ?? '',
    );
    assert.equal(containers.length, 3);
    const now = Date.now();
    const q = `from=${new Date(now - 60_000).toISOString()}&to=${new Date(now + 120_000).toISOString()}&interval_in_seconds=1`;
    const metric = async (name: string) =>
      expectStatus<{ value: number }[]>(await s.get(`/applications/${appId}/processes/${webId}/metrics/${name}?${q}`), 200);
    // Three Python servers hold several MiB each; the sum of the three tasks' is above any one's.
    const memory = await waitFor('a measured memory point', async () => (await metric('memory-usage')).find((p) => p.value > 3 * 5 * 1024 * 1024), 30_000);
    assert.ok(memory.value < 3 * 256 * 1024 * 1024, `${memory.value} bytes within three hobby limits`);
    assert.ok((await metric('instance-count')).some((p) => p.value === 3));

    const t = await openTerminal(s, appId, webId);
    t.send('echo "env=$FROM_ENV host=$(hostname) tty=$(tty)"\n');
    const [, host] = await waitFor('the shell output', () => /env=kept-secret host=(\w+) tty=\/dev\/pts\/\d+/.exec(t.text) ?? undefined, 30_000);
    assert.ok(containers.includes(host!), `${host} is one of the tasks' containers (${containers.join(', ')})`);
    t.send('exit 3\n');
    await waitFor('the session to close', () => t.closed !== undefined || undefined);
    assert.equal(t.closed, 4003);
  });

  it('a redeploy under continuous requests loses none', async () => {
    repo.commit(app('two'));
    const { seen, failures } = await underLoad(port, host, deployed);
    console.log(`redeploy: ${failures.length} of ${seen.length + failures.length} requests failed`);
    assert.deepEqual(failures, []);
    assert.equal(seen.at(-1), 'two');
    assert.match((await edgeGet(port, host)).body, /^two /);
    await waitFor('the old release to go', async () => (await tasks()).length === 3 || undefined, 60_000);
  });

  it('scales 3 -> 1 -> 3 through the processes API (applied by the next deployment)', async () => {
    await scale(1);
    await deployed();
    await waitFor('one task', async () => (await tasks()).length === 1 || undefined, 60_000);
    assert.equal((await edgeGet(port, host)).status, 200);
    await scale(3);
    await deployed();
    await waitFor('three tasks', async () => (await tasks()).length === 3 || undefined, 60_000);
    assert.equal((await edgeGet(port, host)).status, 200);
  });

  it("an app reaches another of its company by internal name across nodes over the company's overlay; another company's app cannot", async () => {
    const web = await tasks();
    const webNode = new Map(
      web.map((t) => [
        (t as unknown as { Status: { ContainerStatus?: { ContainerID?: string } } }).Status.ContainerStatus?.ContainerID?.slice(0, 12) ?? '',
        t.node,
      ]),
    );
    const other = await s.newCompany();
    const answers: Record<string, string> = {};
    for (const [name, token] of [
      ['swarm-peer', undefined],
      ['swarm-stranger', other.token],
    ] as const) {
      const a = expectStatus(
        await s.post(
          '/applications',
          { display_name: name, cluster_id: DEFAULT_CLUSTER.id, source: 'publicGit', git_type: 'github', repo_url: repoOf(peer()).url, default_branch: 'main' },
          { token },
        ),
        201,
      );
      expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }, { token }), 200);
      // The internal hostname of swarm-web's web process (an alias on its company's overlay).
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'TARGET', value: 'swarm-web-web' }, { token }), 201);
      const d = expectStatus(await s.post(`/applications/${a.id}/deployments`, {}, { token }), 200);
      await waitFor(
        `${name} deployed`,
        async () => {
          const now = expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}`, { token }), 200);
          if (now.status === 'failed') assert.fail(JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`, { token }), 200)));
          return now.status === 'success' || undefined;
        },
        DEPLOY_MS,
      );
      const [task] = (
        await Promise.all((await docker.listServices({ filters: { label: [`slipway.app=${a.id}`] } })).map((svc) => runningTasks(docker, svc.ID)))
      ).flat();
      const r = await edgeGet(port, `${a.name}.localhost`, {}, '/ask');
      assert.equal(r.status, 200);
      answers[name] = `${task!.node}: ${r.body}`;
      expectStatus(await s.delete(`/applications/${a.id}`, { token }), 200);
    }
    console.log('internal connections', answers);
    const [peerNode, reached] = answers['swarm-peer']!.split(': ') as [string, string];
    const containers = reached.split(' ');
    assert.equal(containers.length, 3, `the 3 tasks of swarm-web: ${reached}`);
    assert.ok(
      containers.every((c) => webNode.has(c)),
      `every answer from a swarm-web task: ${reached}`,
    );
    assert.ok(
      containers.some((c) => webNode.get(c) !== peerNode),
      `one from another node than ${peerNode}: ${reached}`,
    );
    assert.match(answers['swarm-stranger']!, /^[^:]+: error:gaierror$/, 'the name does not resolve on another overlay');
    // The other company's last service is gone: so is its overlay; this company's stays for swarm-web.
    await waitFor("the other company's overlay to go", async () => !(await companyNetworks(other.companyId)).length || undefined, 90_000);
    assert.equal((await companyNetworks(s.companyId)).length, 1);
  });

  it("a lost node's tasks run on the other node of the region and the app keeps answering", async () => {
    const running = await tasks();
    const victim = swarmNodes().find((n) => n.index === 2)!;
    const onVictim = running.filter((t) => t.node === victim.name).length;
    assert.ok(onVictim > 0, 'node 2 runs a task');
    const started = Date.now();
    const {
      result: moved,
      seen,
      failures,
    } = await underLoad(port, host, async () => {
      await killNode(victim);
      await waitFor(
        'three tasks off the lost node',
        async () => {
          const now = await tasks().catch(() => []);
          return (now.length === 3 && now.every((t) => t.node !== victim.name)) || undefined;
        },
        120_000,
      );
      const ms = Date.now() - started;
      // The edge follows the task list (SLIPWAY_SWARM_POLL_MS): a few more seconds of requests.
      await sleep(3000);
      return ms;
    });
    const total = seen.length + failures.length;
    console.log(`node loss: tasks elsewhere after ${moved} ms; ${failures.length} of ${total} requests failed`, failures.slice(0, 5));
    const r = await edgeGet(port, host);
    assert.equal(r.status, 200);
    assert.match(r.body, /^two /);
    // A request to a task that vanished times out at connect; the edge retries on the next one,
    // so losses stay a small share.
    assert.ok(failures.length < total / 4, `${failures.length} of ${total} failed`);
  });

  it("cron runs are one-off services of the release's image: exit code and output recorded, the maximum run time removes them", async () => {
    const YEARLY = '0 0 1 1 *';
    const quick = await createProcess(s, appId, cron('quick', { schedule: YEARLY, entrypoint: 'echo "run sees $FROM_ENV"; exit 3' }));
    const slow = await createProcess(s, appId, cron('slow', { schedule: YEARLY, entrypoint: 'sleep 120', max_run_time_seconds: 2 }));
    await deployed();
    expectStatus(await s.post(`${processPath(appId, quick.id)}/trigger`), 200);
    expectStatus(await s.post(`${processPath(appId, slow.id)}/trigger`), 200);
    const exit = (pid: string, value: string, description: string) =>
      waitFor(
        `exit ${value} (${description})`,
        async () => (await exitCodes(s, appId, pid)).find((e) => e.value === value && e.description === description),
        90_000,
      );
    await exit(quick.id, '3', 'failed');
    await exit(slow.id, '137', 'deadlineExceeded');
    assert.ok((await runtimeLogs(s, appId, quick.id)).some((l) => l.message === 'run sees kept-secret'));
    await waitFor(
      "the runs' services to go",
      async () => (await docker.listServices({ filters: { label: [`slipway.app=${appId}`, 'slipway.run=1'] } })).length === 0 || undefined,
      30_000,
    );
  });

  it("deleting the application removes its services, secrets and images from the manager and the nodes, and its company's overlay", async () => {
    await restartNodes();
    expectStatus(await s.delete(`/applications/${appId}`), 200);
    const label = { filters: { label: [`slipway.app=${appId}`] } };
    await waitFor(
      'the services, secrets and images to go',
      async () => {
        const [services, secrets, networks] = await Promise.all([docker.listServices(label), docker.listSecrets(label), companyNetworks(s.companyId)]);
        const images = await Promise.all(swarmNodes().map((n) => swarmClient(n.dockerHost).listImages({ filters: { reference: [`slipway/${appId}`] } })));
        // The company's last application: its overlay goes too.
        return (!services.length && !secrets.length && !networks.length && images.every((i) => !i.length)) || undefined;
      },
      90_000,
    );
  });
});
