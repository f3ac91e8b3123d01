// Operation declarations of the load balancers area: contract, permission, rate tier, thin handler.
// The eight domain operations of load balancers are the domains module's; this module makes its
// load balancers findable through the service registry for them.
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { ref, type Reference } from '../../shared/http/references.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import { registerEdge } from './edge.js';
import { registerExisting } from '../domains/index.js';

import { allLoadBalancers } from './storage.js';

export { migrations, tables } from './storage.js';

/** A destination's service: the key must see it, in its company (404 otherwise); the kind is `service_type`'s. */
const destinationService: Reference = { in: 'body', field: 'service_id', kind: { field: 'service_type' }, action: 'READ' };

// Destination writes change how the load balancer routes its traffic: updating a service, so the
// service-mutation tier (as the domain module's toggle and set-primary).
export const operations = [
  defineOperation({
    contract: c.listLoadBalancersContract,
    permission: 'LOAD_BALANCER:READ',
    tier: 'read',
    handler: async (r) => svc.listLoadBalancers(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createLoadBalancerContract,
    permission: 'LOAD_BALANCER:CREATE',
    tier: 'service_creation',
    references: [ref.project],
    handler: async (r) => svc.createLoadBalancer(r, r.body),
  }),
  defineOperation({
    contract: c.getLoadBalancerContract,
    permission: 'LOAD_BALANCER:READ',
    tier: 'read',
    handler: async (r) => svc.getLoadBalancer(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateLoadBalancerContract,
    permission: 'LOAD_BALANCER:UPDATE',
    tier: 'service_mutation',
    references: [ref.project],
    handler: async (r) => svc.updateLoadBalancer(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteLoadBalancerContract,
    permission: 'LOAD_BALANCER:DELETE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteLoadBalancer(r, r.params.id),
  }),
  defineOperation({
    contract: c.listLoadBalancerDestinationsContract,
    permission: 'LOAD_BALANCER:READ',
    tier: 'read',
    handler: async (r) => svc.listDestinations(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createLoadBalancerDestinationContract,
    permission: 'LOAD_BALANCER:UPDATE',
    tier: 'service_mutation',
    references: [destinationService],
    handler: async (r) => svc.createDestination(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteLoadBalancerDestinationContract,
    permission: 'LOAD_BALANCER:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteDestination(r, r.params.id, r.params.destination_id),
  }),
  defineOperation({
    contract: c.updateLoadBalancerDestinationContract,
    permission: 'LOAD_BALANCER:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.updateDestination(r, r.params.id, r.params.destination_id, r.body),
  }),
  defineOperation({
    contract: c.toggleLoadBalancerDestinationContract,
    permission: 'LOAD_BALANCER:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.toggleDestination(r, r.params.id, r.params.destination_id),
  }),
];

export function setup(app: AppContext): void {
  app.services.register({ type: svc.KIND, summaries: svc.loadBalancerSummaries });
  registerEdge(app);
  // A removed application stops being a destination (the choice for deleted services: docs/api-behaviour.md "Load balancers").
  app.events.on('application.removed', async (tx, { application: a }) => svc.removeDestinationsTo(tx, a.id));
  app.events.on('static-site.removed', async (tx, { site }) => svc.removeDestinationsTo(tx, site.id));
  app.events.on('object-storage.removed', async (tx, { bucketId }) => svc.removeDestinationsTo(tx, bucketId));
}

/** Where the edge runs: load balancers from before it ran get their names registered (oldest first). */
export async function start(app: AppContext): Promise<void> {
  await registerExisting(app, svc.KIND, await allLoadBalancers(app.database.db));
}
