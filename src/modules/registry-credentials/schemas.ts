// Contracts of the Docker registry credentials area (generated from the v3 contract, names tidied).
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

const DockerRegistry = Type.Object(
  {
    id: Uuid(),
    company_id: Uuid(),
    name: Type.String(),
    registry: StringEnum(['gcr', 'ecr', 'dockerHub', 'github', 'gitlab', 'digitalOcean', 'custom']),
    username: Type.String(),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const listDockerRegistriesContract = {
  operationId: 'listDockerRegistriesV3',
  method: 'GET',
  path: '/docker-registries',
  summary: 'List docker registries',
  tags: ['Docker Registries'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(
    Type.Object(
      {
        id: Uuid(),
        name: Type.String(),
        registry: StringEnum(['gcr', 'ecr', 'dockerHub', 'github', 'gitlab', 'digitalOcean', 'custom']),
        username: Type.String(),
        created_at: DateTime(),
        updated_at: DateTime(),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 500],
} as const;

export const createDockerRegistryContract = {
  operationId: 'createDockerRegistryV3',
  method: 'POST',
  path: '/docker-registries',
  summary: 'Create docker registry',
  tags: ['Docker Registries'],
  body: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 255 }),
      registry: Type.Optional(StringEnum(['gcr', 'ecr', 'dockerHub', 'github', 'gitlab', 'digitalOcean', 'custom'], { default: 'dockerHub' })),
      username: Type.String({ pattern: '^(?=.{1,39}$)[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$' }),
      secret: Type.String({ pattern: '^.{8,128}$' }),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: DockerRegistry,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getDockerRegistryContract = {
  operationId: 'getDockerRegistryV3',
  method: 'GET',
  path: '/docker-registries/{id}',
  summary: 'Get docker registry',
  tags: ['Docker Registries'],
  params: IdParams,
  success: 200,
  response: DockerRegistry,
  errors: [401, 403, 404, 500],
} as const;

export const updateDockerRegistryContract = {
  operationId: 'updateDockerRegistryV3',
  method: 'PATCH',
  path: '/docker-registries/{id}',
  summary: 'Update docker registry',
  tags: ['Docker Registries'],
  params: IdParams,
  body: Type.Object(
    {
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      registry: Type.Optional(StringEnum(['gcr', 'ecr', 'dockerHub', 'github', 'gitlab', 'digitalOcean', 'custom'])),
      username: Type.Optional(Type.String({ pattern: '^(?=.{1,39}$)[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$' })),
      secret: Type.Optional(Type.String({ pattern: '^.{8,128}$' })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: DockerRegistry,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteDockerRegistryContract = {
  operationId: 'deleteDockerRegistryV3',
  method: 'DELETE',
  path: '/docker-registries/{id}',
  summary: 'Delete docker registry',
  tags: ['Docker Registries'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;
