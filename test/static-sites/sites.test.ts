// Static sites: create (with its initial deployment), list, get, update, delete; validation of
// the repository, branch and deploy paths (an allow list or an ignore list, never both); pretty
// URLs and edge cache purges; tenancy, roles, scoped keys and project membership.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { MISSING, UUID_RE, expectError, expectStatus, listAll, uniqueName, waitFor, whileRowsHeld } from '../helpers/util.js';
import { IMMEDIATE_ENV, addFault, createSite, deployedSite, deployments, readSite, settle, sitePath, trigger } from './support.js';

const SITE_FIELDS = [
  'allow_deploy_paths',
  'auto_deploy',
  'build_command',
  'company_id',
  'created_at',
  'default_branch',
  'display_name',
  'error_file',
  'git_lfs_enabled',
  'git_type',
  'hostname',
  'id',
  'ignore_deploy_paths',
  'index_file',
  'install_command',
  'is_preview_enabled',
  'name',
  'node_version',
  'project_id',
  'published_directory',
  'repo_url',
  'root_directory',
  'source',
  'status',
  'updated_at',
].sort();

for (const kind of DB_KINDS) {
  describe(`static sites [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('create: the full representation, defaults (git_lfs_enabled true, privateGit, provider from the host), a system hostname and the initial deployment', async () => {
      const site = await createSite(s, { display_name: 'Docs Site' });
      assert.deepEqual(Object.keys(site).sort(), SITE_FIELDS);
      assert.match(site.id, UUID_RE);
      assert.equal(site.company_id, s.companyId);
      assert.equal(site.name, 'docs-site');
      assert.equal(site.display_name, 'Docs Site');
      assert.equal(site.source, 'privateGit');
      assert.equal(site.git_type, 'github');
      assert.equal(site.git_lfs_enabled, true);
      assert.equal(site.auto_deploy, true);
      assert.equal(site.project_id, null);
      assert.deepEqual(site.allow_deploy_paths, []);
      assert.deepEqual(site.ignore_deploy_paths, []);
      assert.match(site.hostname, /^docs-site-[0-9a-f]{6}\.slipway\.site$/);
      assert.ok(['deploymentInProgress', 'deploymentSuccess'].includes(site.status), site.status);
      // The initial deployment is a production build of the default branch.
      const [initial] = await settle(s, site.id);
      assert.equal(initial.type, 'automatic');
      assert.equal(initial.is_preview, false);
      assert.equal(initial.branch, 'main');
      assert.equal(initial.status, 'success');
      const got = await readSite(s, site.id);
      assert.equal(got.status, 'deploymentSuccess');
      assert.deepEqual({ ...got, status: site.status }, site);

      // A second site of the same display name gets another name and hostname.
      const twin = await createSite(s, { display_name: 'Docs Site' });
      assert.equal(twin.name, 'docs-site-2');
      assert.notEqual(twin.hostname, site.hostname);

      // Public repositories have no provider; settings are stored as given.
      const pub = await createSite(s, {
        source: 'publicGit',
        git_type: 'gitlab',
        git_lfs_enabled: false,
        build_command: 'npm run docs',
        published_directory: 'public',
        node_version: '22',
        index_file: 'home.html',
        error_file: '404.html',
        install_command: 'npm ci',
        root_directory: 'site',
        auto_deploy: false,
        is_preview_enabled: true,
        ignore_deploy_paths: ['docs/**', '*.md'],
      });
      assert.equal(pub.git_type, null);
      assert.equal(pub.git_lfs_enabled, false);
      assert.deepEqual(
        [
          pub.build_command,
          pub.published_directory,
          pub.node_version,
          pub.index_file,
          pub.error_file,
          pub.install_command,
          pub.root_directory,
          pub.auto_deploy,
          pub.is_preview_enabled,
        ],
        ['npm run docs', 'public', '22', 'home.html', '404.html', 'npm ci', 'site', false, true],
      );
      assert.deepEqual(pub.ignore_deploy_paths, ['docs/**', '*.md']);
      // A private GitLab repository: the provider comes from the host.
      assert.equal((await createSite(s, { repo_url: 'https://gitlab.com/acme/site' })).git_type, 'gitlab');
      assert.equal((await createSite(s, { repo_url: 'https://git.example.com/acme/site', git_type: 'gitlab' })).git_type, 'gitlab');
    });

    it('create refuses bad input with 400 and writes nothing', async () => {
      const before = (await listAll(s, '/static-sites')).length;
      const bad: [Record<string, unknown>, RegExp | undefined][] = [
        [{ allow_deploy_paths: ['src/**'], ignore_deploy_paths: ['docs/**'] }, /cannot both be set/],
        [{ allow_deploy_paths: [''] }, /not a glob pattern/],
        [{ ignore_deploy_paths: ['a/**', 'a/**'] }, /twice/],
        [{ repo_url: 'not a url' }, /repo_url/],
        [{ repo_url: 'ftp://github.com/acme/site' }, /repo_url/],
        [{ repo_url: 'https://github.com/' }, /repo_url/],
        [{ repo_url: 'https://git.example.com/acme/site' }, /git_type is required/],
        [{ default_branch: 'bad branch' }, /branch/],
        [{ display_name: 'x' }, undefined],
        [{ git_lfs_enabled: 'yes' }, undefined],
        [{ source: 'dockerImage' }, undefined],
        [{ unknown_field: 1 }, undefined],
      ];
      for (const [extra, msg] of bad)
        expectError(
          await s.post('/static-sites', { display_name: uniqueName('site'), repo_url: 'https://github.com/acme/site', default_branch: 'main', ...extra }),
          400,
          msg,
        );
      // A project that names nothing is answered like a path id.
      expectError(
        await s.post('/static-sites', {
          display_name: uniqueName('site'),
          repo_url: 'https://github.com/acme/site',
          default_branch: 'main',
          project_id: MISSING,
        }),
        404,
      );
      expectError(await s.post('/static-sites', { display_name: 'no repo' }), 400);
      assert.equal((await listAll(s, '/static-sites')).length, before, 'nothing was created');
    });

    it("list: summaries of the company's sites, paginated", async () => {
      const a = await createSite(s);
      const all = await listAll(s, '/static-sites');
      const item = all.find((x) => x.id === a.id);
      assert.deepEqual(Object.keys(item).sort(), ['display_name', 'id', 'name', 'status']);
      const page = expectStatus(await s.get('/static-sites?limit=1&offset=0'), 200);
      assert.equal(page.data.length, 1);
      assert.equal(page.limit, 1);
      assert.equal(page.total, all.length);
      expectError(await s.get('/static-sites?limit=0'), 400);
    });

    it('update: changes only the given fields, keeps one deploy path list, answers the update shape', async () => {
      const site = await deployedSite(s, { allow_deploy_paths: ['site/**'] });
      const u = expectStatus(
        await s.patch(sitePath(site.id), { display_name: 'Renamed', git_lfs_enabled: false, build_command: 'make', node_version: null }),
        200,
      );
      assert.deepEqual(Object.keys(u).sort(), [
        'allow_deploy_paths',
        'auto_deploy',
        'build_command',
        'default_branch',
        'display_name',
        'error_file',
        'git_lfs_enabled',
        'git_type',
        'id',
        'ignore_deploy_paths',
        'index_file',
        'install_command',
        'is_preview_enabled',
        'node_version',
        'published_directory',
        'repo_url',
        'root_directory',
        'source',
        'status',
        'updated_at',
      ]);
      assert.equal(u.display_name, 'Renamed');
      assert.equal(u.git_lfs_enabled, false);
      assert.equal(u.build_command, 'make');
      assert.equal(u.node_version, null);
      assert.equal(u.status, 'deploymentSuccess');
      const got = await readSite(s, site.id);
      assert.equal(got.name, site.name, 'the name never changes');
      assert.equal(got.display_name, 'Renamed');
      assert.deepEqual(got.allow_deploy_paths, ['site/**']);

      // Both lists active: 400, and nothing changes.
      expectError(await s.patch(sitePath(site.id), { ignore_deploy_paths: ['docs/**'], display_name: 'Nope' }), 400, /cannot both be set/);
      assert.equal((await readSite(s, site.id)).display_name, 'Renamed');
      // Switching lists: clear one, set the other.
      const sw = expectStatus(await s.patch(sitePath(site.id), { allow_deploy_paths: [], ignore_deploy_paths: ['docs/**'] }), 200);
      assert.deepEqual([sw.allow_deploy_paths, sw.ignore_deploy_paths], [[], ['docs/**']]);

      // Source and repository: checked again; a public repository has no provider.
      const pub = expectStatus(await s.patch(sitePath(site.id), { source: 'publicGit' }), 200);
      assert.equal(pub.git_type, null);
      const back = expectStatus(await s.patch(sitePath(site.id), { source: 'privateGit', repo_url: 'https://bitbucket.org/acme/site' }), 200);
      assert.equal(back.git_type, 'bitbucket');
      expectError(await s.patch(sitePath(site.id), { repo_url: 'https://git.example.com/acme/site' }), 400, /git_type/);
      expectError(await s.patch(sitePath(site.id), { repo_url: 'nope' }), 400);
      expectError(await s.patch(sitePath(site.id), { default_branch: 'a..b' }), 400);
      expectError(await s.patch(sitePath(site.id), { hostname: 'x.example.com' }), 400);
      expectError(await s.patch(sitePath(MISSING), { display_name: 'Ghost' }), 404);
    });

    it('pretty URLs toggle on and off; a cache purge is recorded', async () => {
      const site = await deployedSite(s);
      assert.deepEqual(expectStatus(await s.post(`${sitePath(site.id)}/pretty-url/toggle`), 200), { is_turned_on: true });
      assert.deepEqual(expectStatus(await s.post(`${sitePath(site.id)}/pretty-url/toggle`), 200), { is_turned_on: false });
      assert.deepEqual(expectStatus(await s.post(`${sitePath(site.id)}/pretty-url/toggle`), 200), { is_turned_on: true });
      const purge = expectStatus(await s.post(`${sitePath(site.id)}/purge-cache`), 200);
      assert.equal(typeof purge.message, 'string');
      const row = await s.app.database.db
        .selectFrom('static_sites')
        .select(['cache_purged_at', 'pretty_urls'])
        .where('id', '=', site.id)
        .executeTakeFirstOrThrow();
      assert.ok(row.cache_purged_at && Date.parse(row.cache_purged_at) > 0, 'the purge is recorded');
      assert.equal(row.pretty_urls, 1);
      expectError(await s.post(`${sitePath(MISSING)}/purge-cache`), 404);
      expectError(await s.post(`${sitePath(MISSING)}/pretty-url/toggle`), 404);
    });

    it(
      'an update writes only what it changes: pretty URLs and a cache purge committed meanwhile stay (PostgreSQL)',
      { skip: kind !== 'postgres' },
      async () => {
        const site = await createSite(s);
        const db = s.app.database.db;
        const purgedAt = new Date().toISOString();
        // Another writer holds the row with changes the update will not have read.
        const patched = await whileRowsHeld(
          s,
          (tx) => tx.updateTable('static_sites').set({ pretty_urls: 1, cache_purged_at: purgedAt }).where('id', '=', site.id).execute(),
          () => s.patch(sitePath(site.id), { display_name: 'Renamed meanwhile' }),
        );
        expectStatus(patched, 200);
        const row = await db
          .selectFrom('static_sites')
          .select(['display_name', 'pretty_urls', 'cache_purged_at'])
          .where('id', '=', site.id)
          .executeTakeFirstOrThrow();
        assert.deepEqual({ ...row, pretty_urls: Number(row.pretty_urls) }, { display_name: 'Renamed meanwhile', pretty_urls: 1, cache_purged_at: purgedAt });
      },
    );

    it('delete: cancels running deployments, goes through deleting (409 for changes meanwhile), then the site and what it owns are gone', async () => {
      await s.admin('PUT', '/simulation/progression/static_site_delete', { mode: 'reads', reads: 1000 });
      try {
        await s.admin('PUT', '/simulation/progression/static_site_deployment', { mode: 'reads', reads: 1000 });
        const site = await createSite(s);
        expectStatus(await s.post(`${sitePath(site.id)}/env-vars`, { key: 'API', value: 'x' }), 201);
        const running = (await deployments(s, site.id))[0];
        assert.equal(running.status, 'inProgress');
        const del = expectStatus(await s.delete(sitePath(site.id)), 200);
        assert.equal(typeof del.message, 'string');
        const during = await readSite(s, site.id);
        assert.equal(during.status, 'deleting');
        assert.equal((await deployments(s, site.id))[0].status, 'cancelled');
        expectError(await s.delete(sitePath(site.id)), 409);
        expectError(await s.patch(sitePath(site.id), { display_name: 'Late' }), 409);
        expectError(await s.post(`/static-sites/${site.id}/deployments`, {}), 400, /being deleted/);
        await s.admin('PUT', '/simulation/progression/static_site_delete', { mode: 'immediate' });
        await waitFor('deletion', async () => (await s.get(sitePath(site.id))).status === 404);
        const db = s.app.database.db;
        assert.equal((await db.selectFrom('static_site_deployments').select('id').where('static_site_id', '=', site.id).execute()).length, 0);
        assert.equal((await db.selectFrom('static_site_env_vars').select('id').where('static_site_id', '=', site.id).execute()).length, 0);
        assert.equal((await db.selectFrom('runtime_logs').select('id').where('app_id', '=', site.id).execute()).length, 0);
        assert.ok(!(await listAll(s, '/static-sites')).some((x) => x.id === site.id));
        expectError(await s.delete(sitePath(site.id)), 404);
      } finally {
        await s.admin('PUT', '/simulation/progression/static_site_deployment', { mode: 'immediate' });
        await s.admin('PUT', '/simulation/progression/static_site_delete', { mode: 'immediate' });
      }
    });

    it('a deletion the runtime fails leaves the site deletionFailed; deleting again finishes it', async () => {
      const site = await deployedSite(s);
      await addFault(s, { operation: 'static_site_delete', target_id: site.id, remaining: 1 });
      expectStatus(await s.delete(sitePath(site.id)), 200);
      await waitFor('deletionFailed', async () => (await readSite(s, site.id)).status === 'deletionFailed');
      expectError(await s.post(`/static-sites/${site.id}/deployments`, {}), 400);
      expectStatus(await s.delete(sitePath(site.id)), 200);
      await waitFor('deletion', async () => (await s.get(sitePath(site.id))).status === 404);
    });

    it('project membership: a site created with project_id is in the project; sites are added and removed through /projects; deletion leaves the project', async () => {
      const p = expectStatus(await s.post('/projects', { display_name: uniqueName('project') }), 201);
      const site = await createSite(s, { project_id: p.id });
      assert.equal(site.project_id, p.id);
      assert.equal((await readSite(s, site.id)).project_id, p.id);
      let proj = expectStatus(await s.get(`/projects/${p.id}`), 200);
      assert.deepEqual(proj.services, [{ id: site.id, name: site.name, display_name: site.display_name, type: 'static-site' }]);
      // Another site joins through /projects, and leaves again.
      const second = await createSite(s);
      expectStatus(await s.post(`/projects/${p.id}/services`, { service_id: second.id, service_type: 'static-site' }), 200);
      proj = expectStatus(await s.get(`/projects/${p.id}`), 200);
      assert.deepEqual(proj.services.map((x: { id: string }) => x.id).sort(), [site.id, second.id].sort());
      expectStatus(await s.delete(`/projects/${p.id}/services/${second.id}?service_type=static-site`), 200);
      // Another company's project is unknown (404, like a path id).
      const other = await s.newCompany();
      const foreign = expectStatus(await s.post('/projects', { display_name: 'foreign' }, { token: other.token }), 201);
      expectError(
        await s.post('/static-sites', {
          display_name: uniqueName('site'),
          repo_url: 'https://github.com/acme/site',
          default_branch: 'main',
          project_id: foreign.id,
        }),
        404,
      );
      // Deleting the site takes it out of the project.
      expectStatus(await s.delete(sitePath(site.id)), 200);
      await waitFor('the site to be gone', async () => (await s.get(sitePath(site.id))).status === 404);
      assert.deepEqual(expectStatus(await s.get(`/projects/${p.id}`), 200).services, []);
    });

    it('tenancy: another company sees none of the sites (404 everywhere, not in its list)', async () => {
      const site = await deployedSite(s);
      const [d] = await deployments(s, site.id);
      const other = await s.newCompany();
      const t = { token: other.token };
      assert.ok(!(await listAll(s, '/static-sites', other.token)).some((x) => x.id === site.id));
      for (const path of [
        sitePath(site.id),
        `${sitePath(site.id)}/deployments`,
        `${sitePath(site.id)}/deployments/${d.id}`,
        `${sitePath(site.id)}/deployments/${d.id}/logs`,
        `${sitePath(site.id)}/env-vars`,
        `${sitePath(site.id)}/access-logs`,
      ])
        expectError(await s.get(path, t), 404);
      expectError(await s.patch(sitePath(site.id), { display_name: 'mine' }, t), 404);
      expectError(await s.post(`${sitePath(site.id)}/deployments`, {}, t), 404);
      expectError(await s.post(`${sitePath(site.id)}/deployments/${d.id}/cancel`, undefined, t), 404);
      expectError(await s.post(`${sitePath(site.id)}/purge-cache`, undefined, t), 404);
      expectError(await s.post(`${sitePath(site.id)}/pretty-url/toggle`, undefined, t), 404);
      expectError(await s.post(`${sitePath(site.id)}/env-vars`, { key: 'A', value: 'b' }, t), 404);
      expectError(await s.delete(sitePath(site.id), t), 404);
      expectStatus(await s.get(sitePath(site.id)), 200);
    });

    it('roles and scoped keys: a viewer reads but cannot change (403 naming the permission); a key scoped to one site sees only that site', async () => {
      const site = await deployedSite(s);
      const other = await deployedSite(s);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectStatus(await s.get(sitePath(site.id), { token: viewer.token }), 200);
      expectError(await s.patch(sitePath(site.id), { display_name: 'v' }, { token: viewer.token }), 403, /STATIC_SITE:UPDATE/);
      expectError(
        await s.post(
          '/static-sites',
          { display_name: uniqueName('site'), repo_url: 'https://github.com/acme/site', default_branch: 'main' },
          { token: viewer.token },
        ),
        403,
        /STATIC_SITE:CREATE/,
      );
      expectError(await s.delete(sitePath(site.id), { token: viewer.token }), 403, /STATIC_SITE:DELETE/);
      expectError(await s.post(`${sitePath(site.id)}/deployments`, {}, { token: viewer.token }), 403, /STATIC_SITE:UPDATE/);
      expectError(await s.post(`${sitePath(site.id)}/purge-cache`, undefined, { token: viewer.token }), 403);
      // An application key has no static site permission.
      const appOnly = await s.newKey({ capabilities: [{ permission: 'APP:READ' }] });
      expectError(await s.get(sitePath(site.id), { token: appOnly.token }), 403, /STATIC_SITE:READ/);

      const scoped = await s.newKey({
        capabilities: [
          { permission: 'STATIC_SITE:READ', id_resource: site.id },
          { permission: 'STATIC_SITE:UPDATE', id_resource: site.id },
        ],
      });
      const t = { token: scoped.token };
      expectStatus(await s.get(sitePath(site.id), t), 200);
      expectError(await s.get(sitePath(other.id), t), 404);
      const listed = await listAll(s, '/static-sites', scoped.token);
      assert.deepEqual(
        listed.map((x) => x.id),
        [site.id],
      );
      expectStatus(await s.post(`${sitePath(site.id)}/deployments`, {}, t), 201);
      expectError(await s.post(`${sitePath(other.id)}/deployments`, {}, t), 404);
      expectStatus(await s.post(`${sitePath(site.id)}/env-vars`, { key: 'SCOPED', value: '1' }, t), 201);
      expectError(await s.post(`${sitePath(other.id)}/env-vars`, { key: 'SCOPED', value: '1' }, t), 404);
      expectError(await s.get(`${sitePath(other.id)}/metrics/top-pages?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z`, t), 404);
    });
  });

  describe(`static sites: rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, service_mutation: 2, deployment: 2, service_creation: 2 }, env: IMMEDIATE_ENV });

    it('create counts in service_creation; purge-cache and update in service_mutation per site and operation; deployments in deployment', async () => {
      const a = await createSite(s);
      const b = await createSite(s);
      const third = await s.post('/static-sites', { display_name: uniqueName('site'), repo_url: 'https://github.com/acme/site', default_branch: 'main' });
      expectError(third, 429);
      assert.ok(Number(third.headers.get('retry-after')) > 0);
      // purge-cache has its own count per site.
      for (let i = 0; i < 2; i++) expectStatus(await s.post(`${sitePath(a.id)}/purge-cache`), 200);
      const limited = await s.post(`${sitePath(a.id)}/purge-cache`);
      expectError(limited, 429);
      assert.equal(limited.headers.get('x-ratelimit-limit'), '2');
      expectStatus(await s.post(`${sitePath(b.id)}/purge-cache`), 200);
      expectStatus(await s.patch(sitePath(a.id), { display_name: 'still allowed' }), 200);
      await settle(s, a.id);
      for (let i = 0; i < 2; i++) await trigger(s, a.id);
      expectError(await s.post(`${sitePath(a.id)}/deployments`, {}), 429);
    });
  });
}
