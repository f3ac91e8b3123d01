// Preview apps of a pipeline: its `preview` stage (first in the pipeline, at most one, with the
// settings the stage row holds), and the short-lived copies of an application placed there, one per
// branch or pull request. A preview app is deleted when preview apps are disabled, with its
// pipeline, or once it has not been deployed for the stage's stale_app_days (the expiry job, one
// per preview app while the stage deletes stale apps). Changes to the stage take the pipeline's
// lock. Applications are reached only through the applications module's public functions.
import { systemCall, type AppContext, type CallContext } from '../../shared/context.js';
import { badRequest } from '../../shared/errors.js';
import { cancelJobs, enqueue, type JobKind } from '../../shared/jobs.js';
import { lastDeployedAt } from '../applications/index.js';
import { cloneApp, deleteApp, deployPushedCommit, type CloneAs } from '../applications/index.js';
import { findApp } from '../applications/index.js';
import { DEFAULT_STALE_DAYS, findPipeline, newStage, roomForStage } from './rules.js';
import {
  deleteStageWithApps,
  findPipelineApp,
  findPreviewApp,
  findPullRequestApp,
  findPreviewStage,
  findStageById,
  insertPipelineApp,
  insertStage,
  listStageAppIds,
  listPlacedApps,
  listPreviewPipelines,
  listStages,
  lockPipeline,
  renumber,
  shiftAllStages,
  updatePipelineColumns,
  updateStageColumns,
  type PipelineStagesTable,
} from './storage.js';

export const EXPIRE_JOB = 'pipeline.preview-expire';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Removes a preview app once it has not been deployed for its stage's stale_app_days. */
    'pipeline.preview-expire': { appId: string };
  }
}

export interface PreviewSettings {
  repo_url?: string;
  auto_create_app?: boolean;
  delete_stale_apps?: boolean;
  stale_app_days?: number;
}

/** Adds the preview stage first in the pipeline, with the given settings (the contract's defaults otherwise). */
export async function enablePreview(ctx: CallContext, id: string, body: PreviewSettings) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const p = await findPipeline(ctx, id);
  if (await findPreviewStage(tx, id))
    throw badRequest('Preview apps are already enabled on this pipeline; change their settings with PUT /pipelines/{id}/preview');
  if (!body.repo_url && !p.repo_url) throw badRequest('repo_url is required: the pipeline has no Git repository yet');
  const stages = await listStages(tx, id);
  roomForStage(stages);
  const now = new Date().toISOString();
  await renumber(tx, stages, now);
  await shiftAllStages(tx, id, now);
  const stage: PipelineStagesTable = {
    ...newStage(p, { display_name: 'Preview', type: 'preview', position: 0, branch: null }, now),
    auto_create_app: body.auto_create_app ? 1 : 0,
    delete_stale_apps: body.delete_stale_apps ? 1 : 0,
    stale_app_days: body.stale_app_days ?? DEFAULT_STALE_DAYS,
  };
  await insertStage(tx, stage);
  await updatePipelineColumns(tx, id, { repo_url: body.repo_url ?? p.repo_url, updated_at: now });
  return { message: 'Preview apps enabled' };
}

/** Removes the preview stage; its preview apps are deleted (the applications' deletion jobs). */
export async function disablePreview(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await findPreviewStage(tx, id);
  if (!stage) throw badRequest('Preview apps are not enabled on this pipeline');
  await removePreviewApps(ctx, await listStageAppIds(tx, stage.id));
  await deleteStageWithApps(tx, stage.id);
  await renumber(tx, await listStages(tx, id), new Date().toISOString());
  return { message: 'Preview apps disabled; existing preview apps are being deleted' };
}

/** Changes the preview settings; a changed stale-app rule is re-applied to every existing preview app. */
export async function updatePreview(ctx: CallContext, id: string, body: PreviewSettings) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await findPreviewStage(tx, id);
  if (!stage) throw badRequest('Preview apps are not enabled on this pipeline; enable them first (POST /pipelines/{id}/preview/enable)');
  const now = new Date().toISOString();
  const b = (v: boolean | undefined, cur: number) => (v === undefined ? cur : v ? 1 : 0);
  const next = {
    auto_create_app: b(body.auto_create_app, stage.auto_create_app),
    delete_stale_apps: b(body.delete_stale_apps, stage.delete_stale_apps),
    stale_app_days: body.stale_app_days ?? stage.stale_app_days,
  };
  await updateStageColumns(tx, stage.id, { ...next, updated_at: now });
  if (body.repo_url) await updatePipelineColumns(tx, id, { repo_url: body.repo_url, updated_at: now });
  if (next.delete_stale_apps !== stage.delete_stale_apps || next.stale_app_days !== stage.stale_app_days) {
    for (const appId of await listStageAppIds(tx, stage.id)) {
      await cancelJobs(tx, appId, EXPIRE_JOB);
      if (next.delete_stale_apps) await enqueue(tx, { kind: EXPIRE_JOB, payload: { appId }, subjectId: appId });
    }
  }
  return { message: 'Preview settings updated' };
}

/** Deletes these preview apps (the applications' deletion jobs) and stops watching them. */
export async function removePreviewApps(ctx: CallContext, appIds: string[]) {
  for (const appId of appIds) {
    await cancelJobs(ctx.tx, appId, EXPIRE_JOB);
    await deleteApp(systemCall(ctx.app, ctx.tx, ctx.companyId), appId);
  }
}

/**
 * POST /applications/{id}/preview-apps: a preview app of a branch (or pull request) of an
 * application that sits in a pipeline with preview apps enabled. It is a clone of the source
 * (processes, variables, build settings) of type `previewApp`, building the branch from the
 * pipeline's repository, placed in the preview stage; it is deleted when preview apps are
 * disabled, with the pipeline, or once it has not been deployed for the stage's stale_app_days.
 */
export async function createPreviewApp(
  ctx: CallContext,
  sourceId: string,
  body: { branch: string; pull_request_number?: number | null; display_name?: string },
  commit?: CloneAs['commit'],
) {
  const { tx } = ctx;
  const src = await findApp(ctx, sourceId);
  const placed = await findPipelineApp(tx, sourceId);
  if (!placed) throw badRequest(`Application ${sourceId} is not in a pipeline; add it to a pipeline stage and enable preview apps first`);
  if (placed.is_preview) throw badRequest(`Application ${sourceId} is itself a preview app`);
  await lockPipeline(tx, placed.pipeline_id);
  const stage = await findPreviewStage(tx, placed.pipeline_id);
  if (!stage) throw badRequest(`Preview apps are not enabled on pipeline ${placed.pipeline_id}`);
  const p = await findPipeline(ctx, placed.pipeline_id);
  const pr = body.pull_request_number ?? null;
  const displayName = body.display_name ?? `${src.display_name} ${pr ? `PR #${pr}` : `(${body.branch})`}`.slice(0, 255);
  const created = await cloneApp(ctx, sourceId, { display_name: displayName }, { type: 'previewApp', branch: body.branch, repoUrl: p.repo_url, commit });
  await insertPipelineApp(tx, {
    app_id: created.id,
    stage_id: stage.id,
    pipeline_id: p.id,
    company_id: p.company_id,
    is_preview: 1,
    source_app_id: sourceId,
    branch: body.branch,
    pull_request_number: pr,
    created_at: new Date().toISOString(),
  });
  if (stage.delete_stale_apps) await enqueue(tx, { kind: EXPIRE_JOB, payload: { appId: created.id }, subjectId: created.id });
  return created;
}

/** Deletes a stale preview app, or looks again when it would become stale. */
export const expireJob = (app: AppContext): JobKind<typeof EXPIRE_JOB> => ({
  async run(tx, job) {
    const row = await findPreviewApp(tx, job.payload.appId);
    if (!row) return;
    const stage = await findStageById(tx, row.stage_id);
    if (!stage || !stage.delete_stale_apps) return;
    const last = (await lastDeployedAt(tx, row.app_id)) ?? row.created_at;
    const due = Date.parse(last) + stage.stale_app_days * app.config.previewDayMs;
    if (Date.now() < due) return { rescheduleAt: new Date(due) };
    await deleteApp(systemCall(app, tx, row.company_id), row.app_id);
  },
});

// Pull requests (git webhooks): a preview app per pull request of a pipeline with preview apps on.

export { listPreviewPipelines };

export interface PullRequest {
  number: number;
  /** The branch with the changes, and the one they would be merged into. */
  branch: string;
  baseBranch: string;
  commit: NonNullable<CloneAs['commit']>;
}

/**
 * A pull request opened or reopened: a preview app of the pipeline's base application, deployed at
 * the pull request's head. The base is the application in the stage that tracks the target branch,
 * else the one in the first stage after preview. Undefined when the pull request has its preview
 * app already, or the pipeline has no git application to copy.
 */
export async function openPullRequestApp(ctx: CallContext, pipelineId: string, pr: PullRequest) {
  await lockPipeline(ctx.tx, pipelineId);
  if (await findPullRequestApp(ctx.tx, pipelineId, pr.number)) return undefined;
  const placed = (await listPlacedApps(ctx.tx, pipelineId)).filter((x) => !x.is_preview).sort((a, b) => a.position - b.position);
  const base = placed.find((x) => x.branch === pr.baseBranch) ?? placed[0];
  if (!base) return undefined;
  return createPreviewApp(ctx, base.app_id, { branch: pr.branch, pull_request_number: pr.number }, pr.commit);
}

/** New commits on a pull request: its preview app deploys the new head. Undefined when it has none. */
export async function updatePullRequestApp(ctx: CallContext, pipelineId: string, pr: PullRequest) {
  const row = await findPullRequestApp(ctx.tx, pipelineId, pr.number);
  if (!row) return undefined;
  const a = await findApp(ctx, row.app_id);
  return deployPushedCommit(ctx, a, { trigger: 'push', branch: pr.branch, commit: pr.commit });
}

/** A pull request closed or merged: its preview app is deleted when the preview stage deletes stale apps. The id deleted, if any. */
export async function closePullRequestApp(ctx: CallContext, pipelineId: string, number: number, deleteStale: boolean) {
  await lockPipeline(ctx.tx, pipelineId);
  const row = await findPullRequestApp(ctx.tx, pipelineId, number);
  if (!row || !deleteStale) return undefined;
  await removePreviewApps(ctx, [row.app_id]);
  return row.app_id;
}
