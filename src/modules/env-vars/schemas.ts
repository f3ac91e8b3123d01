// Contracts of the environment variable operations: app-level variables under
// /applications/{id}/env-vars, company-wide (global) variables under /applications/global-env-vars and
// static sites' variables under /static-sites/{id}/env-vars.
// Shapes follow the v3 contract field for field (generated with scripts/contract-to-typebox.mjs).
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, Nullable, PageQuery, Paginated, Uuid } from '../../shared/schemas/common.js';

/** An app-level variable as returned (value decrypted). */
export const EnvVar = Type.Object(
  {
    id: Uuid(),
    app_id: Uuid(),
    key: Type.String({ minLength: 1, maxLength: 255 }),
    value: Type.String({ maxLength: 32768 }),
    is_runtime: Nullable(Type.Boolean()),
    is_buildtime: Nullable(Type.Boolean()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

/** A global (company-wide) variable as returned (value decrypted). */
export const GlobalEnvVar = Type.Object(
  {
    id: Uuid(),
    key: Type.String(),
    value: Type.String(),
    is_runtime: Nullable(Type.Boolean()),
    is_buildtime: Nullable(Type.Boolean()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

/** Create body, shared by app-level and global variables. */
export const CreateEnvVarBody = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 255 }),
  value: Type.String({ maxLength: 32768 }),
  is_runtime: Type.Optional(Type.Boolean({ default: true })),
  is_buildtime: Type.Optional(Type.Boolean({ default: true })),
});

/** Update body (every field optional), shared by app-level and global variables. */
export const UpdateEnvVarBody = Type.Object({
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  value: Type.Optional(Type.String({ maxLength: 32768 })),
  is_runtime: Type.Optional(Type.Boolean()),
  is_buildtime: Type.Optional(Type.Boolean()),
});

const AppParams = Type.Object({
  id: Uuid(),
});

const AppVarParams = Type.Object({
  id: Uuid(),
  env_var_id: Uuid(),
});

const GlobalVarParams = Type.Object({
  id: Uuid(),
});

export const listEnvVarsContract = {
  operationId: 'listEnvironmentVariablesV3',
  method: 'GET',
  path: '/applications/{id}/env-vars',
  summary: 'List environment variables',
  tags: ['Applications'],
  params: AppParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(EnvVar),
  errors: [401, 403, 404, 500],
} as const;

export const createEnvVarContract = {
  operationId: 'createEnvironmentVariableV3',
  method: 'POST',
  path: '/applications/{id}/env-vars',
  summary: 'Create environment variable',
  tags: ['Applications'],
  params: AppParams,
  body: CreateEnvVarBody,
  bodyRequired: true,
  success: 201,
  response: EnvVar,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const updateEnvVarContract = {
  operationId: 'updateEnvironmentVariableV3',
  method: 'PUT',
  path: '/applications/{id}/env-vars/{env_var_id}',
  summary: 'Update environment variable',
  tags: ['Applications'],
  params: AppVarParams,
  body: UpdateEnvVarBody,
  bodyRequired: true,
  success: 200,
  response: EnvVar,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteEnvVarContract = {
  operationId: 'deleteEnvironmentVariableV3',
  method: 'DELETE',
  path: '/applications/{id}/env-vars/{env_var_id}',
  summary: 'Delete environment variable',
  tags: ['Applications'],
  params: AppVarParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listGlobalEnvVarsContract = {
  operationId: 'listGlobalEnvVarsV3',
  method: 'GET',
  path: '/applications/global-env-vars',
  summary: 'List global env vars',
  tags: ['Global Environment Variables'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(GlobalEnvVar),
  errors: [401, 403, 500],
} as const;

export const createGlobalEnvVarContract = {
  operationId: 'createGlobalEnvVarV3',
  method: 'POST',
  path: '/applications/global-env-vars',
  summary: 'Create global env var',
  tags: ['Global Environment Variables'],
  body: CreateEnvVarBody,
  bodyRequired: true,
  success: 201,
  response: GlobalEnvVar,
  errors: [400, 401, 403, 429, 500],
} as const;

export const updateGlobalEnvVarContract = {
  operationId: 'updateGlobalEnvVarV3',
  method: 'PUT',
  path: '/applications/global-env-vars/{id}',
  summary: 'Update global env var',
  tags: ['Global Environment Variables'],
  params: GlobalVarParams,
  body: UpdateEnvVarBody,
  bodyRequired: true,
  success: 200,
  response: GlobalEnvVar,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteGlobalEnvVarContract = {
  operationId: 'deleteGlobalEnvVarV3',
  method: 'DELETE',
  path: '/applications/global-env-vars/{id}',
  summary: 'Delete global env var',
  tags: ['Global Environment Variables'],
  params: GlobalVarParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

// ---------------------------------------------------------------- static sites

const SiteEnvVarParams = Type.Object({
  id: Uuid(),
  env_var_id: Uuid(),
});

export const StaticSiteEnvVar = Type.Object(
  {
    id: Uuid(),
    static_site_id: Uuid(),
    key: Type.String({ minLength: 1, maxLength: 255 }),
    value: Type.String({ maxLength: 32768 }),
    is_production: Nullable(Type.Boolean()),
    is_preview: Nullable(Type.Boolean()),
    branch: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listStaticSiteEnvVarsContract = {
  operationId: 'listStaticSiteEnvVarsV3',
  method: 'GET',
  path: '/static-sites/{id}/env-vars',
  summary: 'List static site env vars',
  tags: ['Static sites'],
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(StaticSiteEnvVar),
  errors: [401, 403, 404, 500],
} as const;

export const createStaticSiteEnvVarContract = {
  operationId: 'createStaticSiteEnvVarV3',
  method: 'POST',
  path: '/static-sites/{id}/env-vars',
  summary: 'Create static site env var',
  tags: ['Static sites'],
  params: IdParams,
  body: Type.Object(
    {
      key: Type.String({ minLength: 1, maxLength: 255 }),
      value: Type.String({ maxLength: 32768 }),
      is_production: Type.Optional(Type.Boolean()),
      is_preview: Type.Optional(Type.Boolean()),
      branch: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: StaticSiteEnvVar,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const updateStaticSiteEnvVarContract = {
  operationId: 'updateStaticSiteEnvVarV3',
  method: 'PUT',
  path: '/static-sites/{id}/env-vars/{env_var_id}',
  summary: 'Update static site env var',
  tags: ['Static sites'],
  params: SiteEnvVarParams,
  body: Type.Object({
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    value: Type.Optional(Type.String({ maxLength: 32768 })),
    is_production: Type.Optional(Type.Boolean()),
    is_preview: Type.Optional(Type.Boolean()),
    branch: Type.Optional(Nullable(Type.String())),
  }),
  bodyRequired: true,
  success: 200,
  response: StaticSiteEnvVar,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteStaticSiteEnvVarContract = {
  operationId: 'deleteStaticSiteEnvVarV3',
  method: 'DELETE',
  path: '/static-sites/{id}/env-vars/{env_var_id}',
  summary: 'Delete static site env var',
  tags: ['Static sites'],
  params: SiteEnvVarParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;
