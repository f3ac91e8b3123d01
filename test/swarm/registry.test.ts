// The swarm runtime's registry path (SLIPWAY_SWARM_REGISTRY) on the swarm of scripts/start-swarm.sh,
// whose registry listens on the host's address on the swarm's bridge (SLIPWAY_SWARM_TEST_REGISTRY):
// an application built from source on the manager is pushed there, and the nodes that run its tasks
// pull it by the registry's name (nothing copies it to them: no node holds the bare tag the build
// made); it answers through the edge, and deleting it removes the registry's name of it from every
// node and its tags from the registry. Node 3 joins the default cluster's region for the suite (restored after), so the 3 tasks
// spread over all three nodes and the two that did not build the image both pull it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { repoOf } from '../containers/support.js';
import {
  assertPulledFromRegistry,
  holdSwarm,
  imageRefs,
  registryTags,
  runningTasks,
  swarmClient,
  swarmNodes,
  swarmSkip,
  SWARM_ENV,
  thirdNodeInRegion,
  wordApp,
} from '../support/swarm.js';

const registry = process.env.SLIPWAY_SWARM_TEST_REGISTRY ?? '';

const files = wordApp('pulled');

describe(
  'swarm runtime: release images through a registry',
  { skip: (await swarmSkip()) || (registry ? false : 'SLIPWAY_SWARM_TEST_REGISTRY is not set (eval "$(scripts/start-swarm.sh)")') },
  () => {
    let release: () => void = () => {};
    before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
    const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...SWARM_ENV, SLIPWAY_SWARM_REGISTRY: registry } });
    let docker: Docker;
    let appId: string;
    let restoreThird = async () => {};

    before(async () => {
      docker = swarmClient();
      restoreThird = await thirdNodeInRegion(DEFAULT_CLUSTER.name);
    });

    after(async () => {
      await restoreThird();
      release();
    });

    it('a source build is pushed to the registry and the nodes running its tasks pulled it from there', async () => {
      const a = await createRealApp(s, repoOf(files).url, 'swarm-registry');
      appId = a.id;
      expectStatus(await s.patch(`/applications/${appId}`, { build_type: 'dockerfile' }), 200);
      const [web] = expectStatus(await s.get(`/applications/${appId}/processes`), 200).data;
      expectStatus(await s.patch(`/applications/${appId}/processes/${web.id}`, { scaling_strategy: { type: 'manual', config: { instanceCount: 3 } } }), 200);
      const d = await deploy(s, appId, 'deployments', {}, 300_000);
      const logs = JSON.stringify(expectStatus(await s.get(`/applications/${appId}/deployments/${d.id}/logs`), 200));
      assert.equal(d.status, 'success', logs);
      assert.ok(logs.includes(`Image pushed to ${registry}/slipway/${appId}:${d.id}`), logs);
      assert.doesNotMatch(logs, /copied to node/);

      const [svc] = await docker.listServices({ filters: { label: [`slipway.app=${appId}`] } });
      const image = (svc!.Spec as { TaskTemplate: { ContainerSpec: { Image: string } } }).TaskTemplate.ContainerSpec.Image;
      assert.ok(image.startsWith(`${registry}/slipway/${appId}:${d.id}`), image);

      const tasks = await runningTasks(docker, svc!.ID);
      assert.equal(tasks.length, 3);
      await assertPulledFromRegistry(tasks, registry, appId);
      const r = await edgeGet(s.app.runtimes.edge!.port, `${a.name}.localhost`);
      assert.equal(r.status, 200);
      assert.match(r.body, /^pulled /);
    });

    it("deleting the application removes the registry's name of its image from every node, and its tags from the registry", async () => {
      assert.equal((await registryTags(registry, appId)).length, 1, 'the release is in the registry');
      expectStatus(await s.delete(`/applications/${appId}`), 200);
      await waitFor(
        'the images to go',
        async () => {
          const left = await Promise.all(swarmNodes().map(async (n) => imageRefs(swarmClient(n.dockerHost), `${registry}/slipway/${appId}`)));
          return left.every((l) => !l.length) || undefined;
        },
        90_000,
      );
      await waitFor('the registry to forget its tags', async () => (await registryTags(registry, appId)).length === 0 || undefined, 30_000);
    });
  },
);
