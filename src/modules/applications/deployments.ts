// Deployments and their state machine: waiting -> inProgress -> success | failed | cancelled,
// with `skipped` for a waiting deployment that a newer one superseded. A deployment is driven by
// one durable job ('deployment.advance') that runs one step per execution and reschedules itself;
// every transition is a conditional update, so a step that runs twice (after a crash, or from a
// read in `reads` progression) changes nothing the second time.
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest } from '../../shared/errors.js';
import { idDigits, newId, randomHex } from '../../shared/ids.js';
import { supersedeJobs, runNow, type EnqueueOptions } from '../../shared/jobs.js';
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
import {
  activeDeploymentRows,
  activeDeployments,
  currentRelease,
  deploymentWithStatus,
  insertDeployment,
  latestAndWaiting,
  latestNotSkipped,
  latestStatus,
  listDeploymentsPage,
  lockApp,
  newestSuccessful,
  setAppStatus,
  skipWaiting,
} from './deployments-storage.js';
import { appWithActive, findApp } from './find.js';
import type { ActiveDeployment, ApplicationsTable, DeploymentsTable } from './storage.js';

// The statements whose plans a test checks (test/applications/deployments.test.ts).
export { activeOf, supersede, withStatus } from './deployments-storage.js';

const FINAL = new Set(['success', 'failed', 'cancelled', 'skipped']);
export const ADVANCE = 'deployment.advance';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Runs one step of a deployment and reschedules itself until it is final. */
    'deployment.advance': { deploymentId: string };
  }
}

const APP_STATUS: Record<string, ApplicationsTable['status']> = {
  waiting: 'deploymentInProgress',
  inProgress: 'deploymentInProgress',
  success: 'deploymentSuccess',
  failed: 'deploymentFailed',
  cancelled: 'deploymentCancelled',
};

export function deploymentView(d: DeploymentsTable) {
  return {
    id: d.id,
    app_id: d.app_id,
    status: d.status,
    type: d.type,
    trigger: d.trigger,
    steps: JSON.parse(d.steps) as ('checkout' | 'build' | 'rollout' | 'syncConnections')[],
    docker_image_url: d.docker_image_url,
    git_type: d.git_type as 'github' | 'bitbucket' | 'gitlab' | null,
    repo_url: d.repo_url,
    branch: d.branch,
    commit_sha: d.commit_sha,
    commit_message: d.commit_message,
    author_login: d.author_login,
    author_img: d.author_img,
    started_at: d.started_at,
    finished_at: d.finished_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

/** The application's status follows its latest deployment that was not skipped. */
export async function refreshAppStatus(tx: Tx, appId: string): Promise<void> {
  await followLatest(tx, appId, await latestStatus(tx, appId));
}

/** Sets the application's status from `latest`, its latest deployment that was not skipped (latestStatus). */
async function followLatest(tx: Tx, appId: string, latest: { status: DeploymentsTable['status'] } | undefined): Promise<void> {
  const status = latest && APP_STATUS[latest.status];
  if (status) await setAppStatus(tx, appId, status);
}

const log = (tx: Tx, d: DeploymentsTable, lines: LogLine[]) => logPhased(tx, machine, d, lines);

/** The lines of a deployment's start; a rollback or restart says whose build it reuses (it has no build step to say so). */
const startLines = (d: DeploymentsTable): LogLine[] => [
  { message: `Deployment started (trigger: ${d.trigger})` },
  ...(d.build_of ? [{ message: `Reusing the build of deployment ${d.build_of}; build step skipped` }] : []),
];

export interface DeployOptions {
  trigger: string;
  type?: 'manual' | 'automatic';
  /** Who started it when not the caller's actor (e.g. `deployment-hook`). */
  initiatedBy?: string | null;
  branch?: string;
  /** The commit to deploy when the trigger names one (a push); otherwise the branch's head at checkout. */
  commit?: { sha: string; message?: string | null; author?: string | null };
  dockerImage?: string;
  isRestart?: boolean;
  /**
   * `a` was read with the application's lock held (lockApp before the read), so its status is
   * current: no status write when it says the application is deploying already.
   */
  readLocked?: boolean;
  /**
   * Run the build of this earlier successful deployment instead of building: one of the same
   * application (rollback, restart) or of another one (promotion). The new deployment carries its
   * commit, branch and image, skips checkout and build, and rolls out with its own application's
   * variables and settings.
   */
  reuse?: DeploymentsTable;
  /** The application's active deployments, read with its lock held (with `a`, see appWithActive): not read again. */
  active?: ActiveDeployment[];
}

/**
 * Refuses to deploy an application that is going away or suspended (every way of deploying).
 * `subject` names it in the message (promotion names each target by id).
 */
export function assertDeployable(a: ApplicationsTable, subject = 'The application'): void {
  if (a.status === 'deleting') throw badRequest(`${subject} is being deleted`);
  // Every way of deploying (API, rollback, deployment hook, promotion) refuses a suspended application.
  if (a.is_suspended) throw badRequest(`${subject} is suspended; activate it before deploying`);
}

/** The time now, or a millisecond after the latest of `times` (ISO) if that is not earlier. */
function newerThan(times: string[]): string {
  const latest = times.reduce((m, t) => Math.max(m, Date.parse(t)), 0);
  return new Date(Math.max(Date.now(), latest + 1)).toISOString();
}

/** Starts (or queues) a deployment of `a`: API, rollback, restart, clone and the deployment hook all come here. */
export async function createDeployment(ctx: CallContext, a: ApplicationsTable, o: DeployOptions): Promise<DeploymentsTable> {
  const { tx, app } = ctx;
  assertDeployable(a);
  await lockApp(tx, a.id);
  const active = o.active ?? (await activeDeployments(tx, a.id));
  // Read the clock once the lock is held (on PostgreSQL it is taken with the read above), and be
  // newer than every deployment this one supersedes, even one created in the same millisecond:
  // the application's newest deployment by (created_at, id) is never a superseded one.
  const now = newerThan(active.map((d) => d.created_at));
  // A newer deployment supersedes every deployment still waiting (those just read: the lock is held).
  const waiting = active.filter((d) => d.status === 'waiting').map((d) => d.id);
  if (waiting.length) await skipWaiting(tx, a.id, now);
  const busy = active.some((d) => d.status === 'inProgress');
  const image = a.source === 'dockerImage';
  const steps = o.reuse ? ['rollout'] : image ? ['checkout', 'rollout'] : ['checkout', 'build', 'rollout'];
  const src = o.reuse;
  // A trigger names a branch, not a commit. The local runtime's checkout records the commit it
  // checked out; until then none is known (null). The simulated runtime has no repository: its
  // stand-in commit is a random id (the one its checkout names), and it has no message to claim.
  const standIn = image || app.config.realRuntime ? null : randomHex(20);
  const row: DeploymentsTable = {
    id: newId(),
    app_id: a.id,
    company_id: a.company_id,
    status: busy ? 'waiting' : 'inProgress',
    type: o.type ?? 'manual',
    trigger: o.trigger,
    steps: JSON.stringify(steps),
    phase: busy ? null : steps[0]!,
    phase_started_at: busy ? null : now,
    reads: 0,
    docker_image_url: src ? src.docker_image_url : image ? (o.dockerImage ?? a.docker_image) : null,
    git_type: src ? src.git_type : image ? null : a.git_type,
    repo_url: src ? src.repo_url : image ? null : a.repo_url,
    branch: src ? src.branch : image ? null : (o.branch ?? a.default_branch ?? 'main'),
    commit_sha: src ? src.commit_sha : (o.commit?.sha ?? standIn),
    commit_message: src ? src.commit_message : (o.commit?.message ?? null),
    author_login: src ? null : (o.commit?.author ?? null),
    author_img: null,
    build_of: src ? (src.build_of ?? src.id) : null,
    is_restart: o.isRestart ? 1 : 0,
    initiated_by: o.initiatedBy !== undefined ? o.initiatedBy : ctx.actor,
    started_at: busy ? null : now,
    finished_at: null,
    created_at: now,
    updated_at: now,
  };
  await insertDeployment(tx, row);
  await log(tx, row, busy ? [{ message: 'Deployment queued: waiting for the running deployment to finish' }] : startLines(row));
  if (!busy) await app.events.signal(tx, 'deployment.started', { application: a, deploymentId: row.id });
  // A waiting deployment is started by the end of the one ahead of it (finish() makes its job due
  // now); until then its job only looks again after the usual wait. The job of a deployment it
  // superseded carries on as its job (a queued one: a running one finds its deployment skipped).
  const job: EnqueueOptions<typeof ADVANCE> & { subjectId: string } = {
    kind: ADVANCE,
    payload: { deploymentId: row.id },
    subjectId: row.id,
    runAt: busy ? new Date(Date.now() + WAIT_RECHECK_MS) : undefined,
  };
  await supersedeJobs(tx, waiting, job);
  // The new deployment is the application's latest, waiting or in progress. Its status is only
  // written under the lock (deletion aside, which setAppStatus leaves alone): read under it, a
  // status that says so already stays so until this transaction ends.
  if (!(o.readLocked && a.status === 'deploymentInProgress')) await setAppStatus(tx, a.id, 'deploymentInProgress');
  return row;
}

export async function cancelActiveDeployments(ctx: CallContext, appId: string, reason: string) {
  const active = await activeDeploymentRows(ctx.tx, appId);
  for (const d of active) await finish(ctx, d, 'cancelled', [{ message: reason, severity: 'warning' }]);
}

/** Moves an active deployment to a final status (conditional on its current status). */
async function finish(ctx: CallContext, d: DeploymentsTable, status: FinalStatus, lines: LogLine[]): Promise<boolean> {
  const { tx, app } = ctx;
  await lockApp(tx, d.app_id);
  if (!(await endPhases(tx, machine, d, status, lines))) return false;
  // The latest deployment (the application's status follows it) and the one waiting behind this
  // one (it may start now rather than at its next check), read together.
  const [latest, waiting] = await latestAndWaiting(tx, d.app_id);
  await followLatest(tx, d.app_id, latest);
  await app.events.emit(tx, 'APP_DEPLOY', d.company_id, { appId: d.app_id, deploymentId: d.id });
  await runNow(tx, waiting, ADVANCE);
  return true;
}

/** Starts a waiting deployment once the application has no running one. */
async function start(ctx: CallContext, d: DeploymentsTable, a: ApplicationsTable): Promise<Date | undefined> {
  const { tx, app } = ctx;
  await lockApp(tx, d.app_id);
  // Read the clock once the lock is held: the deployment this one waited for may have finished
  // while this step waited for the lock, and this one must not start before that end.
  const startAt = new Date();
  const busy = await deploymentWithStatus(tx, d.app_id, 'inProgress');
  if (busy) return new Date(startAt.getTime() + WAIT_RECHECK_MS);
  if (!(await beginPhases(tx, machine, d, startAt, startLines(d)))) return undefined;
  await app.events.signal(tx, 'deployment.started', { application: a, deploymentId: d.id });
  await refreshAppStatus(tx, d.app_id);
  return startAt;
}

/** Deployments of applications on the shared phase machine (checkout, build, rollout). */
const machine: PhaseMachine<DeploymentsTable, ApplicationsTable, typeof ADVANCE> = {
  table: 'deployments',
  ownerColumn: 'app_id',
  kind: ADVANCE,
  operation: 'deployment',
  final: FINAL,
  ownerTable: 'applications',
  start,
  async request(ctx, d, a, phase) {
    return {
      targetId: d.app_id,
      details: {
        repo_url: d.repo_url,
        branch: d.branch,
        commit_sha: d.commit_sha,
        docker_image: d.docker_image_url,
        build_type: a.build_type,
        skip_build: !!d.build_of,
        reused_deployment_id: d.build_of,
        image: `registry.slipway.local/${a.namespace}:${d.commit_sha ? d.commit_sha.slice(0, 12) : idDigits(d.id, 12)}`,
        // What the rollout says it rolls out (see driver.ts); the other phases do not count them.
        ...(phase === 'rollout' ? { process_count: await ctx.app.ports.processes.count(ctx.tx, a.id) } : {}),
      },
    };
  },
  async phaseLines(ctx, d, a, phase) {
    if (phase !== 'build' && phase !== 'rollout') return [];
    const system = ctx.app.ports.environment.system(ctx.app.config.brandPrefix, a, d);
    const env = await ctx.app.ports.environment.application(ctx, a, system, phase === 'build' ? 'build' : 'runtime');
    return environmentLines(env, phase === 'build' ? 'Build' : 'Runtime', phase);
  },
  runtime: (app) => app.runtimes.applications,
  finish,
  async failed({ app, tx }, d, a) {
    await app.events.signal(tx, 'deployment.failed', { application: a, deploymentId: d.id });
  },
  async succeeded({ app, tx }, d, a) {
    // A suspended application keeps its processes stopped; activation starts the new release.
    if (!a.is_suspended) await app.events.signal(tx, 'application.released', { application: a, deploymentId: d.id });
  },
};

export const advanceJob = (app: AppContext) => phaseJob(app, machine);

/**
 * Counts a client's read of a deployment (or of its application: of the deployment in progress,
 * if any). In `reads` progression the read that completes a phase advances the deployment before
 * answering, so polling loops see deterministic transitions. Resolves to whether it counted.
 */
export function noteRead(app: AppContext, appId: string, d: { id: string; status: string } | undefined): Promise<boolean> {
  return countRead(app, machine, d, (tx) => lockApp(tx, appId));
}

export async function listDeployments(ctx: CallContext, appId: string, page: Page) {
  await findApp(ctx, appId);
  const res = await listDeploymentsPage(ctx.tx, appId, page);
  return { ...res, data: res.data.map(deploymentView) };
}

/** GET of one deployment; in `reads` progression the read counts (and may advance it) first. */
export async function getDeployment(ctx: CallContext, appId: string, id: string) {
  await findApp(ctx, appId);
  return deploymentView(await readPhased(ctx, machine, appId, id, noteRead));
}

export async function deploymentLogs(ctx: CallContext, appId: string, id: string, query: Omit<LogQuery, 'appId' | 'kind' | 'deploymentId'>) {
  const a = await findApp(ctx, appId);
  return phasedLogs(ctx, machine, appId, id, a.name, query);
}

export async function cancelDeployment(ctx: CallContext, appId: string, id: string) {
  await findApp(ctx, appId);
  return cancelOnRequest(ctx, machine, await findPhased(ctx.tx, machine, appId, id), 'Cancelled on request');
}

/** POST /applications/{id}/deployments: a new deployment, or a restart of the current release. */
export async function triggerDeployment(ctx: CallContext, appId: string, body: { branch?: string; docker_image?: string; is_restart?: boolean } | undefined) {
  // The lock first (createDeployment's own is then not taken again), so the application and its
  // active deployments are read as they are while this trigger holds it, in one statement. Another
  // company's id only holds its key until the 404.
  await lockApp(ctx.tx, appId);
  const { app: a, active } = await appWithActive(ctx, appId);
  assertDeployable(a);
  if (body?.is_restart) {
    const release = await currentRelease(ctx.tx, a.id);
    if (!release) throw badRequest('The application has no successful deployment to restart');
    return deploymentView(await createDeployment(ctx, a, { trigger: 'restart', isRestart: true, reuse: release, readLocked: true, active }));
  }
  if (body?.docker_image && a.source !== 'dockerImage') throw badRequest('docker_image applies only to applications whose source is dockerImage');
  return deploymentView(await createDeployment(ctx, a, { trigger: 'manual', branch: body?.branch, dockerImage: body?.docker_image, readLocked: true, active }));
}

/** Redeploys an earlier successful build: the release before the current one (or the current release after a failure). */
export async function rollback(ctx: CallContext, appId: string) {
  const { tx } = ctx;
  const a = await findApp(ctx, appId);
  assertDeployable(a);
  const successes = await newestSuccessful(tx, a.id, 2);
  const latest = await latestNotSkipped(tx, a.id);
  const target = latest && successes[0] && latest.id === successes[0].id ? successes[1] : successes[0];
  if (!target) throw badRequest('There is no earlier successful deployment to roll back to');
  return deploymentView(await createDeployment(ctx, a, { trigger: 'rollback', reuse: target }));
}

/**
 * Deploys the current release of `source` onto `target` without rebuilding (pipeline promotion):
 * one new deployment of `target` that reuses the source's build (same commit and image), with the
 * target's own variables and settings. 400 when the source has no successful deployment.
 */
export async function deployReleaseOnto(ctx: CallContext, source: ApplicationsTable, target: ApplicationsTable, trigger: string): Promise<DeploymentsTable> {
  const release = await currentRelease(ctx.tx, source.id);
  if (!release) throw badRequest(`Application ${source.id} has no successful deployment to promote`);
  assertDeployable(target, `Application ${target.id}`);
  return createDeployment(ctx, target, { trigger, reuse: release });
}

/**
 * A deployment of a pushed commit (git webhooks and polling): automatic, initiated by `git-push`,
 * superseding what waits as every trigger does. The caller has checked the branch.
 */
export async function deployPushedCommit(
  ctx: CallContext,
  a: ApplicationsTable,
  o: { trigger: string; branch: string; commit: NonNullable<DeployOptions['commit']> },
): Promise<DeploymentsTable> {
  return createDeployment(ctx, a, { trigger: o.trigger, type: 'automatic', initiatedBy: 'git-push', branch: o.branch, commit: o.commit });
}
