// Cron and job processes, cancelled builds and the build cache with the local runtime: real
// processes in the release directory with the application's environment.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { createProcess, cron, exitCodes, processPath, runtimeLogs } from '../processes/support.js';
import { alive, createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo } from './support.js';

const EVERY_SECOND = '*/1 * * * * *';
const YEARLY = '0 0 1 1 *';

for (const kind of DB_KINDS) {
  describe(`local runtime: cron, jobs, builds (${kind})`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV, rateLimits: GENEROUS });
    let port: number;
    before(() => {
      port = s.app.runtimes.edge!.port;
    });

    const scratch = () => mkdtempSync(join(tmpdir(), 'slipway-out-'));
    const logText = async (appId: string, deploymentId: string) =>
      JSON.stringify(expectStatus(await s.get(`/applications/${appId}/deployments/${deploymentId}/logs`), 200));
    const waitExit = (app: string, pid: string, value: string, description: string) =>
      waitFor(`exit code ${value} (${description})`, async () =>
        (await exitCodes(s, app, pid)).find((e) => e.value === value && e.description === description),
      );
    const readPid = (file: string) => waitFor(`a pid in ${file}`, () => (existsSync(file) && Number(readFileSync(file, 'utf8').trim())) || undefined);

    it('a cron process runs on its schedule in the release directory with the environment; its exit code is recorded', async () => {
      const out = scratch();
      const repo = makeRepo('c1', { 'tick.sh': `echo tick >> "$OUT_DIR/ticks"\necho "cwd=$(pwd) greeting=$GREETING"\n` });
      const a = await createRealApp(s, repo.url, uniqueName(`cron-${kind}`));
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'OUT_DIR', value: out }), 201);
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'GREETING', value: 'hello-cron' }), 201);
      const c = await createProcess(s, a.id, cron('ticker', { schedule: EVERY_SECOND, entrypoint: 'sh tick.sh' }));
      const d = await deploy(s, a.id);
      assert.equal(d.status, 'success');
      await waitFor('two ticks written', () => existsSync(join(out, 'ticks')) && readFileSync(join(out, 'ticks'), 'utf8').split('\n').length > 2);
      await waitExit(a.id, c.id, '0', 'completed');
      const line = await waitFor('the run output in the runtime log', async () => (await runtimeLogs(s, a.id, c.id)).find((l) => l.message.startsWith('cwd=')));
      assert.match(line.message, new RegExp(`cwd=.*/releases/${a.id}/${d.id} greeting=hello-cron`));
      assert.ok(line.attributes.run_id);
      expectStatus(await s.delete(processPath(a.id, c.id)), 200);
    });

    it('the maximum run time kills the process group (exit 137); Replace kills the running run (143); Forbid skips', async () => {
      const out = scratch();
      const repo = makeRepo('c2', { 'long.sh': `echo $$ > "$OUT_DIR/$1.pid"\nsleep 60 &\necho $! > "$OUT_DIR/$1.child"\nwait\n` });
      const a = await createRealApp(s, repo.url, uniqueName(`cron-${kind}`));
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'OUT_DIR', value: out }), 201);
      const limited = await createProcess(s, a.id, cron('limited', { schedule: YEARLY, entrypoint: 'sh long.sh limited', max_run_time_seconds: 1 }));
      assert.equal((await deploy(s, a.id)).status, 'success');
      expectStatus(await s.post(`${processPath(a.id, limited.id)}/trigger`), 200);
      const child = await readPid(join(out, 'limited.child'));
      await waitExit(a.id, limited.id, '137', 'deadlineExceeded');
      await waitFor('the whole process group to be gone', () => !alive(child) && !alive(Number(readFileSync(join(out, 'limited.pid'), 'utf8'))));

      const replace = await createProcess(
        s,
        a.id,
        cron('replace', { schedule: EVERY_SECOND, entrypoint: 'sh long.sh replace', concurrency_policy: 'Replace' }),
      );
      const forbid = await createProcess(s, a.id, cron('forbid', { schedule: EVERY_SECOND, entrypoint: 'sh long.sh forbid', concurrency_policy: 'Forbid' }));
      assert.equal((await deploy(s, a.id)).status, 'success');
      const first = await readPid(join(out, 'replace.pid'));
      await waitExit(a.id, replace.id, '143', 'replaced');
      await waitFor('the replaced run to be killed', () => !alive(first));
      await waitFor('a skipped fire', async () =>
        (await runtimeLogs(s, a.id, forbid.id)).some((l) => l.message.includes('skipped: previous run still running')),
      );
      const forbidPid = await readPid(join(out, 'forbid.pid'));
      // Suspension ends the runs and kills their processes.
      expectStatus(await s.post(`/applications/${a.id}/suspend`), 200);
      await waitFor('the running runs killed on suspension', () => !alive(forbidPid));
      await waitExit(a.id, forbid.id, '143', 'cancelled');
    });

    it('a beforeDeployment job failing stops the rollout (old release serves); afterFailedDeployment jobs run; a passing job lets it roll out', async () => {
      const out = scratch();
      const repo = makeRepo('j1');
      const a = await createRealApp(s, repo.url, uniqueName(`jobs-${kind}`));
      const host = `${a.name}.localhost`;
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'OUT_DIR', value: out }), 201);
      assert.equal((await deploy(s, a.id)).status, 'success');
      const migrate = await createProcess(s, a.id, {
        display_name: 'migrate',
        type: 'job',
        job_start_policy: 'beforeDeployment',
        entrypoint: 'echo "migrating in $(pwd)"; exit 3',
      });
      await createProcess(s, a.id, {
        display_name: 'cleanup',
        type: 'job',
        job_start_policy: 'afterFailedDeployment',
        entrypoint: 'echo cleaned > "$OUT_DIR/cleanup"',
      });
      repo.commit('j2');
      const d = await deploy(s, a.id);
      assert.equal(d.status, 'failed');
      const logs = await logText(a.id, d.id);
      assert.match(logs, new RegExp(`migrating in [^"]*/releases/${a.id}/${d.id}`));
      assert.match(logs, /Job process migrate exited with code 3/);
      assert.doesNotMatch(logs, /Starting \d+ instance/);
      assert.match((await edgeGet(port, host)).body, /^j1 /);
      await waitExit(a.id, migrate.id, '3', 'failed');
      await waitFor('the afterFailedDeployment job to run', () => existsSync(join(out, 'cleanup')));

      expectStatus(await s.patch(processPath(a.id, migrate.id), { entrypoint: 'echo migrated' }), 200);
      const ok = await deploy(s, a.id);
      assert.equal(ok.status, 'success');
      assert.match(await logText(a.id, ok.id), /Job process migrate completed/);
      assert.match((await edgeGet(port, host)).body, /^j2 /);
      await waitExit(a.id, migrate.id, '0', 'completed');
    });

    it('cancelling a deployment while it builds kills the build and ends it cancelled', async () => {
      const out = scratch();
      const repo = makeRepo('b1');
      const a = await createRealApp(s, repo.url, uniqueName(`cancel-${kind}`));
      expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'OUT_DIR', value: out, is_buildtime: true }), 201);
      repo.commit('b1', false, {
        'package.json': JSON.stringify({ name: 'demo', version: '1.0.0', scripts: { start: 'node server.js', build: 'sh build.sh' } }),
        'build.sh': `echo $$ > "$OUT_DIR/build.pid"\nsleep 60\n`,
      });
      const d = expectStatus(await s.post(`/applications/${a.id}/deployments`, {}), 200);
      const pid = await readPid(join(out, 'build.pid'));
      expectStatus(await s.post(`/applications/${a.id}/deployments/${d.id}/cancel`), 200);
      await waitFor('the build process to be killed', () => !alive(pid));
      assert.equal(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}`), 200).status, 'cancelled');
      await waitFor('the stop in the build log', async () => /ended during the build: its command was stopped/.test(await logText(a.id, d.id)));
    });

    it('the build cache reuses dependencies when package.json and the lock file are unchanged', async () => {
      const repo = makeRepo('k1');
      const a = await createRealApp(s, repo.url, uniqueName(`cache-${kind}`));
      const d1 = await deploy(s, a.id);
      assert.equal(d1.status, 'success');
      assert.match(await logText(a.id, d1.id), /Build cache: no reusable dependencies/);
      repo.commit('k2');
      const d2 = await deploy(s, a.id);
      assert.equal(d2.status, 'success');
      const second = await logText(a.id, d2.id);
      assert.match(second, /Build cache used/);
      assert.doesNotMatch(second, /installing dependencies with npm/);
      assert.match((await edgeGet(port, `${a.name}.localhost`)).body, /^k2 /);

      expectStatus(await s.patch(`/applications/${a.id}`, { build_cache_enabled: false }), 200);
      repo.commit('k3');
      const d3 = await deploy(s, a.id);
      assert.match(await logText(a.id, d3.id), /Build cache disabled/);
    });
  });
}
