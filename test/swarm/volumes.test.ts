// Persistent volumes on the swarm runtime (docs/scaling.md "Volumes live on one node"): an
// application with a volume is pinned to one node of its region by a node label, all its tasks run
// there and mount the node's local volume; a file written there survives a redeploy; its used bytes
// are measured from that node's engine; deleting the application removes the volume from the node
// and the pin from the swarm.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { pythonHandler, repoOf } from '../containers/support.js';
import { holdSwarm, runningTasks, swarmClient, swarmNodes, swarmSkip, SWARM_ENV } from '../support/swarm.js';

/** Writes /data/f at /put; answers what it holds (`none` without it) and `version` elsewhere. */
const handler = (version: string) =>
  pythonHandler(
    [
      'def handle(path):',
      "    if path == '/put':",
      "        open('/data/f', 'w').write('kept')",
      "        return 'written'",
      `    return '${version} ' + (open('/data/f').read() if os.path.exists('/data/f') else 'none')`,
    ].join('\n'),
  );

describe('swarm runtime: volumes', { skip: await swarmSkip() }, () => {
  let release: () => void = () => {};
  before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: SWARM_ENV });
  after(() => release());

  it(
    "a volume pins the app's tasks to one node of its region; its file survives a redeploy; deletion removes volume and pin",
    { timeout: 15 * 60_000 },
    async () => {
      const docker: Docker = swarmClient();
      const port = s.app.runtimes.edge!.port;
      const repo = repoOf(handler('one'));
      const a = await createRealApp(s, repo.url, 'swarm-volume');
      const host = `${a.name}.localhost`;
      const pin = `slipway.pin.${a.id}`;
      expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
      const [web] = expectStatus(await s.get(`/applications/${a.id}/processes`), 200).data;
      // Two instances, which the swarm would otherwise spread over the region's two nodes.
      expectStatus(await s.patch(`/applications/${a.id}/processes/${web.id}`, { scaling_strategy: { type: 'manual', config: { instanceCount: 2 } } }), 200);
      const v = expectStatus(await s.post(`/applications/${a.id}/volumes`, { name: 'data', mount_path: '/data', size_gb: 1 }), 201);
      const deployed = async () => {
        const d = await deploy(s, a.id, 'deployments', {}, 300_000);
        assert.equal(d.status, 'success', JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200)));
      };
      const services = () => docker.listServices({ filters: { label: [`slipway.app=${a.id}`] } });
      const tasks = async () => (await Promise.all((await services()).map((svc) => runningTasks(docker, svc.ID).catch(() => [])))).flat();
      const pinned = async () =>
        ((await docker.listNodes()) as { Description?: { Hostname?: string }; Spec?: { Labels?: Record<string, string> } }[]).filter(
          (n) => n.Spec?.Labels?.[pin],
        );
      const volumesOnNodes = async () =>
        (
          await Promise.all(
            swarmNodes().map(async (n) =>
              ((await swarmClient(n.dockerHost).listVolumes({ filters: { label: [`slipway.app=${a.id}`] } })).Volumes ?? []).map((x) => `${n.name}:${x.Name}`),
            ),
          )
        ).flat();

      await deployed();
      const [node, ...others] = await pinned();
      assert.ok(node && !others.length, 'pinned to exactly one node');
      const name = node.Description!.Hostname!;
      // DEFAULT_CLUSTER's label is on nodes 1 and 2 (SLIPWAY_SWARM_REGIONS).
      assert.ok(
        swarmNodes().some((n) => n.name === name && n.index <= 2),
        `${name} is in the app's region`,
      );
      const first = await tasks();
      assert.equal(first.length, 2);
      assert.deepEqual(new Set(first.map((t) => t.node)), new Set([name]), 'both tasks on the pinned node');
      const [svc] = await services();
      const spec = (
        svc as unknown as { Spec: { TaskTemplate: { ContainerSpec: { Mounts?: { Source: string; Target: string }[] }; Placement: { Constraints: string[] } } } }
      ).Spec.TaskTemplate;
      assert.deepEqual(
        spec.ContainerSpec.Mounts?.map((m) => [m.Source, m.Target]),
        [[`slipway-${v.id}`, '/data']],
      );
      assert.ok(spec.Placement.Constraints.includes(`node.labels.${pin}==volumes`), spec.Placement.Constraints.join(', '));

      assert.equal((await edgeGet(port, host)).body, 'one none');
      assert.equal((await edgeGet(port, host, {}, '/put')).body, 'written');
      // Both tasks mount the one volume of their node.
      for (let i = 0; i < 4; i++) assert.equal((await edgeGet(port, host)).body, 'one kept');
      assert.deepEqual(await volumesOnNodes(), [`${name}:slipway-${v.id}`]);

      repo.commit(handler('two'));
      await deployed();
      await waitFor('the first release to go', async () => (await tasks()).every((t) => !first.some((f) => f.ID === t.ID)) || undefined, 60_000);
      for (let i = 0; i < 4; i++) assert.equal((await edgeGet(port, host)).body, 'two kept');
      assert.deepEqual(
        (await pinned()).map((n) => n.Description?.Hostname),
        [name],
        'still pinned to the same node',
      );

      await waitFor(
        'the used bytes to be measured',
        async () => expectStatus(await s.get(`/applications/${a.id}/volumes/${v.id}`), 200).used_bytes > 0 || undefined,
        90_000,
        1000,
      );

      expectStatus(await s.delete(`/applications/${a.id}`), 200);
      await waitFor(
        'the services, the volume and the pin to go',
        async () => (!(await services()).length && !(await volumesOnNodes()).length && !(await pinned()).length) || undefined,
        120_000,
        500,
      );
    },
  );
});
