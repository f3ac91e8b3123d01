import { Type } from '@sinclair/typebox';
import {
  DateTime,
  DeploymentParams,
  IdParams,
  LogsOperation,
  MessageResponse,
  Nullable,
  PageQuery,
  Paginated,
  StringEnum,
  Uuid,
} from '../../shared/schemas/common.js';

/** The contract's build types plus `railpack` (beta), which the specification allows. */
export const BUILD_TYPES = ['dockerfile', 'pack', 'nixpacks', 'railpack'] as const;
export const BuildType = StringEnum(BUILD_TYPES);

export const Application = Type.Object(
  {
    id: Uuid(),
    company_id: Nullable(Type.String()),
    project_id: Nullable(Uuid()),
    name: Type.String({ minLength: 1, maxLength: 64 }),
    namespace: Nullable(Type.String()),
    display_name: Type.String({ minLength: 1, maxLength: 255 }),
    source: StringEnum(['privateGit', 'publicGit', 'dockerImage', 'app']),
    type: StringEnum(['app', 'previewApp']),
    status: Nullable(StringEnum(['deploymentInProgress', 'deploymentFailed', 'deploymentSuccess', 'deleting', 'appDeletionFailed', 'deploymentCancelled'])),
    build_cache_enabled: Type.Boolean(),
    hibernation_enabled: Type.Boolean(),
    hibernate_after_seconds: Nullable(Type.Integer({ exclusiveMinimum: 0 })),
    auto_deploy: Type.Boolean(),
    is_suspended: Type.Boolean(),
    git_type: Nullable(StringEnum(['github', 'bitbucket', 'gitlab'])),
    repo_url: Nullable(Type.String()),
    default_branch: Nullable(Type.String()),
    docker_image: Nullable(Type.String()),
    build_type: BuildType,
    build_path: Nullable(Type.String()),
    pack_builder: Nullable(Type.String()),
    nixpacks_version: Nullable(Type.String()),
    dockerfile_path: Nullable(Type.String()),
    docker_context: Nullable(Type.String()),
    allow_deploy_paths: Type.Array(Type.String()),
    ignore_deploy_paths: Type.Array(Type.String()),
    created_by: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
    git_lfs_enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);

/** GET /applications/{id}: the application plus its buildpacks, cluster and registry credential. */
export const ApplicationDetail = Type.Object(
  {
    ...Application.properties,
    buildpacks: Type.Array(Type.Object({ id: Uuid(), source: Type.String(), order: Type.Integer() }, { additionalProperties: false })),
    cluster_id: Nullable(Type.String()),
    docker_registry_credential_id: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const Deployment = Type.Object(
  {
    id: Uuid(),
    app_id: Nullable(Uuid()),
    status: Nullable(StringEnum(['waiting', 'inProgress', 'success', 'failed', 'cancelled', 'skipped'])),
    type: Nullable(StringEnum(['manual', 'automatic'])),
    trigger: Nullable(Type.String()),
    steps: Type.Array(StringEnum(['checkout', 'build', 'rollout', 'syncConnections'])),
    docker_image_url: Nullable(Type.String()),
    git_type: Nullable(StringEnum(['github', 'bitbucket', 'gitlab'])),
    repo_url: Nullable(Type.String()),
    branch: Nullable(Type.String()),
    commit_sha: Nullable(Type.String()),
    commit_message: Nullable(Type.String()),
    author_login: Nullable(Type.String()),
    author_img: Nullable(Type.String()),
    started_at: Nullable(DateTime()),
    finished_at: Nullable(DateTime()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listApplicationsContract = {
  operationId: 'listApplicationsV3',
  method: 'GET',
  path: '/applications',
  summary: 'List applications',
  tags: ['Applications'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String({ minLength: 1, maxLength: 64 }),
        display_name: Type.String({ minLength: 1, maxLength: 255 }),
        status: Nullable(StringEnum(['deploymentInProgress', 'deploymentFailed', 'deploymentSuccess', 'deleting', 'appDeletionFailed', 'deploymentCancelled'])),
        type: StringEnum(['app', 'previewApp']),
        source: StringEnum(['privateGit', 'publicGit', 'dockerImage', 'app']),
        is_suspended: Type.Boolean(),
        created_at: DateTime(),
        updated_at: DateTime(),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 500],
} as const;

export const createApplicationContract = {
  operationId: 'createApplicationV3',
  method: 'POST',
  path: '/applications',
  summary: 'Create application',
  tags: ['Applications'],
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 2, maxLength: 64 }),
      cluster_id: Uuid(),
      source: StringEnum(['privateGit', 'publicGit', 'dockerImage']),
      project_id: Type.Optional(Nullable(Uuid())),
      git_type: Type.Optional(Nullable(StringEnum(['github', 'bitbucket', 'gitlab']))),
      repo_url: Type.Optional(Nullable(Type.String())),
      default_branch: Type.Optional(Nullable(Type.String())),
      docker_image: Type.Optional(Nullable(Type.String())),
      docker_registry_credential_id: Type.Optional(Nullable(Uuid())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: Application,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getApplicationContract = {
  operationId: 'getApplicationV3',
  method: 'GET',
  path: '/applications/{id}',
  summary: 'Get application',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: ApplicationDetail,
  errors: [401, 403, 404, 500],
} as const;

export const updateApplicationContract = {
  operationId: 'updateApplicationV3',
  method: 'PATCH',
  path: '/applications/{id}',
  summary: 'Update application',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      auto_deploy: Type.Optional(Type.Boolean()),
      default_branch: Type.Optional(Type.String({ minLength: 1 })),
      hibernation_enabled: Type.Optional(Type.Boolean()),
      hibernate_after_seconds: Type.Optional(Type.Integer({ maximum: 604800, exclusiveMinimum: 0 })),
      build_type: Type.Optional(BuildType),
      build_path: Type.Optional(Type.String()),
      dockerfile_path: Type.Optional(Type.String()),
      docker_context: Type.Optional(Type.String()),
      build_cache_enabled: Type.Optional(Type.Boolean()),
      docker_registry_credential_id: Type.Optional(Uuid()),
      pack_builder: Type.Optional(StringEnum(['heroku/builder:22', 'heroku/builder:24'])),
      nixpacks_version: Type.Optional(StringEnum(['1.29', '1.39', '1.41'])),
      buildpacks: Type.Optional(
        Type.Array(
          Type.Object({
            order: Type.Integer({ minimum: 0, maximum: 20 }),
            source: Type.String({ maxLength: 500 }),
          }),
        ),
      ),
      allow_deploy_paths: Type.Optional(Type.Array(Type.String())),
      ignore_deploy_paths: Type.Optional(Type.Array(Type.String())),
      source: Type.Optional(StringEnum(['privateGit', 'publicGit', 'dockerImage'])),
      git_type: Type.Optional(StringEnum(['github', 'bitbucket', 'gitlab'])),
      repo_url: Type.Optional(Type.String()),
      docker_image: Type.Optional(Type.String()),
      // No `default` here (the contract's `default: true` describes new applications): request
      // bodies are validated with defaults applied, so a default would turn LFS back on in every
      // update that does not mention it.
      git_lfs_enabled: Type.Optional(
        Type.Boolean({
          description:
            'Whether Git LFS files are fetched when the repository is cloned for a build. New applications start with true; omit to keep the current value.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Application,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteApplicationContract = {
  operationId: 'deleteApplicationV3',
  method: 'DELETE',
  path: '/applications/{id}',
  summary: 'Delete application',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const activateApplicationContract = {
  operationId: 'activateApplicationV3',
  method: 'POST',
  path: '/applications/{id}/activate',
  summary: 'Activate application',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const suspendApplicationContract = {
  operationId: 'suspendApplicationV3',
  method: 'POST',
  path: '/applications/{id}/suspend',
  summary: 'Suspend application',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const cloneApplicationContract = {
  operationId: 'cloneApplicationV3',
  method: 'POST',
  path: '/applications/{id}/clone',
  summary: 'Clone application',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 2, maxLength: 64 }),
      cluster_id: Type.Optional(Uuid()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: Application,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const listDeploymentsContract = {
  operationId: 'listDeploymentsV3',
  method: 'GET',
  path: '/applications/{id}/deployments',
  summary: 'List deployments',
  tags: ['Applications'],
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(Deployment),
  errors: [401, 403, 404, 500],
} as const;

export const triggerDeploymentContract = {
  operationId: 'triggerDeploymentV3',
  method: 'POST',
  path: '/applications/{id}/deployments',
  summary: 'Trigger deployment',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object({
    branch: Type.Optional(Type.String()),
    docker_image: Type.Optional(Type.String()),
    is_restart: Type.Optional(Type.Boolean({ default: false })),
  }),
  bodyRequired: true,
  success: 200,
  response: Deployment,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getDeploymentContract = {
  operationId: 'getDeploymentV3',
  method: 'GET',
  path: '/applications/{id}/deployments/{deployment_id}',
  summary: 'Get deployment',
  tags: ['Applications'],
  params: DeploymentParams,
  success: 200,
  response: Deployment,
  errors: [401, 403, 404, 500],
} as const;

export const rollbackDeploymentContract = {
  operationId: 'rollbackDeploymentV3',
  method: 'POST',
  path: '/applications/{id}/deployments/rollback',
  summary: 'Rollback deployment',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Deployment,
  errors: [401, 403, 404, 429, 500],
} as const;

export const cancelDeploymentContract = {
  operationId: 'cancelDeploymentV3',
  method: 'POST',
  path: '/applications/{id}/deployments/{deployment_id}/cancel',
  summary: 'Cancel deployment',
  tags: ['Applications'],
  params: DeploymentParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const getApplicationDeploymentLogsContract = {
  operationId: 'getApplicationDeploymentLogsV3',
  method: 'GET',
  path: '/applications/{id}/deployments/{deployment_id}/logs',
  summary: 'Get application deployment logs',
  tags: ['Applications'],
  params: DeploymentParams,
  ...LogsOperation,
} as const;

export const getDeploymentHookContract = {
  operationId: 'getDeploymentHookV3',
  method: 'GET',
  path: '/applications/{id}/deployment-hook',
  summary: 'Get deployment hook',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      url: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const enableDeploymentHookContract = {
  operationId: 'enableDeploymentHookV3',
  method: 'POST',
  path: '/applications/{id}/deployment-hook',
  summary: 'Enable deployment hook',
  tags: ['Applications'],
  params: IdParams,
  success: 201,
  response: Type.Object(
    {
      url: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 429, 500],
} as const;

export const regenerateDeploymentHookContract = {
  operationId: 'regenerateDeploymentHookV3',
  method: 'PUT',
  path: '/applications/{id}/deployment-hook',
  summary: 'Regenerate deployment hook',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      url: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 429, 500],
} as const;

export const disableDeploymentHookContract = {
  operationId: 'disableDeploymentHookV3',
  method: 'DELETE',
  path: '/applications/{id}/deployment-hook',
  summary: 'Disable deployment hook',
  tags: ['Applications'],
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;
