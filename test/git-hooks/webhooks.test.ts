// Deploy on push through the providers' webhooks (simulated runtime): a real `git push` to a bare
// repository whose post-receive hook posts a GitHub push deploys the application at that commit;
// GitLab, Bitbucket and Gitea formats posted here; a wrong signature is 401 and changes nothing; a
// repeated delivery id deploys once; a static site skips a push outside its deploy paths and
// builds other branches as previews; pull requests open, update and close a pipeline's preview app.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { setProgression } from '../helpers/simulation.js';
import { addToStage, createApp, createPipeline, pipelinePath, stageNamed } from '../pipelines/support.js';
import { createSite } from '../static-sites/support.js';
import { deliver, gitMissing, hookedRepo, hookSecret, providerHeaders, pullRequestPayload, pushPayload, uniqueRepo, type Provider } from './support.js';

const ENV = {
  SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,app_delete=immediate,static_site_deployment=immediate,static_site_delete=immediate',
};

for (const kind of DB_KINDS) {
  describe(`git hooks: deploy on push [${kind}]`, { skip: (await skipUnless(kind)) || gitMissing() }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: ENV });

    /** A service's deployments, newest first. */
    const newestFirst = (list: any[]) => [...list].sort((x, y) => (x.created_at === y.created_at ? 0 : x.created_at < y.created_at ? 1 : -1));
    const appDeployments = async (appId: string): Promise<any[]> =>
      newestFirst(expectStatus(await s.get(`/applications/${appId}/deployments?limit=100`), 200).data);
    const siteDeployments = async (siteId: string): Promise<any[]> =>
      newestFirst(expectStatus(await s.get(`/static-sites/${siteId}/deployments?limit=100`), 200).data);
    const gitApp = (repo: string, extra: Record<string, unknown> = {}) => createApp(s, { extra: { repo_url: repo, default_branch: 'main', ...extra } });

    /** Posts a push of `provider`'s format; the answer. */
    async function push(provider: Provider, repo: string, branch = 'main', o: { files?: string[]; secret?: string; deliveryId?: string } = {}) {
      const { secret, webhook_urls } = await hookSecret(s);
      const p = pushPayload(provider, repo, branch, undefined, o.files);
      const body = JSON.stringify(p.body);
      const res = await deliver(webhook_urls[provider], providerHeaders(provider, p.event, body, o.secret ?? secret, o.deliveryId), body);
      return { ...res, after: p.after };
    }

    it('git push to a repository whose post-receive hook posts a signed GitHub push deploys the application at that commit', async () => {
      const repo = uniqueRepo();
      const a = await gitApp(repo);
      const before = (await appDeployments(a.id)).length;
      const { secret, webhook_urls } = await hookSecret(s);
      assert.match(webhook_urls.github, new RegExp(`/hooks/git/github/${s.companyId}$`));
      const r = hookedRepo(webhook_urls.github, secret, repo);
      const sha = r.commit({ 'index.js': 'console.log(1)\n' }, 'first version');
      assert.match(await r.push(), /slipway answered 200/);
      const list = await appDeployments(a.id);
      assert.equal(list.length, before + 1);
      const d = list[0];
      assert.equal(d.commit_sha, sha);
      assert.equal(d.commit_message, 'first version');
      assert.equal(d.trigger, 'push');
      assert.equal(d.type, 'automatic');
      assert.equal(d.branch, 'main');
      const deliveries = expectStatus(await s.get(`/git/deliveries?service_id=${a.id}`), 200);
      assert.equal(deliveries.data.length, 1);
      assert.equal(deliveries.data[0].provider, 'github');
      assert.equal(deliveries.data[0].result, 'deployed');
      assert.deepEqual(
        deliveries.data[0].triggered.map((t: any) => [t.service_id, t.action, t.deployment_id]),
        [[a.id, 'deployed', d.id]],
      );

      // A push to another branch deploys nothing: the application follows main.
      r.branch('feature');
      r.commit({ 'feature.js': '1\n' });
      await r.push('feature');
      assert.equal((await appDeployments(a.id)).length, before + 1);
      // The application's deliveries say why that push did nothing for it.
      const [latest] = expectStatus(await s.get(`/git/deliveries?service_id=${a.id}`), 200).data;
      assert.equal(latest.result, 'ignored');
      assert.deepEqual(
        latest.triggered.map((t: any) => [t.service_id, t.action, t.deployment_id, t.detail]),
        [[a.id, 'ignored', null, 'Follows branch main, not feature']],
      );
    });

    it('a push of a commit seen already (another delivery of it) deploys nothing and says so on the service', async () => {
      const repo = uniqueRepo();
      const a = await gitApp(repo);
      const { secret, webhook_urls } = await hookSecret(s);
      const p = pushPayload('github', repo, 'main');
      const body = JSON.stringify(p.body);
      const first = await deliver(webhook_urls.github, providerHeaders('github', 'push', body, secret), body);
      assert.equal(first.body.result, 'deployed');
      const n = (await appDeployments(a.id)).length;
      const second = await deliver(webhook_urls.github, providerHeaders('github', 'push', body, secret), body);
      assert.equal(second.status, 200);
      assert.equal(second.body.result, 'ignored');
      assert.equal(second.body.triggered.length, 1);
      assert.equal(second.body.triggered[0].action, 'ignored');
      assert.match(second.body.triggered[0].detail, /was seen already/);
      assert.equal((await appDeployments(a.id)).length, n);
      assert.equal(expectStatus(await s.get(`/git/deliveries?service_id=${a.id}`), 200).total, 2);
    });

    for (const provider of ['gitlab', 'bitbucket', 'gitea'] as const) {
      it(`a ${provider} push deploys the application at the pushed commit; a wrong secret is 401 and deploys nothing`, async () => {
        const repo = uniqueRepo(provider === 'bitbucket' ? 'bitbucket.org' : provider === 'gitlab' ? 'gitlab.com' : 'git.example.com');
        const a = await gitApp(repo);
        const before = (await appDeployments(a.id)).length;
        const bad = await push(provider, repo, 'main', { secret: 'not the secret' });
        expectError({ status: bad.status, body: bad.body } as any, 401);
        assert.equal((await appDeployments(a.id)).length, before);
        const ok = await push(provider, repo);
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
        assert.equal(ok.body.result, 'deployed');
        const [d] = await appDeployments(a.id);
        assert.equal(d.commit_sha, ok.after);
        assert.equal(d.trigger, 'push');
      });
    }

    it('a wrong signature, an unknown provider or company changes nothing; the same delivery id twice deploys once', async () => {
      const repo = uniqueRepo();
      const a = await gitApp(repo);
      const before = (await appDeployments(a.id)).length;
      const { webhook_urls } = await hookSecret(s);
      const delivered = expectStatus(await s.get('/git/deliveries'), 200).total;
      const bad = await push('github', repo, 'main', { secret: 'whsec_wrong' });
      assert.equal(bad.status, 401);
      const unsigned = await deliver(webhook_urls.github, { 'content-type': 'application/json', 'x-github-event': 'push' }, '{}');
      assert.equal(unsigned.status, 401);
      assert.equal((await deliver(webhook_urls.github.replace('/github/', '/svn/'), {}, '{}')).status, 404);
      assert.equal((await deliver(webhook_urls.github.replace(s.companyId, randomUUID()), {}, '{}')).status, 401);
      assert.equal((await appDeployments(a.id)).length, before);
      assert.equal(expectStatus(await s.get('/git/deliveries'), 200).total, delivered);

      const id = randomUUID();
      const first = await push('github', repo, 'main', { deliveryId: id });
      assert.equal(first.body.result, 'deployed');
      const again = await push('github', repo, 'main', { deliveryId: id });
      assert.equal(again.status, 200);
      assert.equal(again.body.result, 'duplicate');
      assert.equal((await appDeployments(a.id)).length, before + 1);
    });

    it('a body over the limit is 413; a body that is not JSON is 400', async () => {
      const { secret, webhook_urls } = await hookSecret(s);
      const big = 'x'.repeat(1024 * 1024 + 10);
      assert.equal((await deliver(webhook_urls.github, providerHeaders('github', 'push', big, secret), big)).status, 413);
      assert.equal((await deliver(webhook_urls.github, providerHeaders('github', 'push', 'not json', secret), 'not json')).status, 400);
    });

    it('rotating the secret refuses deliveries signed with the old one', async () => {
      const repo = uniqueRepo();
      await gitApp(repo);
      const old = await hookSecret(s);
      const rotated = expectStatus(await s.post('/git/webhook-secret/rotate'), 200);
      assert.notEqual(rotated.secret, old.secret);
      assert.equal((await push('github', repo, 'main', { secret: old.secret })).status, 401);
      assert.equal((await push('github', repo)).status, 200);
    });

    it('a burst of pushes to one branch: each newer one supersedes the one waiting (the deployment rules)', async () => {
      const repo = uniqueRepo();
      const a = await gitApp(repo);
      await setProgression(s, 'deployment', { mode: 'reads', reads: 1000 });
      try {
        const pushes = [];
        for (let i = 0; i < 3; i++) pushes.push(await push('github', repo));
        const list = (await appDeployments(a.id)).slice(0, 3);
        assert.deepEqual(
          list.map((d) => [d.commit_sha, d.status]),
          [
            [pushes[2]!.after, 'waiting'],
            [pushes[1]!.after, 'skipped'],
            [pushes[0]!.after, 'inProgress'],
          ],
        );
      } finally {
        await setProgression(s, 'deployment', { mode: 'immediate' });
      }
    });

    it('static site: a push outside the deploy paths is skipped, inside deploys; another branch builds its preview', async () => {
      const repo = uniqueRepo();
      const site = await createSite(s, { repo_url: repo, ignore_deploy_paths: ['docs/**', '*.md'], is_preview_enabled: true });
      const count = (await siteDeployments(site.id)).length;
      const skipped = await push('github', repo, 'main', { files: ['docs/guide.txt', 'README.md'] });
      assert.equal(skipped.body.result, 'ignored');
      let list = await siteDeployments(site.id);
      assert.equal(list.length, count + 1);
      assert.equal(list[0].status, 'skipped');
      assert.equal(list[0].commit_sha, skipped.after);

      const built = await push('github', repo, 'main', { files: ['docs/guide.txt', 'src/page.html'] });
      assert.equal(built.body.result, 'deployed');
      list = await siteDeployments(site.id);
      assert.equal(list[0].commit_sha, built.after);
      assert.notEqual(list[0].status, 'skipped');
      assert.equal(list[0].is_preview, false);

      // Bitbucket names no files: the push deploys.
      const bb = uniqueRepo('bitbucket.org');
      const bbSite = await createSite(s, { repo_url: bb, ignore_deploy_paths: ['docs/**'] });
      assert.equal((await push('bitbucket', bb)).body.result, 'deployed');
      assert.notEqual((await siteDeployments(bbSite.id))[0].status, 'skipped');

      const preview = await push('github', repo, 'feature/login', { files: ['src/login.html'] });
      assert.equal(preview.body.triggered[0].action, 'preview');
      list = await siteDeployments(site.id);
      assert.equal(list[0].is_preview, true);
      assert.equal(list[0].branch, 'feature/login');
      assert.equal(list[0].commit_sha, preview.after);

      // Without previews, another branch deploys nothing.
      const plain = await createSite(s, { repo_url: uniqueRepo() });
      const n = (await siteDeployments(plain.id)).length;
      assert.equal((await push('github', plain.repo_url, 'other')).body.result, 'ignored');
      assert.equal((await siteDeployments(plain.id)).length, n);
    });

    it('auto_deploy off: a push deploys nothing, and the service’s deliveries say why', async () => {
      const repo = uniqueRepo();
      const a = await gitApp(repo);
      expectStatus(await s.patch(`/applications/${a.id}`, { auto_deploy: false }), 200);
      const site = await createSite(s, { repo_url: repo });
      expectStatus(await s.patch(`/static-sites/${site.id}`, { auto_deploy: false }), 200);
      const [n, m] = [(await appDeployments(a.id)).length, (await siteDeployments(site.id)).length];
      const r = await push('github', repo);
      assert.equal(r.body.result, 'ignored');
      assert.match(r.body.message, /auto_deploy is off/);
      assert.equal((await appDeployments(a.id)).length, n);
      assert.equal((await siteDeployments(site.id)).length, m);
      for (const [type, id] of [
        ['app', a.id],
        ['static-site', site.id],
      ]) {
        const list = expectStatus(await s.get(`/git/deliveries?service_id=${id}`), 200).data;
        assert.equal(list.length, 1, `${type} ${id}`);
        assert.equal(list[0].id, r.body.id);
        assert.deepEqual(
          list[0].triggered.filter((t: any) => t.service_id === id).map((t: any) => [t.service_type, t.action, t.deployment_id, t.detail]),
          [[type, 'ignored', null, 'auto_deploy is off']],
        );
      }
      // A push to a branch it would not follow anyway says nothing to it.
      await push('github', repo, 'other');
      assert.equal(expectStatus(await s.get(`/git/deliveries?service_id=${a.id}`), 200).total, 1);
    });

    it('pull requests open, update and close a preview app of the pipeline', async () => {
      const repo = uniqueRepo();
      const p = await createPipeline(s);
      const base = await gitApp(repo);
      await addToStage(s, p.id, stageNamed(p, 'Dev').id, base.id);
      expectStatus(await s.post(`${pipelinePath(p.id)}/preview/enable`, { repo_url: repo, auto_create_app: true, delete_stale_apps: true }), 200);
      const { secret, webhook_urls } = await hookSecret(s);
      const send = async (body: unknown) => {
        const text = JSON.stringify(body);
        return deliver(webhook_urls.github, providerHeaders('github', 'pull_request', text, secret), text);
      };
      const head1 = 'a'.repeat(40);
      const opened = await send(pullRequestPayload(repo, 'opened', 42, 'feature/x', head1));
      assert.equal(opened.status, 200, JSON.stringify(opened.body));
      const created = opened.body.triggered.find((t: any) => t.action === 'previewAppCreated');
      assert.ok(created, JSON.stringify(opened.body));
      const app = expectStatus(await s.get(`/applications/${created.service_id}`), 200);
      assert.equal(app.type, 'previewApp');
      assert.match(app.display_name, /PR #42/);
      assert.match(app.name, /pr-42/);
      let list = await appDeployments(app.id);
      assert.equal(list[0].commit_sha, head1);
      assert.equal(list[0].branch, 'feature/x');

      // Opened again (a redelivery under another id): still one preview app.
      assert.equal((await send(pullRequestPayload(repo, 'reopened', 42, 'feature/x', head1))).body.result, 'ignored');

      const head2 = 'b'.repeat(40);
      const synced = await send(pullRequestPayload(repo, 'synchronize', 42, 'feature/x', head2));
      assert.equal(synced.body.triggered[0].action, 'previewAppDeployed');
      list = await appDeployments(app.id);
      assert.equal(list[0].commit_sha, head2);
      assert.equal(list[0].trigger, 'push');

      const closed = await send(pullRequestPayload(repo, 'closed', 42, 'feature/x', head2));
      assert.equal(closed.body.triggered[0].action, 'previewAppDeleted');
      await waitFor('the preview app to be removed', async () => (await s.get(`/applications/${app.id}`)).status === 404);
    });
  });
}
