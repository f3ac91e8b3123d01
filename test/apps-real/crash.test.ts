// SIGKILL of Slipway with the local runtime: the next start kills the instances it left and serves again.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startChild, ok } from '../helpers/process.js';
import { waitFor } from '../helpers/util.js';
import { freePort } from '../../src/modules/applications/local/supervisor.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { edgeGet, LOCAL_ENV, makeRepo } from './support.js';

/** Whether `pid` runs: a zombie (killed, not yet reaped by whatever adopted it) does not. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; Z is a zombie.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('local runtime after SIGKILL (sqlite)', () => {
  it('the restarted server kills the old instance and serves the application again', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-crash-'));
    const edgePort = await freePort();
    const token = `svl_${'a'.repeat(64)}`;
    const env = { ...LOCAL_ENV, SLIPWAY_EDGE_PORT: String(edgePort), SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'k', DATA_DIR: dataDir };
    const repo = makeRepo('c1');
    let server = await startChild([], env);
    const a = await ok(server.baseUrl, token, 'POST', '/applications', 201, {
      display_name: 'crash app',
      cluster_id: DEFAULT_CLUSTER.id,
      source: 'publicGit',
      git_type: 'github',
      repo_url: repo.url,
      default_branch: 'main',
    });
    const d = await ok(server.baseUrl, token, 'POST', `/applications/${a.id}/deployments`, 200, {});
    await waitFor(
      'the deployment',
      async () => (await ok(server.baseUrl, token, 'GET', `/applications/${a.id}/deployments/${d.id}`, 200)).status === 'success',
      60_000,
      50,
    );
    const host = `${a.name}.localhost`;
    const before = await edgeGet(edgePort, host);
    assert.equal(before.status, 200);
    const oldPid = Number(before.body.split(' ')[1]);
    await server.stop('SIGKILL');
    assert.ok(alive(oldPid), 'the instance outlives a SIGKILLed server (its own process group)');
    server = await startChild([], env);
    try {
      assert.ok(!alive(oldPid), 'the old instance was killed at start');
      const again = await waitFor('the application to serve again', async () => {
        const r = await edgeGet(edgePort, host).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      });
      assert.match(again.body, /^c1 /);
      assert.notEqual(Number(again.body.split(' ')[1]), oldPid);
    } finally {
      await server.stop();
    }
  });
});
