// Usage alert configs (/usage-alerts). Creation is in the service creation tier (specification,
// Limits -> Rate limits: "usage alerts"); updates and deletes in the general write tier.
import { ref } from '../../shared/http/references.js';
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
    references: [ref.budgetProjectQuery],
    handler: async (r) => svc.listAlerts(r, pageOf(r.query), r.query.project_id),
  }),
  defineOperation({
    contract: c.createUsageAlertConfigContract,
    permission: 'BILLING:CREATE',
    tier: 'service_creation',
    references: [ref.budgetProject],
    handler: async (r) => svc.createAlert(r, r.body),
  }),
  defineOperation({
    contract: c.getUsageAlertConfigContract,
    permission: 'BILLING:READ',
    tier: 'read',
    handler: async (r) => svc.getAlert(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateUsageAlertConfigContract,
    permission: 'BILLING:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateAlert(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteUsageAlertConfigContract,
    permission: 'BILLING:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deleteAlert(r, r.params.id),
  }),
];
