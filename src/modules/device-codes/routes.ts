import { defineOperation } from '../../shared/http/operation.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export const operations = [
  defineOperation({
    contract: c.createDeviceCodeContract,
    auth: 'none',
    permission: null,
    tier: 'general_write',
    handler: async ({ tx, app, ip }) => svc.createCode(app, tx, ip),
  }),
  defineOperation({
    contract: c.pollDeviceCodeContract,
    auth: 'none',
    permission: null,
    tier: 'read',
    resourceParam: null,
    handler: async ({ tx, app, params }) => svc.pollCode(app, tx, params.code),
  }),
];
