import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

export const Project = Type.Object(
  {
    id: Uuid(),
    company_id: Type.String(),
    name: Type.String(),
    display_name: Type.String(),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listProjectsContract = {
  operationId: 'listProjectsV3',
  method: 'GET',
  path: '/projects',
  summary: 'List projects',
  tags: ['Projects'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        display_name: Type.String(),
        created_at: DateTime(),
        updated_at: DateTime(),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 500],
} as const;

export const createProjectContract = {
  operationId: 'createProjectV3',
  method: 'POST',
  path: '/projects',
  summary: 'Create project',
  tags: ['Projects'],
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 1, maxLength: 64 }),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: Project,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getProjectContract = {
  operationId: 'getProjectV3',
  method: 'GET',
  path: '/projects/{id}',
  summary: 'Get project',
  tags: ['Projects'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      id: Uuid(),
      company_id: Type.String(),
      name: Type.String(),
      display_name: Type.String(),
      created_at: DateTime(),
      updated_at: DateTime(),
      services: Type.Array(
        Type.Object(
          {
            id: Uuid(),
            name: Type.String(),
            display_name: Type.String(),
            type: StringEnum(['app', 'database', 'pipeline', 'object-storage', 'load-balancer', 'static-site']),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const updateProjectContract = {
  operationId: 'updateProjectV3',
  method: 'PATCH',
  path: '/projects/{id}',
  summary: 'Update project',
  tags: ['Projects'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 1, maxLength: 64 }),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Project,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteProjectContract = {
  operationId: 'deleteProjectV3',
  method: 'DELETE',
  path: '/projects/{id}',
  summary: 'Delete project',
  tags: ['Projects'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const addServiceToProjectContract = {
  operationId: 'addServiceToProjectV3',
  method: 'POST',
  path: '/projects/{id}/services',
  summary: 'Add service to project',
  tags: ['Projects'],
  params: IdParams,
  body: Type.Object(
    {
      service_id: Uuid(),
      service_type: StringEnum(['app', 'database', 'pipeline', 'object-storage', 'static-site']),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const removeServiceFromProjectContract = {
  operationId: 'removeServiceFromProjectV3',
  method: 'DELETE',
  path: '/projects/{id}/services/{service_id}',
  summary: 'Remove service from project',
  tags: ['Projects'],
  params: Type.Object({
    id: Uuid(),
    service_id: Uuid(),
  }),
  querystring: Type.Object({
    service_type: StringEnum(['app', 'database', 'pipeline', 'object-storage', 'static-site']),
  }),
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;
