import { PERMISSIONS, ROLES } from '../../shared/auth/rbac.js';
import { defineOperation } from '../../shared/http/operation.js';
import { CLUSTERS, DATABASE_RESOURCE_TYPES, PROCESS_RESOURCE_TYPES } from './catalog.js';
import * as c from './schemas.js';

export const operations = [
  defineOperation({ contract: c.listClustersContract, permission: null, tier: 'read', handler: async () => CLUSTERS }),
  defineOperation({ contract: c.listDatabaseResourceTypesContract, permission: null, tier: 'read', handler: async () => DATABASE_RESOURCE_TYPES }),
  defineOperation({ contract: c.listProcessResourceTypesContract, permission: null, tier: 'read', handler: async () => PROCESS_RESOURCE_TYPES }),
  defineOperation({ contract: c.listApiKeyPermissionsContract, permission: null, tier: 'read', handler: async () => PERMISSIONS }),
  defineOperation({ contract: c.listApiKeyRolesContract, permission: null, tier: 'read', handler: async () => ROLES }),
];
