// Pipelines: ordered stages of applications, and promotion of a release from one stage to later
// ones. An application sits in at most one stage; preview apps (previews.ts) are never placed,
// removed or promoted here. Changes to a pipeline's stages take the pipeline's lock.
// Applications are reached only through the applications module's public functions (findApp,
// deleteApp through previews.ts, setAppProject, deployReleaseOnto).
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { grantsAllow, missingPermissionMessage, type Permission } from '../../shared/auth/rbac.js';
import { badRequest, forbidden, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { cancelJobs } from '../../shared/jobs.js';
import type { Page } from '../../shared/pagination.js';
import { deployReleaseOnto } from '../applications/index.js';
import { setAppProject } from '../applications/index.js';
import { findApp } from '../applications/index.js';
import { forgetService, placeService } from '../projects/index.js';
import { EXPIRE_JOB, removePreviewApps } from './previews.js';
import { findPipeline, findStage, newStage, roomForStage } from './rules.js';
import {
  deletePipelineApp,
  deletePipelineRows,
  deleteStageWithApps,
  findPipelineAppInStage,
  findPlacement,
  insertPipeline,
  insertPipelineAppIfFree,
  insertStage,
  insertStages,
  listPipelineNames,
  listPipelinesPage,
  listPlacedApps,
  listPreviewAppIds,
  listStageMembers,
  listStages,
  listStagesOf,
  lockPipeline,
  renumber,
  setStagePosition,
  shiftStagesFrom,
  updatePipelineColumns,
  type PipelineAppsTable,
  type PipelinesTable,
  type PipelineStagesTable,
} from './storage.js';

const bool = (n: number) => n === 1;

const stageSummary = (s: PipelineStagesTable) => ({ id: s.id, display_name: s.display_name, type: s.type, order: s.position });

/** A stage as GET and stage creation answer it; `appIds`: its applications the key may read. */
function stageDetail(s: PipelineStagesTable, appIds: string[]) {
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
    app_ids: appIds,
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

/** Whether the calling key holds `permission` for application `appId` (system calls hold everything). */
const keyMay = (ctx: CallContext, permission: Permission, appId: string) => grantsAllow(ctx.grants, permission, appId);

/** The application, if the key may see it (404 otherwise, as for any application it cannot see). */
async function visibleApp(ctx: CallContext, appId: string) {
  if (!keyMay(ctx, 'APP:READ', appId)) throw notFound('Application');
  return findApp(ctx, appId);
}

export async function listPipelines(ctx: CallContext, page: Page) {
  const { tx, companyId, scope } = ctx;
  const res = await listPipelinesPage(tx, companyId, scope, page);
  const stages = await listStagesOf(
    tx,
    res.data.map((p) => p.id),
  );
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
  await insertPipeline(tx, p);
  const stages = [
    newStage(p, { display_name: 'Dev', type: 'standard', position: 0, branch: null }, now),
    newStage(p, { display_name: 'Production', type: 'prod', position: 1, branch: null }, now),
  ];
  await insertStages(tx, stages);
  await placeService(ctx, p.id, 'pipeline', p.project_id);
  return pipelineView(p, stages);
}

export async function getPipeline(ctx: CallContext, id: string) {
  const p = await findPipeline(ctx, id);
  const stages = await listStages(ctx.tx, id);
  const members = await listStageMembers(ctx.tx, id);
  const appIds = new Map(stages.map((s) => [s.id, [] as string[]]));
  for (const m of members) if (keyMay(ctx, 'APP:READ', m.app_id)) appIds.get(m.stage_id)?.push(m.app_id);
  return { ...head(p), stages: stages.map((s) => stageDetail(s, appIds.get(s.id)!)), created_at: p.created_at, updated_at: p.updated_at };
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
  let stages = await listStages(tx, id);
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
    for (const s of stages) await setStagePosition(tx, s.id, s.position, now);
    await renumber(tx, stages, now);
    stages = await listStages(tx, id);
  }
  const next: PipelinesTable = {
    ...p,
    display_name: u.display_name ?? p.display_name,
    type: u.type ?? p.type,
    project_id: u.project_id !== undefined ? u.project_id : p.project_id,
    updated_at: now,
  };
  await updatePipelineColumns(tx, id, { display_name: next.display_name, type: next.type, project_id: next.project_id, updated_at: now });
  if (next.project_id !== p.project_id) await placeService(ctx, id, 'pipeline', next.project_id);
  return pipelineView(next, stages);
}

/** Deletes the pipeline and its stages: applications are unlinked, preview apps are deleted. */
export async function deletePipeline(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  await removePreviewApps(ctx, await listPreviewAppIds(tx, id));
  await deletePipelineRows(tx, id);
  await forgetService(tx, id);
  return { message: 'Pipeline deleted' };
}

/** A new `standard` stage at position `insert_before` (or last); the stages from there on move up one. */
export async function createStage(ctx: CallContext, id: string, body: { display_name: string; insert_before: number; branch?: string | null }) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const p = await findPipeline(ctx, id);
  const stages = await listStages(tx, id);
  roomForStage(stages);
  const now = new Date().toISOString();
  await renumber(tx, stages, now);
  const position = Math.min(body.insert_before, stages.length);
  await shiftStagesFrom(tx, id, position, now);
  const stage = newStage(p, { display_name: body.display_name, type: 'standard', position, branch: body.branch ?? null }, now);
  await insertStage(tx, stage);
  return stageDetail(stage, []);
}

/** Deletes a stage (not the preview stage: disable preview for that); its applications are unlinked. */
export async function deleteStage(ctx: CallContext, id: string, stageId: string) {
  const { tx } = ctx;
  await findPipeline(ctx, id);
  await lockPipeline(tx, id);
  const stage = await findStage(ctx, id, stageId);
  if (stage.type === 'preview') throw badRequest('The preview stage is removed by disabling preview apps (POST /pipelines/{id}/preview/disable)');
  await deleteStageWithApps(tx, stageId);
  await renumber(tx, await listStages(tx, id), new Date().toISOString());
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
  if (!(await insertPipelineAppIfFree(tx, row))) {
    const at = await findPlacement(tx, appId);
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
  const row = await findPipelineAppInStage(tx, appId, stageId);
  if (!row) throw notFound('Application in this stage');
  if (row.is_preview) throw badRequest(`Application ${appId} is a preview app; it leaves the preview stage when it is deleted or preview apps are disabled`);
  await deletePipelineApp(tx, appId);
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
  const placed = await listPlacedApps(tx, id);
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

/** Drops a removed application from its stage (and stops watching it if it was a preview app). */
export async function forgetApp(tx: Tx, appId: string): Promise<void> {
  await cancelJobs(tx, appId, EXPIRE_JOB);
  await deletePipelineApp(tx, appId);
}

/** The service registry's view of a pipeline (projects list it among their services). */
export async function pipelineSummaries({ tx, companyId }: CallContext, ids: readonly string[]) {
  const found = await listPipelineNames(tx, companyId, ids);
  return found.map((p) => ({ id: p.id, name: p.display_name, display_name: p.display_name }));
}
