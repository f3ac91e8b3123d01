import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export const operations = [
  defineOperation({
    contract: c.listApiKeysContract,
    permission: 'API_KEY:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listKeys(tx, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createApiKeyContract,
    permission: 'API_KEY:CREATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, body }) => {
      const k = await svc.createKey(tx, app, auth.company.id, { ...body, source: 'EXTERNAL' }, auth.grants);
      return { id: k.id, token: k.token, name: k.name };
    },
  }),
  defineOperation({
    contract: c.getCurrentApiKeyContract,
    permission: null,
    tier: 'read',
    handler: async ({ auth }) => svc.effective(auth.key, auth.grants),
  }),
  defineOperation({
    contract: c.validateApiKeyContract,
    permission: null,
    tier: 'read',
    handler: async ({ auth }) => ({
      name: auth.key.name,
      expires_at: auth.key.expired_at,
      company_id: auth.company.id,
      status: auth.company.status === 'active' ? 'active' : auth.company.status,
    }),
  }),
  defineOperation({
    contract: c.getApiKeyContract,
    permission: 'API_KEY:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.toView(await svc.findKey(tx, auth.company.id, params.id)),
  }),
  defineOperation({
    contract: c.updateApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => svc.updateKey(tx, auth.company.id, params.id, body, auth.grants),
  }),
  defineOperation({
    contract: c.deleteApiKeyContract,
    permission: 'API_KEY:DELETE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteKey(tx, auth.company.id, params.id, auth.key.id, auth.grants),
  }),
  defineOperation({
    contract: c.toggleApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.toggleKey(tx, auth.company.id, params.id, auth.key.id, auth.grants),
  }),
  defineOperation({
    contract: c.rotateApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.rotateKey(tx, app, auth.company.id, params.id, body?.old_token_ttl_hours ?? 0, auth.grants),
  }),
];
