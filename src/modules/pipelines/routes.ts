// Operation declarations of the pipelines area: contract, permission, rate tier, thin handler.
// Pipelines count toward the general write tier (the specification lists them there).
// POST /applications/{id}/preview-apps is declared here: its rules (the source's pipeline, the
// preview stage, the lifetime) are the pipeline's, and it builds the application through the
// applications module's public clone function; the applications module knows nothing of pipelines.
import type { AppContext } from '../../shared/context.js';
import { ref } from '../../shared/http/references.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as previews from './previews.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listPipelinesContract,
    permission: 'PIPELINE:READ',
    tier: 'read',
    handler: async (r) => svc.listPipelines(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createPipelineContract,
    permission: 'PIPELINE:CREATE',
    tier: 'general_write',
    references: [ref.project],
    handler: async (r) => svc.createPipeline(r, r.body),
  }),
  defineOperation({
    contract: c.getPipelineContract,
    permission: 'PIPELINE:READ',
    tier: 'read',
    handler: async (r) => svc.getPipeline(r, r.params.id),
  }),
  defineOperation({
    contract: c.updatePipelineContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    references: [ref.project],
    handler: async (r) => svc.updatePipeline(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deletePipelineContract,
    permission: 'PIPELINE:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deletePipeline(r, r.params.id),
  }),
  defineOperation({
    contract: c.promotePipelineContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.promote(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.createPipelineStageContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.createStage(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deletePipelineStageContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteStage(r, r.params.id, r.params.stage_id),
  }),
  defineOperation({
    contract: c.addAppToPipelineStageContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.addApp(r, r.params.id, r.params.stage_id, r.body.app_id),
  }),
  defineOperation({
    contract: c.removeAppFromPipelineStageContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.removeApp(r, r.params.id, r.params.stage_id, r.params.app_id),
  }),
  defineOperation({
    contract: c.enablePipelinePreviewContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => previews.enablePreview(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.disablePipelinePreviewContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => previews.disablePreview(r, r.params.id),
  }),
  defineOperation({
    contract: c.updatePipelinePreviewSettingsContract,
    permission: 'PIPELINE:UPDATE',
    tier: 'general_write',
    handler: async (r) => previews.updatePreview(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.createApplicationPreviewAppContract,
    permission: 'APP:CREATE',
    tier: 'service_creation',
    // Like clone: it creates a new service, so it is counted per company and needs APP:CREATE for the
    // whole company (a capability scoped to the source application does not do).
    resourceParam: 'id',
    companyWide: true,
    handler: async (r) => previews.createPreviewApp(r, r.params.id, r.body),
  }),
];

export function setup(app: AppContext): void {
  app.jobs.register(previews.EXPIRE_JOB, previews.expireJob(app));
  app.services.register({ type: 'pipeline', summaries: svc.pipelineSummaries });
  app.events.on('application.removed', (tx, { application }) => svc.forgetApp(tx, application.id));
}
