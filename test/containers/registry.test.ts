// An image source from the local registry of scripts/start-container-engine.sh (htpasswd auth):
// the deployment pulls it with the application's registry credential; a wrong credential fails it
// with a build log line that names the image and the credential (never the secret).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { engineSkip, testRegistry } from '../support/container-engine.js';
import { deploy, edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, docker } from './support.js';

const reg = testRegistry();

/** Builds a tiny web image and pushes it to the registry; the local copy is removed, so only a pull brings it back. */
async function pushPrivateImage(): Promise<string> {
  const d = docker();
  const dir = mkdtempSync(join(tmpdir(), 'slipway-private-image-'));
  writeFileSync(join(dir, 'index.html'), 'private image\n');
  writeFileSync(join(dir, 'Dockerfile'), 'FROM python:3.11-slim-bookworm\nWORKDIR /srv\nCOPY index.html .\nCMD python3 -m http.server "$PORT"\n');
  const name = `${reg!.host}/slipway-test/private:${randomBytes(4).toString('hex')}`;
  const follow = (s: NodeJS.ReadableStream) =>
    new Promise<void>((resolve, reject) =>
      d.modem.followProgress(s, (e: Error | null, out: { error?: string }[]) =>
        e || out.find((o) => o.error) ? reject(e ?? new Error(JSON.stringify(out))) : resolve(),
      ),
    );
  await follow(await d.buildImage({ context: dir, src: ['Dockerfile', 'index.html'] }, { t: name }));
  await follow(await d.getImage(name).push({ authconfig: { username: reg!.user, password: reg!.password, serveraddress: reg!.host } }));
  await d.getImage(name).remove();
  return name;
}

describe('container runtime: private images (sqlite)', { skip: (await engineSkip()) || (reg ? false : 'SLIPWAY_TEST_REGISTRY is not set') }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });
  let port: number;
  before(() => {
    port = s.app.runtimes.edge!.port;
  });

  it('pulls with the right credential; a wrong one fails the deployment with a clear line', async () => {
    const image = await pushPrivateImage();
    const credential = async (secret: string, name: string) =>
      expectStatus(await s.post('/docker-registries', { name, registry: 'custom', username: reg!.user, secret }), 201);
    const wrong = await credential('not-the-password', 'wrong login');
    const right = await credential(reg!.password, 'right login');
    const a = expectStatus(
      await s.post('/applications', {
        display_name: 'box private',
        cluster_id: DEFAULT_CLUSTER.id,
        source: 'dockerImage',
        docker_image: image,
        docker_registry_credential_id: wrong.id,
      }),
      201,
    );
    const failed = await deploy(s, a.id);
    assert.equal(failed.status, 'failed');
    const logs = JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${failed.id}/logs`), 200));
    assert.match(logs, new RegExp(`Pulling ${image.replace(/[.:/]/g, '\\$&')} with registry credential \\\\"wrong login\\\\" failed`));
    assert.doesNotMatch(logs, /not-the-password/);

    expectStatus(await s.patch(`/applications/${a.id}`, { docker_registry_credential_id: right.id }), 200);
    const d = await deploy(s, a.id);
    assert.equal(d.status, 'success', JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200)));
    const r = await edgeGet(port, `${a.name}.localhost`);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'private image\n');
  });
});
