// SIGKILL of Slipway with the local runtime: the next start adopts the instances it left (same pid,
// same port), replaces one that died meanwhile, and ends the cron run that was going.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startChild, ok } from '../helpers/process.js';
import { waitFor } from '../helpers/util.js';
import { freePort } from '../../src/modules/applications/runtime/local/supervisor.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { cron } from '../processes/support.js';
import { alive, edgeGet, LOCAL_ENV, makeRepo } from './support.js';

describe('local runtime after SIGKILL (sqlite)', () => {
  it('the restarted server adopts the live instance, replaces a dead one and ends the run', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-crash-'));
    const edgePort = await freePort();
    const token = `svl_${'a'.repeat(64)}`;
    const env = { ...LOCAL_ENV, SLIPWAY_EDGE_PORT: String(edgePort), SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'k', DATA_DIR: dataDir };
    const repo = makeRepo('c1');
    let server = await startChild([], env, 120_000);
    const a = await ok(server.baseUrl, token, 'POST', '/applications', 201, {
      display_name: 'crash app',
      cluster_id: DEFAULT_CLUSTER.id,
      source: 'publicGit',
      git_type: 'github',
      repo_url: repo.url,
      default_branch: 'main',
    });
    // A cron process whose run is going when the server dies.
    const out = mkdtempSync(join(tmpdir(), 'slipway-crash-out-'));
    const c = await ok(server.baseUrl, token, 'POST', `/applications/${a.id}/processes`, 200, {
      ...cron('long', { schedule: '0 0 1 1 *', entrypoint: `echo $$ > ${out}/run.pid; exec sleep 60` }),
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
    await ok(server.baseUrl, token, 'POST', `/applications/${a.id}/processes/${c.id}/trigger`, 200);
    const runPid = await waitFor(
      'the cron run to start',
      () => (existsSync(`${out}/run.pid`) && Number(readFileSync(`${out}/run.pid`, 'utf8').trim())) || undefined,
    );
    await server.stop('SIGKILL');
    assert.ok(alive(oldPid), 'the instance outlives a SIGKILLed server (its own process group)');
    server = await startChild([], env, 120_000);
    try {
      const again = await waitFor('the application to serve again', async () => {
        const r = await edgeGet(edgePort, host).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      });
      assert.equal(again.body, before.body, 'the same instance serves (adopted)');
      assert.ok(alive(oldPid), 'the adopted instance was not killed');
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal((await edgeGet(edgePort, host)).body, before.body, 'still the adopted instance once start has settled');
      // The run that was going ended cleanly: its process killed, the run terminated (cancelled).
      assert.ok(!alive(runPid), 'the cron run was killed at start');
      const codes = await ok(
        server.baseUrl,
        token,
        'GET',
        `/applications/${a.id}/processes/${c.id}/metrics/exit-codes?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`,
        200,
      );
      assert.deepEqual(
        codes.map((e: { value: string; description: string }) => [e.value, e.description]),
        [['143', 'cancelled']],
      );
      // An instance that dies while Slipway is down is replaced at the next start.
      await server.stop('SIGKILL');
      // Its whole process group (the application's server may be a child of the started shell).
      const stat = readFileSync(`/proc/${oldPid}/stat`, 'utf8');
      process.kill(-Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]), 'SIGKILL');
      await waitFor('the instance to die', () => !alive(oldPid) || undefined);
      server = await startChild([], env, 120_000);
      const replaced = await waitFor('a new instance to serve', async () => {
        const r = await edgeGet(edgePort, host).catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      });
      assert.match(replaced.body, /^c1 /);
      assert.notEqual(Number(replaced.body.split(' ')[1]), oldPid);
    } finally {
      await server.stop();
    }
  });
});
