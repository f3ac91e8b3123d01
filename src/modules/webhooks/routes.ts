import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { DELIVER, deliverJob, fanOut } from './delivery.js';
import * as c from './schemas.js';
import * as svc from './service.js';
export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listWebhooksContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async (r) => svc.listWebhooks(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createWebhookContract,
    permission: 'WEBHOOK:CREATE',
    tier: 'general_write',
    handler: async (r) => svc.createWebhook(r, r.body),
  }),
  defineOperation({
    contract: c.getWebhookContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async (r) => svc.getWebhook(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateWebhookContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateWebhook(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteWebhookContract,
    permission: 'WEBHOOK:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deleteWebhook(r, r.params.id),
  }),
  defineOperation({
    contract: c.toggleWebhookContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.toggleWebhook(r, r.params.id),
  }),
  defineOperation({
    contract: c.rollWebhookSecretContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.rollSecret(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.listWebhookDeliveriesContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async (r) => svc.listDeliveries(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.getWebhookDeliveryContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async (r) => svc.getDelivery(r, r.params.id, r.params.delivery_id),
  }),
];

export function setup(app: AppContext): void {
  app.events.sink(fanOut);
  app.jobs.register(DELIVER, deliverJob(app));
}
