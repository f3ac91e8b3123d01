// Operation declarations of the domains area: the same eight operations for applications, static
// sites and load balancers, declared once by `domainOperations` and instantiated per owner.
import type { AppContext } from '../../shared/context.js';
import type { Resource } from '../../shared/auth/rbac.js';
import { systemCall } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { domainContracts, type OwnerNames } from './schemas.js';
import * as svc from './service.js';
import { heldHosts, registerService, removeServiceDomains, routedHosts, routeOf } from './registry.js';
import { domainSettings } from './settings.js';

export { migrations, tables } from './storage.js';

/**
 * The eight operations of one owner type. Reads are in the read tier; adding, renaming, deleting
 * and refreshing domains count in the service-creation tier (the specification); set-primary and
 * toggle change the service's configuration (service-mutation tier).
 */
export function domainOperations(o: {
  pathBase: string;
  owner: svc.Owner;
  resource: Resource;
  tag: string;
  noun: string;
  names: OwnerNames;
  deleteNoContent?: boolean;
}) {
  const c = domainContracts(o);
  const owner = o.owner;
  const read = `${o.resource}:READ` as const;
  const update = `${o.resource}:UPDATE` as const;
  const remove = o.deleteNoContent
    ? defineOperation({
        contract: c.deleteNoContent,
        permission: update,
        tier: 'service_creation',
        handler: async (r) => void (await svc.deleteDomain(r, owner, r.params.id, r.params.domain_id)),
      })
    : defineOperation({
        contract: c.deleteMessage,
        permission: update,
        tier: 'service_creation',
        handler: async (r) => svc.deleteDomain(r, owner, r.params.id, r.params.domain_id),
      });
  return [
    defineOperation({ contract: c.list, permission: read, tier: 'read', handler: async (r) => svc.listDomains(r, owner, r.params.id, pageOf(r.query)) }),
    defineOperation({ contract: c.add, permission: update, tier: 'service_creation', handler: async (r) => svc.addDomain(r, owner, r.params.id, r.body) }),
    defineOperation({ contract: c.get, permission: read, tier: 'read', handler: async (r) => svc.getDomain(r, owner, r.params.id, r.params.domain_id) }),
    defineOperation({
      contract: c.update,
      permission: update,
      tier: 'service_creation',
      handler: async (r) => svc.updateDomain(r, owner, r.params.id, r.params.domain_id, r.body),
    }),
    remove,
    defineOperation({
      contract: c.refresh,
      permission: update,
      tier: 'service_creation',
      handler: async (r) => svc.refreshDomain(r, owner, r.params.id, r.params.domain_id),
    }),
    defineOperation({
      contract: c.setPrimary,
      permission: update,
      tier: 'service_mutation',
      handler: async (r) => svc.setPrimary(r, owner, r.params.id, r.params.domain_id),
    }),
    defineOperation({
      contract: c.toggle,
      permission: update,
      tier: 'service_mutation',
      handler: async (r) => svc.toggleSystemDomain(r, owner, r.params.id, r.params.domain_id),
    }),
  ];
}

export const operations = [
  ...domainOperations({
    pathBase: '/applications/{id}',
    owner: svc.OWNERS.app,
    resource: 'APP',
    tag: 'Applications',
    noun: 'application',
    names: {
      list: 'listApplicationDomainsV3',
      add: 'addApplicationDomainV3',
      get: 'getApplicationDomainV3',
      update: 'updateApplicationDomainV3',
      delete: 'deleteApplicationDomainV3',
      refresh: 'refreshApplicationDomainStatusV3',
      setPrimary: 'setApplicationPrimaryDomainV3',
      toggle: 'toggleApplicationSystemDomainV3',
    },
  }),
  ...domainOperations({
    pathBase: '/static-sites/{id}',
    owner: svc.OWNERS['static-site'],
    resource: 'STATIC_SITE',
    tag: 'Static sites',
    noun: 'static site',
    names: {
      list: 'listStaticSiteDomainsV3',
      add: 'addStaticSiteDomainV3',
      get: 'getStaticSiteDomainV3',
      update: 'updateStaticSiteDomainV3',
      delete: 'deleteStaticSiteDomainV3',
      refresh: 'refreshStaticSiteDomainStatusV3',
      setPrimary: 'setStaticSitePrimaryDomainV3',
      toggle: 'toggleStaticSiteSystemDomainV3',
    },
  }),
  ...domainOperations({
    pathBase: '/load-balancers/{id}',
    owner: svc.OWNERS['load-balancer'],
    resource: 'LOAD_BALANCER',
    tag: 'Load balancers',
    noun: 'load balancer',
    deleteNoContent: true,
    names: {
      list: 'listLoadBalancerDomainsV3',
      add: 'addLoadBalancerDomainV3',
      get: 'getLoadBalancerDomainV3',
      update: 'updateLoadBalancerDomainV3',
      delete: 'deleteLoadBalancerDomainV3',
      refresh: 'refreshLoadBalancerDomainStatusV3',
      setPrimary: 'setLoadBalancerPrimaryDomainV3',
      toggle: 'toggleLoadBalancerSystemDomainV3',
    },
  }),
];

export function setup(app: AppContext): void {
  domainSettings(app.config); // a bad SLIPWAY_DOMAINS_* setting stops the start
  // Applications and static sites announce their generated hostname at creation (and clone); it
  // becomes the system domain, and the short name is claimed beside it (registry.ts).
  app.events.on('application.created', async (tx, { application: a }) =>
    registerService(systemCall(app, tx, a.company_id), 'app', { id: a.id, name: a.name, cluster_id: a.cluster_id, hostname: a.temp_domain }),
  );
  app.events.on('static-site.created', async (tx, { site: s }) =>
    registerService(systemCall(app, tx, s.company_id), 'static-site', { id: s.id, name: s.name, cluster_id: null, hostname: s.hostname }),
  );
  app.events.on('application.removed', async (tx, { application: a }) => removeServiceDomains(app, tx, a.id));
  app.events.on('static-site.removed', async (tx, { site }) => removeServiceDomains(app, tx, site.id));
  app.events.on('object-storage.removed', async (tx, { bucketId }) => removeServiceDomains(app, tx, bucketId));
  // The edge routes every hostname by the registry alone.
  app.runtimes.edge?.routeBy(
    (host) => routeOf(app.database.db, host),
    () => routedHosts(app.database.db),
    () => heldHosts(app.database.db),
  );
}
