// SIGKILL of Slipway with the container runtime: the application's container keeps serving through
// the edge while Slipway is down, and the restarted Slipway adopts it by its labels (the same
// container, no duplicate); a graceful stop leaves it running (adopted again) unless
// SLIPWAY_APPS_STOP_ON_EXIT=1, which removes it.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startChild, ok } from '../helpers/process.js';
import { waitFor } from '../helpers/util.js';
import { freePort } from '../../src/modules/applications/runtime/host.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { engineSkip } from '../support/container-engine.js';
import { edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, containersOf, pythonDockerfile, repoOf } from './support.js';

describe('container runtime after SIGKILL and after a graceful stop (sqlite)', { skip: await engineSkip() }, () => {
  it('the restarted server adopts the running container: served throughout, no duplicate; kept on a graceful stop unless told', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-container-crash-'));
    const edgePort = await freePort();
    const token = `svl_${'c'.repeat(64)}`;
    const env = { ...CONTAINER_ENV, SLIPWAY_EDGE_PORT: String(edgePort), SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'k', DATA_DIR: dataDir };
    const repo = repoOf(pythonDockerfile('crash'));
    let server = await startChild([], env, 120_000);
    try {
      const a = await ok(server.baseUrl, token, 'POST', '/applications', 201, {
        display_name: 'box crash',
        cluster_id: DEFAULT_CLUSTER.id,
        source: 'publicGit',
        git_type: 'github',
        repo_url: repo.url,
        default_branch: 'main',
      });
      await ok(server.baseUrl, token, 'PATCH', `/applications/${a.id}`, 200, { build_type: 'dockerfile' });
      const d = await ok(server.baseUrl, token, 'POST', `/applications/${a.id}/deployments`, 200, {});
      await waitFor(
        'the deployment',
        async () => (await ok(server.baseUrl, token, 'GET', `/applications/${a.id}/deployments/${d.id}`, 200)).status === 'success' || undefined,
        120_000,
        100,
      );
      const host = `${a.name}.localhost`;
      assert.match((await edgeGet(edgePort, host)).body, /^crash /);
      const [before] = await containersOf(a.id);
      assert.ok(before);
      await server.stop('SIGKILL');
      const [during] = await containersOf(a.id);
      assert.equal(during?.Id, before.Id, 'the container outlives the SIGKILLed server');
      // Without SLIPWAY_APPS_STOP_ON_EXIT (production's default), a graceful stop leaves the
      // container running too: a restart or an upgrade of Slipway does not take applications down.
      const serving = async () => {
        await waitFor('the application to serve again', async () => (await edgeGet(edgePort, host).catch(() => undefined))?.status === 200 || undefined);
        // Once start settled (leftovers removed), still exactly the adopted container.
        await new Promise((r) => setTimeout(r, 1500));
        assert.deepEqual(
          (await containersOf(a.id, true)).map((c) => c.Id),
          [before.Id],
        );
        assert.match((await edgeGet(edgePort, host)).body, /^crash /);
      };
      server = await startChild([], { ...env, SLIPWAY_APPS_STOP_ON_EXIT: '' }, 120_000);
      await serving();
      await server.stop();
      const [kept] = await containersOf(a.id);
      assert.equal(kept?.Id, before.Id, 'a graceful stop without SLIPWAY_APPS_STOP_ON_EXIT leaves the container running');
      server = await startChild([], env, 120_000);
      await serving();
      await server.stop();
      assert.deepEqual(await containersOf(a.id, true), [], 'with SLIPWAY_APPS_STOP_ON_EXIT=1 a graceful stop removes its containers');
    } finally {
      await server.stop();
    }
  });
});
