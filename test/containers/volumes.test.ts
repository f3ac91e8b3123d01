// Persistent volumes on the container runtime: an engine volume per volume, mounted at its path in
// every instance; a file written there survives a redeploy, a clone starts without it, and
// deleting the application leaves no engine volume. A volume deleted through the API leaves the
// engine as soon as no container mounts it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, containersOf, docker, pythonHandler, repoOf } from './support.js';

const HANDLE = [
  'def handle(path):',
  "    if path == '/put':",
  "        open('/data/f', 'w').write('kept')",
  "        return 'written'",
  "    return open('/data/f').read() if os.path.exists('/data/f') else 'none'",
].join('\n');

const volumesOf = async (appId: string) => (await docker().listVolumes({ filters: { label: [`slipway.app=${appId}`] } })).Volumes ?? [];

describe('container runtime: volumes (sqlite)', { skip: await engineSkip() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });

  it("a volume's file survives a redeploy, is absent from a clone, and the volume goes with the application", async () => {
    const port = s.app.runtimes.edge!.port;
    const a = await createRealApp(s, repoOf(pythonHandler(HANDLE)).url, 'box-volume');
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    const v = expectStatus(await s.post(`/applications/${a.id}/volumes`, { name: 'data', mount_path: '/data', size_gb: 1 }), 201);
    const d1 = await deploy(s, a.id);
    assert.equal(d1.status, 'success');
    const host = `${a.name}.localhost`;
    assert.equal((await edgeGet(port, host)).body, 'none');
    assert.equal((await edgeGet(port, host, {}, '/put')).body, 'written');
    const [first] = await containersOf(a.id);
    assert.deepEqual(
      first!.Mounts.map((m) => [m.Name, m.Destination]),
      [[`slipway-${v.id}`, '/data']],
    );

    const d2 = await deploy(s, a.id);
    assert.equal(d2.status, 'success');
    await waitFor('the first container to go', async () => (await containersOf(a.id, true)).every((c) => c.Id !== first!.Id) || undefined);
    assert.equal((await edgeGet(port, host)).body, 'kept');

    const c = expectStatus(await s.post(`/applications/${a.id}/clone`, { display_name: `box-volume-clone ${Date.now()}` }), 201);
    const dc = await deploy(s, c.id);
    assert.equal(dc.status, 'success');
    assert.equal((await edgeGet(port, `${c.name}.localhost`)).body, 'none');
    assert.deepEqual(await volumesOf(c.id), []);

    await waitFor(
      'the used bytes to be measured',
      async () => {
        const got = expectStatus(await s.get(`/applications/${a.id}/volumes/${v.id}`), 200);
        return got.used_bytes > 0 || undefined;
      },
      60_000,
    );

    expectStatus(await s.delete(`/applications/${a.id}`), 200);
    expectStatus(await s.delete(`/applications/${c.id}`), 200);
    await waitFor('the volume to go', async () => ((await volumesOf(a.id)).length === 0 && (await containersOf(c.id, true)).length === 0) || undefined, 30_000);
  });

  it('a deleted volume leaves the engine at once when no container mounts it, else once its container goes', async () => {
    const a = await createRealApp(s, repoOf(pythonHandler(HANDLE)).url, 'box-volume-delete');
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    const kept = expectStatus(await s.post(`/applications/${a.id}/volumes`, { name: 'data', mount_path: '/data', size_gb: 1 }), 201);
    const mounted = expectStatus(await s.post(`/applications/${a.id}/volumes`, { name: 'more', mount_path: '/more', size_gb: 1 }), 201);
    assert.equal((await deploy(s, a.id)).status, 'success');
    const names = async () => (await volumesOf(a.id)).map((v) => v.Name).sort();
    assert.deepEqual(await names(), [`slipway-${kept.id}`, `slipway-${mounted.id}`].sort());

    // Mounted by the running instance: the engine keeps it until the container goes.
    expectStatus(await s.delete(`/applications/${a.id}/volumes/${mounted.id}`), 200);
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(await names(), [`slipway-${kept.id}`, `slipway-${mounted.id}`].sort());
    expectStatus(await s.post(`/applications/${a.id}/suspend`), 200);
    await waitFor('the containers to go', async () => (await containersOf(a.id, true)).length === 0 || undefined, 30_000);
    // No container is created meanwhile (suspended): the deletion's job removes it.
    await waitFor('the unmounted volume to go', async () => (await names()).length === 1 || undefined, 30_000);
    assert.deepEqual(await names(), [`slipway-${kept.id}`]);

    // Mounted by no container: gone right after the DELETE.
    const t0 = Date.now();
    expectStatus(await s.delete(`/applications/${a.id}/volumes/${kept.id}`), 200);
    await waitFor('the volume to go', async () => (await names()).length === 0 || undefined, 10_000, 50);
    assert.ok(Date.now() - t0 < 5000, `removed after ${Date.now() - t0} ms`);
    expectStatus(await s.delete(`/applications/${a.id}`), 200);
  });
});
