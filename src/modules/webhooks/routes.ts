import type { AppContext } from '../../shared/context.js';
import { registerEventSink } from '../../shared/events.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { DELIVER, deliverJob, fanOut } from './delivery.js';
import * as c from './schemas.js';
import * as svc from './service.js';
export { migrations, tables } from './storage.js';

const who = (auth: { key: { id: string } }) => auth.key.id;

export const operations = [
  defineOperation({
    contract: c.listWebhooksContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, query, scope }) => svc.listWebhooks(tx, app, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createWebhookContract,
    permission: 'WEBHOOK:CREATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, body }) => svc.createWebhook(tx, app, auth.company.id, who(auth), body),
  }),
  defineOperation({
    contract: c.getWebhookContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => svc.getWebhook(tx, app, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.updateWebhookContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.updateWebhook(tx, app, auth.company.id, params.id, who(auth), body),
  }),
  defineOperation({
    contract: c.deleteWebhookContract,
    permission: 'WEBHOOK:DELETE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteWebhook(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.toggleWebhookContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params }) => svc.toggleWebhook(tx, app, auth.company.id, params.id, who(auth)),
  }),
  defineOperation({
    contract: c.rollWebhookSecretContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.rollSecret(tx, app, auth.company.id, params.id, who(auth), body.expire_in_hours ?? 0),
  }),
  defineOperation({
    contract: c.listWebhookDeliveriesContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async ({ tx, auth, params, query }) => svc.listDeliveries(tx, auth.company.id, params.id, pageOf(query)),
  }),
  defineOperation({
    contract: c.getWebhookDeliveryContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.getDelivery(tx, auth.company.id, params.id, params.delivery_id),
  }),
];

export function setup(app: AppContext): void {
  registerEventSink(fanOut);
  app.jobs.register(DELIVER, deliverJob(app));
}
