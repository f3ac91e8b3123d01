// Environment variable operations. App-level variables are a part of their application: the app
// `id` is the resource (a key scoped to that application may use them). Global variables belong to
// the company and apply to every application, so they are nobody's single resource
// (resourceParam: null) and, being company-wide, a capability scoped to some applications does not
// reach them: such a key gets 403 naming the permission, for reads and writes alike.
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
    handler: async ({ tx, app, auth, params, query }) => svc.listAppEnvVars(tx, app.secrets, auth.company.id, params.id, pageOf(query)),
  }),
  defineOperation({
    contract: c.createEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.createAppEnvVar(tx, app.secrets, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.updateEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.updateAppEnvVar(tx, app.secrets, auth.company.id, params.id, params.env_var_id, body),
  }),
  defineOperation({
    contract: c.deleteEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteAppEnvVar(tx, auth.company.id, params.id, params.env_var_id),
  }),
  defineOperation({
    contract: c.listGlobalEnvVarsContract,
    permission: 'APP:READ',
    tier: 'read',
    resourceParam: null,
    companyWide: true,
    handler: async ({ tx, app, auth, query }) => svc.listGlobalEnvVars(tx, app.secrets, auth.company.id, pageOf(query)),
  }),
  defineOperation({
    contract: c.createGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async ({ tx, app, auth, body }) => svc.createGlobalEnvVar(tx, app.secrets, auth.company.id, body),
  }),
  defineOperation({
    contract: c.updateGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async ({ tx, app, auth, params, body }) => svc.updateGlobalEnvVar(tx, app.secrets, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteGlobalEnvVarContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    resourceParam: null,
    companyWide: true,
    handler: async ({ tx, auth, params }) => svc.deleteGlobalEnvVar(tx, auth.company.id, params.id),
  }),
];
