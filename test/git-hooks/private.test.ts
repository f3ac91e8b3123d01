// Private repositories (SLIPWAY_RUNTIME=local; polling every second): a git server over HTTP that
// answers only requests carrying the repository's access token (basic authentication in front of
// `git http-backend`). Without a token the site's clone fails and says why in its build log; with
// the company's token (PUT /git/credentials, write-only: never answered) the poller lists and
// fetches the repository and the build clones it, so a push deploys. The token reaches git through
// its environment, never a command line.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { git, LOCAL_ENV } from '../apps-real/support.js';
import { GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { buildLog, finalDeployment, makeSiteRepo } from '../static-sites-real/support.js';
import { gitMissing } from './support.js';

const TOKEN = 'glpat-private-0123456789';
const USER = 'oauth2';

/**
 * An HTTP git server for the repositories under `root`, answering only requests with the basic
 * credentials USER:TOKEN (401 otherwise); `seen` counts the requests it answered and refused.
 */
function privateGitServer(root: string) {
  const seen = { authorized: 0, refused: 0 };
  const expected = `Basic ${Buffer.from(`${USER}:${TOKEN}`).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      seen.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="private git"' }).end();
      return;
    }
    seen.authorized++;
    const url = new URL(req.url ?? '/', 'http://git.local');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        HTTP_GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_USER: USER,
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const [name, value] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
      started = true;
    });
    cgi.stdout.on('end', () => res.end());
    cgi.on('error', () => res.destroy());
  });
  return { server, seen };
}

describe('git hooks: private repositories over HTTP with an access token (local runtime)', { skip: (await skipUnless('sqlite')) || gitMissing() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: { ...LOCAL_ENV, SLIPWAY_GIT_POLL_SECONDS: '1', SLIPWAY_JOB_POLL_MS: '20' } });
  const work = makeSiteRepo();
  const root = `${work.dir}-served`;
  mkdirSync(join(root, 'acme'), { recursive: true });
  const bare = join(root, 'acme', 'site.git');
  git(work.dir, 'clone', '-q', '--bare', work.dir, bare);
  const gitServer = privateGitServer(root);
  let repoUrl = '';
  before(async () => {
    await new Promise<void>((resolve) => gitServer.server.listen(0, '127.0.0.1', resolve));
    repoUrl = `http://127.0.0.1:${(gitServer.server.address() as AddressInfo).port}/acme/site.git`;
  });
  after(() => new Promise<void>((resolve) => gitServer.server.close(() => resolve())));

  it('without a token the clone fails and says why; with the company’s token a push is polled and deployed; the token is never answered', async () => {
    const site = expectStatus(
      await s.post('/static-sites', {
        display_name: 'private site',
        repo_url: repoUrl,
        default_branch: 'main',
        source: 'privateGit',
        git_type: 'gitlab',
        published_directory: 'dist',
      }),
      201,
    );
    const [first] = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data;
    assert.equal((await finalDeployment(s, site.id, first.id)).status, 'failed');
    assert.match(await buildLog(s, site.id, first.id), /could not read Username|Authentication failed|401/);
    assert.ok(gitServer.seen.refused > 0);
    assert.equal(gitServer.seen.authorized, 0);
    // The poller cannot list it either: nothing is recorded for the repository.
    const polled = async () => (await s.app.database.db.selectFrom('git_heads').select('repo').execute()).some((r) => r.repo.endsWith('/acme/site'));
    assert.equal(await polled(), false);

    // The token: an http(s) address only; write-only.
    expectError(await s.put('/git/credentials', { repo_url: 'git@gitlab.com:acme/site.git', token: TOKEN }), 400);
    const set = expectStatus(await s.put('/git/credentials', { repo_url: repoUrl, username: USER, token: TOKEN }), 200);
    assert.deepEqual(Object.keys(set).sort(), ['created_at', 'id', 'repo_url', 'updated_at', 'username']);
    assert.equal(set.repo_url, repoUrl);
    const list = expectStatus(await s.get('/git/credentials'), 200);
    assert.deepEqual(
      list.data.map((c: any) => [c.id, c.repo_url, c.username, c.token]),
      [[set.id, repoUrl, USER, undefined]],
    );
    assert.ok(!JSON.stringify(list).includes(TOKEN));
    // Sealed at rest.
    const [row] = await s.app.database.db.selectFrom('git_repo_credentials').select('token').where('id', '=', set.id).execute();
    assert.ok(row && !row.token.includes(TOKEN));
    // Set again (the same repository however written): replaced, not added.
    const again = expectStatus(await s.put('/git/credentials', { repo_url: repoUrl.replace('/site.git', '/site'), username: USER, token: TOKEN }), 200);
    assert.equal(again.id, set.id);
    assert.equal(expectStatus(await s.get('/git/credentials'), 200).total, 1);

    // The poller lists the repository with the token (its first look records the head and deploys nothing) ...
    await waitFor('the poll to list the private repository', polled, 30_000);
    // ... and a push is fetched, deployed and cloned with it.
    const sha = work.commit({ 'src/version.txt': 'v2' }, 'private v2');
    git(work.dir, 'push', '-q', bare, 'HEAD:refs/heads/main');
    const d = await waitFor(
      'the polled push to deploy',
      async () => (expectStatus(await s.get(`/static-sites/${site.id}/deployments?limit=100`), 200).data as any[]).find((x) => x.commit_sha === sha),
      30_000,
    );
    const done = await finalDeployment(s, site.id, d.id);
    assert.equal(done.status, 'success', await buildLog(s, site.id, d.id));
    assert.equal(done.commit_message, 'private v2');
    assert.ok(gitServer.seen.authorized > 0);
    const [delivery] = expectStatus(await s.get(`/git/deliveries?service_id=${site.id}`), 200).data;
    assert.equal(delivery.provider, 'poll');
    assert.equal(delivery.triggered[0].deployment_id, d.id);
    // The token is in no log line.
    assert.ok(!(await buildLog(s, site.id, d.id)).includes(TOKEN));
    assert.ok(!(await buildLog(s, site.id, d.id)).includes(Buffer.from(`${USER}:${TOKEN}`).toString('base64')));

    // Deleted: gone from the list; a second delete is 404.
    assert.equal((await s.delete(`/git/credentials/${set.id}`)).status, 204);
    assert.equal(expectStatus(await s.get('/git/credentials'), 200).total, 0);
    expectError(await s.delete(`/git/credentials/${set.id}`), 404);
  });
});
