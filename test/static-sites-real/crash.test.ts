// SIGKILL of Slipway during a static site's build: the restarted server runs the phase again and
// the deployment succeeds and serves (every phase can run twice).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ok, rateEnv, startChild } from '../helpers/process.js';
import { GENEROUS } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { waitFor } from '../helpers/util.js';
import { freePort } from '../../src/modules/applications/runtime/local/supervisor.js';
import { edgeGet, LOCAL_ENV } from '../apps-real/support.js';
import { gitMissing, makeSiteRepo } from './support.js';

describe('real static sites after SIGKILL (sqlite)', { skip: gitMissing() }, () => {
  it('a build interrupted by a crash runs again after the restart, and the site is served', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-site-crash-'));
    const edgePort = await freePort();
    const token = `svl_${'b'.repeat(64)}`;
    const env = {
      ...LOCAL_ENV,
      SLIPWAY_EDGE_PORT: String(edgePort),
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_SECRET_KEY: 'k',
      DATA_DIR: dataDir,
      ...rateEnv(GENEROUS),
    };
    const repo = makeSiteRepo();
    repo.commit({ 'src/version.txt': 'slow-1' });
    let server = await startChild([], env);
    const site = await ok(server.baseUrl, token, 'POST', '/static-sites', 201, {
      display_name: 'crash site',
      repo_url: repo.url,
      default_branch: 'main',
      source: 'publicGit',
      published_directory: 'dist',
    });
    const [d] = (await ok(server.baseUrl, token, 'GET', `/static-sites/${site.id}/deployments`, 200)).data;
    const logs = async () => JSON.stringify(await ok(server.baseUrl, token, 'GET', `/static-sites/${site.id}/deployments/${d.id}/logs`, 200));
    try {
      await waitFor('the build to start', async () => /slow build started/.test(await logs()), 60_000, 100);
      await server.stop('SIGKILL');
      server = await startChild([], env);
      const done = await untilStatus(
        'the deployment to finish after the restart',
        () => ok(server.baseUrl, token, 'GET', `/static-sites/${site.id}/deployments/${d.id}`, 200),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.equal(done.status, 'success', await logs());
      // The build phase ran twice: once before the crash, once after.
      assert.equal((await logs()).match(/slow build started/g)?.length, 2);
      const r = await edgeGet(edgePort, `${site.name}.localhost`);
      assert.equal(r.status, 200);
      assert.match(r.body, /home slow-1/);
    } finally {
      await server.stop();
    }
  });
});
