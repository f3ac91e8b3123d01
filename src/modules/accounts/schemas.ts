import { Type } from '@sinclair/typebox';
import { StringEnum, Uuid } from '../../shared/schemas/common.js';

export const listGitProvidersContract = {
  operationId: 'listGitProvidersV3',
  method: 'GET',
  path: '/git/providers',
  summary: 'List git providers',
  tags: ['Git'],
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        provider: StringEnum(['github', 'bitbucket', 'gitlab']),
        display_name: Type.String(),
        connect_url: Type.String(),
        settings_url: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 500],
} as const;

export const listUsersContract = {
  operationId: 'listUsersV3',
  method: 'GET',
  path: '/users',
  summary: 'List users',
  tags: ['Users'],
  success: 200,
  response: Type.Object(
    {
      data: Type.Array(
        Type.Object(
          {
            id: Uuid(),
            email: Type.String({ format: 'email' }),
            image: Type.String({ format: 'uri' }),
            full_name: Type.String(),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 500],
} as const;
