// The build cache of a Dockerfile application is its own: a second build of the same application
// reuses its unchanged layers; another application (another company's, say) building the same
// Dockerfile from the same files reuses nothing of the first one's layers; with the cache off,
// nothing is reused either.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy } from '../apps-real/support.js';
import { CONTAINER_ENV, pythonDockerfile, repoOf } from './support.js';

describe('container runtime: build cache per application (sqlite)', { skip: await engineSkip() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });
  // Unique per run, so no earlier run's layers (of an application since deleted) match either.
  const repo = repoOf(pythonDockerfile(`cache-${Date.now()}`));

  const build = async (appId: string) => {
    const d = await deploy(s, appId, 'deployments', {}, 240_000);
    assert.equal(d.status, 'success');
    const logs = expectStatus(await s.get(`/applications/${appId}/deployments/${d.id}/logs?limit=1000`), 200) as { message: string }[];
    return logs.map((l) => l.message).join('\n');
  };
  const create = async (name: string) => {
    const a = await createRealApp(s, repo.url, name);
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    return a;
  };

  it("reuses the application's own layers only", async () => {
    const first = await create('box-cache-a');
    const one = await build(first.id);
    assert.match(one, /no earlier image of this application yet/);
    assert.doesNotMatch(one, /Using cache/);
    const two = await build(first.id);
    assert.match(two, /Build cache: unchanged layers of this application's last image are reused/);
    assert.match(two, /Using cache/, 'the second build of the same application reuses its layers');

    const other = await create('box-cache-b');
    const theirs = await build(other.id);
    assert.doesNotMatch(theirs, /Using cache/, "another application's first build reuses none of the first one's layers");

    expectStatus(await s.patch(`/applications/${first.id}`, { build_cache_enabled: false }), 200);
    const off = await build(first.id);
    assert.match(off, /Build cache disabled/);
    assert.doesNotMatch(off, /Using cache/);
    for (const a of [first, other]) expectStatus(await s.delete(`/applications/${a.id}`), 200);
  });
});
