// Helpers of the git hooks suites: the company's webhook secret, deliveries in each provider's
// format signed as the provider signs them, and a bare repository whose post-receive hook posts a
// GitHub push event for every pushed branch (so `git push` deploys, as with GitHub).
import { execFile } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { git } from '../apps-real/support.js';
import type { TestServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { finalDeployment } from '../static-sites-real/support.js';

export { gitMissing } from '../static-sites-real/support.js';

const run = promisify(execFile);

export type Provider = 'github' | 'gitlab' | 'bitbucket' | 'gitea';

/** The company's git webhook secret and payload URLs. */
export async function hookSecret(s: TestServer, token?: string): Promise<{ secret: string; webhook_urls: Record<Provider, string> }> {
  return expectStatus(await s.get('/git/webhook-secret', { token }), 200);
}

/** A repository address no other test uses (so that only this test's services follow it). */
export const uniqueRepo = (host = 'github.com') => `https://${host}/acme/${uniqueName('shop', { random: true }).replace(/[^a-z0-9-]/gi, '-')}`;

export const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

/** Headers of a delivery as each provider sends them, signed with `secret`. */
export function providerHeaders(provider: Provider, event: string, body: string, secret: string, deliveryId: string = randomUUID()): Record<string, string> {
  const json = { 'content-type': 'application/json' };
  switch (provider) {
    case 'github':
      return { ...json, 'x-github-event': event, 'x-github-delivery': deliveryId, 'x-hub-signature-256': `sha256=${hmac(secret, body)}` };
    case 'gitea':
      return { ...json, 'x-gitea-event': event, 'x-gitea-delivery': deliveryId, 'x-gitea-signature': hmac(secret, body) };
    case 'gitlab':
      return { ...json, 'x-gitlab-event': event, 'x-gitlab-event-uuid': deliveryId, 'x-gitlab-token': secret };
    case 'bitbucket':
      return { ...json, 'x-event-key': event, 'x-request-uuid': deliveryId, 'x-hub-signature': `sha256=${hmac(secret, body)}` };
  }
}

/** Posts a delivery to the company's URL of `provider`: the status and the body. */
export async function deliver(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const sha = () => randomUUID().replace(/-/g, '').padEnd(40, '0');

/** A push event of each provider's format; `files` as the changed files (Bitbucket names none). */
export function pushPayload(provider: Provider, repoUrl: string, branch: string, after = sha(), files: string[] = ['src/index.js']) {
  const commit = { id: after, message: 'change', added: [], modified: files, removed: [], author: { name: 'Dev', username: 'dev' } };
  switch (provider) {
    case 'github':
    case 'gitea':
      return {
        event: 'push',
        after,
        body: {
          ref: `refs/heads/${branch}`,
          after,
          deleted: false,
          commits: [commit],
          head_commit: commit,
          repository: { clone_url: `${repoUrl}.git`, html_url: repoUrl },
        },
      };
    case 'gitlab':
      return {
        event: 'Push Hook',
        after,
        body: {
          object_kind: 'push',
          ref: `refs/heads/${branch}`,
          after,
          user_username: 'dev',
          total_commits_count: 1,
          commits: [commit],
          project: { git_http_url: `${repoUrl}.git`, git_ssh_url: `git@${new URL(repoUrl).host}:${new URL(repoUrl).pathname.slice(1)}.git`, web_url: repoUrl },
        },
      };
    case 'bitbucket': {
      const full = new URL(repoUrl).pathname.slice(1);
      return {
        event: 'repo:push',
        after,
        body: {
          push: {
            changes: [
              { new: { type: 'branch', name: branch, target: { hash: after, message: 'change', author: { raw: 'Dev <dev@example.com>' } } }, old: null },
            ],
          },
          repository: { full_name: full, links: { html: { href: repoUrl } } },
        },
      };
    }
  }
}

/** A GitHub pull_request event. */
export function pullRequestPayload(repoUrl: string, action: string, number: number, branch: string, head = sha(), base = 'main') {
  return {
    action,
    number,
    pull_request: { number, title: `PR ${number}`, head: { ref: branch, sha: head }, base: { ref: base }, user: { login: 'dev' } },
    repository: { clone_url: `${repoUrl}.git`, html_url: repoUrl },
  };
}

/**
 * A bare repository whose post-receive hook posts a GitHub push event signed with `secret` to
 * `url` for every pushed branch, naming the repository `repoUrl` and the files changed since the
 * previous head; and a working clone of it with `commit(files)` (returns the commit) and `push()`.
 */
export function hookedRepo(url: string, secret: string, repoUrl: string) {
  const root = mkdtempSync(join(tmpdir(), 'slipway-git-hooks-'));
  const bare = join(root, 'origin.git');
  const work = join(root, 'work');
  git(root, 'init', '-q', '--bare', '-b', 'main', bare);
  const hook = `#!${process.execPath}
const { execFileSync } = require('node:child_process');
const { createHmac, randomUUID } = require('node:crypto');
const lines = require('node:fs').readFileSync(0, 'utf8').trim().split('\\n').filter(Boolean);
(async () => {
  for (const line of lines) {
    const [before, after, ref] = line.split(' ');
    const zero = /^0+$/.test(before);
    const files = zero ? execFileSync('git', ['ls-tree', '-r', '--name-only', after], { encoding: 'utf8' }) : execFileSync('git', ['diff', '--name-only', before, after], { encoding: 'utf8' });
    const message = execFileSync('git', ['log', '-1', '--format=%s', after], { encoding: 'utf8' }).trim();
    const commit = { id: after, message, added: [], modified: files.split('\\n').filter(Boolean), removed: [], author: { name: 'Dev', username: 'dev' } };
    const body = JSON.stringify({ ref, before, after, deleted: false, commits: [commit], head_commit: commit, repository: { clone_url: ${JSON.stringify(`${repoUrl}.git`)} } });
    const sig = 'sha256=' + createHmac('sha256', ${JSON.stringify(secret)}).update(body).digest('hex');
    const res = await fetch(${JSON.stringify(url)}, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sig }, body });
    console.log('slipway answered ' + res.status + ' ' + (await res.text()));
  }
})();
`;
  writeFileSync(join(bare, 'hooks', 'post-receive'), hook);
  chmodSync(join(bare, 'hooks', 'post-receive'), 0o755);
  git(root, 'clone', '-q', bare, work);
  git(work, 'checkout', '-q', '-B', 'main');
  const commit = (files: Record<string, string>, message = 'change') => {
    for (const [p, text] of Object.entries(files)) {
      const full = join(work, p);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
    }
    git(work, 'add', '.');
    git(work, 'commit', '-q', '-m', message);
    return git(work, 'rev-parse', 'HEAD');
  };
  /**
   * Pushes the current branch as `branch`; the hook posts the event before the push returns. Not
   * synchronous: the server answering the hook runs in this process.
   */
  const push = async (branch = 'main') => {
    const { stderr } = await run('git', ['push', '-q', 'origin', `HEAD:refs/heads/${branch}`], { cwd: work });
    return stderr;
  };
  return { bare, work, commit, push, branch: (name: string) => git(work, 'checkout', '-q', '-B', name) };
}

/** A static site of `repoUrl` ignoring `docs/**` and `*.md`, with previews, once its first deployment succeeded. */
export async function pathFilteredSite(s: TestServer, repoUrl: string, displayName: string): Promise<{ id: string }> {
  const site = expectStatus(
    await s.post('/static-sites', {
      display_name: displayName,
      repo_url: repoUrl,
      default_branch: 'main',
      source: 'publicGit',
      published_directory: 'dist',
      ignore_deploy_paths: ['docs/**', '*.md'],
      is_preview_enabled: true,
    }),
    201,
  );
  const [first] = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data;
  const done = await finalDeployment(s, site.id, first.id);
  if (done.status !== 'success') throw new Error(`the first deployment of ${displayName}: ${done.status}`);
  return site;
}

/** Waiting on the poller of `s` (SLIPWAY_GIT_POLL_SECONDS set): its runs, and its first look at a repository. */
export function pollWaits(s: TestServer) {
  /** The time the next poll is due (the poll job's run_at). */
  const nextPoll = async () => {
    const row = await s.app.database.db.selectFrom('jobs').select('run_at').where('kind', '=', 'git.poll').executeTakeFirst();
    return row ? Date.parse(row.run_at) : 0;
  };
  return {
    /** Waits until a poll that started after `t` has finished (two reschedules of the chain after `t`). */
    async pollAfter(t: number): Promise<void> {
      const first = await waitFor('a poll to end after the change', async () => ((await nextPoll()) > t ? await nextPoll() : 0));
      await waitFor('the next poll to end', async () => (await nextPoll()) > first);
    },
    /** Whether the poll recorded a head of the repository in `dir` (its first look). */
    async headsRecorded(dir: string): Promise<boolean> {
      const rows = await s.app.database.db.selectFrom('git_heads').select('repo').execute();
      return rows.some((r) => r.repo === `file:${dir}`);
    },
  };
}
