// Usage alert configs (/usage-alerts). Creation is in the service creation tier (specification,
// Limits -> Rate limits: "usage alerts"); updates and deletes in the general write tier.
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listUsageAlertConfigsContract,
    permission: 'BILLING:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listAlerts(tx, auth.company.id, pageOf(query), query.project_id, scope),
  }),
  defineOperation({
    contract: c.createUsageAlertConfigContract,
    permission: 'BILLING:CREATE',
    tier: 'service_creation',
    handler: async ({ tx, auth, body }) => svc.createAlert(tx, auth.company.id, body),
  }),
  defineOperation({
    contract: c.getUsageAlertConfigContract,
    permission: 'BILLING:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.getAlert(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.updateUsageAlertConfigContract,
    permission: 'BILLING:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => svc.updateAlert(tx, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteUsageAlertConfigContract,
    permission: 'BILLING:DELETE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteAlert(tx, auth.company.id, params.id),
  }),
];
