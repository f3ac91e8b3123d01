// Static site operations (the custom domain operations under /static-sites/{id}/domains belong to
// the domains module; the environment variables to env-vars).
import type { AppContext } from '../../shared/context.js';
import { ref } from '../../shared/http/references.js';
import { defineOperation } from '../../shared/http/operation.js';
import { trafficOperations } from '../../shared/http/traffic.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import * as dep from './deployments.js';
import { registerStaticSiteEvents } from './events.js';
import { setupStaticSitesRuntime } from './runtime/index.js';
import { migrations, tables } from './storage.js';

export { migrations, tables };

export const operations = [
  defineOperation({
    contract: c.listStaticSitesContract,
    permission: 'STATIC_SITE:READ',
    tier: 'read',
    handler: async (r) => svc.listSites(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createStaticSiteContract,
    permission: 'STATIC_SITE:CREATE',
    tier: 'service_creation',
    references: [ref.project],
    handler: async (r) => svc.createSite(r, r.body),
  }),
  defineOperation({
    contract: c.getStaticSiteContract,
    permission: 'STATIC_SITE:READ',
    tier: 'read',
    handler: async (r) => svc.getSite(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateStaticSiteContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.updateSite(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteStaticSiteContract,
    permission: 'STATIC_SITE:DELETE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteSite(r, r.params.id),
  }),
  defineOperation({
    contract: c.listStaticSiteDeploymentsContract,
    permission: 'STATIC_SITE:READ',
    tier: 'read',
    handler: async (r) => dep.listDeployments(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.deployStaticSiteContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'deployment',
    handler: async (r) => dep.triggerDeployment(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.getStaticSiteDeploymentContract,
    permission: 'STATIC_SITE:READ',
    tier: 'read',
    handler: async (r) => dep.getDeployment(r, r.params.id, r.params.deployment_id),
  }),
  defineOperation({
    contract: c.cancelStaticSiteDeploymentContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'deployment',
    handler: async (r) => dep.cancelDeployment(r, r.params.id, r.params.deployment_id),
  }),
  defineOperation({
    contract: c.getStaticSiteDeploymentLogsContract,
    permission: 'STATIC_SITE:READ',
    tier: 'logs',
    handler: async (r) => dep.deploymentLogs(r, r.params.id, r.params.deployment_id, r.query),
  }),
  defineOperation({
    contract: c.toggleStaticSitePrettyUrlContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.togglePrettyUrls(r, r.params.id),
  }),
  defineOperation({
    contract: c.purgeStaticSiteCacheContract,
    permission: 'STATIC_SITE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.purgeCache(r, r.params.id),
  }),
  defineOperation({
    contract: c.getStaticSiteAccessLogsContract,
    permission: 'STATIC_SITE:READ',
    tier: 'logs',
    handler: async (r) => svc.accessLogs(r, r.params.id, r.query),
  }),
  ...trafficOperations({
    prefix: 'StaticSite',
    noun: 'static site',
    basePath: '/static-sites',
    tag: 'Static sites',
    permission: 'STATIC_SITE:READ',
    metric: svc.trafficMetric,
  }),
];

export function setup(app: AppContext): void {
  app.jobs.register(dep.ADVANCE, dep.advanceJob(app));
  app.jobs.register(svc.DELETE_JOB, svc.deleteJob(app));
  app.services.register({ type: 'static-site', summaries: svc.siteSummaries });
  registerStaticSiteEvents(app);
  setupStaticSitesRuntime(app);
}

/** Real static sites: build directories of deployments that ended while Slipway was down are removed. */
export async function start(app: AppContext): Promise<void> {
  await app.runtimes.staticSites.start();
}
