// SIGKILL of Slipway with the swarm runtime: the application's services keep running on the swarm
// while Slipway is down (Swarm, not Slipway, runs them), and the restarted Slipway adopts them by
// their labels: the same services and tasks (no redeploy), its status, instance count and memory
// measured again, and the edge routing to the tasks' node addresses and ports.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { freePort } from '../../src/modules/applications/runtime/host.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { ok, startChild, type ChildServer } from '../helpers/process.js';
import { sleep, waitFor } from '../helpers/util.js';
import { edgeGet } from '../apps-real/support.js';
import { pythonHandler, repoOf } from '../containers/support.js';
import { holdSwarm, runningTasks, swarmClient, swarmSkip, SWARM_ENV } from '../support/swarm.js';

const HANDLE = ['def handle(path):', '    import socket', "    return 'adopted ' + socket.gethostname()"].join('\n');

describe('swarm runtime after SIGKILL', { skip: await swarmSkip() }, () => {
  let release: () => void = () => {};
  before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
  after(() => release());

  it(
    'the restarted server adopts the running services: same tasks, no redeploy; status, metrics and edge routing work again',
    { timeout: 10 * 60_000 },
    async () => {
      const docker: Docker = swarmClient();
      const dataDir = mkdtempSync(join(tmpdir(), 'slipway-swarm-adopt-'));
      const edgePort = await freePort();
      const token = `svl_${'s'.repeat(64)}`;
      const env = {
        ...SWARM_ENV,
        SLIPWAY_EDGE_PORT: String(edgePort),
        SLIPWAY_BOOTSTRAP_TOKEN: token,
        SLIPWAY_SECRET_KEY: 'k',
        DATA_DIR: dataDir,
      };
      let server: ChildServer = await startChild([], env, 120_000);
      const call = (method: string, path: string, expected: number, body?: unknown) => ok(server.baseUrl, token, method, path, expected, body);
      /** The application's services and their running tasks, by id. */
      const state = async (appId: string) => {
        const services = (await docker.listServices({ filters: { label: [`slipway.app=${appId}`] } })).map((svc) => svc.ID).sort();
        // A service removed meanwhile (the deletion at the end) has no tasks.
        const tasks = (await Promise.all(services.map((id) => runningTasks(docker, id).catch(() => [])))).flat().map((t) => t.ID);
        return { services, tasks: tasks.sort() };
      };
      let appId = '';
      try {
        const a = await call('POST', '/applications', 201, {
          display_name: 'swarm adopt',
          cluster_id: DEFAULT_CLUSTER.id,
          source: 'publicGit',
          git_type: 'github',
          repo_url: repoOf(pythonHandler(HANDLE)).url,
          default_branch: 'main',
        });
        appId = a.id;
        await call('PATCH', `/applications/${a.id}`, 200, { build_type: 'dockerfile' });
        const [web] = (await call('GET', `/applications/${a.id}/processes`, 200)).data;
        await call('PATCH', `/applications/${a.id}/processes/${web.id}`, 200, { scaling_strategy: { type: 'manual', config: { instanceCount: 2 } } });
        const d = await call('POST', `/applications/${a.id}/deployments`, 200, {});
        await waitFor(
          'the deployment',
          async () => {
            const now = await call('GET', `/applications/${a.id}/deployments/${d.id}`, 200);
            if (now.status === 'failed') assert.fail(JSON.stringify(await call('GET', `/applications/${a.id}/deployments/${d.id}/logs`, 200)));
            return now.status === 'success' || undefined;
          },
          300_000,
          500,
        );
        const host = `${a.name}.localhost`;
        assert.match((await edgeGet(edgePort, host)).body, /^adopted /);
        const before = await state(a.id);
        assert.equal(before.services.length, 1);
        assert.equal(before.tasks.length, 2);
        const statusBefore = (await call('GET', `/applications/${a.id}`, 200)).status;
        const deployments = (await call('GET', `/applications/${a.id}/deployments`, 200)).data.length;

        await server.stop('SIGKILL');
        // Slipway is gone; the swarm keeps its tasks running.
        await sleep(3000);
        assert.deepEqual(await state(a.id), before, 'the services and tasks outlive the SIGKILLed server');

        server = await startChild([], env, 120_000);
        await waitFor(
          'the application to serve again',
          async () => (await edgeGet(edgePort, host).catch(() => undefined))?.status === 200 || undefined,
          120_000,
        );
        // Once start settled (leftovers removed), still exactly the adopted services and tasks.
        await sleep(3000);
        assert.deepEqual(await state(a.id), before, 'the same services and tasks: adopted, not redeployed');
        assert.equal((await call('GET', `/applications/${a.id}/deployments`, 200)).data.length, deployments, 'no new deployment');
        assert.equal((await call('GET', `/applications/${a.id}`, 200)).status, statusBefore);

        // The edge reaches both tasks again (each answers with its container's hostname).
        const hostnames = new Set<string>();
        for (let i = 0; i < 8; i++) {
          const r = await edgeGet(edgePort, host);
          assert.equal(r.status, 200);
          hostnames.add(r.body.replace(/^adopted /, ''));
        }
        assert.equal(hostnames.size, 2, [...hostnames].join(', '));

        // Measured again: both instances, and their memory from their nodes' engines.
        const from = new Date(Date.now() - 5_000).toISOString();
        const q = () => `from=${from}&to=${new Date(Date.now() + 60_000).toISOString()}&interval_in_seconds=1`;
        const metric = async (name: string) =>
          (await call('GET', `/applications/${a.id}/processes/${web.id}/metrics/${name}?${q()}`, 200)) as { value: number }[];
        await waitFor('2 instances counted', async () => (await metric('instance-count')).some((p) => p.value === 2) || undefined, 30_000);
        await waitFor('a measured memory point', async () => (await metric('memory-usage')).some((p) => p.value > 0) || undefined, 30_000);

        await call('DELETE', `/applications/${a.id}`, 200);
        await waitFor('the services to go', async () => (await state(a.id)).services.length === 0 || undefined, 60_000);
      } finally {
        await server.stop();
        // A failure above leaves no service behind (the server that made them may be gone).
        if (appId)
          for (const svc of await docker.listServices({ filters: { label: [`slipway.app=${appId}`] } }))
            await docker
              .getService(svc.ID)
              .remove()
              .catch(() => {});
      }
    },
  );
});
