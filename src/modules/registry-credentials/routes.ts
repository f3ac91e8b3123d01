// Docker registry credentials (/docker-registries). Writes are in the general write tier
// (specification, Limits -> Rate limits: "registry credentials").
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listDockerRegistriesContract,
    permission: 'REGISTRY_CREDENTIAL:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listRegistries(tx, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:CREATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, body }) => svc.createRegistry(tx, app, auth.company.id, body),
  }),
  defineOperation({
    contract: c.getDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.getRegistry(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.updateDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.updateRegistry(tx, app, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:DELETE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteRegistry(tx, auth.company.id, params.id),
  }),
];
