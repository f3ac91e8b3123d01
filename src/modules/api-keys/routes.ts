import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export const operations = [
  defineOperation({
    contract: c.listApiKeysContract,
    permission: 'API_KEY:READ',
    tier: 'read',
    handler: async (r) => svc.listKeys(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createApiKeyContract,
    permission: 'API_KEY:CREATE',
    tier: 'general_write',
    handler: async (r) => {
      const k = await svc.createKey(r, { ...r.body, source: 'EXTERNAL' });
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
    pure: true,
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
    handler: async (r) => svc.getKey(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateKey(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteApiKeyContract,
    permission: 'API_KEY:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deleteKey(r, r.params.id),
  }),
  defineOperation({
    contract: c.toggleApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.toggleKey(r, r.params.id),
  }),
  defineOperation({
    contract: c.rotateApiKeyContract,
    permission: 'API_KEY:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.rotateKey(r, r.params.id, r.body?.old_token_ttl_hours ?? 0),
  }),
];
