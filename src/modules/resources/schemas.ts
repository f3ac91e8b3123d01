import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum, Uuid } from '../../shared/schemas/common.js';

export const listClustersContract = {
  operationId: 'listClustersV3',
  method: 'GET',
  path: '/resources/clusters',
  summary: 'List clusters',
  tags: ['Resources'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        display_name: Nullable(Type.String()),
        location: Type.String(),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;

export const listDatabaseResourceTypesContract = {
  operationId: 'listDatabaseResourceTypesV3',
  method: 'GET',
  path: '/resources/database-resource-types',
  summary: 'List database resource types',
  tags: ['Resources'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        cpu_limit: Type.Integer({ minimum: 1 }),
        memory_limit: Type.Integer({ minimum: 1 }),
        storage_limit: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;

export const listProcessResourceTypesContract = {
  operationId: 'listProcessResourceTypesV3',
  method: 'GET',
  path: '/resources/process-resource-types',
  summary: 'List process resource types',
  tags: ['Resources'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        cpu_limit: Type.Integer({ minimum: 1 }),
        memory_limit: Type.Integer({ minimum: 1 }),
        category: StringEnum(['hobby', 'standard', 'cpuOptimized', 'memoryOptimized']),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;

export const listApiKeyPermissionsContract = {
  operationId: 'listApiKeyPermissionsV3',
  method: 'GET',
  path: '/resources/rbac/api-key-permissions',
  summary: 'List api key permissions',
  tags: ['Resources'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        description: Type.String(),
        resource: StringEnum([
          'APP',
          'PIPELINE',
          'DATABASE',
          'STATIC_SITE',
          'LOAD_BALANCER',
          'OBJECT_STORAGE',
          'BILLING',
          'COMPANY',
          'PROJECT',
          'WEBHOOK',
          'API_KEY',
          'REGISTRY_CREDENTIAL',
        ]),
        action: StringEnum(['CREATE', 'READ', 'UPDATE', 'DELETE']),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;

export const listApiKeyRolesContract = {
  operationId: 'listApiKeyRolesV3',
  method: 'GET',
  path: '/resources/rbac/api-key-roles',
  summary: 'List api key roles',
  tags: ['Resources'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        description: Type.String(),
        permissions: Type.Array(Type.String()),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;
