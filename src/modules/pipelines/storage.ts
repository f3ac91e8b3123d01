// Tables of the pipelines area: pipelines, their ordered stages, and which application sits in
// which stage. An application is in at most one stage of any pipeline: `pipeline_apps.app_id`
// is the primary key, so the database itself refuses a second placement (also under concurrent
// requests on PostgreSQL). Applications are the applications module's; these rows only name them
// and are dropped when the application is removed (signal `application.removed`). Changes to a
// pipeline's stages and preview settings take the pipeline's lock (lockPipeline); stage positions
// stay 0..n-1 (renumber) and a pipeline holds at most 51 stages.
import type { Kysely, Migration } from 'kysely';
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
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

/** The caller's company's pipeline `id`, or 404. */
export async function findPipeline({ tx, companyId }: CallContext, id: string): Promise<PipelinesTable> {
  const p = await tx.selectFrom('pipelines').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
  if (!p) throw notFound('Pipeline');
  return p;
}

/** The stages of a pipeline, first to last. */
export async function stagesOf({ tx }: CallContext, pipelineId: string): Promise<PipelineStagesTable[]> {
  return tx.selectFrom('pipeline_stages').selectAll().where('pipeline_id', '=', pipelineId).orderBy('position').orderBy('id').execute();
}

/** Stage `stageId` of the pipeline, or 404. */
export async function findStage({ tx }: CallContext, pipelineId: string, stageId: string): Promise<PipelineStagesTable> {
  const s = await tx.selectFrom('pipeline_stages').selectAll().where('id', '=', stageId).where('pipeline_id', '=', pipelineId).executeTakeFirst();
  if (!s) throw notFound('Pipeline stage');
  return s;
}

/** Stage orders run 0..50 (the contract's range), so a pipeline holds at most 51 stages. */
const MAX_STAGES = 51;
export const DEFAULT_STALE_DAYS = 5;

/** Serializes changes to one pipeline's stages and preview settings (PostgreSQL; SQLite has one writer). */
export const lockPipeline = (tx: Tx, id: string) => lockFor(tx, `pipeline:${id}`);

/** Refuses another stage when the pipeline already holds `MAX_STAGES`. */
export function roomForStage(stages: readonly PipelineStagesTable[]): void {
  if (stages.length >= MAX_STAGES) throw badRequest(`A pipeline has at most ${MAX_STAGES} stages (orders 0 to ${MAX_STAGES - 1})`);
}

/** A stage row of pipeline `p`, with the preview settings' defaults. */
export function newStage(
  p: PipelinesTable,
  fields: Pick<PipelineStagesTable, 'display_name' | 'type' | 'position' | 'branch'>,
  now: string,
): PipelineStagesTable {
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

/** Numbers the stages 0..n-1 in their current order (after a stage left or orders were given). */
export async function renumber(tx: Tx, stages: PipelineStagesTable[], now: string) {
  for (const [i, s] of stages.entries())
    if (s.position !== i) await tx.updateTable('pipeline_stages').set({ position: i, updated_at: now }).where('id', '=', s.id).execute();
}
