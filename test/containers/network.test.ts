// The private network of each company on the container runtime: an application reaches another
// application of its company by the internal hostname the API gives its process, and reaches no
// container of another company, neither by name nor by the container's address. A TCP proxy
// answers on its external port for as long as it exists.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENEROUS, useServer, type TestServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, containersOf, docker, pythonHandler, repoOf, asCompany } from './support.js';

const HANDLE = [
  'def handle(path):',
  "    if path.startswith('/fetch/'):",
  '        try:',
  "            return urllib.request.urlopen('http://' + path[len('/fetch/'):] + '/', timeout=3).read().decode()",
  '        except Exception as e:',
  "            return 'failed ' + type(e).__name__",
  "    return os.environ['NAME']",
].join('\n');

/** The server as seen with another company's key. */
describe('container runtime: networks (sqlite)', { skip: await engineSkip() }, () => {
  // Frequent samples: the TCP proxies' listeners follow the proxies at each.
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...CONTAINER_ENV, SLIPWAY_APPS_METRICS_INTERVAL_MS: '300' } });

  it('an application reaches another of its company by internal hostname and no container of another company', async () => {
    const port = s.app.runtimes.edge!.port;
    const repo = repoOf(pythonHandler(HANDLE));
    const other = asCompany(s, (await s.newCompany()).token);
    const start = async (api: TestServer, name: string) => {
      const a = await createRealApp(api, repo.url, `box-net-${name}`);
      expectStatus(await api.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
      expectStatus(await api.post(`/applications/${a.id}/env-vars`, { key: 'NAME', value: name }), 201);
      const d = await deploy(api, a.id);
      assert.equal(d.status, 'success');
      const [web] = expectStatus(await api.get(`/applications/${a.id}/processes`), 200).data;
      return { ...a, internal: web.internal_hostname as string };
    };
    const [a, b, c] = await Promise.all([start(s, 'a'), start(s, 'b'), start(other, 'c')]);
    const fetchFromA = async (target: string) => (await edgeGet(port, `${a.name}.localhost`, {}, `/fetch/${target}`)).body;

    assert.match(b.internal, /svc\.cluster\.local$/);
    assert.equal(await fetchFromA(`${b.internal}:8080`), 'b');
    assert.equal(await fetchFromA(`${b.internal.split('.')[0]}:8080`), 'b', 'the short name too');

    assert.match(await fetchFromA(`${c.internal}:8080`), /^failed/, "another company's name does not resolve");
    const [cContainer] = await containersOf(c.id);
    const addresses = Object.values((await docker().getContainer(cContainer!.Id).inspect()).NetworkSettings.Networks).map((n) => n.IPAddress);
    assert.equal(addresses.length, 1);
    assert.match(await fetchFromA(`${addresses[0]}:8080`), /^failed/, "another company's container is not reachable by address");
    // The same address answers from the container's own network: the failure is the isolation.
    const [bContainer] = await containersOf(b.id);
    const bAddress = Object.values((await docker().getContainer(bContainer!.Id).inspect()).NetworkSettings.Networks)[0]!.IPAddress;
    assert.equal(await fetchFromA(`${bAddress}:8080`), 'b');
  });

  it('a TCP proxy forwards its external port to the process and stops when deleted', async () => {
    const a = await createRealApp(s, repoOf(pythonHandler(HANDLE)).url, 'box-tcp');
    expectStatus(await s.patch(`/applications/${a.id}`, { build_type: 'dockerfile' }), 200);
    expectStatus(await s.post(`/applications/${a.id}/env-vars`, { key: 'NAME', value: 'over-tcp' }), 201);
    assert.equal((await deploy(s, a.id)).status, 'success');
    const [web] = expectStatus(await s.get(`/applications/${a.id}/processes`), 200).data;
    const proxy = expectStatus(await s.post(`/applications/${a.id}/tcp-proxies`, { process_id: web.id, port: 8080 }), 201);
    const url = `http://127.0.0.1:${proxy.external_port}/`;
    const answer = () =>
      fetch(url)
        .then((r) => r.text())
        .catch(() => 'refused');
    await waitFor('the proxy to answer', async () => (await answer()) === 'over-tcp' || undefined, 30_000);
    expectStatus(await s.delete(`/applications/${a.id}/tcp-proxies/${proxy.id}`), 200);
    await waitFor('the proxy to stop', async () => (await answer()) === 'refused' || undefined, 30_000);
  });
});
