// The Git provider (git_type) of applications and static sites, told the same way in both: from the
// repository's host (github.com, gitlab.com, bitbucket.org), else given; a repository whose provider
// cannot be told (a self-hosted server, a local path) has none (null) when public, and a private one
// needs git_type (the contract: "required for private git sources when the provider cannot be
// auto-detected"). Static sites keep null for every public source (their contract says so).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, uniqueName } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from './support.js';

const SELF_HOSTED = 'https://git.example.org/acme/shop';
const GITLAB = 'https://gitlab.com/acme/shop';

for (const kind of DB_KINDS) {
  describe(`git_type of applications and static sites [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });
    const app = (source: string, repo_url: string, extra: Record<string, unknown> = {}) =>
      s.post('/applications', { display_name: uniqueName('git app'), cluster_id: DEFAULT_CLUSTER.id, source, repo_url, default_branch: 'main', ...extra });
    const site = (source: string, repo_url: string, extra: Record<string, unknown> = {}) =>
      s.post('/static-sites', { display_name: uniqueName('git site'), source, repo_url, default_branch: 'main', ...extra });

    it('a public repository whose provider cannot be told has none (null), not a made-up github', async () => {
      for (const url of [SELF_HOSTED, 'file:///srv/git/shop.git', 'git@git.example.org:acme/shop.git'])
        assert.equal(expectStatus(await app('publicGit', url), 201).git_type, null, url);
      assert.equal(expectStatus(await site('publicGit', SELF_HOSTED), 201).git_type, null);
    });

    it('the host tells the provider; a given git_type stands', async () => {
      assert.equal(expectStatus(await app('publicGit', GITLAB), 201).git_type, 'gitlab');
      assert.equal(expectStatus(await app('privateGit', 'https://bitbucket.org/acme/shop'), 201).git_type, 'bitbucket');
      assert.equal(expectStatus(await app('privateGit', 'git@gitlab.com:acme/shop.git'), 201).git_type, 'gitlab');
      assert.equal(expectStatus(await site('privateGit', GITLAB), 201).git_type, 'gitlab');
      assert.equal(expectStatus(await app('privateGit', SELF_HOSTED, { git_type: 'gitlab' }), 201).git_type, 'gitlab');
      assert.equal(expectStatus(await site('privateGit', SELF_HOSTED, { git_type: 'gitlab' }), 201).git_type, 'gitlab');
    });

    it('a private repository whose provider cannot be told needs git_type: 400 in both', async () => {
      expectError(await app('privateGit', SELF_HOSTED), 400, /git_type is required/);
      expectError(await site('privateGit', SELF_HOSTED), 400, /git_type is required/);
    });

    it('an application told anew when its repository or source changes, as a static site is', async () => {
      const a = expectStatus(await app('privateGit', GITLAB), 201);
      assert.equal(expectStatus(await s.patch(`/applications/${a.id}`, { repo_url: 'https://bitbucket.org/acme/shop' }), 200).git_type, 'bitbucket');
      expectError(await s.patch(`/applications/${a.id}`, { repo_url: SELF_HOSTED }), 400, /git_type is required/);
      assert.equal(expectStatus(await s.patch(`/applications/${a.id}`, { repo_url: SELF_HOSTED, git_type: 'github' }), 200).git_type, 'github');
      assert.equal(expectStatus(await s.patch(`/applications/${a.id}`, { source: 'publicGit' }), 200).git_type, null);
      assert.equal(expectStatus(await s.patch(`/applications/${a.id}`, { display_name: 'renamed' }), 200).git_type, null, 'unchanged by other fields');
      assert.equal(expectStatus(await s.patch(`/applications/${a.id}`, { source: 'dockerImage', docker_image: 'nginx:1' }), 200).git_type, null);
    });
  });
}
