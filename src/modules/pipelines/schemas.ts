// TypeBox contracts of the pipelines area (shapes of the v3 contract), generated with
// scripts/contract-to-typebox.mjs and tidied: the stage shapes are shared, a preview app is
// answered with the application representation. A stage's `app_ids` is this project's addition
// (x-decided; docs/api-behaviour.md, "Pipelines").
import { Type, type TSchema } from '@sinclair/typebox';
import { DateTime, IdParams, MAX_INT4, MessageResponse, Nullable, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';
import { Application } from '../applications/index.js';

export const PIPELINE_TYPES = ['trunk', 'branch'] as const;
export const STAGE_TYPES = ['preview', 'standard', 'prod'] as const;
const PipelineType = StringEnum(PIPELINE_TYPES);
const StageType = StringEnum(STAGE_TYPES);
const StageParams = Type.Object({
  id: Uuid(),
  stage_id: Uuid(),
});
const StageOrder = Type.Integer({ minimum: 0, maximum: 50 });

export const StageSummary = Type.Object(
  {
    id: Uuid(),
    display_name: Type.String(),
    type: StageType,
    order: StageOrder,
  },
  { additionalProperties: false },
);

const PipelineFields = {
  id: Uuid(),
  company_id: Uuid(),
  project_id: Nullable(Uuid()),
  display_name: Type.String(),
  type: PipelineType,
};

/** A pipeline whose stages are shown as `stage`. */
const pipelineWith = <T extends TSchema>(stage: T) =>
  Type.Object(
    {
      ...PipelineFields,
      stages: Type.Array(stage),
      created_at: DateTime(),
      updated_at: DateTime(),
    },
    { additionalProperties: false },
  );

/** Create and update answer with the stages' summaries. */
export const PipelineView = pipelineWith(StageSummary);

export const StageDetail = Type.Object(
  {
    id: Uuid(),
    pipeline_id: Uuid(),
    display_name: Type.String(),
    type: StageType,
    order: StageOrder,
    branch: Nullable(Type.String()),
    auto_create_app: Type.Boolean(),
    delete_stale_apps: Type.Boolean(),
    stale_app_days: Type.Integer({ minimum: 1, maximum: 365 }),
    app_ids: Type.Array(Uuid(), {
      'x-decided': true,
      description:
        'The applications in the stage (preview apps in the preview stage), in the order they were placed; only those the key may read. The contract can add and remove them but not read them back.',
    }),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

/** GET: the stages with their branch and preview settings. */
export const PipelineDetail = pipelineWith(StageDetail);

/** An item of the list: no company or project. */
export const PipelineSummary = Type.Object(
  {
    id: Uuid(),
    display_name: Type.String(),
    type: PipelineType,
    stages: Type.Array(StageSummary),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listPipelinesContract = {
  operationId: 'listPipelinesV3',
  method: 'GET',
  path: '/pipelines',
  summary: 'List pipelines',
  tags: ['Pipelines'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(PipelineSummary),
  errors: [401, 403, 500],
} as const;

export const createPipelineContract = {
  operationId: 'createPipelineV3',
  method: 'POST',
  path: '/pipelines',
  summary: 'Create pipeline',
  tags: ['Pipelines'],
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 1, maxLength: 255 }),
      type: PipelineType,
      project_id: Type.Optional(Uuid()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: PipelineView,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getPipelineContract = {
  operationId: 'getPipelineV3',
  method: 'GET',
  path: '/pipelines/{id}',
  summary: 'Get pipeline',
  tags: ['Pipelines'],
  params: IdParams,
  success: 200,
  response: PipelineDetail,
  errors: [401, 403, 404, 500],
} as const;

export const updatePipelineContract = {
  operationId: 'updatePipelineV3',
  method: 'PATCH',
  path: '/pipelines/{id}',
  summary: 'Update pipeline',
  tags: ['Pipelines'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      type: Type.Optional(PipelineType),
      stage_order: Type.Optional(
        Type.Array(
          Type.Object({
            stage_id: Uuid(),
            order: StageOrder,
          }),
        ),
      ),
      project_id: Type.Optional(Nullable(Uuid())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: PipelineView,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deletePipelineContract = {
  operationId: 'deletePipelineV3',
  method: 'DELETE',
  path: '/pipelines/{id}',
  summary: 'Delete pipeline',
  tags: ['Pipelines'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const promotePipelineContract = {
  operationId: 'promotePipelineV3',
  method: 'POST',
  path: '/pipelines/{id}/promote',
  summary: 'Promote pipeline',
  tags: ['Pipelines'],
  params: IdParams,
  body: Type.Object(
    {
      source_app_id: Uuid(),
      target_app_ids: Type.Array(Uuid(), { minItems: 1 }),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        target_app_id: Uuid(),
        deployment_id: Uuid(),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const createPipelineStageContract = {
  operationId: 'createPipelineStageV3',
  method: 'POST',
  path: '/pipelines/{id}/stages',
  summary: 'Create pipeline stage',
  tags: ['Pipelines'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 1, maxLength: 255 }),
      insert_before: StageOrder,
      branch: Type.Optional(Nullable(Type.String())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: StageDetail,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deletePipelineStageContract = {
  operationId: 'deletePipelineStageV3',
  method: 'DELETE',
  path: '/pipelines/{id}/stages/{stage_id}',
  summary: 'Delete pipeline stage',
  tags: ['Pipelines'],
  params: StageParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const addAppToPipelineStageContract = {
  operationId: 'addAppToPipelineStageV3',
  method: 'POST',
  path: '/pipelines/{id}/stages/{stage_id}/apps',
  summary: 'Add app to pipeline stage',
  tags: ['Pipelines'],
  params: StageParams,
  body: Type.Object(
    {
      app_id: Uuid(),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const removeAppFromPipelineStageContract = {
  operationId: 'removeAppFromPipelineStageV3',
  method: 'DELETE',
  path: '/pipelines/{id}/stages/{stage_id}/apps/{app_id}',
  summary: 'Remove app from pipeline stage',
  tags: ['Pipelines'],
  params: Type.Object({
    id: Uuid(),
    stage_id: Uuid(),
    app_id: Uuid(),
  }),
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const enablePipelinePreviewContract = {
  operationId: 'enablePipelinePreviewV3',
  method: 'POST',
  path: '/pipelines/{id}/preview/enable',
  summary: 'Enable pipeline preview',
  tags: ['Pipelines'],
  params: IdParams,
  body: Type.Object(
    {
      repo_url: Type.Optional(Type.String({ format: 'uri' })),
      auto_create_app: Type.Optional(Type.Boolean({ default: false })),
      delete_stale_apps: Type.Optional(Type.Boolean({ default: false })),
      stale_app_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365, default: 5 })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const disablePipelinePreviewContract = {
  operationId: 'disablePipelinePreviewV3',
  method: 'POST',
  path: '/pipelines/{id}/preview/disable',
  summary: 'Disable pipeline preview',
  tags: ['Pipelines'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const updatePipelinePreviewSettingsContract = {
  operationId: 'updatePipelinePreviewSettingsV3',
  method: 'PUT',
  path: '/pipelines/{id}/preview',
  summary: 'Update pipeline preview settings',
  tags: ['Pipelines'],
  params: IdParams,
  body: Type.Object(
    {
      repo_url: Type.Optional(Type.String({ format: 'uri' })),
      auto_create_app: Type.Optional(Type.Boolean()),
      delete_stale_apps: Type.Optional(Type.Boolean()),
      stale_app_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365 })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const createApplicationPreviewAppContract = {
  operationId: 'createApplicationPreviewAppV3',
  method: 'POST',
  path: '/applications/{id}/preview-apps',
  summary: 'Create application preview app',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object(
    {
      branch: Type.String({ minLength: 1, maxLength: 255 }),
      pull_request_number: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_INT4 }))),
      display_name: Type.Optional(Type.String({ minLength: 2, maxLength: 64 })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: Application,
  errors: [400, 401, 403, 404, 429, 500],
} as const;
