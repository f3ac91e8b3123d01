// The nginx edge driven by Slipway (SLIPWAY_EDGE=nginx): an application is served by nginx itself
// (its instances are nginx's upstream, the request reaches the access log), a redeploy under
// continuous requests and a maintenance toggle under a streaming response drop nothing, another
// company cannot take a hostname, and a static site and an application keep being served while
// Slipway is SIGKILLed and started again (nginx keeps the last configuration; the application's
// instances outlive Slipway and are adopted, on the same ports).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { ok, rateEnv, startChild } from '../helpers/process.js';
import { untilStatus } from '../helpers/status.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo } from '../apps-real/support.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { gitMissing, makeSiteRepo } from '../static-sites-real/support.js';
import type { Served } from '../../src/shared/edge/index.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import { ask, findFile, freePort, nginxSkip, serverBlock } from './support.js';

const skip = nginxSkip() || gitMissing();
const NGINX_ENV = { ...LOCAL_ENV, SLIPWAY_EDGE: 'nginx' };

// Answers `<version> <pid>`; /stream sends a chunk every 100 ms (ten of them, or with
// ?until=finish until /finish is requested, then `end`).
const streamingServer = (v: string) =>
  `let finished = false; const waiting = []; require('http').createServer((req, res) => { if (req.url === '/finish') { finished = true; waiting.splice(0).forEach((f) => f()); return res.end('finished'); } if (req.url.startsWith('/stream')) { const open = req.url.includes('until=finish'); let n = 0; const t = setInterval(() => { res.write('chunk' + n + '\\n'); if (!open && ++n === 10) { clearInterval(t); res.end(); } }, 100); if (open) { const end = () => { clearInterval(t); res.end('end\\n'); }; if (finished) end(); else waiting.push(end); } return; } res.end('${v} ' + process.pid); }).listen(process.env.PORT);\n`;

/** Requests `host` until `stop()` is called; answers the statuses and errors seen. */
function hammer(port: number, host: string) {
  const statuses = new Map<number, number>();
  const errors: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const r = await edgeGet(port, host);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      } catch (e) {
        errors.push((e as Error).message);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { statuses: Object.fromEntries(statuses), errors };
    },
  };
}

/** What hammer() saw: every request answered 200, and enough of them to mean something. */
function allServed(seen: { statuses: Record<string, number>; errors: string[] }) {
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(Object.keys(seen.statuses), ['200'], JSON.stringify(seen.statuses));
  assert.ok(seen.statuses[200]! > 20, JSON.stringify(seen.statuses));
}

/** A streaming GET of `path`: resolves with the status and the whole body once it ends; `started` once the first chunk arrived. */
function stream(port: number, host: string, path = '/stream', started?: () => void): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (!body) started?.();
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      res.on('aborted', () => reject(new Error('stream aborted')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Slipway on the nginx edge (sqlite)', { skip }, () => {
  const s = useServer({ db: 'sqlite', env: NGINX_ENV, rateLimits: GENEROUS });
  let port: number;
  let edge: NginxEdge;
  before(() => {
    edge = s.app.runtimes.edge as NginxEdge;
    port = edge.port;
  });

  it('nginx serves an application from its instances and logs it; a redeploy under continuous requests loses none', async () => {
    assert.equal(edge.driver, 'nginx');
    const served: Served[] = [];
    edge.onServed((x) => served.push(x));
    const repo = makeRepo('v1');
    const a = await createRealApp(s, repo.url, `nginx-app-${Date.now() % 100000}`);
    const host = `${a.name}.localhost`;
    assert.equal((await deploy(s, a.id)).status, 'success');
    const table = await edge.table();
    const entry = table.hosts.find((h) => h.hostname === host);
    assert.equal(entry?.target.type, 'upstream', JSON.stringify(entry));
    const r = await edgeGet(port, host, { 'user-agent': 'nginx-proof' });
    assert.equal(r.status, 200);
    assert.match(r.body, /^v1 /);
    assert.equal(r.headers.server, 'nginx');
    // The request comes back through nginx's access log (the origin never saw it).
    await waitFor('the access log line', async () => served.some((x) => x.host === host && x.userAgent === 'nginx-proof'), 5000, 50);

    const load = hammer(port, host);
    await new Promise((r) => setTimeout(r, 200));
    repo.commit('v2');
    assert.equal((await deploy(s, a.id)).status, 'success');
    await new Promise((r) => setTimeout(r, 300));
    const seen = await load.stop();
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(Object.keys(seen.statuses), ['200'], JSON.stringify(seen.statuses));
    assert.match((await edgeGet(port, host)).body, /^v2 /);
  });

  it('a maintenance toggle and a new hostname apply without dropping any of 50 streaming responses', async () => {
    const repo = makeRepo('s1', { 'server.js': streamingServer('s1') });
    const a = await createRealApp(s, repo.url, `nginx-stream-${Date.now() % 100000}`);
    const host = `${a.name}.localhost`;
    assert.equal((await deploy(s, a.id)).status, 'success');
    // 50 connections streaming until the test says so: they span both reloads below.
    let started = 0;
    const streams = Array.from({ length: 50 }, () => stream(port, host, '/stream?until=finish', () => started++));
    await waitFor('every stream to begin', () => started === 50, 15_000);
    const generation = (await edge.nginx.generation())!;
    expectStatus(await s.put(`/applications/${a.id}/maintenance-mode`, { is_enabled: true }), 200);
    assert.ok((await edge.nginx.generation())! > generation, 'nginx reloaded for maintenance');
    const m = await edgeGet(port, host);
    assert.equal(m.status, 503);
    assert.equal(m.headers['retry-after'], '60');
    // Another application: a new hostname in the configuration, while the streams still run.
    const before = (await edge.nginx.generation())!;
    const other = await createRealApp(s, makeRepo('o1').url, `nginx-other-${Date.now() % 100000}`);
    assert.equal((await deploy(s, other.id)).status, 'success');
    assert.ok((await edge.nginx.generation())! > before, 'nginx reloaded for the new hostname');
    assert.match((await edgeGet(port, `${other.name}.localhost`)).body, /^o1 /);
    expectStatus(await s.put(`/applications/${a.id}/maintenance-mode`, { is_enabled: false }), 200);
    assert.equal((await edgeGet(port, host, {}, '/finish')).body, 'finished');
    const done = await Promise.all(streams);
    for (const d of done) {
      assert.equal(d.status, 200);
      assert.match(d.body, /^(chunk\d+\n){5,}end\n$/, d.body.slice(-200));
    }
  });

  it('the origin believes X-Real-IP only from nginx (its secret): a direct request with a forged one is not', async () => {
    const a = await createRealApp(s, makeRepo('guarded').url, `nginx-guard-${Date.now() % 100000}`);
    assert.equal((await deploy(s, a.id)).status, 'success');
    const host = `${a.name}.localhost`;
    expectStatus(await s.put(`/applications/${a.id}/ip-restriction`, { type: 'allow', is_enabled: true, ip_list: ['203.0.113.7'] }), 200);
    // Through nginx the client is 127.0.0.1: refused, however it names itself.
    assert.equal((await edgeGet(port, host, { 'x-real-ip': '203.0.113.7', 'x-forwarded-for': '203.0.113.7' })).status, 403);
    const conf = readFileSync(edge.nginx.confPath, 'utf8');
    const originPort = Number(/upstream slipway_origin \{\s*server 127\.0\.0\.1:(\d+);/.exec(conf)![1]);
    assert.equal(statSync(edge.nginx.confPath).mode & 0o777, 0o600, 'nginx.conf holds the secret: 0600');
    assert.equal(statSync(join(edge.nginx.dir, 'origin.secret')).mode & 0o777, 0o600);
    // A process of this machine connecting to the origin itself, naming the allowed address: not believed.
    const direct = await edgeGet(originPort, host, { 'x-real-ip': '203.0.113.7' });
    assert.equal(direct.status, 403, 'a forged X-Real-IP straight to the origin is not believed');
    const wrong = await edgeGet(originPort, host, { 'x-real-ip': '203.0.113.7', 'x-slipway-origin-secret': '0'.repeat(64) });
    assert.equal(wrong.status, 403, 'nor with a wrong secret');
    // With nginx's secret the origin believes it (what nginx sends for the hostnames it leaves to the origin).
    const secret = readFileSync(join(edge.nginx.dir, 'origin.secret'), 'utf8').trim();
    assert.ok(conf.includes(secret), 'nginx sends the secret');
    assert.equal((await edgeGet(originPort, host, { 'x-real-ip': '203.0.113.7', 'x-slipway-origin-secret': secret })).status, 200);
    // Applications behind nginx never see it.
    const upstreams = conf.split('\n').filter((l) => l.includes(secret));
    assert.ok(upstreams.length >= 1 && upstreams.every((l) => /proxy_set_header x-slipway-origin-secret/.test(l)), upstreams.join('\n'));
    expectStatus(await s.put(`/applications/${a.id}/ip-restriction`, { type: 'deny', is_enabled: false, ip_list: [] }), 200);
  });

  it("another company's hostname stays its owner's; unknown hosts are 404", async () => {
    const repo = makeRepo('owner');
    const a = await createRealApp(s, repo.url, `nginx-owner-${Date.now() % 100000}`);
    assert.equal((await deploy(s, a.id)).status, 'success');
    const host = `${a.name}.localhost`;
    const b = await s.newCompany();
    const other = expectStatus(
      await s.post(
        '/applications',
        {
          display_name: a.name,
          cluster_id: (await s.get(`/applications/${a.id}`)).body.cluster_id,
          source: 'publicGit',
          git_type: 'github',
          repo_url: repo.url,
          default_branch: 'main',
        },
        { token: b.token },
      ),
      201,
    );
    expectError(await s.post(`/applications/${other.id}/domains`, { domain_name: host }, { token: b.token }), 400);
    assert.match((await edgeGet(port, host)).body, /^owner /);
    assert.equal((await edgeGet(port, 'nobody-here.localhost')).status, 404);
  });
});

/** A child Slipway on nginx that a test kills and restarts: its data directory, edge port, key and environment. */
async function childSetup(prefix: string, tokenChar: string) {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const edgePort = await freePort();
  const token = `svl_${tokenChar.repeat(64)}`;
  const env = {
    ...NGINX_ENV,
    SLIPWAY_EDGE_PORT: String(edgePort),
    SLIPWAY_BOOTSTRAP_TOKEN: token,
    SLIPWAY_SECRET_KEY: 'k',
    DATA_DIR: dataDir,
    ...rateEnv(GENEROUS),
  };
  return { dataDir, edgePort, token, env };
}

describe('a static site on nginx while Slipway is SIGKILLed and restarted (sqlite)', { skip }, () => {
  it('serves every request meanwhile', async () => {
    const { dataDir, edgePort, token, env } = await childSetup('slipway-nk-', 'c');
    let server = await startChild([], env);
    try {
      const repo = makeSiteRepo();
      const site = await ok(server.baseUrl, token, 'POST', '/static-sites', 201, {
        display_name: 'kill site',
        repo_url: repo.url,
        default_branch: 'main',
        source: 'publicGit',
        published_directory: 'dist',
      });
      const [d] = (await ok(server.baseUrl, token, 'GET', `/static-sites/${site.id}/deployments`, 200)).data;
      const done = await untilStatus('the deployment', () => ok(server.baseUrl, token, 'GET', `/static-sites/${site.id}/deployments/${d.id}`, 200), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      assert.equal(done.status, 'success');
      const host = site.hostname as string;
      // From nginx's own configuration (a root for the host), not through the default server and
      // Slipway's origin, which answers too until the site's block is applied: killed, that origin
      // is gone, and a request still taking that path got a 502.
      await waitFor(
        "the site's block in nginx's configuration",
        () => /\n\s*root '/.test(serverBlock(findFile(dataDir, 'nginx.conf'), host)) || undefined,
        20_000,
        50,
      );
      await waitFor('nginx to serve the release', async () => /home v1/.test((await edgeGet(edgePort, host)).body), 10_000, 50);
      // The reload that applied it has finished in the workers.
      await new Promise((r) => setTimeout(r, 300));
      const load = hammer(edgePort, host);
      await new Promise((r) => setTimeout(r, 300));
      await server.stop('SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      server = await startChild([], env);
      await new Promise((r) => setTimeout(r, 500));
      allServed(await load.stop());
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** An application of a child Slipway deployed from a repository answering `<version> <pid>`. */
async function deployedApp(baseUrl: string, token: string, version: string): Promise<{ id: string; name: string }> {
  const a = await ok(baseUrl, token, 'POST', '/applications', 201, {
    display_name: `app ${version}`,
    cluster_id: DEFAULT_CLUSTER.id,
    source: 'publicGit',
    git_type: 'github',
    repo_url: makeRepo(version).url,
    default_branch: 'main',
  });
  const d = await ok(baseUrl, token, 'POST', `/applications/${a.id}/deployments`, 200, {});
  const done = await untilStatus('the deployment', () => ok(baseUrl, token, 'GET', `/applications/${a.id}/deployments/${d.id}`, 200), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
  assert.equal(done.status, 'success');
  return a;
}

describe('an application on nginx while Slipway is SIGKILLed and restarted (sqlite)', { skip }, () => {
  it('serves every request meanwhile, from the same instance afterwards', async () => {
    const { dataDir, edgePort, token, env } = await childSetup('slipway-nka-', 'd');
    let server = await startChild([], env, 120_000);
    try {
      const a = await deployedApp(server.baseUrl, token, 'k1');
      const host = `${a.name}.localhost`;
      // As for the static site: the application's own block (its instances' upstream) applied
      // first, so that no request of the load takes the origin's path, which the SIGKILL takes away.
      await waitFor(
        "the application's block in nginx's configuration",
        () => /proxy_pass http:\/\/slipway_up_\d+;/.test(serverBlock(findFile(dataDir, 'nginx.conf'), host)) || undefined,
        20_000,
        50,
      );
      const first = await waitFor(
        'nginx to serve the application',
        async () => {
          const r = await edgeGet(edgePort, host);
          return r.status === 200 && r.headers.server === 'nginx' && /^k1 /.test(r.body) ? r : undefined;
        },
        10_000,
        50,
      );
      const confPath = findFile(dataDir, 'nginx.conf');
      const conf = readFileSync(confPath, 'utf8');
      const load = hammer(edgePort, host);
      await new Promise((r) => setTimeout(r, 300));
      await server.stop('SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      server = await startChild([], env, 120_000);
      // Long enough for the restarted Slipway to adopt the instance and sync nginx.
      await new Promise((r) => setTimeout(r, 2000));
      allServed(await load.stop());
      assert.equal((await edgeGet(edgePort, host)).body, first.body, 'the same instance serves (adopted)');
      // The application's upstreams are the same ports (Slipway's own origin listeners are new ports:
      // that part of the configuration changes with any restart).
      const upstreams = (text: string) => [...text.matchAll(/upstream slipway_up_\d+ \{[^}]*\}/g)].map((m) => m[0]);
      assert.ok(upstreams(conf).length > 0);
      assert.deepEqual(upstreams(readFileSync(confPath, 'utf8')), upstreams(conf));
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('load balancers served by nginx while Slipway is SIGKILLed and restarted (sqlite)', { skip }, () => {
  it('splits by weight, picks by a trusted country header, serves destinations as themselves, and keeps serving without Slipway', async () => {
    const { dataDir, edgePort, token, env } = await childSetup('slipway-nkl-', 'e');
    const lbEnv = { ...env, SLIPWAY_EDGE_COUNTRY_HEADER: 'x-country', SLIPWAY_EDGE_TRUSTED_PROXIES: '127.0.0.2' };
    let server = await startChild([], lbEnv, 120_000);
    try {
      const api = (method: string, path: string, expected: number, body?: unknown) => ok(server.baseUrl, token, method, path, expected, body);
      const a = await deployedApp(server.baseUrl, token, 'A');
      const b = await deployedApp(server.baseUrl, token, 'B');
      const weighted = await api('POST', '/load-balancers', 201, { display_name: 'weighted' });
      await api('POST', `/load-balancers/${weighted.id}/destinations`, 201, { service_type: 'APP', service_id: a.id, weight: 1 });
      await api('POST', `/load-balancers/${weighted.id}/destinations`, 201, { service_type: 'APP', service_id: b.id, weight: 3 });
      const geo = await api('POST', '/load-balancers', 201, { display_name: 'geo', type: 'GEO' });
      await api('POST', `/load-balancers/${geo.id}/destinations`, 201, { service_type: 'APP', service_id: a.id, latitude: 48.85, longitude: 2.35 }); // Paris
      await api('POST', `/load-balancers/${geo.id}/destinations`, 201, { service_type: 'APP', service_id: b.id, latitude: 40.71, longitude: -74.0 }); // New York
      const host = `${weighted.name}.localhost`;
      const geoHost = `${geo.name}.localhost`;
      const conf = readFileSync(findFile(dataDir, 'nginx.conf'), 'utf8');
      assert.match(conf, /upstream slipway_lb_\d+ \{/, 'nginx serves the load balancers itself');

      /** The first word of the answers to `n` GETs (the application's version), or the status. */
      const seen = async (h: string, n: number, headers: Record<string, string> = {}, localAddress?: string) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const r = await ask(edgePort, h, { headers, localAddress });
          out.push(r.status === 200 ? r.body.split(' ')[0]! : String(r.status));
        }
        return out;
      };
      const count = (xs: string[], v: string) => xs.filter((x) => x === v).length;
      const split = await seen(host, 100);
      assert.equal(count(split, 'A') + count(split, 'B'), 100, split.join(','));
      assert.ok(Math.abs(count(split, 'A') - 25) <= 5, `A got ${count(split, 'A')} of 100`);

      assert.deepEqual(await seen(geoHost, 3, { 'x-country': 'DE' }, '127.0.0.2'), ['A', 'A', 'A']);
      assert.deepEqual(await seen(geoHost, 3, { 'x-country': 'BR' }, '127.0.0.2'), ['B', 'B', 'B']);
      // From a client that is no trusted proxy the header is not believed: the weighted choice (equal weights).
      const untrusted = await seen(geoHost, 10, { 'x-country': 'DE' });
      assert.equal(count(untrusted, 'B'), 5, untrusted.join(','));

      // A destination is served as itself: its maintenance, its IP restriction.
      const only = await api('POST', '/load-balancers', 201, { display_name: 'only a' });
      await api('POST', `/load-balancers/${only.id}/destinations`, 201, { service_type: 'APP', service_id: a.id });
      const onlyHost = `${only.name}.localhost`;
      await api('PUT', `/applications/${a.id}/maintenance-mode`, 200, { is_enabled: true });
      const m = await ask(edgePort, onlyHost);
      assert.equal(m.status, 503);
      assert.equal(m.headers['retry-after'], '60');
      await api('PUT', `/applications/${a.id}/maintenance-mode`, 200, { is_enabled: false });
      await api('PUT', `/applications/${a.id}/ip-restriction`, 200, { type: 'deny', is_enabled: true, ip_list: ['127.0.0.3'] });
      assert.equal((await ask(edgePort, onlyHost, { localAddress: '127.0.0.3' })).status, 403);
      assert.equal((await ask(edgePort, onlyHost)).status, 200);

      const load = hammer(edgePort, host);
      await new Promise((r) => setTimeout(r, 300));
      await server.stop('SIGKILL');
      // Slipway is gone: nginx alone answers, from both destinations.
      const alone = await seen(geoHost, 8);
      assert.deepEqual([...new Set(alone)].sort(), ['A', 'B'], alone.join(','));
      await new Promise((r) => setTimeout(r, 500));
      server = await startChild([], lbEnv, 120_000);
      await new Promise((r) => setTimeout(r, 1000));
      allServed(await load.stop());
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
