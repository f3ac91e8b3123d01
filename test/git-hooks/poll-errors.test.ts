// A poll that cannot reach a repository is told where users look, once per change of state
// (SLIPWAY_GIT_POLL_SECONDS=1 here): a `file://` repository moved away gives one `error` delivery
// (provider poll, git's answer) in the deliveries of each service watching it however many polls
// fail, and one `recovered` once it is back, after which the push made meanwhile deploys. Git's
// answer is shown without any credential (gitFailure). A head listed but whose objects cannot be
// fetched gives one `error` delivery of the fetch and still deploys; the next fetch that works, one
// `recovered`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gitFailure } from '../../src/modules/git-hooks/mirror.js';
import { accessEnv } from '../../src/modules/git-hooks/credentials.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createApp } from '../pipelines/support.js';
import { makeSiteRepo } from '../static-sites-real/support.js';
import { git } from '../apps-real/support.js';
import { gitMissing, pollWaits } from './support.js';

const ENV = {
  SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,app_delete=immediate,static_site_deployment=immediate,static_site_delete=immediate',
  SLIPWAY_GIT_POLL_SECONDS: '1',
  SLIPWAY_JOB_POLL_MS: '20',
};

describe('git hooks: poll errors are shown without credentials', () => {
  it("gitFailure keeps git's fatal lines and drops the token in every form, user info and headers", () => {
    const token = 'glpat-Secret0123456789';
    const access = accessEnv('https://git.example.com/acme/shop.git', { repo_url: 'https://git.example.com/acme/shop.git', username: 'oauth2' }, token);
    const header = access.GIT_CONFIG_VALUE_0!;
    const b64 = header.split(' ').pop()!;
    const stderr = [
      'Command failed: git ls-remote --heads -- https://oauth2:glpat-Secret0123456789@git.example.com/acme/shop.git',
      'remote: HTTP Basic: Access denied for oauth2:glpat-Secret0123456789',
      `error: sent ${header} and ${b64}`,
      "fatal: Authentication failed for 'https://oauth2:glpat-Secret0123456789@git.example.com/acme/shop.git/'",
    ].join('\n');
    const shown = gitFailure({ message: stderr, stderr: stderr.split('\n').slice(1).join('\n') }, access);
    assert.match(shown, /fatal: Authentication failed for 'https:\/\/git\.example\.com\/acme\/shop\.git\/'/);
    for (const secret of [token, b64, 'oauth2:glpat', 'Basic ']) assert.ok(!shown.includes(secret), `${secret} in ${shown}`);
    assert.ok(!shown.includes('Command failed'));
    // Without an access, user info in an address is still dropped; the answer is bounded.
    assert.equal(
      gitFailure({ stderr: "fatal: unable to access 'https://u:pw@h.example/x/': Could not resolve host" }),
      "fatal: unable to access 'https://h.example/x/': Could not resolve host",
    );
    assert.ok(gitFailure({ stderr: `fatal: ${'x'.repeat(2000)}` }).length <= 500);
    assert.equal(gitFailure({ killed: true, signal: 'SIGTERM' }), 'git did not answer in time');
  });
});

for (const kind of DB_KINDS) {
  describe(`git hooks: poll errors in the deliveries [${kind}]`, { skip: (await skipUnless(kind)) || gitMissing() }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: ENV });
    const { pollAfter, headsRecorded } = pollWaits(s);
    const polled = async (serviceId: string): Promise<any[]> =>
      expectStatus(await s.get(`/git/deliveries?service_id=${serviceId}&limit=100`), 200).data.filter((d: any) => d.provider === 'poll');

    it('a repository moved away gives one error delivery however many polls fail, one recovered when back; the push made meanwhile then deploys', async () => {
      const repo = makeSiteRepo();
      const a = await createApp(s, { extra: { repo_url: repo.url, default_branch: 'main' } });
      const b = await createApp(s, { extra: { repo_url: repo.url, default_branch: 'main' } });
      await waitFor('the poll to look at the repository', () => headsRecorded(repo.dir));

      const moved = `${repo.dir}-moved`;
      renameSync(repo.dir, moved);
      const [error] = await waitFor('the error delivery', async () => {
        const ds = await polled(a.id);
        return ds.length ? ds : undefined;
      });
      // Several polls later, still that one entry.
      for (let i = 0; i < 3; i++) await pollAfter(Date.now());
      const whileDown = await polled(a.id);
      assert.equal(whileDown.length, 1, JSON.stringify(whileDown));
      assert.equal(error.result, 'error');
      assert.equal(error.event, 'ls-remote');
      assert.match(error.message, new RegExp(`^Polling cannot list the branches of file://${repo.dir}: fatal: .*${repo.dir}`));
      assert.deepEqual(
        error.triggered.map((t: any) => [t.service_id, t.action, t.deployment_id]).sort(),
        [
          [a.id, 'pollFailed', null],
          [b.id, 'pollFailed', null],
        ].sort(),
      );
      // The other service watching the repository lists the same entry.
      assert.deepEqual(
        (await polled(b.id)).map((d) => d.id),
        [error.id],
      );

      // A push while the repository is away, then it is back: recovered, and the push deploys.
      const deploymentsBefore = await deployments(a.id);
      renameSync(moved, repo.dir);
      const sha = repo.commit({ 'src/version.txt': 'v2' });
      const d = await waitFor('the push made while away to deploy', async () => (await deployments(a.id)).find((x) => x.commit_sha === sha));
      assert.equal(d.trigger, 'push');
      await pollAfter(Date.now());
      const after = await polled(a.id);
      assert.deepEqual(
        after.map((x) => x.result),
        ['deployed', 'recovered', 'error'],
      );
      assert.match(after[1].message, new RegExp(`^Polling reaches file://${repo.dir} again`));
      assert.equal(after[1].triggered.find((t: any) => t.service_id === a.id)?.action, 'pollRecovered');
      assert.equal((await deployments(a.id)).length, deploymentsBefore.length + 1);
      assert.equal(expectStatus(await s.get('/git/deliveries?limit=100'), 200).data.filter((x: any) => x.result === 'error').length, 1);
    });

    it('a head whose objects cannot be fetched gives one fetch error delivery and still deploys; the next fetch that works says recovered', async () => {
      const repo = makeSiteRepo();
      const a = await createApp(s, { extra: { repo_url: repo.url, default_branch: 'main' } });
      await waitFor('the poll to look at the repository', () => headsRecorded(repo.dir));

      // A commit the repository lists but cannot send: its new file's blob moved aside before the
      // branch names it (the commit itself is there, so the branch is still listed).
      writeFileSync(join(repo.dir, 'src/version.txt'), `v2 ${randomUUID()}`);
      git(repo.dir, 'add', '.');
      const blob = git(repo.dir, 'rev-parse', ':src/version.txt');
      const broken = git(repo.dir, 'commit-tree', git(repo.dir, 'write-tree'), '-p', 'HEAD', '-m', 'v2');
      const object = join(repo.dir, '.git/objects', blob.slice(0, 2), blob.slice(2));
      renameSync(object, `${object}.aside`);
      git(repo.dir, 'update-ref', 'refs/heads/main', broken);

      const [error] = await waitFor('the error delivery', async () => {
        const ds = (await polled(a.id)).filter((d) => d.result === 'error');
        return ds.length ? ds : undefined;
      });
      assert.equal(error.event, 'fetch');
      assert.match(error.message, new RegExp(`^Polling cannot fetch file://${repo.dir}: `));
      assert.deepEqual(
        error.triggered.map((t: any) => [t.service_id, t.action]),
        [[a.id, 'pollFailed']],
      );
      // The push deploys all the same (its changed files unknown, every file counts).
      const first = await waitFor('the unfetchable push to deploy', async () => (await deployments(a.id)).find((x) => x.commit_sha === broken));
      assert.equal(first.trigger, 'push');

      // The blob back and another push: that fetch works.
      renameSync(`${object}.aside`, object);
      git(repo.dir, 'reset', '-q', '--hard', broken);
      const sha = repo.commit({ 'src/version.txt': 'v3' });
      await waitFor('the next push to deploy', async () => (await deployments(a.id)).find((x) => x.commit_sha === sha));
      const after = await waitFor('the recovered delivery', async () => {
        const ds = await polled(a.id);
        return ds.some((d) => d.result === 'recovered') ? ds : undefined;
      });
      assert.deepEqual(
        after.map((x) => x.result),
        ['deployed', 'recovered', 'deployed', 'error'],
      );
      assert.equal(after[1].event, 'fetch');
      assert.match(after[1].message, new RegExp(`^Polling reaches file://${repo.dir} again`));
    });

    const deployments = async (id: string): Promise<any[]> => expectStatus(await s.get(`/applications/${id}/deployments?limit=100`), 200).data;
  });
}
