// Contracts of the usage alerts area (generated from the v3 contract, openapi-additions.json; names tidied).
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, Nullable, Paginated, PaginationQuery, Uuid } from '../../shared/schemas/common.js';

const UsageAlertTrigger = Type.Object(
  {
    id: Uuid(),
    percentage: Type.Integer({ minimum: 1, maximum: 100 }),
    last_fired_at: Nullable(DateTime()),
  },
  { additionalProperties: false },
);

const UsageAlertConfig = Type.Object(
  {
    id: Uuid(),
    company_id: Type.String({ minLength: 1 }),
    project_id: Nullable(Uuid()),
    limit_usd: Type.Number({ minimum: 0.01 }),
    emails: Type.Array(Type.String({ format: 'email' }), { minItems: 1 }),
    triggers: Type.Array(UsageAlertTrigger),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listUsageAlertConfigsContract = {
  operationId: 'listUsageAlertConfigsV3',
  method: 'GET',
  path: '/usage-alerts',
  summary: 'List usage alert configs',
  tags: ['Usage Alerts'],
  querystring: Type.Object({
    ...PaginationQuery,
    project_id: Type.Optional(Uuid()),
  }),
  success: 200,
  response: Paginated(UsageAlertConfig),
  errors: [401, 403, 500],
} as const;

export const createUsageAlertConfigContract = {
  operationId: 'createUsageAlertConfigV3',
  method: 'POST',
  path: '/usage-alerts',
  summary: 'Create usage alert config',
  tags: ['Usage Alerts'],
  body: Type.Object(
    {
      project_id: Type.Optional(Nullable(Uuid())),
      limit_usd: Type.Number({ minimum: 0.01 }),
      emails: Type.Array(Type.String({ format: 'email' }), { minItems: 1 }),
      triggers: Type.Array(
        Type.Object(
          {
            percentage: Type.Integer({ minimum: 1, maximum: 100 }),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 10 },
      ),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: UsageAlertConfig,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getUsageAlertConfigContract = {
  operationId: 'getUsageAlertConfigV3',
  method: 'GET',
  path: '/usage-alerts/{id}',
  summary: 'Get usage alert config',
  tags: ['Usage Alerts'],
  params: IdParams,
  success: 200,
  response: UsageAlertConfig,
  errors: [401, 403, 404, 500],
} as const;

export const updateUsageAlertConfigContract = {
  operationId: 'updateUsageAlertConfigV3',
  method: 'PATCH',
  path: '/usage-alerts/{id}',
  summary: 'Update usage alert config',
  tags: ['Usage Alerts'],
  params: IdParams,
  body: Type.Object(
    {
      limit_usd: Type.Optional(Type.Number({ minimum: 0.01 })),
      emails: Type.Optional(Type.Array(Type.String({ format: 'email' }), { minItems: 1 })),
      triggers: Type.Optional(
        Type.Array(
          Type.Object(
            {
              percentage: Type.Integer({ minimum: 1, maximum: 100 }),
            },
            { additionalProperties: false },
          ),
          { minItems: 1, maxItems: 10 },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: UsageAlertConfig,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteUsageAlertConfigContract = {
  operationId: 'deleteUsageAlertConfigV3',
  method: 'DELETE',
  path: '/usage-alerts/{id}',
  summary: 'Delete usage alert config',
  tags: ['Usage Alerts'],
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;
