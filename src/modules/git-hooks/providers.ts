// The four providers' webhook formats: how a delivery is authenticated, what names it, and what
// it says, read into one shape (GitEvent) that the rest of the module acts on.
//   github:    X-Hub-Signature-256 `sha256=<hex HMAC-SHA256 of the body>`, X-GitHub-Event, X-GitHub-Delivery
//   gitea:     the same signature (or X-Gitea-Signature / X-Forgejo-Signature: the bare hex), X-Gitea-Event
//              or X-Forgejo-Event, X-Gitea-Delivery or X-Forgejo-Delivery; payloads shaped like GitHub's
//   gitlab:    X-Gitlab-Token: the secret itself, X-Gitlab-Event, X-Gitlab-Event-UUID
//   bitbucket: X-Hub-Signature `sha256=<hex HMAC-SHA256>` (Bitbucket Cloud), X-Event-Key, X-Request-UUID
import { createHmac, timingSafeEqual } from 'node:crypto';

export const PROVIDERS = ['github', 'gitlab', 'bitbucket', 'gitea'] as const;
export type Provider = (typeof PROVIDERS)[number];

type Headers = Record<string, string | string[] | undefined>;

export interface Commit {
  sha: string;
  message: string | null;
  author: string | null;
}

export type GitEvent =
  | {
      kind: 'push';
      /** Every address the payload gives for the repository (matched after normalisation). */
      repos: string[];
      branch: string;
      /** The new head; null when the branch was deleted. */
      commit: Commit | null;
      /** The head before the push, as the payload names it; null for a new branch (or when it does not say). */
      before: string | null;
      /**
       * Files the push added, changed or removed; null when they cannot be told (all of them). The
       * payload's list, or read from the repository's mirror when the payload names none (changes.ts).
       */
      changed: string[] | null;
      /** Why `changed` is null (said in the delivery's record of the static sites with deploy paths). */
      unknownChanges?: string;
    }
  | {
      kind: 'pullRequest';
      repos: string[];
      action: 'open' | 'update' | 'close';
      number: number;
      branch: string;
      baseBranch: string;
      commit: Commit;
    };

const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Equal strings, compared in constant time (length aside). */
function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const hmac = (secret: string, raw: Buffer) => createHmac('sha256', secret).update(raw).digest('hex');

/** Whether the delivery carries the proof of the company's secret its provider sends. */
export function verify(provider: Provider, h: Headers, raw: Buffer, secret: string): boolean {
  if (provider === 'gitlab') return same(header(h, 'x-gitlab-token') ?? '', secret);
  if (provider === 'bitbucket') return same(header(h, 'x-hub-signature') ?? '', `sha256=${hmac(secret, raw)}`);
  const sig = header(h, 'x-hub-signature-256');
  if (sig) return same(sig, `sha256=${hmac(secret, raw)}`);
  if (provider === 'gitea') {
    const bare = header(h, 'x-gitea-signature') ?? header(h, 'x-forgejo-signature');
    return bare !== undefined && same(bare, hmac(secret, raw));
  }
  return false;
}

/** The provider's name of the event and its delivery id (undefined when it sends none). */
export function deliveryOf(provider: Provider, h: Headers): { event: string; deliveryId: string | undefined } {
  switch (provider) {
    case 'github':
      return { event: header(h, 'x-github-event') ?? '', deliveryId: header(h, 'x-github-delivery') };
    case 'gitea':
      return {
        event: header(h, 'x-gitea-event') ?? header(h, 'x-forgejo-event') ?? header(h, 'x-github-event') ?? '',
        deliveryId: header(h, 'x-gitea-delivery') ?? header(h, 'x-forgejo-delivery') ?? header(h, 'x-github-delivery'),
      };
    case 'gitlab':
      return { event: header(h, 'x-gitlab-event') ?? '', deliveryId: header(h, 'x-gitlab-event-uuid') };
    case 'bitbucket':
      return { event: header(h, 'x-event-key') ?? '', deliveryId: header(h, 'x-request-uuid') ?? header(h, 'x-hook-uuid') };
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const strs = (...v: unknown[]): string[] => v.map(str).filter((x): x is string => x !== null);
const branchOf = (ref: unknown): string | null => {
  const r = str(ref);
  return r?.startsWith('refs/heads/') ? r.slice('refs/heads/'.length) : null;
};
const ZERO = /^0+$/;
/** A commit id that names a commit (not the zeros of a new or deleted branch). */
const commitId = (v: unknown): string | null => {
  const x = str(v);
  return x && !ZERO.test(x) ? x : null;
};

/** Files named by commits as GitHub, Gitea and GitLab list them; null when the list may be cut short. */
function changedFiles(commits: unknown, complete: boolean): string[] | null {
  if (!Array.isArray(commits) || !commits.length || !complete) return null;
  const files = new Set<string>();
  for (const c of commits as any[])
    for (const k of ['added', 'modified', 'removed']) for (const f of Array.isArray(c?.[k]) ? c[k] : []) if (typeof f === 'string') files.add(f);
  return [...files];
}

/** What the delivery says, as zero or more events (tags, other events and unknown actions: none). */
export function parse(provider: Provider, event: string, body: any): GitEvent[] {
  if (!body || typeof body !== 'object') return [];
  switch (provider) {
    case 'github':
    case 'gitea':
      return githubLike(event, body);
    case 'gitlab':
      return gitlab(event, body);
    case 'bitbucket':
      return bitbucket(event, body);
  }
}

function githubLike(event: string, b: any): GitEvent[] {
  const r = b.repository ?? {};
  const repos = strs(r.clone_url, r.ssh_url, r.html_url, r.git_url, r.url);
  if (event === 'push') {
    const branch = branchOf(b.ref);
    if (!branch) return [];
    const after = str(b.after);
    if (b.deleted === true || !after || ZERO.test(after)) return [{ kind: 'push', repos, branch, commit: null, before: null, changed: null }];
    const head = b.head_commit ?? (Array.isArray(b.commits) ? b.commits[b.commits.length - 1] : null) ?? {};
    // GitHub lists at most 20 commits (Gitea its configured maximum): a longer push is not listed whole.
    const commits = Array.isArray(b.commits) ? b.commits : [];
    const complete = commits.length < 20 && (typeof b.total_commits !== 'number' || b.total_commits <= commits.length);
    return [
      {
        kind: 'push',
        repos,
        branch,
        commit: { sha: after, message: str(head.message), author: str(head.author?.username) ?? str(head.author?.name) ?? str(b.pusher?.name) },
        before: b.created === true ? null : commitId(b.before),
        changed: changedFiles(commits, complete),
      },
    ];
  }
  if (event === 'pull_request') {
    const pr = b.pull_request ?? {};
    const action = ({ opened: 'open', reopened: 'open', synchronize: 'update', synchronized: 'update', closed: 'close' } as const)[b.action as string];
    const number = Number(b.number ?? pr.number);
    const branch = str(pr.head?.ref);
    const sha = str(pr.head?.sha);
    if (!action || !Number.isInteger(number) || !branch || !sha) return [];
    const base = r.clone_url ? repos : strs(pr.base?.repo?.clone_url, pr.base?.repo?.ssh_url, pr.base?.repo?.html_url);
    return [
      {
        kind: 'pullRequest',
        repos: base,
        action,
        number,
        branch,
        baseBranch: str(pr.base?.ref) ?? '',
        commit: { sha, message: str(pr.title), author: str(pr.user?.login) },
      },
    ];
  }
  return [];
}

function gitlab(event: string, b: any): GitEvent[] {
  const p = b.project ?? {};
  const repos = strs(p.git_http_url, p.git_ssh_url, p.web_url, b.repository?.git_http_url, b.repository?.homepage);
  if (event === 'Push Hook') {
    const branch = branchOf(b.ref);
    if (!branch) return [];
    const after = str(b.after) ?? str(b.checkout_sha);
    if (!after || ZERO.test(after)) return [{ kind: 'push', repos, branch, commit: null, before: null, changed: null }];
    const commits = Array.isArray(b.commits) ? b.commits : [];
    const head = commits.find((c: any) => c?.id === after) ?? commits[commits.length - 1] ?? {};
    // GitLab lists at most 20 commits; total_commits_count says how many the push had.
    const complete = typeof b.total_commits_count !== 'number' || b.total_commits_count <= commits.length;
    return [
      {
        kind: 'push',
        repos,
        branch,
        commit: { sha: after, message: str(head.message), author: str(b.user_username) ?? str(head.author?.name) },
        before: commitId(b.before),
        changed: changedFiles(commits, complete),
      },
    ];
  }
  if (event === 'Merge Request Hook') {
    const o = b.object_attributes ?? {};
    // An update is a new head only when GitLab names the previous one (oldrev); else a title, label or review change.
    const action =
      o.action === 'open' || o.action === 'reopen'
        ? 'open'
        : o.action === 'update' && str(o.oldrev)
          ? 'update'
          : o.action === 'close' || o.action === 'merge'
            ? 'close'
            : undefined;
    const number = Number(o.iid);
    const branch = str(o.source_branch);
    const sha = str(o.last_commit?.id);
    if (!action || !Number.isInteger(number) || !branch || !sha) return [];
    const target = o.target ?? {};
    return [
      {
        kind: 'pullRequest',
        repos: repos.length ? repos : strs(target.git_http_url, target.git_ssh_url, target.web_url),
        action,
        number,
        branch,
        baseBranch: str(o.target_branch) ?? '',
        commit: { sha, message: str(o.last_commit?.message) ?? str(o.title), author: str(b.user?.username) },
      },
    ];
  }
  return [];
}

function bitbucket(event: string, b: any): GitEvent[] {
  const r = b.repository ?? {};
  const full = str(r.full_name);
  const repos = strs(r.links?.html?.href, full ? `https://bitbucket.org/${full}` : null);
  if (event === 'repo:push') {
    const out: GitEvent[] = [];
    // Bitbucket names no files: they are read from the repository (changes.ts) with the old head it names.
    for (const c of Array.isArray(b.push?.changes) ? b.push.changes : []) {
      const ref = c?.new ?? c?.old;
      if (ref?.type !== 'branch' || !str(ref.name)) continue;
      const t = c.new?.target;
      out.push({
        kind: 'push',
        repos,
        branch: ref.name,
        commit: c.new && str(t?.hash) ? { sha: t.hash, message: str(t.message), author: str(t.author?.user?.nickname) ?? str(t.author?.raw) } : null,
        before: commitId(c.old?.target?.hash),
        changed: null,
      });
    }
    return out;
  }
  const action = (
    { 'pullrequest:created': 'open', 'pullrequest:updated': 'update', 'pullrequest:fulfilled': 'close', 'pullrequest:rejected': 'close' } as const
  )[event];
  if (action) {
    const pr = b.pullrequest ?? {};
    const number = Number(pr.id);
    const branch = str(pr.source?.branch?.name);
    const sha = str(pr.source?.commit?.hash);
    if (!Number.isInteger(number) || !branch || !sha) return [];
    return [
      {
        kind: 'pullRequest',
        repos,
        action,
        number,
        branch,
        baseBranch: str(pr.destination?.branch?.name) ?? '',
        commit: { sha, message: str(pr.title), author: str(pr.author?.nickname) },
      },
    ];
  }
  return [];
}
