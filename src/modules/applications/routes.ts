import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { ref } from '../../shared/http/references.js';
import { defineOperation } from '../../shared/http/operation.js';
import { trafficOperations } from '../../shared/http/traffic.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as o from './observability-schemas.js';
import * as svc from './service.js';
import * as dep from './deployments.js';
import * as hooks from './hooks.js';
import * as st from './settings.js';
import * as sc from './settings-schemas.js';
import { runtimeLogs, trafficMetric } from './observability.js';
import { registerApplicationEvents } from './events.js';

export const operations = [
  defineOperation({
    contract: c.listApplicationsContract,
    permission: 'APP:READ',
    tier: 'read',
    pure: true,
    handler: async (r) => svc.listApps(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createApplicationContract,
    permission: 'APP:CREATE',
    tier: 'service_creation',
    references: [ref.project, ref.registryCredential],
    handler: async (r) => svc.createApp(r, r.body),
  }),
  defineOperation({
    contract: c.getApplicationContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.getApp(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    references: [ref.registryCredential],
    handler: async (r) => svc.updateApp(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteApplicationContract,
    permission: 'APP:DELETE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteApp(r, r.params.id),
  }),
  defineOperation({
    contract: c.activateApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.setSuspended(r, r.params.id, false),
  }),
  defineOperation({
    contract: c.suspendApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.setSuspended(r, r.params.id, true),
  }),
  defineOperation({
    contract: c.cloneApplicationContract,
    permission: 'APP:CREATE',
    tier: 'service_creation',
    // Cloning creates a new service: counted like a creation, per company (not per source app), and
    // needs the permission for the whole company (a capability scoped to the source does not do).
    resourceParam: 'id',
    companyWide: true,
    handler: async (r) => svc.cloneApp(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.listDeploymentsContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => dep.listDeployments(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.triggerDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async (r) => dep.triggerDeployment(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.getDeploymentContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => dep.getDeployment(r, r.params.id, r.params.deployment_id),
  }),
  defineOperation({
    contract: c.rollbackDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async (r) => dep.rollback(r, r.params.id),
  }),
  defineOperation({
    contract: c.cancelDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async (r) => dep.cancelDeployment(r, r.params.id, r.params.deployment_id),
  }),
  defineOperation({
    contract: c.getApplicationDeploymentLogsContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async (r) => dep.deploymentLogs(r, r.params.id, r.params.deployment_id, r.query),
  }),
  defineOperation({
    contract: o.getApplicationRuntimeLogsContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async (r) => runtimeLogs(r, r.params.id, r.query),
  }),
  defineOperation({
    contract: c.getDeploymentHookContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => hooks.getHook(r, r.params.id),
  }),
  defineOperation({
    contract: c.enableDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => (await hooks.setHook(r, r.params.id, 'enable'))!,
  }),
  defineOperation({
    contract: c.regenerateDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => (await hooks.setHook(r, r.params.id, 'regenerate'))!,
  }),
  defineOperation({
    contract: c.disableDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => {
      await hooks.setHook(r, r.params.id, 'disable');
    },
  }),
  ...trafficOperations({
    prefix: 'Application',
    noun: 'application',
    basePath: '/applications',
    tag: 'Applications',
    permission: 'APP:READ',
    metric: trafficMetric,
  }),
  ...settingsOperations(),
];

/** Maintenance mode, egress IPs, IP restriction, CDN and cache, access logs, TCP proxies, private ports. */
function settingsOperations() {
  return [
    defineOperation({
      contract: sc.getApplicationMaintenanceModeContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async (r) => st.getMaintenance(r, r.params.id),
    }),
    defineOperation({
      contract: sc.updateApplicationMaintenanceModeContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async (r) => st.updateMaintenance(r, r.params.id, r.body),
    }),
    defineOperation({
      contract: sc.getApplicationEgressIpsContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async (r) => st.getEgressIps(r, r.params.id),
    }),
    defineOperation({
      contract: sc.getApplicationIpRestrictionContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async (r) => st.getIpRestriction(r, r.params.id),
    }),
    defineOperation({
      contract: sc.updateApplicationIpRestrictionContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async (r) => st.updateIpRestriction(r, r.params.id, r.body),
    }),
    defineOperation({
      contract: sc.toggleApplicationCdnContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async (r) => st.toggleCdn(r, r.params.id),
    }),
    defineOperation({
      contract: sc.purgeApplicationCacheContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async (r) => st.purgeCache(r, r.params.id),
    }),
    defineOperation({
      contract: sc.getApplicationAccessLogsContract,
      permission: 'APP:READ',
      tier: 'logs',
      handler: async (r) => st.accessLogs(r, r.params.id, r.query),
    }),
    defineOperation({
      contract: sc.listApplicationTcpProxiesContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async (r) => st.listTcpProxies(r, r.params.id, pageOf(r.query)),
    }),
    defineOperation({
      contract: sc.createApplicationTcpProxyContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async (r) => st.createTcpProxy(r, r.params.id, r.body),
    }),
    defineOperation({
      contract: sc.deleteApplicationTcpProxyContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async (r) => st.deleteTcpProxy(r, r.params.id, r.params.tcp_proxy_id),
    }),
    defineOperation({
      contract: sc.listApplicationPrivatePortsContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async (r) => st.listPrivatePorts(r, r.params.id, pageOf(r.query)),
    }),
    defineOperation({
      contract: sc.createApplicationPrivatePortContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async (r) => st.createPrivatePort(r, r.params.id, r.body),
    }),
    defineOperation({
      contract: sc.deleteApplicationPrivatePortContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async (r) => st.deletePrivatePort(r, r.params.id, r.params.private_port_id),
    }),
  ];
}

import { setupApplicationsRuntime } from './runtime/index.js';

export function setup(app: AppContext): void {
  app.jobs.register(dep.ADVANCE, dep.advanceJob(app));
  app.jobs.register(svc.DELETE_JOB, svc.deleteJob(app));
  app.services.register({ type: 'app', summaries: svc.appSummaries });
  registerApplicationEvents(app);
  setupApplicationsRuntime(app);
}

/** A real runtime (SLIPWAY_RUNTIME=local or container): orphans killed, edge listening, applications started again. */
export async function start(app: AppContext): Promise<void> {
  await app.runtimes.applications.start();
}

export async function stop(app: AppContext): Promise<void> {
  await app.runtimes.applications.stop();
}

export function banner(app: AppContext): string[] {
  const edge = app.runtimes.edge;
  if (!edge) return [];
  const lines = [
    `applications run for real (${app.runtimes.applications.name} runtime); edge at http://${edge.settings.baseDomain}:${edge.port} (<app name>.${edge.settings.baseDomain})`,
  ];
  if (edge.driver === 'node' && !edge.settings.driver)
    lines.push('edge: nginx is not installed, the in-process edge serves (scripts/install-edge.sh installs nginx)');
  return lines;
}

export function http(fastify: FastifyInstance, app: AppContext): void {
  hooks.registerHookRoute(fastify, app);
}
