// Tables of the pipelines area: pipelines, their ordered stages, and which application sits in
// which stage. An application is in at most one stage of any pipeline: `pipeline_apps.app_id`
// is the primary key, so the database itself refuses a second placement (also under concurrent
// requests on PostgreSQL). Applications are the applications module's; these rows only name them
// and are dropped when the application is removed (signal `application.removed`). Changes to a
// pipeline's stages and preview settings take the pipeline's lock (lockPipeline); stage positions
// stay 0..n-1 (renumber). Also the migration and every query of the area.
import type { Kysely, Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { paginate, type Page } from '../../shared/pagination.js';
import type { PIPELINE_TYPES, STAGE_TYPES } from './schemas.js';

export interface PipelinesTable {
  id: string;
  company_id: string;
  project_id: string | null;
  display_name: string;
  type: (typeof PIPELINE_TYPES)[number];
  /** The Git repository preview apps build from (set when preview is enabled or updated). */
  repo_url: string | null;
  created_at: string;
  updated_at: string;
}

export interface PipelineStagesTable {
  id: string;
  pipeline_id: string;
  company_id: string;
  display_name: string;
  type: (typeof STAGE_TYPES)[number];
  /** The contract's `order`: 0 first; unique within the pipeline. */
  position: number;
  branch: string | null;
  /** Preview settings (meaningful on the `preview` stage only). */
  auto_create_app: number;
  delete_stale_apps: number;
  stale_app_days: number;
  created_at: string;
  updated_at: string;
}

export interface PipelineAppsTable {
  app_id: string;
  stage_id: string;
  pipeline_id: string;
  company_id: string;
  /** 1 for preview apps made by POST /applications/{id}/preview-apps (they live in the preview stage). */
  is_preview: number;
  /** Preview apps: the application they were made from, their branch and pull request. */
  source_app_id: string | null;
  branch: string | null;
  pull_request_number: number | null;
  created_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    pipelines: PipelinesTable;
    pipeline_stages: PipelineStagesTable;
    pipeline_apps: PipelineAppsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '130_pipelines': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('pipelines')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('repo_url', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pipelines_company').on('pipelines').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema
        .createTable('pipeline_stages')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('pipeline_id', 'varchar(36)', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('branch', 'text')
        .addColumn('auto_create_app', 'integer', (c) => c.notNull())
        .addColumn('delete_stale_apps', 'integer', (c) => c.notNull())
        .addColumn('stale_app_days', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pipeline_stages_pipeline').on('pipeline_stages').columns(['pipeline_id', 'position']).execute();
      await db.schema
        .createTable('pipeline_apps')
        .addColumn('app_id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('stage_id', 'varchar(36)', (c) => c.notNull().references('pipeline_stages.id').onDelete('cascade'))
        .addColumn('pipeline_id', 'varchar(36)', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('is_preview', 'integer', (c) => c.notNull())
        .addColumn('source_app_id', 'varchar(36)')
        .addColumn('branch', 'text')
        .addColumn('pull_request_number', 'integer')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pipeline_apps_stage').on('pipeline_apps').columns(['stage_id', 'created_at']).execute();
      await db.schema.createIndex('pipeline_apps_pipeline').on('pipeline_apps').column('pipeline_id').execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['pipeline_apps', 'pipeline_stages', 'pipelines'] as const;

/** Serializes changes to one pipeline's stages and preview settings (PostgreSQL; SQLite has one writer). */
export const lockPipeline = (tx: Tx, id: string) => lockFor(tx, `pipeline:${id}`);

// Pipelines

/** A page of a company's pipelines, limited to `scope` when given. */
export async function listPipelinesPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('pipelines').selectAll().where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

export async function findPipelineRow(tx: Tx, companyId: string, id: string): Promise<PipelinesTable | undefined> {
  return tx.selectFrom('pipelines').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** The ids and names of the company's pipelines among `ids`. */
export async function listPipelineNames(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx.selectFrom('pipelines').select(['id', 'display_name']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
}

export async function insertPipeline(tx: Tx, p: PipelinesTable) {
  await tx.insertInto('pipelines').values(p).execute();
}

export async function updatePipelineColumns(tx: Tx, id: string, set: Partial<PipelinesTable>) {
  await tx.updateTable('pipelines').set(set).where('id', '=', id).execute();
}

/** Deletes a pipeline: its placed applications, its stages, then the pipeline. */
export async function deletePipelineRows(tx: Tx, id: string) {
  await tx.deleteFrom('pipeline_apps').where('pipeline_id', '=', id).execute();
  await tx.deleteFrom('pipeline_stages').where('pipeline_id', '=', id).execute();
  await tx.deleteFrom('pipelines').where('id', '=', id).execute();
}

// Stages

/** The stages of a pipeline, first to last. */
export async function listStages(tx: Tx, pipelineId: string): Promise<PipelineStagesTable[]> {
  return tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', '=', pipelineId).orderBy('position').orderBy('id').execute();
}

/** The stages of several pipelines, by position (no query for none). */
export async function listStagesOf(tx: Tx, pipelineIds: string[]): Promise<PipelineStagesTable[]> {
  if (!pipelineIds.length) return [];
  return tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', 'in', pipelineIds).orderBy('position').orderBy('id').execute();
}

/** Stage `stageId` if it belongs to the pipeline. */
export async function findStageRow(tx: Tx, pipelineId: string, stageId: string): Promise<PipelineStagesTable | undefined> {
  return tx.selectFrom('pipeline_stages').selectAll().where('id', '=', stageId).where('pipeline_id', '=', pipelineId).executeTakeFirst();
}

export async function findStageById(tx: Tx, stageId: string): Promise<PipelineStagesTable | undefined> {
  return tx.selectFrom('pipeline_stages').selectAll().where('id', '=', stageId).executeTakeFirst();
}

export async function findPreviewStage(tx: Tx, pipelineId: string): Promise<PipelineStagesTable | undefined> {
  return tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', '=', pipelineId).where('type', '=', 'preview').executeTakeFirst();
}

export async function insertStage(tx: Tx, stage: PipelineStagesTable) {
  await tx.insertInto('pipeline_stages').values(stage).execute();
}

export async function insertStages(tx: Tx, stages: PipelineStagesTable[]) {
  await tx.insertInto('pipeline_stages').values(stages).execute();
}

export async function setStagePosition(tx: Tx, stageId: string, position: number, now: string) {
  await tx.updateTable('pipeline_stages').set({ position, updated_at: now }).where('id', '=', stageId).execute();
}

/** Numbers the stages 0..n-1 in their current order (after a stage left or orders were given). */
export async function renumber(tx: Tx, stages: PipelineStagesTable[], now: string) {
  for (const [i, s] of stages.entries()) if (s.position !== i) await setStagePosition(tx, s.id, i, now);
}

/** Moves the pipeline's stages at `position` and after it one place down. */
export async function shiftStagesFrom(tx: Tx, pipelineId: string, position: number, now: string) {
  await tx
    .updateTable('pipeline_stages')
    .set((eb) => ({ position: eb('position', '+', 1), updated_at: now }))
    .where('pipeline_id', '=', pipelineId)
    .where('position', '>=', position)
    .execute();
}

/** Moves all the pipeline's stages one place down (room for a first stage). */
export async function shiftAllStages(tx: Tx, pipelineId: string, now: string) {
  await tx
    .updateTable('pipeline_stages')
    .set((eb) => ({ position: eb('position', '+', 1), updated_at: now }))
    .where('pipeline_id', '=', pipelineId)
    .execute();
}

export async function updateStageColumns(tx: Tx, stageId: string, set: Partial<PipelineStagesTable>) {
  await tx.updateTable('pipeline_stages').set(set).where('id', '=', stageId).execute();
}

/** Deletes a stage: the applications placed in it, then the stage. */
export async function deleteStageWithApps(tx: Tx, stageId: string) {
  await tx.deleteFrom('pipeline_apps').where('stage_id', '=', stageId).execute();
  await tx.deleteFrom('pipeline_stages').where('id', '=', stageId).execute();
}

// Placed applications

/** The ids of the pipeline's preview apps. */
export async function listPreviewAppIds(tx: Tx, pipelineId: string): Promise<string[]> {
  const rows = await tx.selectFrom('pipeline_apps').select('app_id').where('pipeline_id', '=', pipelineId).where('is_preview', '=', 1).execute();
  return rows.map((r) => r.app_id);
}

/** The ids of the applications placed in a stage. */
export async function listStageAppIds(tx: Tx, stageId: string): Promise<string[]> {
  const rows = await tx.selectFrom('pipeline_apps').select('app_id').where('stage_id', '=', stageId).execute();
  return rows.map((r) => r.app_id);
}

/** The pipeline's placed applications and their stages, in the order they were placed. */
export async function listStageMembers(tx: Tx, pipelineId: string) {
  return tx.selectFrom('pipeline_apps').select(['app_id', 'stage_id']).where('pipeline_id', '=', pipelineId).orderBy('created_at').orderBy('app_id').execute();
}

/** The applications placed in the pipeline, each with its stage's position and branch. */
export async function listPlacedApps(tx: Tx, pipelineId: string) {
  return tx
    .selectFrom('pipeline_apps')
    .innerJoin('pipeline_stages', 'pipeline_stages.id', 'pipeline_apps.stage_id')
    .select(['pipeline_apps.app_id', 'pipeline_apps.is_preview', 'pipeline_stages.position', 'pipeline_stages.branch'])
    .where('pipeline_apps.pipeline_id', '=', pipelineId)
    .execute();
}

/** Where an application is placed, if anywhere. */
export async function findPipelineApp(tx: Tx, appId: string): Promise<PipelineAppsTable | undefined> {
  return tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', appId).executeTakeFirst();
}

/** The pipeline and stage an application is placed in, if any. */
export async function findPlacement(tx: Tx, appId: string) {
  return tx.selectFrom('pipeline_apps').select(['pipeline_id', 'stage_id']).where('app_id', '=', appId).executeTakeFirst();
}

export async function findPipelineAppInStage(tx: Tx, appId: string, stageId: string): Promise<PipelineAppsTable | undefined> {
  return tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', appId).where('stage_id', '=', stageId).executeTakeFirst();
}

export async function findPreviewApp(tx: Tx, appId: string): Promise<PipelineAppsTable | undefined> {
  return tx.selectFrom('pipeline_apps').selectAll().where('app_id', '=', appId).where('is_preview', '=', 1).executeTakeFirst();
}

/** Places an application unless it is placed already (the primary key on app_id decides); false when it was. */
export async function insertPipelineAppIfFree(tx: Tx, row: PipelineAppsTable): Promise<boolean> {
  const inserted = await tx
    .insertInto('pipeline_apps')
    .values(row)
    .onConflict((oc) => oc.column('app_id').doNothing())
    .returning('app_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function insertPipelineApp(tx: Tx, row: PipelineAppsTable) {
  await tx.insertInto('pipeline_apps').values(row).execute();
}

export async function deletePipelineApp(tx: Tx, appId: string) {
  await tx.deleteFrom('pipeline_apps').where('app_id', '=', appId).execute();
}

/** The company's pipelines with preview apps on: each with its repository and its preview stage's settings. */
export async function listPreviewPipelines(tx: Tx, companyId: string) {
  return tx
    .selectFrom('pipelines')
    .innerJoin('pipeline_stages', 'pipeline_stages.pipeline_id', 'pipelines.id')
    .select(['pipelines.id', 'pipelines.repo_url', 'pipeline_stages.auto_create_app', 'pipeline_stages.delete_stale_apps'])
    .where('pipelines.company_id', '=', companyId)
    .where('pipeline_stages.type', '=', 'preview')
    .execute();
}

/** The preview app of a pull request in the pipeline, if any. */
export async function findPullRequestApp(tx: Tx, pipelineId: string, number: number): Promise<PipelineAppsTable | undefined> {
  return tx
    .selectFrom('pipeline_apps')
    .selectAll()
    .where('pipeline_id', '=', pipelineId)
    .where('is_preview', '=', 1)
    .where('pull_request_number', '=', number)
    .executeTakeFirst();
}
