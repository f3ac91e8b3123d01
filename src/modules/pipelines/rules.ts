// The rules service.ts and previews.ts share: the caller's pipeline or stage (404 otherwise), the
// most stages a pipeline holds, and the row of a new stage with the preview settings' defaults.
import type { CallContext } from '../../shared/context.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { findPipelineRow, findStageRow, type PipelinesTable, type PipelineStagesTable } from './storage.js';

/** Stage orders run 0..50 (the contract's range), so a pipeline holds at most 51 stages. */
const MAX_STAGES = 51;
export const DEFAULT_STALE_DAYS = 5;

/** The caller's company's pipeline `id`, or 404. */
export async function findPipeline({ tx, companyId }: CallContext, id: string): Promise<PipelinesTable> {
  const p = await findPipelineRow(tx, companyId, id);
  if (!p) throw notFound('Pipeline');
  return p;
}

/** Stage `stageId` of the pipeline, or 404. */
export async function findStage({ tx }: CallContext, pipelineId: string, stageId: string): Promise<PipelineStagesTable> {
  const s = await findStageRow(tx, pipelineId, stageId);
  if (!s) throw notFound('Pipeline stage');
  return s;
}

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
