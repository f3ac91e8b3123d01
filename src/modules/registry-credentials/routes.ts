// Docker registry credentials (/docker-registries). Writes are in the general write tier
// (specification, Limits -> Rate limits: "registry credentials").
import type { AppContext } from '../../shared/context.js';
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
    handler: async (r) => svc.listRegistries(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:CREATE',
    tier: 'general_write',
    handler: async (r) => svc.createRegistry(r, r.body),
  }),
  defineOperation({
    contract: c.getDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:READ',
    tier: 'read',
    handler: async (r) => svc.getRegistry(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateRegistry(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteDockerRegistryContract,
    permission: 'REGISTRY_CREDENTIAL:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deleteRegistry(r, r.params.id),
  }),
];

export function setup(app: AppContext): void {
  app.services.registerResource('docker-registry', svc.registrySummary);
}
