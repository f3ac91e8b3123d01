// Validation of what a static site says about its Git source: repository URL, provider, branch
// names and deploy path patterns. Every refusal is a 400 naming the field.
import picomatch from 'picomatch';
import { badRequest } from '../../shared/errors.js';
import { privateGitProvider, type GitType } from '../../shared/git.js';
import { slugify } from '../../shared/ids.js';

export type { GitType };

/**
 * An http(s) repository URL with a host and a path (`https://github.com/org/site`); with `local`
 * (SLIPWAY_RUNTIME=local, where builds clone for real) also a `file://` repository on this machine.
 */
export function checkRepoUrl(url: string, local = false): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badRequest(`repo_url "${url}" is not a URL; use the repository's https address (for example https://github.com/acme/site)`);
  }
  if (local && u.protocol === 'file:' && u.pathname.length > 1) return u;
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || !u.hostname || u.pathname.replace(/\/+$/, '').split('/').filter(Boolean).length < 2)
    throw badRequest(`repo_url "${url}" must be an http(s) repository address with an owner and a name (for example https://github.com/acme/site)`);
  return u;
}

/**
 * The provider of a private repository: the given one, or the one its host names (told as for
 * applications, shared/git.ts). Public repositories have none (null), as the contract says.
 */
export function gitTypeFor(source: 'privateGit' | 'publicGit', repoUrl: string, given: GitType | null | undefined, local = false): GitType | null {
  if (source === 'publicGit') return null;
  checkRepoUrl(repoUrl, local);
  return privateGitProvider(repoUrl, given);
}

/** A Git branch name: non-empty, no whitespace, control characters or the characters Git forbids. Empty: none. */
export function checkBranch(branch: string | undefined): string | undefined {
  if (branch === undefined || branch === '') return undefined;
  if (
    branch.length > 255 ||
    // eslint-disable-next-line no-control-regex -- control characters are what this refuses
    /[\s\x00-\x1f\x7f~^:?*[\\]/.test(branch) ||
    branch.includes('..') ||
    branch.startsWith('/') ||
    branch.endsWith('/') ||
    branch.endsWith('.lock')
  )
    throw badRequest(`Invalid branch "${branch}": not a Git branch name`);
  return branch;
}

/** Deploy path patterns: at most 50 non-empty glob patterns of at most 255 characters, no duplicates. */
export function checkGlobs(field: string, patterns: string[]): string[] {
  if (patterns.length > 50) throw badRequest(`${field} holds at most 50 patterns`);
  const seen = new Set<string>();
  for (const p of patterns) {
    // eslint-disable-next-line no-control-regex -- control characters are what this refuses
    if (!p.trim() || p.length > 255 || /[\x00-\x1f\x7f]/.test(p)) throw badRequest(`${field}: "${p}" is not a glob pattern (1 to 255 printable characters)`);
    if (seen.has(p)) throw badRequest(`${field}: "${p}" is listed twice`);
    seen.add(p);
  }
  return patterns;
}

/** An allow list and an ignore list cannot both be active. */
export function checkDeployPaths(allow: string[], ignore: string[]): void {
  checkGlobs('allow_deploy_paths', allow);
  checkGlobs('ignore_deploy_paths', ignore);
  if (allow.length && ignore.length)
    throw badRequest('allow_deploy_paths and ignore_deploy_paths cannot both be set: use one list (send the other as [] to clear it)');
}

/** Matches repository paths: a pattern with a slash against the whole path, one without against the file's name (as in .gitignore). */
function globMatcher(patterns: string[]): (path: string) => boolean {
  const full = patterns.filter((p) => p.includes('/')).map((p) => picomatch(p.replace(/^\//, ''), { dot: true }));
  const names = patterns.filter((p) => !p.includes('/')).map((p) => picomatch(p, { dot: true }));
  return (path) => full.some((m) => m(path)) || names.some((m) => m(path.slice(path.lastIndexOf('/') + 1)));
}

/**
 * Which changed files count for a deployment under the site's deploy paths (the allow list, else
 * not the ignore list), and the list that decides, for messages. Real builds compare with the
 * lane's previous release; a push compares the files it names.
 */
export function deployPaths(allow: string[], ignore: string[]): { relevant: (path: string) => boolean; list: string } {
  const allowed = globMatcher(allow);
  const ignored = globMatcher(ignore);
  return { relevant: (f) => (allow.length ? allowed(f) : !ignored(f)), list: allow.length ? 'allow_deploy_paths' : 'ignore_deploy_paths' };
}

/** The label of a preview branch in hostnames (`<label>--<site>`): lower case, runs of other characters as one '-'. */
export const previewLabel = (branch: string) => slugify(branch, 40);
