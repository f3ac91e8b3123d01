// Access to private repositories: a company sets an access token per repository
// (PUT /git/credentials), sealed at rest with the server's secret box and never answered (write-only:
// reads give the repository, the user name and the dates). Every git command that reaches the
// repository for that company — the builds' clone (app.ports.gitAccess, shared/runtime/build.ts),
// the poller's `ls-remote` and mirror fetch (poll.ts, changes.ts) — gets it as an HTTP
// `Authorization: Basic` header through git's environment (GIT_CONFIG_COUNT/KEY/VALUE), scoped to the
// repository's address: it never appears in a command line, an address, a clone's configuration or
// a log. http(s) repositories only (an ssh address takes no token). A company's token is used for
// that company's services only: its polls and mirrors are its own (poll.ts), so no other company
// learns what a private repository holds.
import type { AppContext, CallContext } from '../../shared/context.js';
import { ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import { normalizeRepo } from './repo.js';
import { credentialOf, deleteCredential, listCredentialsPage, upsertCredential, type GitRepoCredentialsTable } from './storage.js';
import type { Tx } from '../../shared/db/index.js';

/** The user name a token is sent with when none is given (GitHub's for tokens; GitLab and Bitbucket take any with a token). */
export const DEFAULT_USERNAME = 'x-access-token';

/** An http(s) address: its origin, and its address as git's `http.<url>.*` settings name it (no user info, query, fragment or trailing slash). */
function scopeOf(repoUrl: string): { origin: string; scope: string } | undefined {
  let u: URL;
  try {
    u = new URL(repoUrl.trim());
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  return { origin: u.origin, scope: `${u.origin}${u.pathname.replace(/\/+$/, '')}` };
}

/**
 * Git's environment that sends the credential's token to the repository at `repoUrl` only: {} when
 * that is not an http(s) address, or not at the origin the token was set for (another scheme or
 * port: a token set for https never goes over plain http).
 */
export function accessEnv(repoUrl: string, credential: Pick<GitRepoCredentialsTable, 'repo_url' | 'username'>, token: string): Record<string, string> {
  const at = scopeOf(repoUrl);
  if (!at || at.origin !== scopeOf(credential.repo_url)?.origin) return {};
  const { scope } = at;
  const username = credential.username;
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: `http.${scope}.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${username}:${token}`).toString('base64')}`,
  };
}

/** The mirror of a repository (mirror.ts): shared by the companies without a token for it; a company's own when it has one. */
export const mirrorKey = (repo: string, companyWithToken?: string) => (companyWithToken ? `${companyWithToken} ${repo}` : repo);

/** The environment git needs to reach `repoUrl` for the company (its token for the repository), {} when it has none. */
export async function accessFor(app: AppContext, tx: Tx, companyId: string, repoUrl: string): Promise<Record<string, string>> {
  return (await mirrorAccess(app, tx, companyId, repoUrl)).access;
}

/** The mirror key and git access of a company's repository (its own mirror when it has a token for it). */
export async function mirrorAccess(app: AppContext, tx: Tx, companyId: string, repoUrl: string): Promise<{ key: string; access: Record<string, string> }> {
  const repo = normalizeRepo(repoUrl) ?? '';
  const row = repo ? await credentialOf(tx, companyId, repo) : undefined;
  if (!row) return { key: mirrorKey(repo), access: {} };
  return { key: mirrorKey(repo, companyId), access: accessEnv(repoUrl, row, app.secrets.decrypt(row.token)) };
}

const credentialView = (r: GitRepoCredentialsTable) => ({
  id: r.id,
  repo_url: r.repo_url,
  username: r.username,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** PUT /git/credentials: sets the company's token of a repository (replacing the one it had). */
export async function setCredential(ctx: CallContext, body: { repo_url: string; username?: string; token: string }) {
  const { app, tx, companyId } = ctx;
  const repo = normalizeRepo(body.repo_url);
  if (!repo || !scopeOf(body.repo_url))
    throw new ApiError(400, `repo_url "${body.repo_url}" must be an http(s) repository address (for example https://github.com/acme/shop)`);
  const now = new Date().toISOString();
  const row = await upsertCredential(tx, {
    id: newId(),
    company_id: companyId,
    repo,
    repo_url: body.repo_url.trim(),
    username: body.username?.trim() || DEFAULT_USERNAME,
    token: app.secrets.encrypt(body.token),
    created_at: now,
    updated_at: now,
  });
  return credentialView(row);
}

/** GET /git/credentials: the company's repository credentials, without their tokens. */
export async function listCredentials(ctx: CallContext, page: Page) {
  const res = await listCredentialsPage(ctx.tx, ctx.companyId, page);
  return { ...res, data: res.data.map(credentialView) };
}

/** DELETE /git/credentials/{id}. */
export async function removeCredential(ctx: CallContext, id: string): Promise<void> {
  if (!(await deleteCredential(ctx.tx, ctx.companyId, id))) throw new ApiError(404, 'Git credential not found');
}
