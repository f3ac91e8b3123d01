// The swarm runtime's registry path with a registry that asks for a login (SLIPWAY_SWARM_REGISTRY
// with SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD), on the swarm of
// scripts/start-swarm.sh, whose second registry (SLIPWAY_SWARM_TEST_AUTH_REGISTRY) takes htpasswd
// basic auth (SLIPWAY_SWARM_TEST_REGISTRY_USER/PASSWORD): an application built from source is
// pushed there with the login, and the nodes that run its tasks pull it with the login the manager
// handed them (the service was created with it); the password is in no service's env or labels
// and in no log line. Without the login, or with a wrong password, the deployment fails and says
// which settings to set; one of the two settings alone stops Slipway at start. Node 3 joins the
// default cluster's region for the suite (restored after), so the tasks spread over all three nodes.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { loadConfig } from '../../src/shared/config.js';
import { swarmSettings } from '../../src/modules/applications/runtime/swarm/settings.js';
import { GENEROUS, useServer, type TestServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { repoOf } from '../containers/support.js';
import {
  assertPulledFromRegistry,
  holdSwarm,
  registryTags,
  runningTasks,
  swarmClient,
  swarmSkip,
  SWARM_ENV,
  thirdNodeInRegion,
  wordApp,
} from '../support/swarm.js';

const registry = process.env.SLIPWAY_SWARM_TEST_AUTH_REGISTRY ?? '';
const user = process.env.SLIPWAY_SWARM_TEST_REGISTRY_USER ?? '';
const password = process.env.SLIPWAY_SWARM_TEST_REGISTRY_PASSWORD ?? '';

const files = wordApp('private');

/** A server's log, kept as text (the password must never be in it). */
function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c: Buffer) => (text += c.toString()));
  return { stream, text: () => text };
}

/** A deployment of a new source-built app with 3 instances on `s`; the finished deployment and its logs. */
async function deployApp(s: TestServer, name: string) {
  const a = await createRealApp(s, repoOf(files).url, name);
  expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
  const [web] = expectStatus(await s.get(`/applications/${a.id}/processes`), 200).data;
  expectStatus(await s.patch(`/applications/${a.id}/processes/${web.id}`, { scaling_strategy: { type: 'manual', config: { instanceCount: 3 } } }), 200);
  const d = await deploy(s, a.id, 'deployments', {}, 300_000);
  const logs = JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200));
  return { a, d, logs };
}

const settingsOf = (env: Record<string, string>) => swarmSettings(loadConfig({}, { SLIPWAY_RUNTIME: 'swarm', ...env }));

describe('swarm runtime: the registry login settings', () => {
  it('both settings make the login of SLIPWAY_SWARM_REGISTRY; one alone, or a login without a registry, is refused at start', () => {
    assert.deepEqual(
      settingsOf({ SLIPWAY_SWARM_REGISTRY: 'r.example:5000/', SLIPWAY_SWARM_REGISTRY_USER: 'u', SLIPWAY_SWARM_REGISTRY_PASSWORD: 'p' }).registryAuth,
      {
        username: 'u',
        password: 'p',
        serveraddress: 'r.example:5000',
      },
    );
    assert.equal(settingsOf({ SLIPWAY_SWARM_REGISTRY: 'r.example:5000' }).registryAuth, null);
    assert.throws(
      () => settingsOf({ SLIPWAY_SWARM_REGISTRY: 'r.example:5000', SLIPWAY_SWARM_REGISTRY_USER: 'u' }),
      /SLIPWAY_SWARM_REGISTRY_USER is set without SLIPWAY_SWARM_REGISTRY_PASSWORD/,
    );
    assert.throws(
      () => settingsOf({ SLIPWAY_SWARM_REGISTRY: 'r.example:5000', SLIPWAY_SWARM_REGISTRY_PASSWORD: 'p' }),
      /SLIPWAY_SWARM_REGISTRY_PASSWORD is set without SLIPWAY_SWARM_REGISTRY_USER/,
    );
    assert.throws(() => settingsOf({ SLIPWAY_SWARM_REGISTRY_USER: 'u', SLIPWAY_SWARM_REGISTRY_PASSWORD: 'p' }), /SLIPWAY_SWARM_REGISTRY, which is not set/);
  });
});

describe(
  'swarm runtime: release images through a registry that asks for a login',
  {
    skip:
      (await swarmSkip()) ||
      (registry && user && password
        ? false
        : 'SLIPWAY_SWARM_TEST_AUTH_REGISTRY, SLIPWAY_SWARM_TEST_REGISTRY_USER or SLIPWAY_SWARM_TEST_REGISTRY_PASSWORD is not set (eval "$(scripts/start-swarm.sh)")'),
  },
  () => {
    let release: () => void = () => {};
    before(async () => void (release = await holdSwarm()), { timeout: 20 * 60_000 });
    const log = capture();
    const s = useServer({
      db: 'sqlite',
      rateLimits: GENEROUS,
      logger: { level: 'debug', stream: log.stream },
      env: { ...SWARM_ENV, SLIPWAY_SWARM_REGISTRY: registry, SLIPWAY_SWARM_REGISTRY_USER: user, SLIPWAY_SWARM_REGISTRY_PASSWORD: password },
    });
    const anonymous = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...SWARM_ENV, SLIPWAY_SWARM_REGISTRY: registry } });
    const wrong = useServer({
      db: 'sqlite',
      rateLimits: GENEROUS,
      env: { ...SWARM_ENV, SLIPWAY_SWARM_REGISTRY: registry, SLIPWAY_SWARM_REGISTRY_USER: user, SLIPWAY_SWARM_REGISTRY_PASSWORD: `${password}-wrong` },
    });
    let docker: Docker;
    let restoreThird = async () => {};

    before(async () => {
      docker = swarmClient();
      restoreThird = await thirdNodeInRegion(DEFAULT_CLUSTER.name);
    });

    after(async () => {
      await restoreThird();
      release();
    });

    it('a source build is pushed with the login and the nodes running its tasks pulled it with the login the manager handed them', async () => {
      const { a, d, logs } = await deployApp(s, 'swarm-private');
      assert.equal(d.status, 'success', logs);
      assert.ok(logs.includes(`Image pushed to ${registry}/slipway/${a.id}:${d.id}`), logs);

      const [svc] = await docker.listServices({ filters: { label: [`slipway.app=${a.id}`] } });
      const spec = svc!.Spec as { TaskTemplate: { ContainerSpec: { Image: string } } };
      assert.ok(spec.TaskTemplate.ContainerSpec.Image.startsWith(`${registry}/slipway/${a.id}:${d.id}`), spec.TaskTemplate.ContainerSpec.Image);
      assert.ok(!JSON.stringify(await docker.getService(svc!.ID).inspect()).includes(password), "the password is in the service's spec");

      const tasks = await runningTasks(docker, svc!.ID);
      assert.equal(tasks.length, 3);
      await assertPulledFromRegistry(tasks, registry, a.id);
      const r = await edgeGet(s.app.runtimes.edge!.port, `${a.name}.localhost`);
      assert.equal(r.status, 200);
      assert.match(r.body, /^private /);

      const login = { user, password };
      assert.deepEqual(await registryTags(registry, a.id, login), [d.id], 'the release is in the registry');
      expectStatus(await s.delete(`/applications/${a.id}`), 200);
      // Deleting the application deletes its tags, with the login.
      await waitFor('the registry to forget its tags', async () => (await registryTags(registry, a.id, login)).length === 0 || undefined, 90_000);
      assert.ok(log.text().length > 0, 'the log was captured');
      assert.ok(!log.text().includes(password), 'the password is in the log');
    });

    it('without the login the deployment fails and names the settings to set', async () => {
      const { d, logs } = await deployApp(anonymous, 'swarm-private-anonymous');
      assert.equal(d.status, 'failed', logs);
      assert.match(logs, new RegExp(`The push of ${registry}/slipway/\\S+ to the registry ${registry} failed: no basic auth credentials`), logs);
      assert.match(logs, /the registry asks for a login: set SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD/, logs);
    });

    it('with a wrong password the deployment fails and says the login was refused', async () => {
      const { d, logs } = await deployApp(wrong, 'swarm-private-wrong');
      assert.equal(d.status, 'failed', logs);
      assert.match(
        logs,
        /unauthorized: authentication required \(the registry refused the login of SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD\)/,
        logs,
      );
      assert.ok(!logs.includes(password), 'the password is in the logs');
    });
  },
);
