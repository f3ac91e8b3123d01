// One spelling per repository, so that a push names the same repository as a service's repo_url
// whatever form either uses: https or http, ssh (`ssh://git@host:22/o/r`), scp-like
// (`git@host:o/r.git`), git://, with or without `.git`, a trailing slash, user info, a port or
// `www.`, in any case (hosts are case-insensitive, and the providers treat paths so too).
// `file://` repositories (self-hosted, polled) keep their path.

/** `host/owner/name` (lower case), `file:/path` for a local repository, or undefined when it is not a repository address. */
export function normalizeRepo(url: string | null | undefined): string | undefined {
  if (!url) return undefined;
  const text = url.trim();
  // An address git would read as an option (`--upload-pack=...`) is no repository.
  if (text.startsWith('-')) return undefined;
  const tidy = (path: string) =>
    path
      .replace(/\/+$/, '')
      .replace(/\.git$/i, '')
      .replace(/\/+$/, '');
  const scp = text.includes('://') ? null : /^(?:[^@/\s]+@)?([^:/\s]+):(.+)$/.exec(text);
  if (scp) {
    return `${scp[1]!.toLowerCase().replace(/^www\./, '')}/${tidy(scp[2]!.replace(/^\/+/, '')).toLowerCase()}`;
  }
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return undefined;
  }
  if (u.protocol === 'file:') {
    const path = tidy(decodeURIComponent(u.pathname));
    return path ? `file:${path}` : undefined;
  }
  if (!['https:', 'http:', 'ssh:', 'git:', 'git+ssh:', 'ssh+git:'].includes(u.protocol) || !u.hostname) return undefined;
  const path = tidy(decodeURIComponent(u.pathname).replace(/^\/+/, ''));
  if (!path.includes('/')) return undefined;
  return `${u.hostname.toLowerCase().replace(/^www\./, '')}/${path.toLowerCase()}`;
}
