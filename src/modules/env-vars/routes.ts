// Environment variable operations. App-level variables are a part of their application: the app
// `id` is the resource (a key scoped to that application may use them). Global variables belong to
// the company and apply to every application, so they are nobody's single resource
// (resourceParam: null) and, being company-wide, a capability scoped to some applications does not
// reach them: such a key gets 403 naming the permission, for reads and writes alike. A static
// site's variables are part of the site (STATIC_SITE permissions, the site `id` is the resource).
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import { migrations, tables } from './storage.js';

export { migrations, tables };

export const operations = [
  defineOperation({
    contract: c.listEnvVarsContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.listAppEnvVars(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.createAppEnvVar(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.updateEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateAppEnvVar(r, r.params.id, r.params.env_var_id, r.body),
  }),
  defineOperation({
    contract: c.deleteEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteAppEnvVar(r, r.params.id, r.params.env_var_id),
  }),
  defineOperation({
    contract: c.listGlobalEnvVarsContract,
    permission: 'APP:READ',
    tier: 'read',
    resourceParam: null,
    companyWide: true,
    handler: async (r) => svc.listGlobalEnvVars(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async (r) => svc.createGlobalEnvVar(r, r.body),
  }),
  defineOperation({
    contract: c.updateGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async (r) => svc.updateGlobalEnvVar(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async (r) => svc.deleteGlobalEnvVar(r, r.params.id),
  }),
  defineOperation({
    contract: c.listStaticSiteEnvVarsContract,
    permission: 'STATIC_SITE:READ',
    tier: 'read',
    handler: async (r) => svc.listSiteEnvVars(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createStaticSiteEnvVarContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.createSiteEnvVar(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.updateStaticSiteEnvVarContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateSiteEnvVar(r, r.params.id, r.params.env_var_id, r.body),
  }),
  defineOperation({
    contract: c.deleteStaticSiteEnvVarContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteSiteEnvVar(r, r.params.id, r.params.env_var_id),
  }),
];

export function setup(app: AppContext): void {
  svc.registerLifecycle(app);
  app.ports.environment = { system: svc.systemVariables, application: svc.resolveEnvironment, site: svc.resolveSiteEnvironment };
}
