// Pipelines: ordered stages of applications, promotion of a release from one stage to later ones,
// and preview apps (a `preview` stage holding short-lived copies of an application, one per branch
// or pull request). Applications are reached only through the applications module's public
// functions (findApp, cloneApp, deleteApp, setAppProject, deployReleaseOnto, lastDeployedAt).
import { systemCall, type AppContext, type CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { missingPermissionMessage, type Permission } from '../../shared/auth/rbac.js';
import { badRequest, forbidden, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { cancelJobs, enqueue, type JobKind } from '../../shared/jobs.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { deployReleaseOnto, lastDeployedAt } from '../applications/deployments.js';
import { cloneApp, deleteApp, setAppProject } from '../applications/service.js';
import { findApp } from '../applications/storage.js';
import { forgetService, placeService } from '../projects/service.js';
import { findPipeline, findStage, stagesOf, type PipelineAppsTable, type PipelinesTable, type PipelineStagesTable } from './storage.js';

export const EXPIRE_JOB = 'pipeline.preview-expire';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Removes a preview app once it has not been deployed for its stage's stale_app_days. */
    'pipeline.preview-expire': { appId: string };
  }
}

/** Stage orders run 0..50 (the contract's range), so a pipeline holds at most 51 stages. */
const MAX_STAGES = 51;
const DEFAULT_STALE_DAYS = 5;

const bool = (n: number) => n === 1;

const stageSummary = (s: PipelineStagesTable) => ({ id: s.id, display_name: s.display_name, type: s.type, order: s.position });

function stageDetail(s: PipelineStagesTable) {
  return {
    id: s.id,
    pipeline_id: s.pipeline_id,
    display_name: s.display_name,
    type: s.type,
    order: s.position,
    branch: s.branch,
    auto_create_app: bool(s.auto_create_app),
    delete_stale_apps: bool(s.delete_stale_apps),
    stale_app_days: s.stale_app_days,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

const head = (p: PipelinesTable) => ({ id: p.id, company_id: p.company_id, project_id: p.project_id, display_name: p.display_name, type: p.type });

/** Create and update: the pipeline with its stages' summaries. */
const pipelineView = (p: PipelinesTable, stages: PipelineStagesTable[]) => ({
  ...head(p),
  stages: stages.map(stageSummary),
  created_at: p.created_at,
  updated_at: p.updated_at,
});

/** Serializes changes to one pipeline's stages and preview settings (PostgreSQL; SQLite has one writer). */
const lockPipeline = (tx: Tx, id: string) => lockFor(tx, `pipeline:${id}`);

/** Whether the calling key holds `permission` for application `appId` (system calls hold everything). */
function keyMay(ctx: CallContext, permission: Permission, appId: string): boolean {
  if (!ctx.grants) return true;
  const g = ctx.grants.get(permission);
  return !!g && (g.all || g.ids.has(appId));
}

/** The application, if the key may see it (404 otherwise, as for any application it cannot see). */
async function visibleApp(ctx: CallContext, appId: string) {
  if (!keyMay(ctx, 'APP:READ', appId)) throw notFound('Application');
  return findApp(ctx, appId);
}

export async function listPipelines(ctx: CallContext, page: Page) {
  const { tx, companyId, scope } = ctx;
  let q = tx.selectFrom('pipelines').selectAll().where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  const res = await paginate(q, page);
  const ids = res.data.map((p) => p.id);
  const stages = ids.length
    ? await tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', 'in', ids).orderBy('position').orderBy('id').execute()
    : [];
  return {
    ...res,
    data: res.data.map((p) => ({
      id: p.id,
      display_name: p.display_name,
      type: p.type,
      stages: stages.filter((s) => s.pipeline_id === p.id).map(stageSummary),
      created_at: p.created_at,
      updated_at: p.updated_at,
    })),
  };
}

function newStage(p: PipelinesTable, fields: Pick<PipelineStagesTable, 'display_name' | 'type' | 'position' | 'branch'>, now: string): PipelineStagesTable {
  return {
    id: newId(),
    pipeline_id: p.id,
    company_id: p.company_id,
    ...fields,
    auto_create_app: 0,
    delete_stale_apps: 0,
    stale_app_days: DEFAULT_STALE_DAYS,
    created_at: now,
    updated_at: now,
  };
}

/** A new pipeline has two stages: Dev (standard) and Production (prod). */
export async function createPipeline(ctx: CallContext, body: { display_name: string; type: PipelinesTable['type']; project_id?: string }) {
  const { tx, companyId } = ctx;
  const now = new Date().toISOString();
  const p: PipelinesTable = {
    id: newId(),
    company_id: companyId,
    project_id: body.project_id ?? null,
    display_name: body.display_name,
    type: body.type,
    repo_url: null,
    created_at: now,
    updated_at: now,
  };
  await tx.insertInto('pipelines').values(p).execute();
  const stages = [
    newStage(p, { display_name: 'Dev', type: 'standard', position: 0, branch: null }, now),
    newStage(p, { display_name: 'Production', type: 'prod', position: 1, branch: null }, now),
  ];
  await tx.insertInto('pipeline_stages').values(stages).execute();
  await placeService(ctx, p.id, 'pipeline', p.project_id);
  return pipelineView(p, stages);
}

export async function getPipeline(ctx: CallContext, id: string) {
  const p = await findPipeline(ctx, id);
  return { ...head(p), stages: (await stagesOf(ctx, id)).map(stageDetail), created_at: p.created_at, updated_at: p.updated_at };
}

/** Numbers the stages 0..n-1 in their current order (after a stage left or orders were given). */
async function renumber(tx: Tx, stages: PipelineStagesTable[], now: string) {
  for (const [i, s] of stages.entries())
    if (s.position !== i) await tx.updateTable('pipeline_stages').set({ position: i, updated_at: now }).where('id', '=', s.id).execute();
}

export interface UpdateInput {
  display_name?: string;
  type?: PipelinesTable['type'];
  stage_order?: { stage_id: string; order: number }[];
  project_id?: string | null;
}

/**
 * Name, type, project and stage order. `stage_order` gives stages new positions; the stages not
 * named keep theirs; two stages may not end on the same position. Orders are then renumbered
 * 0..n-1 keeping that sequence.
 */
export async function updatePipeline(ctx: CallContext, id: string, u: UpdateInput) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const p = await findPipeline(ctx, id);
  const now = new Date().toISOString();
  let stages = await stagesOf(ctx, id);
  if (u.stage_order) {
    const wanted = new Map<string, number>();
    for (const o of u.stage_order) {
      if (!stages.some((s) => s.id === o.stage_id)) throw badRequest(`Stage ${o.stage_id} is not a stage of pipeline ${id}`);
      if (wanted.has(o.stage_id)) throw badRequest(`Stage ${o.stage_id} is listed more than once in stage_order`);
      wanted.set(o.stage_id, o.order);
    }
    const positions = new Map<number, string>();
    for (const s of stages) {
      const pos = wanted.get(s.id) ?? s.position;
      const other = positions.get(pos);
      if (other) throw badRequest(`Stages ${other} and ${s.id} would both have order ${pos}`);
      positions.set(pos, s.id);
    }
    stages = [...positions.entries()].sort((a, b) => a[0] - b[0]).map(([pos, sid]) => ({ ...stages.find((s) => s.id === sid)!, position: pos }));
    for (const s of stages) await tx.updateTable('pipeline_stages').set({ position: s.position, updated_at: now }).where('id', '=', s.id).execute();
    await renumber(tx, stages, now);
    stages = await stagesOf(ctx, id);
  }
  const next: PipelinesTable = {
    ...p,
    display_name: u.display_name ?? p.display_name,
    type: u.type ?? p.type,
    project_id: u.project_id !== undefined ? u.project_id : p.project_id,
    updated_at: now,
  };
  await tx
    .updateTable('pipelines')
    .set({ display_name: next.display_name, type: next.type, project_id: next.project_id, updated_at: now })
    .where('id', '=', id)
    .execute();
  if (next.project_id !== p.project_id) await placeService(ctx, id, 'pipeline', next.project_id);
  return pipelineView(next, stages);
}

/** Deletes the pipeline and its stages: applications are unlinked, preview apps are deleted. */
export async function deletePipeline(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const previews = await tx.selectFrom('pipeline_apps').select('app_id').where('pipeline_id', '=', id).where('is_preview', '=', 1).execute();
  await removePreviewApps(
    ctx,
    previews.map((r) => r.app_id),
  );
  await tx.deleteFrom('pipeline_apps').where('pipeline_id', '=', id).execute();
  await tx.deleteFrom('pipeline_stages').where('pipeline_id', '=', id).execute();
  await tx.deleteFrom('pipelines').where('id', '=', id).execute();
  await forgetService(tx, id);
  return { message: 'Pipeline deleted' };
}

/** A new `standard` stage at position `insert_before` (or last); the stages from there on move up one. */
export async function createStage(ctx: CallContext, id: string, body: { display_name: string; insert_before: number; branch?: string | null }) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const p = await findPipeline(ctx, id);
  const stages = await stagesOf(ctx, id);
  if (stages.length >= MAX_STAGES) throw badRequest(`A pipeline has at most ${MAX_STAGES} stages (orders 0 to ${MAX_STAGES - 1})`);
  const now = new Date().toISOString();
  await renumber(tx, stages, now);
  const position = Math.min(body.insert_before, stages.length);
  await tx
    .updateTable('pipeline_stages')
    .set((eb) => ({ position: eb('position', '+', 1), updated_at: now }))
    .where('pipeline_id', '=', id)
    .where('position', '>=', position)
    .execute();
  const stage = newStage(p, { display_name: body.display_name, type: 'standard', position, branch: body.branch ?? null }, now);
  await tx.insertInto('pipeline_stages').values(stage).execute();
  return stageDetail(stage);
}

/** Deletes a stage (not the preview stage: disable preview for that); its applications are unlinked. */
export async function deleteStage(ctx: CallContext, id: string, stageId: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await findStage(ctx, id, stageId);
  if (stage.type === 'preview') throw badRequest('The preview stage is removed by disabling preview apps (POST /pipelines/{id}/preview/disable)');
  await tx.deleteFrom('pipeline_apps').where('stage_id', '=', stageId).execute();
  await tx.deleteFrom('pipeline_stages').where('id', '=', stageId).execute();
  await renumber(tx, await stagesOf(ctx, id), new Date().toISOString());
  return { message: 'Pipeline stage deleted' };
}

/**
 * Puts an application of the company into a stage. The primary key on `pipeline_apps.app_id`
 * decides when two requests place the same application at once: the second inserts nothing and
 * is answered 400. The application joins the pipeline's project, if it has one.
 */
export async function addApp(ctx: CallContext, id: string, stageId: string, appId: string) {
  const { tx } = ctx;
  const p = await findPipeline(ctx, id);
  const stage = await findStage(ctx, id, stageId);
  if (stage.type === 'preview') throw badRequest('Applications enter the preview stage only as preview apps (POST /applications/{id}/preview-apps)');
  const a = await visibleApp(ctx, appId);
  if (a.type === 'previewApp') throw badRequest(`Application ${appId} is a preview app; preview apps stay in their preview stage`);
  if (a.status === 'deleting') throw badRequest(`Application ${appId} is being deleted`);
  const row: PipelineAppsTable = {
    app_id: appId,
    stage_id: stageId,
    pipeline_id: id,
    company_id: p.company_id,
    is_preview: 0,
    source_app_id: null,
    branch: null,
    pull_request_number: null,
    created_at: new Date().toISOString(),
  };
  const inserted = await tx
    .insertInto('pipeline_apps')
    .values(row)
    .onConflict((oc) => oc.column('app_id').doNothing())
    .returning('app_id')
    .executeTakeFirst();
  if (!inserted) {
    const at = await tx.selectFrom('pipeline_apps').select(['pipeline_id', 'stage_id']).where('app_id', '=', appId).executeTakeFirst();
    throw badRequest(
      `Application ${appId} is already in a pipeline stage${at ? ` (stage ${at.stage_id} of pipeline ${at.pipeline_id})` : ''}; an application belongs to at most one stage`,
    );
  }
  if (p.project_id) await setAppProject(ctx, appId, p.project_id);
  return { message: 'Application added to the pipeline stage' };
}

export async function removeApp(ctx: CallContext, id: string, stageId: string, appId: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await findStage(ctx, id, stageId);
  if (!keyMay(ctx, 'APP:READ', appId)) throw notFound('Application');
  const row = await tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', appId).where('stage_id', '=', stageId).executeTakeFirst();
  if (!row) throw notFound('Application in this stage');
  if (row.is_preview) throw badRequest(`Application ${appId} is a preview app; it leaves the preview stage when it is deleted or preview apps are disabled`);
  await tx.deleteFrom('pipeline_apps').where('app_id', '=', appId).execute();
  return { message: 'Application removed from the pipeline stage' };
}

/**
 * Deploys the source application's current release (its build: same commit and image, no
 * rebuild) onto each target: one deployment per target, each with the target's own variables
 * and settings. Every target must sit in a later stage of this pipeline; preview apps are never
 * promoted. All checks run before the first deployment, and the request is one transaction.
 */
export async function promote(ctx: CallContext, id: string, body: { source_app_id: string; target_app_ids: string[] }) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  const placed = await tx
    .selectFrom('pipeline_apps')
    .innerJoin('pipeline_stages', 'pipeline_stages.id', 'pipeline_apps.stage_id')
    .select(['pipeline_apps.app_id', 'pipeline_apps.is_preview', 'pipeline_stages.position'])
    .where('pipeline_apps.pipeline_id', '=', id)
    .execute();
  const where = new Map(placed.map((r) => [r.app_id, r]));
  const src = where.get(body.source_app_id);
  if (!src || !keyMay(ctx, 'APP:READ', body.source_app_id)) throw badRequest(`Application ${body.source_app_id} is not in pipeline ${id}`);
  if (src.is_preview) throw badRequest(`Application ${body.source_app_id} is a preview app; preview apps are never promoted`);
  const seen = new Set<string>();
  for (const t of body.target_app_ids) {
    if (seen.has(t)) throw badRequest(`Application ${t} is listed more than once in target_app_ids`);
    seen.add(t);
    const at = where.get(t);
    if (!at || !keyMay(ctx, 'APP:READ', t)) throw badRequest(`Application ${t} is not in pipeline ${id}`);
    if (t === body.source_app_id) throw badRequest(`Application ${t} is the source; it cannot also be a target`);
    if (at.is_preview) throw badRequest(`Application ${t} is a preview app; preview apps are never promoted`);
    if (at.position <= src.position) throw badRequest(`Application ${t} is not in a later stage than the source application ${body.source_app_id}`);
    if (!keyMay(ctx, 'APP:UPDATE', t)) throw forbidden(missingPermissionMessage('APP:UPDATE'));
  }
  const source = await findApp(ctx, body.source_app_id);
  const out: { target_app_id: string; deployment_id: string }[] = [];
  for (const t of body.target_app_ids) {
    const d = await deployReleaseOnto(ctx, source, await findApp(ctx, t), 'promotion');
    out.push({ target_app_id: t, deployment_id: d.id });
  }
  return out;
}

async function previewStage(ctx: CallContext, id: string): Promise<PipelineStagesTable | undefined> {
  return ctx.tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', '=', id).where('type', '=', 'preview').executeTakeFirst();
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
  if (await previewStage(ctx, id))
    throw badRequest('Preview apps are already enabled on this pipeline; change their settings with PUT /pipelines/{id}/preview');
  if (!body.repo_url && !p.repo_url) throw badRequest('repo_url is required: the pipeline has no Git repository yet');
  const stages = await stagesOf(ctx, id);
  if (stages.length >= MAX_STAGES) throw badRequest(`A pipeline has at most ${MAX_STAGES} stages (orders 0 to ${MAX_STAGES - 1})`);
  const now = new Date().toISOString();
  await renumber(tx, stages, now);
  await tx
    .updateTable('pipeline_stages')
    .set((eb) => ({ position: eb('position', '+', 1), updated_at: now }))
    .where('pipeline_id', '=', id)
    .execute();
  const stage: PipelineStagesTable = {
    ...newStage(p, { display_name: 'Preview', type: 'preview', position: 0, branch: null }, now),
    auto_create_app: body.auto_create_app ? 1 : 0,
    delete_stale_apps: body.delete_stale_apps ? 1 : 0,
    stale_app_days: body.stale_app_days ?? DEFAULT_STALE_DAYS,
  };
  await tx.insertInto('pipeline_stages').values(stage).execute();
  await tx
    .updateTable('pipelines')
    .set({ repo_url: body.repo_url ?? p.repo_url, updated_at: now })
    .where('id', '=', id)
    .execute();
  return { message: 'Preview apps enabled' };
}

/** Removes the preview stage; its preview apps are deleted (the applications' deletion jobs). */
export async function disablePreview(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await previewStage(ctx, id);
  if (!stage) throw badRequest('Preview apps are not enabled on this pipeline');
  const previews = await tx.selectFrom('pipeline_apps').select('app_id').where('stage_id', '=', stage.id).execute();
  await removePreviewApps(
    ctx,
    previews.map((r) => r.app_id),
  );
  await tx.deleteFrom('pipeline_apps').where('stage_id', '=', stage.id).execute();
  await tx.deleteFrom('pipeline_stages').where('id', '=', stage.id).execute();
  await renumber(tx, await stagesOf(ctx, id), new Date().toISOString());
  return { message: 'Preview apps disabled; existing preview apps are being deleted' };
}

/** Changes the preview settings; a changed stale-app rule is re-applied to every existing preview app. */
export async function updatePreview(ctx: CallContext, id: string, body: PreviewSettings) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await previewStage(ctx, id);
  if (!stage) throw badRequest('Preview apps are not enabled on this pipeline; enable them first (POST /pipelines/{id}/preview/enable)');
  const now = new Date().toISOString();
  const b = (v: boolean | undefined, cur: number) => (v === undefined ? cur : v ? 1 : 0);
  const next = {
    auto_create_app: b(body.auto_create_app, stage.auto_create_app),
    delete_stale_apps: b(body.delete_stale_apps, stage.delete_stale_apps),
    stale_app_days: body.stale_app_days ?? stage.stale_app_days,
  };
  await tx
    .updateTable('pipeline_stages')
    .set({ ...next, updated_at: now })
    .where('id', '=', stage.id)
    .execute();
  if (body.repo_url) await tx.updateTable('pipelines').set({ repo_url: body.repo_url, updated_at: now }).where('id', '=', id).execute();
  if (next.delete_stale_apps !== stage.delete_stale_apps || next.stale_app_days !== stage.stale_app_days) {
    const previews = await tx.selectFrom('pipeline_apps').select('app_id').where('stage_id', '=', stage.id).execute();
    for (const r of previews) {
      await cancelJobs(tx, r.app_id, EXPIRE_JOB);
      if (next.delete_stale_apps) await enqueue(tx, { kind: EXPIRE_JOB, payload: { appId: r.app_id }, subjectId: r.app_id });
    }
  }
  return { message: 'Preview settings updated' };
}

async function removePreviewApps(ctx: CallContext, appIds: string[]) {
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
) {
  const { tx } = ctx;
  const src = await findApp(ctx, sourceId);
  const placed = await tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', sourceId).executeTakeFirst();
  if (!placed) throw badRequest(`Application ${sourceId} is not in a pipeline; add it to a pipeline stage and enable preview apps first`);
  if (placed.is_preview) throw badRequest(`Application ${sourceId} is itself a preview app`);
  await lockPipeline(tx, placed.pipeline_id);
  const stage = await previewStage(ctx, placed.pipeline_id);
  if (!stage) throw badRequest(`Preview apps are not enabled on pipeline ${placed.pipeline_id}`);
  const p = await findPipeline(ctx, placed.pipeline_id);
  const pr = body.pull_request_number ?? null;
  const displayName = body.display_name ?? `${src.display_name} ${pr ? `PR #${pr}` : `(${body.branch})`}`.slice(0, 255);
  const created = await cloneApp(ctx, sourceId, { display_name: displayName }, { type: 'previewApp', branch: body.branch, repoUrl: p.repo_url });
  await tx
    .insertInto('pipeline_apps')
    .values({
      app_id: created.id,
      stage_id: stage.id,
      pipeline_id: p.id,
      company_id: p.company_id,
      is_preview: 1,
      source_app_id: sourceId,
      branch: body.branch,
      pull_request_number: pr,
      created_at: new Date().toISOString(),
    })
    .execute();
  if (stage.delete_stale_apps) await enqueue(tx, { kind: EXPIRE_JOB, payload: { appId: created.id }, subjectId: created.id });
  return created;
}

/** Deletes a stale preview app, or looks again when it would become stale. */
export const expireJob = (app: AppContext): JobKind<typeof EXPIRE_JOB> => ({
  async run(tx, job) {
    const row = await tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', job.payload.appId).where('is_preview', '=', 1).executeTakeFirst();
    if (!row) return;
    const stage = await tx.selectFrom('pipeline_stages').selectAll().where('id', '=', row.stage_id).executeTakeFirst();
    if (!stage || !stage.delete_stale_apps) return;
    const last = (await lastDeployedAt(tx, row.app_id)) ?? row.created_at;
    const due = Date.parse(last) + stage.stale_app_days * app.config.previewDayMs;
    if (Date.now() < due) return { rescheduleAt: new Date(due) };
    await deleteApp(systemCall(app, tx, row.company_id), row.app_id);
  },
});

/** Drops a removed application from its stage (and stops watching it if it was a preview app). */
export async function forgetApp(tx: Tx, appId: string): Promise<void> {
  await cancelJobs(tx, appId, EXPIRE_JOB);
  await tx.deleteFrom('pipeline_apps').where('app_id', '=', appId).execute();
}

/** The service registry's view of a pipeline (projects list it among their services). */
export async function pipelineSummaries({ tx, companyId }: CallContext, ids: readonly string[]) {
  const found = await tx.selectFrom('pipelines').select(['id', 'display_name']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
  return found.map((p) => ({ id: p.id, name: p.display_name, display_name: p.display_name }));
}
