// Deployments of static sites: waiting -> inProgress -> success | failed | cancelled, driven by one
// durable job per deployment ('static-site-deployment.advance') that runs one step per execution
// on the simulated runtime (operation `static_site_deployment`, phases checkout, build, publish;
// a rollback only publishes the earlier build again).
//
// Deployments run in lanes: `production` (one at a time per site) and `preview:<branch>` (one at a
// time per branch; different branches run side by side, and beside production). Within a lane a
// new deployment waits behind the running and the waiting ones and starts, oldest first, when the
// lane frees. Every change to a lane takes its advisory lock first (PostgreSQL: any process), and
// every transition is conditional on the state it expects, so a step that runs twice changes
// nothing the second time. Only production deployments move the site's status.
import { servingChanged } from '../../shared/edge/index.js';
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest } from '../../shared/errors.js';
import { newId, randomHex } from '../../shared/ids.js';
import { enqueue, runNow } from '../../shared/jobs.js';
import type { Page } from '../../shared/pagination.js';
import type { LogLine, LogQuery } from '../../shared/runtime/logs.js';
import {
  beginPhases,
  cancelOnRequest,
  countRead,
  endPhases,
  environmentLines,
  findPhased,
  readPhased,
  logPhased,
  phaseJob,
  phasedLogs,
  WAIT_RECHECK_MS,
  type FinalStatus,
  type PhaseMachine,
} from '../../shared/runtime/phases.js';
import { checkBranch, deployPaths, previewLabel } from './git.js';
import {
  activeDeploymentRows,
  activeInLane,
  deploymentAhead,
  insertDeployment,
  latestProductionStatus,
  listDeploymentsPage,
  lockLane,
  setSiteStatus,
  siteDeployment,
  waitingInLane,
} from './deployments-storage.js';
import { findSite } from './find.js';
import { PRODUCTION, type RunningDeployment, type SiteStatus, type StaticSiteDeploymentsTable, type StaticSitesTable } from './storage.js';
import { deploymentListView, deploymentView } from './views.js';

export const ADVANCE = 'static-site-deployment.advance';
/** The simulated runtime's operation name (progression and fault rules). */
export const OPERATION = 'static_site_deployment';
const FINAL = new Set(['success', 'failed', 'cancelled', 'skipped']);

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Runs one step of a static site deployment and reschedules itself until it is final. */
    'static-site-deployment.advance': { deploymentId: string };
  }
}

const SITE_STATUS: Record<Exclude<StaticSiteDeploymentsTable['status'], 'skipped'>, SiteStatus> = {
  waiting: 'deploymentInProgress',
  inProgress: 'deploymentInProgress',
  success: 'deploymentSuccess',
  failed: 'deploymentFailed',
  cancelled: 'deploymentCancelled',
};

const laneOf = (isPreview: boolean, branch: string) => (isPreview ? `preview:${branch}` : PRODUCTION);

/** The site's status follows its latest production deployment that was not skipped; previews never change it. */
async function refreshSiteStatus(tx: Tx, siteId: string): Promise<void> {
  const latest = await latestProductionStatus(tx, siteId);
  if (!latest || latest.status === 'skipped') return;
  await setSiteStatus(tx, siteId, SITE_STATUS[latest.status]);
}

const log = (tx: Tx, d: StaticSiteDeploymentsTable, lines: LogLine[]) => logPhased(tx, machine, d, lines);

const startLines = (d: StaticSiteDeploymentsTable): LogLine[] => [
  { message: `${d.is_preview ? 'Preview' : 'Production'} deployment started (trigger: ${d.trigger}, branch ${d.branch})` },
  ...(d.build_of ? [{ message: `Publishing the build of deployment ${d.build_of} again; checkout and build skipped` }] : []),
];

/** Where a deployment is served: the site's hostname, or a per-branch preview hostname. */
export const servedAt = (s: StaticSitesTable, d: Pick<StaticSiteDeploymentsTable, 'is_preview' | 'branch'>) =>
  d.is_preview ? `https://${previewLabel(d.branch ?? 'preview')}--${s.hostname}` : `https://${s.hostname}`;

/** Refuses to deploy a site that is being (or failed to be) deleted. */
function assertDeployable(s: StaticSitesTable): void {
  if (s.status === 'deleting' || s.status === 'deletionFailed') throw badRequest('The static site is being deleted');
}

export interface DeployOptions {
  trigger: 'initial' | 'manual' | 'rollback' | 'push';
  type: 'manual' | 'automatic';
  branch: string;
  isPreview: boolean;
  /** Publish this earlier deployment's build again (rollback). */
  reuse?: StaticSiteDeploymentsTable;
  /** The commit to deploy when the trigger names one (a push); otherwise the branch's head at checkout. */
  commit?: { sha: string; message?: string | null; author?: string | null };
  initiatedBy?: string;
  /** Why there is nothing to deploy: the deployment is recorded `skipped` at once and runs nothing. */
  skipped?: string;
}

/** Starts (or queues behind its lane) a deployment of `s`. */
export async function createDeployment(ctx: CallContext, s: StaticSitesTable, o: DeployOptions): Promise<StaticSiteDeploymentsTable> {
  const { tx } = ctx;
  assertDeployable(s);
  const lane = laneOf(o.isPreview, o.branch);
  await lockLane(tx, s.id, lane);
  // A skipped deployment waits for nothing: it is final as it is recorded.
  const busy = !o.skipped && (await activeInLane(tx, s.id, lane));
  const now = new Date().toISOString();
  const src = o.reuse;
  const steps = src ? ['publish'] : ['checkout', 'build', 'publish'];
  const row: StaticSiteDeploymentsTable = {
    id: newId(),
    static_site_id: s.id,
    company_id: s.company_id,
    status: o.skipped ? 'skipped' : busy ? 'waiting' : 'inProgress',
    type: o.type,
    trigger: o.trigger,
    lane,
    is_preview: o.isPreview ? 1 : 0,
    steps: JSON.stringify(steps),
    phase: busy || o.skipped ? null : steps[0]!,
    phase_started_at: busy || o.skipped ? null : now,
    reads: 0,
    repo_url: src ? src.repo_url : s.repo_url,
    branch: o.branch,
    // A trigger names a branch, not a commit. The local runtime's checkout records the commit it
    // checked out; until then none is known (null). The simulated runtime has no repository: its
    // stand-in commit is a random id (the one its checkout names), and it has no message to claim.
    commit_sha: src ? src.commit_sha : (o.commit?.sha ?? (ctx.app.config.realRuntime ? null : randomHex(20))),
    commit_message: src ? src.commit_message : (o.commit?.message ?? null),
    author_login: src ? null : (o.commit?.author ?? null),
    author_img: null,
    cloud_build_id: src ? src.cloud_build_id : `build-${randomHex(8)}`,
    build_error: null,
    build_of: src ? (src.build_of ?? src.id) : null,
    initiated_by: o.initiatedBy ?? ctx.actor,
    started_at: busy ? null : now,
    finished_at: o.skipped ? now : null,
    created_at: now,
    updated_at: now,
  };
  await insertDeployment(tx, row);
  if (o.skipped) {
    await log(tx, row, [...startLines(row), { message: o.skipped }]);
    await ctx.app.events.emit(tx, 'STATIC_SITE_DEPLOY', row.company_id, { siteId: s.id, deploymentId: row.id });
    return row;
  }
  await log(
    tx,
    row,
    busy
      ? [
          {
            message: `Deployment queued: waiting for the earlier ${o.isPreview ? `preview deployments of branch ${o.branch}` : 'production deployments'} to finish`,
          },
        ]
      : startLines(row),
  );
  await enqueue(tx, { kind: ADVANCE, payload: { deploymentId: row.id }, subjectId: row.id });
  if (!o.isPreview) await refreshSiteStatus(tx, s.id);
  return row;
}

/** Cancels every deployment of the site that is not final (deletion). */
export async function cancelActiveDeployments(ctx: CallContext, siteId: string, reason: string): Promise<void> {
  const active = await activeDeploymentRows(ctx.tx, siteId);
  for (const d of active) await finish(ctx, d, 'cancelled', [{ message: reason, severity: 'warning' }]);
}

/** Moves an active deployment to a final status (conditional on its current status). */
async function finish(
  ctx: CallContext,
  d: StaticSiteDeploymentsTable,
  status: FinalStatus,
  lines: LogLine[],
  buildError: string | null = null,
): Promise<boolean> {
  const { tx, app } = ctx;
  await lockLane(tx, d.static_site_id, d.lane);
  if (!(await endPhases(tx, machine, d, status, lines, { build_error: buildError }))) return false;
  // A real build of a cancelled deployment stops here and now (the commands of its phase are killed).
  if (status === 'cancelled') app.runtimes.staticSites.cancel(d.id);
  if (!d.is_preview) await refreshSiteStatus(tx, d.static_site_id);
  // A new release is what the site serves once this commits.
  if (status === 'success') servingChanged(app, tx);
  await app.events.emit(tx, 'STATIC_SITE_DEPLOY', d.company_id, { siteId: d.static_site_id, deploymentId: d.id });
  // The deployments waiting in this lane may start now rather than at their next check.
  const waiting = await waitingInLane(tx, d.static_site_id, d.lane);
  await runNow(tx, waiting, ADVANCE);
  return true;
}

/** Starts a waiting deployment when nothing runs in its lane and no older one waits there. */
async function tryStart({ tx }: CallContext, d: StaticSiteDeploymentsTable): Promise<Date | undefined> {
  await lockLane(tx, d.static_site_id, d.lane);
  // The clock is read once the lock is held: the deployment this one waited for may have
  // finished while this step waited for the lock, and this one must not start before that end.
  const startAt = new Date();
  const ahead = await deploymentAhead(tx, d.static_site_id, d.lane, d.id, d.created_at);
  // The end of the deployment ahead wakes this one; the delay is only a safety net.
  if (ahead) return new Date(startAt.getTime() + WAIT_RECHECK_MS);
  if (!(await beginPhases(tx, machine, d, startAt, startLines(d)))) return undefined;
  if (!d.is_preview) await refreshSiteStatus(tx, d.static_site_id);
  return startAt;
}

/** Deployments of static sites on the shared phase machine (checkout, build, publish). */
const machine: PhaseMachine<StaticSiteDeploymentsTable, StaticSitesTable, typeof ADVANCE> = {
  table: 'static_site_deployments',
  ownerColumn: 'static_site_id',
  kind: ADVANCE,
  operation: OPERATION,
  final: FINAL,
  ownerTable: 'static_sites',
  start: tryStart,
  runtime: (app) => app.runtimes.staticSites,
  async request(_ctx, d, s) {
    return {
      targetId: s.id,
      details: {
        repo_url: d.repo_url,
        branch: d.branch,
        commit_sha: d.commit_sha,
        git_lfs_enabled: s.git_lfs_enabled === 1,
        root_directory: s.root_directory,
        install_command: s.install_command,
        build_command: s.build_command,
        node_version: s.node_version,
        published_directory: s.published_directory,
        reused_deployment_id: d.build_of,
        url: servedAt(s, d),
      },
    };
  },
  async phaseLines(ctx, d, s, phase) {
    if (phase !== 'build') return [];
    const system = ctx.app.ports.environment.system(ctx.app.config.brandPrefix, s, { ...d, trigger: d.trigger, docker_image_url: null });
    const env = await ctx.app.ports.environment.site(ctx, s, { is_preview: d.is_preview === 1, branch: d.branch }, system);
    return environmentLines(env, 'Build', phase);
  },
  finish,
};

export const advanceJob = (app: AppContext) => phaseJob(app, machine);

/**
 * Counts a client's read of a deployment (`d`; a read of the site passes its running production
 * deployment, null when none: see siteWithRunning). In `reads` progression the read that completes
 * a phase advances the deployment before answering, so polling loops see deterministic
 * transitions. Resolves to whether it counted.
 */
export function noteRead(app: AppContext, siteId: string, d: RunningDeployment | null): Promise<boolean> {
  return countRead(app, machine, d ?? undefined, (tx, { lane }) => lockLane(tx, siteId, lane));
}

export async function listDeployments(ctx: CallContext, siteId: string, page: Page) {
  await findSite(ctx, siteId);
  const res = await listDeploymentsPage(ctx.tx, siteId, page);
  return { ...res, data: res.data.map(deploymentListView) };
}

/** GET of one deployment; in `reads` progression the read counts (and may advance it) first. */
export async function getDeployment(ctx: CallContext, siteId: string, id: string) {
  await findSite(ctx, siteId);
  return deploymentView(await readPhased(ctx, machine, siteId, id, noteRead));
}

export async function deploymentLogs(ctx: CallContext, siteId: string, id: string, query: Omit<LogQuery, 'appId' | 'kind' | 'deploymentId'>) {
  const s = await findSite(ctx, siteId);
  return phasedLogs(ctx, machine, siteId, id, s.name, query);
}

export async function cancelDeployment(ctx: CallContext, siteId: string, id: string) {
  await findSite(ctx, siteId);
  const d = await findPhased(ctx.tx, machine, siteId, id);
  return cancelOnRequest(ctx, machine, d, d.status === 'waiting' ? 'Cancelled on request before it started' : 'Cancelled on request; the build was stopped');
}

/**
 * POST /static-sites/{id}/deployments: the latest commit of `branch` (default: the site's default
 * branch), or, with `deployment_id`, a rollback that publishes that successful deployment's build
 * again (its branch; `branch` is ignored). `is_preview` runs it in the branch's preview lane.
 */
export async function triggerDeployment(ctx: CallContext, siteId: string, body: { branch?: string; deployment_id?: string; is_preview?: boolean }) {
  const s = await findSite(ctx, siteId);
  assertDeployable(s);
  const isPreview = body.is_preview === true;
  if (body.deployment_id) {
    const src = await siteDeployment(ctx.tx, s.id, body.deployment_id);
    if (!src) throw badRequest(`deployment_id ${body.deployment_id} is not a deployment of this static site`);
    if (src.status !== 'success')
      throw badRequest(`deployment_id ${body.deployment_id} did not succeed (${src.status}); only a successful deployment can be deployed again`);
    return deploymentListView(
      await createDeployment(ctx, s, { trigger: 'rollback', type: 'manual', branch: src.branch ?? s.default_branch, isPreview, reuse: src }),
    );
  }
  const branch = checkBranch(body.branch) ?? s.default_branch;
  return deploymentListView(await createDeployment(ctx, s, { trigger: 'manual', type: 'manual', branch, isPreview }));
}

/**
 * A pushed commit (git webhooks and polling): a production deployment of the default branch, or a
 * preview of another branch when the site has previews on (undefined otherwise). `changed` lists
 * the files the push changed, null when the push does not say (then it deploys; a real build still
 * compares with the lane's previous release). No changed file under the deploy paths: `skipped`.
 */
export async function deployPush(
  ctx: CallContext,
  s: StaticSitesTable,
  o: { branch: string; commit: NonNullable<DeployOptions['commit']>; changed: string[] | null },
): Promise<StaticSiteDeploymentsTable | undefined> {
  const isPreview = o.branch !== s.default_branch;
  if (isPreview && !s.is_preview_enabled) return undefined;
  const allow = JSON.parse(s.allow_deploy_paths) as string[];
  const ignore = JSON.parse(s.ignore_deploy_paths) as string[];
  let skipped: string | undefined;
  if (o.changed && (allow.length || ignore.length)) {
    const { relevant, list } = deployPaths(allow, ignore);
    if (!o.changed.some(relevant)) skipped = `Deploy paths: none of the ${o.changed.length} files the push changed counts (${list}); nothing to deploy`;
  }
  return createDeployment(ctx, s, { trigger: 'push', type: 'automatic', branch: o.branch, isPreview, commit: o.commit, initiatedBy: 'git-push', skipped });
}
