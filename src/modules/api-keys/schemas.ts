import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, Nullable, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

export const ApiKeyRole = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    description: Type.String(),
  },
  { additionalProperties: false },
);

export const ApiKeyCapability = Type.Object(
  {
    id: Uuid(),
    permission: Type.String(),
    id_resource: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    company_id: Uuid(),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    is_enabled: Type.Boolean(),
    source: StringEnum(['DASHBOARD', 'CLI', 'EXTERNAL']),
    masked_token: Type.String(),
    roles: Type.Array(ApiKeyRole),
    capabilities: Type.Array(ApiKeyCapability),
    last_used_at: Nullable(DateTime()),
    expired_at: Nullable(DateTime()),
    old_token_expired_at: Nullable(DateTime()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listApiKeysContract = {
  operationId: 'listApiKeysV3',
  method: 'GET',
  path: '/api-keys',
  summary: 'List api keys',
  tags: ['API Keys'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(ApiKey),
  errors: [401, 403, 500],
} as const;

export const createApiKeyContract = {
  operationId: 'createApiKeyV3',
  method: 'POST',
  path: '/api-keys',
  summary: 'Create api key',
  tags: ['API Keys'],
  body: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 255 }),
      role_ids: Type.Optional(Type.Array(Uuid())),
      capabilities: Type.Optional(
        Type.Array(
          Type.Object({
            permission: Type.String({ minLength: 1 }),
            id_resource: Type.Optional(Type.String()),
          }),
        ),
      ),
      expired_at: Type.Optional(DateTime()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: Type.Object(
    {
      id: Uuid(),
      token: Type.String(),
      name: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 429, 500],
} as const;

export const getApiKeyContract = {
  operationId: 'getApiKeyV3',
  method: 'GET',
  path: '/api-keys/{id}',
  summary: 'Get api key',
  tags: ['API Keys'],
  params: IdParams,
  success: 200,
  response: ApiKey,
  errors: [401, 403, 404, 500],
} as const;

export const updateApiKeyContract = {
  operationId: 'updateApiKeyV3',
  method: 'PATCH',
  path: '/api-keys/{id}',
  summary: 'Update api key',
  tags: ['API Keys'],
  params: IdParams,
  body: Type.Object(
    {
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      role_ids: Type.Optional(Type.Array(Uuid())),
      capabilities: Type.Optional(
        Type.Array(
          Type.Object({
            permission: Type.String({ minLength: 1 }),
            id_resource: Type.Optional(Type.String()),
          }),
        ),
      ),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: ApiKey,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteApiKeyContract = {
  operationId: 'deleteApiKeyV3',
  method: 'DELETE',
  path: '/api-keys/{id}',
  summary: 'Delete api key',
  tags: ['API Keys'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const toggleApiKeyContract = {
  operationId: 'toggleApiKeyV3',
  method: 'POST',
  path: '/api-keys/{id}/toggle',
  summary: 'Toggle api key',
  tags: ['API Keys'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      message: Type.String(),
      is_enabled: Type.Boolean(),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const rotateApiKeyContract = {
  operationId: 'rotateApiKeyV3',
  method: 'POST',
  path: '/api-keys/{id}/rotate',
  summary: 'Rotate api key',
  tags: ['API Keys'],
  params: IdParams,
  body: Type.Object(
    {
      old_token_ttl_hours: Type.Optional(Type.Integer({ minimum: 0, maximum: 168, default: 0 })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Type.Object(
    {
      token: Type.String(),
      name: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const validateApiKeyContract = {
  operationId: 'validateApiKeyV3',
  method: 'GET',
  path: '/api-keys/validate',
  summary: 'Validate api key',
  tags: ['API Keys'],
  public: true,
  success: 200,
  response: Type.Object(
    {
      name: Type.String(),
      expires_at: Nullable(DateTime()),
      company_id: Uuid(),
      status: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 500],
} as const;

export const getCurrentApiKeyContract = {
  operationId: 'getCurrentApiKeyV3',
  method: 'GET',
  path: '/api-keys/me',
  summary: 'Get current api key',
  tags: ['API Keys'],
  success: 200,
  response: Type.Object({
    id: Uuid(),
    company_id: Type.Optional(Uuid()),
    name: Type.String(),
    is_enabled: Type.Optional(Type.Boolean()),
    source: Type.Optional(Type.String()),
    masked_token: Type.Optional(Type.String()),
    // Role items are open in the contract; keep every field we send (id, name, description).
    roles: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
    capabilities: Type.Array(
      Type.Object({
        permission: Type.Optional(Type.String()),
        id_resource: Type.Optional(Nullable(Type.String())),
      }),
    ),
    last_used_at: Type.Optional(Nullable(DateTime())),
    expired_at: Type.Optional(Nullable(DateTime())),
    created_at: Type.Optional(DateTime()),
    updated_at: Type.Optional(DateTime()),
  }),
  errors: [401, 500],
} as const;
