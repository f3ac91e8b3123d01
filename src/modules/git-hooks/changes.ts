// The files a webhook push changed when its payload does not list them (Bitbucket lists none;
// GitHub, Gitea and GitLab cut the list at 20 commits): read from the repository's mirror
// (mirror.ts), fetched first, as `git diff` from the head before the push to the pushed one. Only
// for pushes that a static site with deploy paths follows (for every other service the files make
// no difference), and with a real runtime (the simulated one's repositories are names only). When
// they cannot be told — a new branch, a fetch that fails or a repository that cannot be reached, a
// force-push — the push counts as changing every file and the event says why (the delivery's
// record of those sites shows it). Runs before the delivery's transaction: a fetch holds no
// database lock.
import type { AppContext } from '../../shared/context.js';
import { autoDeploySiteRows, type StaticSitesTable } from '../static-sites/index.js';
import { mirrorAccess } from './credentials.js';
import { fetchMirror } from './mirror.js';
import type { GitEvent } from './providers.js';
import { normalizeRepo } from './repo.js';

type Push = Extract<GitEvent, { kind: 'push' }>;

/** A webhook's fetch gives up sooner than a poll's: the provider waits for the answer. */
const WEBHOOK_FETCH_TIMEOUT_MS = 60_000;

/** Why a push's changed files are unknown (the detail of a static site's entry in the delivery). */
export const UNKNOWN = {
  newBranch: 'Changed files unknown (a new branch): every file counts',
  fetchFailed: 'Changed files unknown (the repository could not be fetched): every file counts',
  forcePush: 'Changed files unknown (the previous head is not an ancestor of the pushed one: a force-push): every file counts',
} as const;

/** Whether a push to `branch` builds the site: its own branch, or any with previews on. */
export const siteFollows = (s: Pick<StaticSitesTable, 'default_branch' | 'is_preview_enabled'>, branch: string) =>
  s.default_branch === branch || s.is_preview_enabled === 1;

/** Whether the site's deploy paths decide which pushes deploy. */
export const hasDeployPaths = (s: StaticSitesTable) => JSON.parse(s.allow_deploy_paths).length > 0 || JSON.parse(s.ignore_deploy_paths).length > 0;

/** The events, with the changed files of each push whose payload named none read from its repository. */
export async function withChangedFiles(app: AppContext, companyId: string, events: GitEvent[]): Promise<GitEvent[]> {
  // The simulated runtime's repositories are names only: nothing to read.
  if (!app.config.realRuntime) return events;
  const open = events.filter((e): e is Push => e.kind === 'push' && !!e.commit && e.changed === null && !e.unknownChanges);
  if (!open.length) return events;
  const sites = (await autoDeploySiteRows(app.database.db, companyId)).filter(hasDeployPaths);
  const out: GitEvent[] = [];
  for (const e of events) out.push(open.includes(e as Push) ? await resolve(app, companyId, e as Push, sites) : e);
  return out;
}

async function resolve(app: AppContext, companyId: string, e: Push, sites: StaticSitesTable[]): Promise<Push> {
  const repos = new Set(e.repos.map(normalizeRepo).filter(Boolean));
  const site = sites.find((s) => repos.has(normalizeRepo(s.repo_url) ?? '') && siteFollows(s, e.branch));
  if (!site?.repo_url) return e;
  if (!e.before) return { ...e, unknownChanges: UNKNOWN.newBranch };
  // The site's address, not the payload's: the one the builds clone (with the company's token for it).
  const { key, access } = await mirrorAccess(app, app.database.db, companyId, site.repo_url);
  const fetched = await fetchMirror(app, key, site.repo_url, [e.branch], { timeoutMs: WEBHOOK_FETCH_TIMEOUT_MS, access });
  if ('error' in fetched) return { ...e, unknownChanges: UNKNOWN.fetchFailed };
  const changed = await fetched.mirror.changed(e.before, e.commit!.sha);
  return changed ? { ...e, changed } : { ...e, unknownChanges: UNKNOWN.forcePush };
}
