// Wildcard custom domains and a static site's own index file, served by Slipway's nginx itself (no
// longer through the origin): the table names the wildcard, the hostname registry's precedence
// holds (another service's exact name wins, another company's name is never the wildcard owner's,
// a name recorded but not verified stays unknown), and both keep being served while Slipway is
// SIGKILLed and started again.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { before, describe, it } from 'node:test';
import { GENEROUS, OPERATOR_TOKEN, useServer } from '../helpers/server.js';
import { call, ok, rateEnv, startChild } from '../helpers/process.js';
import { untilStatus } from '../helpers/status.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { edgeGet, LOCAL_ENV, makeRepo } from '../apps-real/support.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { gitMissing } from '../static-sites-real/support.js';
import type { NginxEdge } from '../../src/shared/edge/nginx/driver.js';
import { localCaPath } from '../../src/shared/tls.js';
import { findFile, freePort, handshake, nginxSkip, serverBlock as block, wildcardName } from './support.js';

const skip = nginxSkip() || gitMissing();
const NGINX_ENV = { ...LOCAL_ENV, SLIPWAY_EDGE: 'nginx' };
let counter = 0;
/** A base name nobody else in the run uses (the registry is installation-wide). */
const base = () => `w${process.pid}-${++counter}-${Date.now() % 100000}.example.com`;

/** A site repository publishing `public/` as it is (no build): `home.html` its index file. */
function homeSiteRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-home-site-'));
  const files: Record<string, string> = {
    'public/home.html': '<h1>home page</h1>',
    'public/docs/home.html': '<h1>docs home</h1>',
    'public/404.html': '<h1>home 404</h1>',
  };
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), text);
  }
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'site');
  return `file://${dir}`;
}

/** Domain verification passes at the next refresh (the simulation's `immediate`). */
async function verifyImmediately(baseUrl: string): Promise<void> {
  const r = await fetch(`${baseUrl}/_admin/simulation/progression/domain_verification`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'immediate' }),
  });
  assert.equal(r.status, 200, await r.text());
}

/** Adds a custom domain (a wildcard with `*.`) to an application and refreshes it until it is ACTIVE. */
async function activeDomain(baseUrl: string, token: string, appId: string, name: string): Promise<void> {
  const body = name.startsWith('*.') ? { domain_name: name, is_wildcard: true } : { domain_name: name };
  const d = await ok(baseUrl, token, 'POST', `/applications/${appId}/domains`, 201, body);
  await waitFor(
    `${name} to be active`,
    async () => {
      await call(baseUrl, 'POST', `/applications/${appId}/domains/${d.id}/refresh-status`, token);
      return (await ok(baseUrl, token, 'GET', `/applications/${appId}/domains/${d.id}`, 200)).status === 'ACTIVE';
    },
    10_000,
    50,
  );
}

describe('wildcard domains on the nginx edge (sqlite)', { skip }, () => {
  const s = useServer({ db: 'sqlite', env: { ...NGINX_ENV, SLIPWAY_EDGE_HTTPS_PORT: '0' }, rateLimits: GENEROUS });
  let edge: NginxEdge;
  let port: number;
  // Made with the first certificate the edge issues.
  const ca = () => readFileSync(localCaPath(s.app.config.dataDir));
  before(async () => {
    edge = s.app.runtimes.edge as NginxEdge;
    port = edge.port;
    expectStatus(await s.admin('PUT', '/simulation/progression/domain_verification', { mode: 'immediate' }), 200);
  });

  /** An application of the company of `token` (the first company's without), deployed from a repository answering `<version> <pid>`. */
  const app = async (version: string, token?: string) => {
    const body = {
      display_name: `wild ${version}`,
      cluster_id: DEFAULT_CLUSTER.id,
      source: 'publicGit',
      git_type: 'github',
      repo_url: makeRepo(version).url,
      default_branch: 'main',
    };
    const a = expectStatus(await s.post('/applications', body, { token }), 201);
    const d = expectStatus(await s.post(`/applications/${a.id}/deployments`, {}, { token }), 200);
    const done = await untilStatus('the deployment', async () => expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}`, { token }), 200), {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    assert.equal(done.status, 'success');
    return a as { id: string; name: string };
  };

  it("nginx serves a wildcard domain from the application's instances; another service's exact name under it stays that service's", async () => {
    const b = base();
    const a = await app('A');
    await activeDomain(s.baseUrl, s.token, a.id, `*.${b}`);
    const other = await s.newCompany();
    const shop = await app('B', other.token);
    await activeDomain(s.baseUrl, other.token, shop.id, `shop.${b}`);
    await edge.changed();

    const entry = (await edge.table()).hosts.find((h) => h.hostname === `*.${b}`);
    assert.equal(entry?.target.type, 'upstream', 'nginx serves the wildcard from the instances, not the origin');
    assert.match(block(edge.nginx.confPath, wildcardName(b)), /proxy_pass http:\/\/slipway_up_\d+;/);

    const r = await edgeGet(port, `anything.${b}`);
    assert.equal(r.status, 200);
    assert.match(r.body, /^A /);
    assert.equal(r.headers.server, 'nginx');
    // Another company's exact name under the wildcard: its own, not the wildcard owner's.
    assert.match((await edgeGet(port, `shop.${b}`)).body, /^B /);
    // One label deep only, as the registry routes.
    assert.equal((await edgeGet(port, `a.b.${b}`)).status, 404);
    assert.equal((await edgeGet(port, b)).status, 404);
    // HTTPS: the wildcard's certificate from the local CA names the wildcard; the exact name has its own.
    assert.deepEqual(await handshake(edge.httpsPort!, `anything.${b}`, ca()), { authorized: true, san: `DNS:*.${b}` });
    assert.deepEqual(await handshake(edge.httpsPort!, `shop.${b}`, ca()), { authorized: true, san: `DNS:shop.${b}` });
  });

  it("a name another company added but has not verified is nobody's: not the wildcard owner's", async () => {
    const b = base();
    const a = await app('C');
    await activeDomain(s.baseUrl, s.token, a.id, `*.${b}`);
    const other = await s.newCompany();
    const theirs = await app('D', other.token);
    // Verification never completes while this test looks.
    expectStatus(await s.admin('PUT', '/simulation/progression/domain_verification', { mode: 'reads', reads: 1000 }), 200);
    try {
      const pending = expectStatus(await s.post(`/applications/${theirs.id}/domains`, { domain_name: `pending.${b}` }, { token: other.token }), 201);
      assert.equal(pending.status, 'VERIFICATION');
      // The company cannot take the wildcard itself either.
      expectError(await s.post(`/applications/${theirs.id}/domains`, { domain_name: `*.${b}`, is_wildcard: true }, { token: other.token }), 400);
      await edge.changed();
      assert.equal((await edgeGet(port, `pending.${b}`)).status, 404, 'recorded, not served: unknown, as the registry answers');
      assert.match((await edgeGet(port, `free.${b}`)).body, /^C /);
      assert.ok((await edge.table()).unknown?.hostnames.includes(`pending.${b}`));
      // Nor over HTTPS: no handshake, rather than the wildcard's certificate.
      await assert.rejects(handshake(edge.httpsPort!, `pending.${b}`, ca()), /alert|handshake|unrecognized|SSL/i);
      assert.equal((await handshake(edge.httpsPort!, `free.${b}`, ca())).san, `DNS:*.${b}`);
    } finally {
      expectStatus(await s.admin('PUT', '/simulation/progression/domain_verification', { mode: 'immediate' }), 200);
    }
  });
});

/** Requests each host until `stop()`; answers the statuses and errors seen per host. */
function hammer(port: number, hosts: string[]) {
  const seen = hosts.map(() => ({ statuses: new Map<number, number>(), errors: [] as string[] }));
  let running = true;
  const loops = hosts.map(async (h, i) => {
    while (running) {
      try {
        const r = await edgeGet(port, h);
        seen[i]!.statuses.set(r.status, (seen[i]!.statuses.get(r.status) ?? 0) + 1);
      } catch (e) {
        seen[i]!.errors.push((e as Error).message);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return seen.map((x) => ({ statuses: Object.fromEntries(x.statuses), errors: x.errors }));
    },
  };
}

describe('a wildcard domain and a custom-index site on nginx while Slipway is SIGKILLed and restarted (sqlite)', { skip }, () => {
  it('serves every request meanwhile', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-nkw-'));
    const edgePort = await freePort();
    const token = `svl_${'f'.repeat(64)}`;
    const env = {
      ...NGINX_ENV,
      SLIPWAY_EDGE_PORT: String(edgePort),
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_SECRET_KEY: 'k',
      SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN,
      DATA_DIR: dataDir,
      ...rateEnv(GENEROUS),
    };
    let server = await startChild([], env, 120_000);
    try {
      const api = (method: string, path: string, expected: number, body?: unknown) => ok(server.baseUrl, token, method, path, expected, body);
      await verifyImmediately(server.baseUrl);
      const a = await api('POST', '/applications', 201, {
        display_name: 'wild app',
        cluster_id: DEFAULT_CLUSTER.id,
        source: 'publicGit',
        git_type: 'github',
        repo_url: makeRepo('W').url,
        default_branch: 'main',
      });
      const d = await api('POST', `/applications/${a.id}/deployments`, 200, {});
      const done = await untilStatus('the deployment', () => api('GET', `/applications/${a.id}/deployments/${d.id}`, 200), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      assert.equal(done.status, 'success');
      const b = base();
      await activeDomain(server.baseUrl, token, a.id, `*.${b}`);

      const site = await api('POST', '/static-sites', 201, {
        display_name: 'home site',
        repo_url: homeSiteRepo(),
        default_branch: 'main',
        source: 'publicGit',
        published_directory: 'public',
        index_file: 'home.html',
        error_file: '404.html',
      });
      const [sd] = (await api('GET', `/static-sites/${site.id}/deployments`, 200)).data;
      const built = await untilStatus('the site deployment', () => api('GET', `/static-sites/${site.id}/deployments/${sd.id}`, 200), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      assert.equal(built.status, 'success');
      const siteHost = site.hostname as string;
      const wildHost = `visitor.${b}`;

      // Load starts once nginx's own configuration serves both (until then the default server
      // passes the hosts to Slipway's origin, which a SIGKILL takes away).
      const confPath = () => findFile(dataDir, 'nginx.conf');
      await waitFor(
        "the blocks of both in nginx's configuration",
        async () => {
          const path = (() => {
            try {
              return confPath();
            } catch {
              return '';
            }
          })();
          if (!path) return undefined;
          const w = block(path, wildcardName(b));
          const h = block(path, siteHost);
          return (/proxy_pass http:\/\/slipway_up_\d+;/.test(w) && /\n\s*root '\//.test(h) && /home\.html/.test(h)) || undefined;
        },
        20_000,
        50,
      );
      await waitFor(
        'nginx to serve both',
        async () => {
          const [w, h] = await Promise.all([edgeGet(edgePort, wildHost), edgeGet(edgePort, siteHost)]);
          return (/^W /.test(w.body) && /home page/.test(h.body)) || undefined;
        },
        10_000,
        50,
      );
      assert.equal((await edgeGet(edgePort, siteHost, {}, '/docs/')).body, '<h1>docs home</h1>');
      // The reload that applied it has finished in the workers.
      await new Promise((r) => setTimeout(r, 300));
      const load = hammer(edgePort, [wildHost, siteHost]);
      await new Promise((r) => setTimeout(r, 300));
      await server.stop('SIGKILL');
      // Slipway is gone: nginx alone answers both.
      assert.match((await edgeGet(edgePort, `another.${b}`)).body, /^W /);
      assert.match((await edgeGet(edgePort, siteHost)).body, /home page/);
      await new Promise((r) => setTimeout(r, 500));
      server = await startChild([], env, 120_000);
      await new Promise((r) => setTimeout(r, 1000));
      for (const seen of await load.stop()) {
        assert.deepEqual(seen.errors, []);
        assert.deepEqual(Object.keys(seen.statuses), ['200'], JSON.stringify(seen.statuses));
        assert.ok(seen.statuses[200]! > 20, JSON.stringify(seen.statuses));
      }
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
