// The container runtime end to end (SLIPWAY_RUNTIME=container) on the engine of
// scripts/start-container-engine.sh, through the API and the edge: a Dockerfile app (its memory
// limit read from its cgroup), rollback to an earlier image without a build, usage from the
// engine's stats, suspension and activation, deletion leaving no container or image; cron runs as containers (exit code, output, maximum run time); the terminal.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createProcess, cron, exitCodes, processPath, RT, runtimeLogs } from '../processes/support.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet, openTerminal, underLoad } from '../apps-real/support.js';
import { CONTAINER_ENV, containersOf, imagesOf, pythonDockerfile, repoOf } from './support.js';

const logText = async (s: ReturnType<typeof useServer>, appId: string, deploymentId: string) =>
  JSON.stringify(expectStatus(await s.get(`/applications/${appId}/deployments/${deploymentId}/logs`), 200));

describe('container runtime (sqlite)', { skip: await engineSkip() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });
  let port: number;
  before(() => {
    port = s.app.runtimes.edge!.port;
  });

  it('a Dockerfile app builds, runs within its memory limit, answers through the edge, rolls back to its earlier image, and leaves nothing when deleted', async () => {
    const repo = repoOf(pythonDockerfile('one'));
    const a = await createRealApp(s, repo.url, 'box-dockerfile');
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'FROM_ENV', value: 'resolved' }), 201);
    const [web] = expectStatus(await s.get(`/applications/${a.id}/processes`), 200).data;
    expectStatus(await s.patch(`/applications/${a.id}/processes/${web.id}`, { resource_type_id: RT.hobby!.id }), 200);
    const d1 = await deploy(s, a.id);
    assert.equal(d1.status, 'success', await logText(s, a.id, d1.id));
    assert.match(await logText(s, a.id, d1.id), /Building Dockerfile/);
    const host = `${a.name}.localhost`;
    const r1 = await edgeGet(port, host);
    assert.equal(r1.status, 200);
    // The hobby resource type's 256 MiB, as the container's cgroup says.
    assert.equal(r1.body, `one ${256 * 1024 * 1024} resolved built with resolved`);
    const running = await containersOf(a.id);
    assert.equal(running.length, 1);
    assert.equal(running[0]!.Labels['slipway.release'], d1.id);
    assert.equal(running[0]!.Image, `slipway/${a.id}:${d1.id}`);

    // Redeployed under continuous requests through the edge: none fails, then the new image answers.
    repo.commit(pythonDockerfile('two'));
    const { result: d2, seen, failures } = await underLoad(port, host, () => deploy(s, a.id));
    assert.equal(d2.status, 'success', await logText(s, a.id, d2.id));
    assert.deepEqual(failures, []);
    assert.ok(seen.includes('one') && seen.includes('two'));
    assert.equal((await edgeGet(port, host)).body, `two ${256 * 1024 * 1024} resolved built with resolved`);
    await waitFor('the old container to go', async () => (await containersOf(a.id, true)).length === 1 || undefined);

    const d3 = await deploy(s, a.id, 'deployments/rollback');
    assert.equal(d3.status, 'success');
    assert.equal((await edgeGet(port, host)).body, `one ${256 * 1024 * 1024} resolved built with resolved`);
    assert.doesNotMatch(await logText(s, a.id, d3.id), /Building|Step \d/, 'no build');
    const [again] = await containersOf(a.id);
    assert.equal(again!.Image, `slipway/${a.id}:${d1.id}`, 'the first image runs again');

    // Usage is the engine's stats of the container.
    const now = Date.now();
    const q = `from=${new Date(now - 60_000).toISOString()}&to=${new Date(now + 60_000).toISOString()}&interval_in_seconds=1`;
    await waitFor(
      'a measured memory point',
      async () =>
        expectStatus<{ value: number }[]>(await s.get(`/applications/${a.id}/processes/${web.id}/metrics/memory-usage?${q}`), 200).some((p) => p.value > 0) ||
        undefined,
    );

    // Suspension removes the containers; activation starts the current release's image again.
    expectStatus(await s.post(`/applications/${a.id}/suspend`), 200);
    await waitFor('suspension to stop serving', async () => (await edgeGet(port, host)).status === 503 || undefined);
    await waitFor('the container to be removed', async () => (await containersOf(a.id, true)).length === 0 || undefined);
    expectStatus(await s.post(`/applications/${a.id}/activate`), 200);
    await waitFor(
      'activation to serve again',
      async () => (await edgeGet(port, host)).body === `one ${256 * 1024 * 1024} resolved built with resolved` || undefined,
      30_000,
    );

    expectStatus(await s.delete(`/applications/${a.id}`), 200);
    await waitFor(
      'the containers and images to go',
      async () => (!(await containersOf(a.id, true)).length && !(await imagesOf(a.id)).length) || undefined,
      30_000,
    );
  });

  it("cron runs are containers of the release's image: output and exit code recorded, the maximum run time stops them; the terminal is a TTY in an instance", async () => {
    const a = await createRealApp(s, repoOf(pythonDockerfile('runs')).url, 'box-runs');
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'GREETING', value: 'hello-box' }), 201);
    const YEARLY = '0 0 1 1 *';
    const quick = await createProcess(s, a.id, cron('quick', { schedule: YEARLY, entrypoint: 'echo "in $(pwd) $GREETING"; exit 3' }));
    const slow = await createProcess(s, a.id, cron('slow', { schedule: YEARLY, entrypoint: 'sleep 60', max_run_time_seconds: 1 }));
    const d = await deploy(s, a.id);
    assert.equal(d.status, 'success', await logText(s, a.id, d.id));
    expectStatus(await s.post(`${processPath(a.id, quick.id)}/trigger`), 200);
    expectStatus(await s.post(`${processPath(a.id, slow.id)}/trigger`), 200);
    const exit = (pid: string, value: string, description: string) =>
      waitFor(
        `exit ${value} (${description})`,
        async () => (await exitCodes(s, a.id, pid)).find((e) => e.value === value && e.description === description),
        30_000,
      );
    await exit(quick.id, '3', 'failed');
    await exit(slow.id, '137', 'deadlineExceeded');
    assert.ok((await runtimeLogs(s, a.id, quick.id)).some((l) => l.message === 'in /srv hello-box'));
    await waitFor('the run containers to be removed', async () => (await containersOf(a.id, true)).length === 1 || undefined);

    const [web] = expectStatus(await s.get(`/applications/${a.id}/processes`), 200).data.filter((p: { type: string }) => p.type === 'web');
    const t = await openTerminal(s, a.id, web.id);
    t.send('echo "greeting=$GREETING tty=$(tty)"\n');
    await waitFor('the shell output', () => /greeting=hello-box tty=\/dev\/pts\/\d+/.test(t.text) || undefined);
    t.send('exit 3\n');
    await waitFor('the session to close', () => t.closed !== undefined || undefined);
    assert.equal(t.closed, 4003);
  });
});
