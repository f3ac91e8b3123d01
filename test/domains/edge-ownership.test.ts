// Hostname ownership at the edge (SLIPWAY_RUNTIME=local), as a hostile second company would try
// it: every hostname the edge serves has one owner in the registry, recorded when assigned, and
// the edge routes by that record alone. Another company's service named like one's static site
// or load balancer does not take its short name; system-name suffixes and preview names of other
// companies' hostnames cannot be added as custom domains; every kind's listed system domain serves.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DB_KINDS, skipUnless, type TestServer, useServer } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { expectError, expectStatus, listAll } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo } from '../apps-real/support.js';
import { finalDeployment, gitMissing, makeSiteRepo } from '../static-sites-real/support.js';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { start as startLoadBalancers } from '../../src/modules/load-balancers/routes.js';

const systemName = async (s: TestServer, base: string, token?: string) => {
  const ds = await listAll(s, `${base}/domains`, token);
  assert.deepEqual(
    ds.map((d: { type: string }) => d.type),
    ['SYSTEM'],
    'only the system domain is listed (short names are not domains)',
  );
  return ds[0].name as string;
};

for (const kind of DB_KINDS) {
  describe(`hostname ownership at the edge (${kind})`, { skip: gitMissing() || (await skipUnless(kind)) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV });
    let port: number;
    let b: string; // the other company's token
    const tag = Math.random().toString(36).slice(2, 7);
    let site: { id: string; name: string; hostname: string };
    let lb: { id: string; name: string };
    let bApps: { id: string; name: string }[];

    before(async () => {
      port = s.app.runtimes.edge!.port;
      // Company A: a static site and a load balancer in front of it.
      const repo = makeSiteRepo();
      site = expectStatus(
        await s.post('/static-sites', {
          display_name: `asite-${tag}`,
          repo_url: repo.url,
          default_branch: 'main',
          source: 'publicGit',
          published_directory: 'dist',
        }),
        201,
      );
      const first = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data[0];
      assert.equal((await finalDeployment(s, site.id, first.id)).status, 'success');
      lb = expectStatus(await s.post('/load-balancers', { display_name: `alb-${tag}` }), 201);
      expectStatus(await s.post(`/load-balancers/${lb.id}/destinations`, { service_type: 'STATIC_SITE', service_id: site.id }), 201);
      // Company B: applications with the same names, created and deployed after A's services.
      b = (await s.newCompany()).token;
      const appRepo = makeRepo('B-APP');
      bApps = [];
      for (const name of [site.name, lb.name]) {
        const r = await s.post(
          '/applications',
          { display_name: name, cluster_id: DEFAULT_CLUSTER.id, source: 'publicGit', git_type: 'github', repo_url: appRepo.url, default_branch: 'main' },
          { token: b },
        );
        const a = expectStatus(r, 201);
        assert.equal(a.name, name, 'the name is free in company B');
        bApps.push(a);
      }
      for (const a of bApps) {
        const d = expectStatus(await s.post(`/applications/${a.id}/deployments`, {}, { token: b }), 200);
        const done = await untilStatus(
          `deployment ${d.id} to finish`,
          async () => expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}`, { token: b }), 200),
          { timeoutMs: 60_000, intervalMs: 50 },
        );
        assert.equal(done.status, 'success');
      }
    });

    it("another company's application named like a static site or load balancer does not take its short name", async () => {
      const home = await edgeGet(port, `${site.name}.localhost`);
      assert.equal(home.status, 200);
      assert.match(home.body, /<h1>home v1/, "A's static site answers its short name");
      const viaLb = await edgeGet(port, `${lb.name}.localhost`);
      assert.equal(viaLb.status, 200);
      assert.match(viaLb.body, /<h1>home v1/, "A's load balancer answers its short name");
    });

    it("the second company's applications are served at their own system domains", async () => {
      for (const a of bApps) {
        const name = await systemName(s, `/applications/${a.id}`, b);
        assert.notEqual(name, `${a.name}.localhost`);
        const r = await edgeGet(port, name);
        assert.equal(r.status, 200);
        assert.match(r.body, /^B-APP /);
      }
    });

    it('the listed system domain of every kind serves', async () => {
      const siteSystem = await systemName(s, `/static-sites/${site.id}`);
      assert.equal(siteSystem, site.hostname, "a static site's system domain is its hostname");
      assert.match((await edgeGet(port, siteSystem)).body, /<h1>home v1/);
      const lbSystem = await systemName(s, `/load-balancers/${lb.id}`);
      const r = await edgeGet(port, lbSystem);
      assert.equal(r.status, 200, `${lbSystem} answers`);
      assert.match(r.body, /<h1>home v1/);
    });

    it("system-name suffixes and preview names of another company's hostnames cannot be added as custom domains", async () => {
      const app = bApps[0]!;
      const add = (domain_name: string) => s.post(`/applications/${app.id}/domains`, { domain_name }, { token: b });
      for (const name of [site.hostname, `main--${site.hostname}`, `x.${site.hostname}`, `${site.name}.localhost`, 'mine.slipway.app', 'mine.slipway.site']) {
        expectError(await add(name), 400, /reserved for system domains/);
      }
      const lbSystem = await systemName(s, `/load-balancers/${lb.id}`);
      expectError(await add(lbSystem), 400, /reserved for system domains/);
      // A's custom domain, and a preview name of it: not available to B.
      const custom = `docs-${tag}.example.com`;
      expectStatus(await s.post(`/static-sites/${site.id}/domains`, { domain_name: custom }), 201);
      expectError(await add(custom), 400, /not available/);
      expectError(await add(`main--${custom}`), 400, /not available/);
      // An unrelated name is fine; nothing else was added.
      expectStatus(await add(`b-${tag}.example.org`), 201);
      const names = (await listAll(s, `/applications/${app.id}/domains`, b)).map((d: { name: string }) => d.name);
      assert.equal(names.length, 2);
    });

    it('a short name is first come, first served across companies and kinds, and freed with its service', async () => {
      const a1 = await createRealApp(s, makeRepo('A1').url, `dup-${tag}`);
      assert.equal((await deploy(s, a1.id)).status, 'success');
      const r = await s.post(
        '/applications',
        {
          display_name: `dup-${tag}`,
          cluster_id: DEFAULT_CLUSTER.id,
          source: 'publicGit',
          git_type: 'github',
          repo_url: makeRepo('B1').url,
          default_branch: 'main',
        },
        { token: b },
      );
      expectStatus(r, 201);
      assert.match((await edgeGet(port, `dup-${tag}.localhost`)).body, /^A1 /);
      expectStatus(await s.delete(`/applications/${a1.id}`), 200);
      // The edge serves nothing of an application being deleted from when DELETE answers (a proxy
      // in front reconfigured before the answer): every request, not just the first, is a 404.
      for (let i = 0; i < 20; i++) assert.equal((await edgeGet(port, `dup-${tag}.localhost`)).status, 404, `request ${i} after DELETE`);
      // Once the deletion job removed it, the name is nobody's until a service that claims it is created.
      for (let i = 0; i < 200 && (await s.get(`/applications/${a1.id}`)).status !== 404; i++) await new Promise((ok) => setTimeout(ok, 50));
      expectStatus(await s.get(`/applications/${a1.id}`), 404);
      // What the edge guarantees: once changed() resolves, the committed state is what it serves.
      await s.app.runtimes.edge!.changed();
      for (let i = 0; i < 20; i++) assert.equal((await edgeGet(port, `dup-${tag}.localhost`)).status, 404, `request ${i} after the deletion`);
    });

    it('a suspended application gets no request from when the suspension answers', async () => {
      const a = await createRealApp(s, makeRepo('SUSP').url, `susp-${tag}`);
      assert.equal((await deploy(s, a.id)).status, 'success');
      assert.match((await edgeGet(port, `susp-${tag}.localhost`)).body, /^SUSP /);
      expectStatus(await s.post(`/applications/${a.id}/suspend`), 200);
      for (let i = 0; i < 20; i++) {
        const r = await edgeGet(port, `susp-${tag}.localhost`);
        assert.doesNotMatch(r.body, /^SUSP /, `request ${i} after the suspension reached an instance`);
        assert.equal(r.status, 503);
      }
    });

    it('services from before names were recorded get them at start, oldest first', async () => {
      const db = s.app.database.db;
      await db.deleteFrom('domains').where('service_id', '=', lb.id).execute();
      // Written behind the control plane's back: the edge applies it at its next resync, made now.
      await s.app.runtimes.edge!.changed();
      assert.equal((await edgeGet(port, `${lb.name}.localhost`)).status, 404, 'nothing routes a name without its record');
      await startLoadBalancers(s.app);
      assert.match((await edgeGet(port, `${lb.name}.localhost`)).body, /<h1>home v1/);
      assert.match((await edgeGet(port, await systemName(s, `/load-balancers/${lb.id}`))).body, /<h1>home v1/);
    });

    it('an unknown hostname answers 404', async () => {
      assert.equal((await edgeGet(port, `nobody-${tag}.localhost`)).status, 404);
      assert.equal((await edgeGet(port, `main--nobody-${tag}.localhost`)).status, 404);
    });
  });
}
