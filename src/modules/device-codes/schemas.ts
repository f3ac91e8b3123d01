import { Type } from '@sinclair/typebox';
import { StringEnum } from '../../shared/schemas/common.js';

export const createDeviceCodeContract = {
  operationId: 'createDeviceCodeV3',
  method: 'POST',
  path: '/auth/device-codes',
  summary: 'Create device code',
  tags: ['Device Authorization'],
  public: true,
  success: 201,
  response: Type.Object(
    {
      code: Type.String(),
      expires_at: Type.String(),
    },
    { additionalProperties: false },
  ),
  errors: [429, 500],
} as const;

export const pollDeviceCodeContract = {
  operationId: 'pollDeviceCodeV3',
  method: 'GET',
  path: '/auth/device-codes/{code}',
  summary: 'Poll device code',
  tags: ['Device Authorization'],
  public: true,
  params: Type.Object({
    code: Type.String({ minLength: 1 }),
  }),
  success: 200,
  response: Type.Object(
    {
      status: StringEnum(['pending', 'approved', 'denied', 'expired']),
      token: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
  errors: [500],
} as const;
