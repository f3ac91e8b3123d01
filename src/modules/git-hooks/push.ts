// What a push or a pull request does in one company, however it was learnt (a provider's webhook or
// the poller): the deployments of the applications and static sites that follow the pushed branch,
// static sites' previews of other branches, and pipelines' preview apps per pull request. The
// deployments are made by their modules' public functions, so the deployment rules (a newer
// deployment supersedes the waiting ones; lanes of static sites) are theirs.
import type { CallContext } from '../../shared/context.js';
import { ApiError } from '../../shared/errors.js';
import { autoDeployAppRows, deployPushedCommit } from '../applications/index.js';
import { closePullRequestApp, listPreviewPipelines, openPullRequestApp, updatePullRequestApp } from '../pipelines/index.js';
import { autoDeploySiteRows, deployPush } from '../static-sites/index.js';
import { hasDeployPaths, siteFollows } from './changes.js';
import type { GitEvent } from './providers.js';
import { normalizeRepo } from './repo.js';
import { advanceHead } from './storage.js';

export interface Triggered {
  service_type: 'app' | 'static-site';
  service_id: string;
  /** deployed, skipped (deploy paths), preview (a static site's branch), previewAppCreated, previewAppDeployed, previewAppDeleted, refused, ignored (the detail says why). */
  action: string;
  deployment_id: string | null;
  detail: string | null;
}

export interface Outcome {
  triggered: Triggered[];
  /** Why nothing happened, when nothing did. */
  notes: string[];
}

const ignored = (service_type: Triggered['service_type'], service_id: string): Triggered => ({
  service_type,
  service_id,
  action: 'ignored',
  deployment_id: null,
  detail: null,
});

type Push = Extract<GitEvent, { kind: 'push' }>;
type PullRequest = Extract<GitEvent, { kind: 'pullRequest' }>;

const repoSet = (urls: string[]) => new Set(urls.map(normalizeRepo).filter((x): x is string => !!x));

/** Acts on the events of one delivery (or one poll) for the company, in the caller's transaction. */
export async function actOn(ctx: CallContext, events: GitEvent[]): Promise<Outcome> {
  const out: Outcome = { triggered: [], notes: [] };
  if (!events.length) out.notes.push('Not a branch push or a pull request event this server acts on');
  for (const e of events) {
    if (e.kind === 'push') await onPush(ctx, e, out);
    else await onPullRequest(ctx, e, out);
  }
  return out;
}

/** A refusal of one service's module (suspended, being deleted, a Docker image source) is recorded; the others go on. */
async function each<T>(out: Outcome, what: Omit<Triggered, 'action' | 'deployment_id' | 'detail'>, run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    out.triggered.push({ ...what, action: 'refused', deployment_id: null, detail: e.message });
    return undefined;
  }
}

async function onPush(ctx: CallContext, e: Push, out: Outcome): Promise<void> {
  const { tx, companyId } = ctx;
  if (!e.commit) {
    out.notes.push(`Branch ${e.branch} was deleted; nothing to deploy`);
    return;
  }
  const repos = repoSet(e.repos);
  const ofRepo = (x: { repo_url: string | null }) => repos.has(normalizeRepo(x.repo_url) ?? '');
  const apps = (await autoDeployAppRows(tx, companyId, { includeOff: true })).filter(ofRepo);
  const sites = (await autoDeploySiteRows(tx, companyId, { includeOff: true })).filter(ofRepo);
  const followsApp = (a: (typeof apps)[number]) => (a.default_branch ?? 'main') === e.branch;
  const followsSite = (s: (typeof sites)[number]) => siteFollows(s, e.branch);
  // Those with auto_deploy off that the push would have deployed are told why nothing did, on their own pages.
  for (const a of apps.filter((x) => !x.auto_deploy && followsApp(x))) out.triggered.push({ ...ignored('app', a.id), detail: 'auto_deploy is off' });
  for (const s of sites.filter((x) => !x.auto_deploy && followsSite(x))) out.triggered.push({ ...ignored('static-site', s.id), detail: 'auto_deploy is off' });
  const appsOfRepo = apps.filter((a) => a.auto_deploy);
  const sitesOfRepo = sites.filter((s) => s.auto_deploy);
  const appsHit = appsOfRepo.filter(followsApp);
  const sitesHit = sitesOfRepo.filter(followsSite);
  // The services of the repository that do not follow the branch are told why, on their own pages.
  for (const a of appsOfRepo.filter((x) => !appsHit.includes(x)))
    out.triggered.push({ ...ignored('app', a.id), detail: `Follows branch ${a.default_branch ?? 'main'}, not ${e.branch}` });
  for (const s of sitesOfRepo.filter((x) => !sitesHit.includes(x)))
    out.triggered.push({ ...ignored('static-site', s.id), detail: `Follows branch ${s.default_branch}, not ${e.branch} (previews of other branches are off)` });
  if (!appsHit.length && !sitesHit.length) {
    out.notes.push(`No application or static site with auto_deploy follows branch ${e.branch} of this repository`);
    return;
  }
  // The head as every service of this repository knows it: a push learnt twice (webhook and poll) deploys once.
  const repo = normalizeRepo([...appsHit.map((a) => a.repo_url), ...sitesHit.map((s) => s.repo_url)][0])!;
  if (!(await advanceHead(tx, companyId, repo, e.branch, e.commit.sha))) {
    const why = `Commit ${e.commit.sha.slice(0, 12)} of branch ${e.branch} was seen already (deployed once)`;
    out.notes.push(why);
    for (const a of appsHit) out.triggered.push({ ...ignored('app', a.id), detail: why });
    for (const s of sitesHit) out.triggered.push({ ...ignored('static-site', s.id), detail: why });
    return;
  }
  const commit = e.commit;
  for (const a of appsHit) {
    const what = { service_type: 'app' as const, service_id: a.id };
    const d = await each(out, what, () => deployPushedCommit(ctx, a, { trigger: 'push', branch: e.branch, commit }));
    if (d) out.triggered.push({ ...what, action: 'deployed', deployment_id: d.id, detail: null });
  }
  for (const s of sitesHit) {
    const what = { service_type: 'static-site' as const, service_id: s.id };
    const d = await each(out, what, () => deployPush(ctx, s, { branch: e.branch, commit, changed: e.changed }));
    if (!d) continue;
    const action = d.status === 'skipped' ? 'skipped' : d.is_preview ? 'preview' : 'deployed';
    // A site with deploy paths is told when they could not apply (the push's files unknown).
    const unknown = e.changed === null && hasDeployPaths(s) ? (e.unknownChanges ?? null) : null;
    out.triggered.push({ ...what, action, deployment_id: d.id, detail: unknown });
  }
}

async function onPullRequest(ctx: CallContext, e: PullRequest, out: Outcome): Promise<void> {
  const repos = repoSet(e.repos);
  const pipelines = (await listPreviewPipelines(ctx.tx, ctx.companyId)).filter((p) => repos.has(normalizeRepo(p.repo_url) ?? ''));
  if (!pipelines.length) {
    out.notes.push('No pipeline with preview apps builds this repository');
    return;
  }
  const pr = { number: e.number, branch: e.branch, baseBranch: e.baseBranch, commit: e.commit };
  for (const p of pipelines) {
    if (e.action === 'close') {
      const removed = await closePullRequestApp(ctx, p.id, e.number, p.delete_stale_apps === 1);
      if (removed) out.triggered.push({ service_type: 'app', service_id: removed, action: 'previewAppDeleted', deployment_id: null, detail: null });
      else out.notes.push(`Pull request #${e.number} closed; pipeline ${p.id} keeps its preview app (delete_stale_apps is off) or has none`);
      continue;
    }
    if (e.action === 'update') {
      const d = await updatePullRequestApp(ctx, p.id, pr);
      if (d) {
        out.triggered.push({ service_type: 'app', service_id: d.app_id, action: 'previewAppDeployed', deployment_id: d.id, detail: null });
        continue;
      }
    }
    if (!p.auto_create_app) {
      out.notes.push(`Pipeline ${p.id} does not create preview apps for pull requests (auto_create_app is off)`);
      continue;
    }
    const what = { service_type: 'app' as const, service_id: p.id };
    const created = await each(out, what, () => openPullRequestApp(ctx, p.id, pr));
    if (created) out.triggered.push({ service_type: 'app', service_id: created.id, action: 'previewAppCreated', deployment_id: null, detail: null });
    else if (created === undefined && !out.triggered.some((t) => t.service_id === p.id))
      out.notes.push(`Pipeline ${p.id} has a preview app for pull request #${e.number} already, or no application to copy`);
  }
}
