// The Git provider (git_type) of a repository, told the same way for every kind of service (the
// applications and static sites modules): from the hosts of the three providers the contract names.
// Any other host (a self-hosted server) or a local path has no provider that can be told.
import { badRequest } from './errors.js';

export type GitType = 'github' | 'bitbucket' | 'gitlab';

const HOSTS: Record<string, GitType> = { 'github.com': 'github', 'gitlab.com': 'gitlab', 'bitbucket.org': 'bitbucket' };

/** The host of a repository address: a URL's, or an scp-like address's (`git@github.com:acme/shop.git`). */
function hostOf(repoUrl: string): string | undefined {
  const scp = /^[^@/\s]+@([^:/\s]+):/.exec(repoUrl);
  if (scp) return scp[1];
  try {
    return new URL(repoUrl).hostname || undefined;
  } catch {
    return undefined;
  }
}

/** The provider the repository's host names, or null when it cannot be told. */
export function gitProviderOf(repoUrl: string): GitType | null {
  const host = hostOf(repoUrl)
    ?.toLowerCase()
    .replace(/^www\./, '');
  return (host && HOSTS[host]) || null;
}

/**
 * The provider of a private repository: the given one, else the one its host names. A private
 * source whose provider cannot be told needs git_type (the contract: required then): 400.
 */
export function privateGitProvider(repoUrl: string, given: GitType | null | undefined): GitType {
  const provider = given ?? gitProviderOf(repoUrl);
  if (!provider) throw badRequest(`git_type is required for a private repository whose provider cannot be told from its host (${repoUrl})`);
  return provider;
}

/**
 * What is wrong with a repository address a client gave, or null. Git reads an argument starting
 * with `-` as an option (`--upload-pack=<command>` runs a command), and a local path or `file://`
 * reads any repository on this machine (another company's checkouts): in production only network
 * addresses (http(s), ssh, git, scp-like `user@host:path`) are accepted.
 */
export function repoAddressProblem(repoUrl: string, production: boolean): string | null {
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (repoUrl.startsWith('-') || /[\s\x00-\x1f\x7f]/.test(repoUrl)) return `repo_url ${JSON.stringify(repoUrl)} is not a repository address`;
  if (!production) return null;
  if (/^[^@/\s]+@[^:/\s]+:/.test(repoUrl)) return null;
  let u: URL | undefined;
  try {
    u = new URL(repoUrl);
  } catch {
    u = undefined;
  }
  if (u && ['https:', 'http:', 'ssh:', 'git:'].includes(u.protocol) && u.hostname) return null;
  return `repo_url ${JSON.stringify(repoUrl)} must be a network repository address (https://, ssh://, git:// or user@host:path); local repositories are refused in production`;
}
