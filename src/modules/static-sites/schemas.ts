import { Type } from '@sinclair/typebox';
// Contracts of the static sites area (shapes of the v3 reference, the additions winning: git_lfs_enabled,
// deploy paths, is_preview). Environment variables are in env-vars/schemas.ts, the traffic metrics come
// from src/shared/http/traffic.ts.
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

const STATUS = ['deploymentInProgress', 'deploymentFailed', 'deploymentSuccess', 'deploymentCancelled', 'deleting', 'deletionFailed'] as const;

/** The full representation (create, get). */
export const StaticSite = Type.Object(
  {
    id: Uuid(),
    company_id: Nullable(Type.String()),
    project_id: Nullable(Uuid()),
    name: Type.String(),
    display_name: Type.String(),
    status: Nullable(StringEnum(STATUS)),
    source: StringEnum(['privateGit', 'publicGit']),
    repo_url: Type.String(),
    default_branch: Type.String(),
    auto_deploy: Type.Boolean(),
    is_preview_enabled: Type.Boolean(),
    git_type: Nullable(StringEnum(['github', 'bitbucket', 'gitlab'])),
    hostname: Nullable(Type.String()),
    install_command: Nullable(Type.String()),
    build_command: Nullable(Type.String()),
    published_directory: Nullable(Type.String()),
    root_directory: Nullable(Type.String()),
    node_version: Nullable(Type.String()),
    index_file: Nullable(Type.String()),
    error_file: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
    git_lfs_enabled: Type.Optional(Type.Boolean({ default: true })),
    allow_deploy_paths: Type.Optional(Type.Array(Type.String())),
    ignore_deploy_paths: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

/** The fields of a deployment in every representation (the build's fields go between these and the times). */
const deploymentFields = {
  id: Uuid(),
  static_site_id: Uuid(),
  status: Nullable(StringEnum(['waiting', 'inProgress', 'success', 'failed', 'cancelled', 'skipped'])),
  type: Nullable(StringEnum(['manual', 'automatic'])),
  repo_url: Nullable(Type.String()),
  branch: Nullable(Type.String()),
  is_preview: Nullable(Type.Boolean()),
  author_login: Nullable(Type.String()),
  author_img: Nullable(Type.String()),
  commit_sha: Nullable(Type.String()),
  commit_message: Nullable(Type.String()),
};
const deploymentTimes = {
  created_at: DateTime(),
  updated_at: DateTime(),
  finished_at: Nullable(DateTime()),
  started_at: Nullable(DateTime()),
};

/** A deployment as listed and as returned by a trigger. */
export const StaticSiteDeployment = Type.Object(
  {
    ...deploymentFields,
    cloud_build_id: Nullable(Type.String()),
    build_error: Nullable(Type.String()),
    ...deploymentTimes,
  },
  { additionalProperties: false },
);

export const listStaticSitesContract = {
  operationId: 'listStaticSitesV3',
  method: 'GET',
  path: '/static-sites',
  summary: 'List static sites',
  tags: ['Static sites'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        display_name: Type.String(),
        status: Nullable(StringEnum(STATUS)),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 500],
} as const;

/** Upper bounds of a site's settings, the same on create and update (no wider than their columns). */
const MAX_LENGTH = { repo_url: 2048, branch: 255, command: 1024, directory: 500, node_version: 20, file: 255 } as const;

export const createStaticSiteContract = {
  operationId: 'createStaticSiteV3',
  method: 'POST',
  path: '/static-sites',
  summary: 'Create static site',
  tags: ['Static sites'],
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 2, maxLength: 64 }),
      repo_url: Type.String({ maxLength: MAX_LENGTH.repo_url }),
      default_branch: Type.String({ minLength: 1, maxLength: MAX_LENGTH.branch }),
      source: Type.Optional(StringEnum(['privateGit', 'publicGit'], { default: 'privateGit' })),
      git_type: Type.Optional(StringEnum(['github', 'bitbucket', 'gitlab'])),
      auto_deploy: Type.Optional(Type.Boolean()),
      is_preview_enabled: Type.Optional(Type.Boolean()),
      install_command: Type.Optional(Type.String({ maxLength: MAX_LENGTH.command })),
      build_command: Type.Optional(Type.String({ maxLength: MAX_LENGTH.command })),
      published_directory: Type.Optional(Type.String({ maxLength: MAX_LENGTH.directory })),
      root_directory: Type.Optional(Type.String({ maxLength: MAX_LENGTH.directory })),
      node_version: Type.Optional(Type.String({ maxLength: MAX_LENGTH.node_version })),
      index_file: Type.Optional(Type.String({ maxLength: MAX_LENGTH.file })),
      error_file: Type.Optional(Type.String({ maxLength: MAX_LENGTH.file })),
      project_id: Type.Optional(Uuid()),
      git_lfs_enabled: Type.Optional(Type.Boolean({ default: true })),
      allow_deploy_paths: Type.Optional(Type.Array(Type.String())),
      ignore_deploy_paths: Type.Optional(Type.Array(Type.String())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: StaticSite,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getStaticSiteContract = {
  operationId: 'getStaticSiteV3',
  method: 'GET',
  path: '/static-sites/{id}',
  summary: 'Get static site',
  tags: ['Static sites'],
  params: IdParams,
  success: 200,
  response: StaticSite,
  errors: [401, 403, 404, 500],
} as const;

export const updateStaticSiteContract = {
  operationId: 'updateStaticSiteV3',
  method: 'PATCH',
  path: '/static-sites/{id}',
  summary: 'Update static site',
  tags: ['Static sites'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      auto_deploy: Type.Optional(Type.Boolean()),
      default_branch: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_LENGTH.branch })),
      build_command: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.command }))),
      node_version: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.node_version }))),
      published_directory: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.directory }))),
      is_preview_enabled: Type.Optional(Type.Boolean()),
      install_command: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.command }))),
      root_directory: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.directory }))),
      index_file: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_LENGTH.file })),
      error_file: Type.Optional(Nullable(Type.String({ maxLength: MAX_LENGTH.file }))),
      source: Type.Optional(StringEnum(['privateGit', 'publicGit'])),
      git_type: Type.Optional(Nullable(StringEnum(['github', 'bitbucket', 'gitlab']))),
      repo_url: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_LENGTH.repo_url })),
      git_lfs_enabled: Type.Optional(Type.Boolean({ default: true })),
      allow_deploy_paths: Type.Optional(Type.Array(Type.String())),
      ignore_deploy_paths: Type.Optional(Type.Array(Type.String())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Type.Object(
    {
      id: Uuid(),
      display_name: Type.String(),
      auto_deploy: Type.Boolean(),
      default_branch: Type.String(),
      build_command: Nullable(Type.String()),
      node_version: Nullable(Type.String()),
      published_directory: Nullable(Type.String()),
      is_preview_enabled: Type.Boolean(),
      install_command: Nullable(Type.String()),
      root_directory: Nullable(Type.String()),
      index_file: Nullable(Type.String()),
      error_file: Nullable(Type.String()),
      source: StringEnum(['privateGit', 'publicGit']),
      git_type: Nullable(StringEnum(['github', 'bitbucket', 'gitlab'])),
      repo_url: Type.String(),
      updated_at: DateTime(),
      status: Nullable(StringEnum(STATUS)),
      git_lfs_enabled: Type.Optional(Type.Boolean({ default: true })),
      allow_deploy_paths: Type.Optional(Type.Array(Type.String())),
      ignore_deploy_paths: Type.Optional(Type.Array(Type.String())),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 409, 429, 500],
} as const;

export const deleteStaticSiteContract = {
  operationId: 'deleteStaticSiteV3',
  method: 'DELETE',
  path: '/static-sites/{id}',
  summary: 'Delete static site',
  tags: ['Static sites'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 409, 429, 500],
} as const;

export const listStaticSiteDeploymentsContract = {
  operationId: 'listStaticSiteDeploymentsV3',
  method: 'GET',
  path: '/static-sites/{id}/deployments',
  summary: 'List static site deployments',
  tags: ['Static sites'],
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(StaticSiteDeployment),
  errors: [401, 403, 404, 500],
} as const;

export const deployStaticSiteContract = {
  operationId: 'deployStaticSiteV3',
  method: 'POST',
  path: '/static-sites/{id}/deployments',
  summary: 'Deploy static site',
  tags: ['Static sites'],
  params: IdParams,
  body: Type.Object(
    {
      branch: Type.Optional(Type.String()),
      deployment_id: Type.Optional(Uuid()),
      is_preview: Type.Optional(Type.Boolean({ default: false })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: StaticSiteDeployment,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getStaticSiteDeploymentContract = {
  operationId: 'getStaticSiteDeploymentV3',
  method: 'GET',
  path: '/static-sites/{id}/deployments/{deployment_id}',
  summary: 'Get static site deployment',
  tags: ['Static sites'],
  params: DeploymentParams,
  success: 200,
  response: Type.Object(
    {
      ...deploymentFields,
      ...deploymentTimes,
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const cancelStaticSiteDeploymentContract = {
  operationId: 'cancelStaticSiteDeploymentV3',
  method: 'POST',
  path: '/static-sites/{id}/deployments/{deployment_id}/cancel',
  summary: 'Cancel static site deployment',
  tags: ['Static sites'],
  params: DeploymentParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getStaticSiteDeploymentLogsContract = {
  operationId: 'getStaticSiteDeploymentLogsV3',
  method: 'GET',
  path: '/static-sites/{id}/deployments/{deployment_id}/logs',
  summary: 'Get static site deployment logs',
  tags: ['Static sites'],
  params: DeploymentParams,
  ...LogsOperation,
} as const;

export const getStaticSiteAccessLogsContract = {
  operationId: 'getStaticSiteAccessLogsV3',
  method: 'GET',
  path: '/static-sites/{id}/access-logs',
  summary: 'Get static site access logs',
  tags: ['Static sites'],
  params: IdParams,
  ...LogsOperation,
} as const;

export const purgeStaticSiteCacheContract = {
  operationId: 'purgeStaticSiteCacheV3',
  method: 'POST',
  path: '/static-sites/{id}/purge-cache',
  summary: 'Purge static site cache',
  tags: ['Static sites'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const toggleStaticSitePrettyUrlContract = {
  operationId: 'toggleStaticSitePrettyUrlV3',
  method: 'POST',
  path: '/static-sites/{id}/pretty-url/toggle',
  summary: 'Toggle static site pretty url',
  tags: ['Static sites'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      is_turned_on: Type.Boolean(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 429, 500],
} as const;
