import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { defineOperation, type Contract } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { queryLogs } from '../../shared/runtime/logs.js';
import * as c from './schemas.js';
import * as o from './observability-schemas.js';
import * as svc from './service.js';
import * as dep from './deployments.js';
import * as hooks from './hooks.js';
import * as st from './settings.js';
import * as sc from './settings-schemas.js';
import { TrafficMetrics } from './observability.js';
import { findApp } from './storage.js';
import { badRequest } from '../../shared/errors.js';

const who = (auth: { key: { id: string } }) => auth.key.id;

export const operations = [
  defineOperation({
    contract: c.listApplicationsContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listApps(tx, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createApplicationContract,
    permission: 'APP:CREATE',
    tier: 'service_creation',
    handler: async ({ tx, auth, body }) => svc.appView(await svc.createApp(tx, auth.company.id, who(auth), body)),
  }),
  defineOperation({
    contract: c.getApplicationContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => {
      await findApp(tx, auth.company.id, params.id);
      await dep.noteRead(app, params.id);
      return svc.appDetailView(await findApp(tx, auth.company.id, params.id));
    },
  }),
  defineOperation({
    contract: c.updateApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params, body }) => svc.appView(await svc.updateApp(tx, auth.company.id, params.id, body)),
  }),
  defineOperation({
    contract: c.deleteApplicationContract,
    permission: 'APP:DELETE',
    tier: 'service_mutation',
    handler: async ({ tx, app, auth, params }) => svc.deleteApp(tx, app, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.activateApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, app, auth, params }) => svc.setSuspended(tx, app, auth.company.id, params.id, false),
  }),
  defineOperation({
    contract: c.suspendApplicationContract,
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, app, auth, params }) => svc.setSuspended(tx, app, auth.company.id, params.id, true),
  }),
  defineOperation({
    contract: c.cloneApplicationContract,
    permission: 'APP:CREATE',
    tier: 'service_creation',
    // Cloning creates a new service: counted like a creation, per company (not per source app).
    resourceParam: 'id',
    handler: async ({ tx, app, auth, params, body }) => svc.appView(await svc.cloneApp(tx, app, auth.company.id, params.id, who(auth), body)),
  }),
  defineOperation({
    contract: c.listDeploymentsContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, auth, params, query }) => {
      await findApp(tx, auth.company.id, params.id);
      return dep.listDeployments(tx, params.id, pageOf(query));
    },
  }),
  defineOperation({
    contract: c.triggerDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async ({ tx, app, auth, params, body }) => {
      const a = await findApp(tx, auth.company.id, params.id);
      if (a.is_suspended) throw badRequest('The application is suspended; activate it before deploying');
      if (body?.is_restart) {
        const release = await dep.currentRelease(tx, a.id);
        if (!release) throw badRequest('The application has no successful deployment to restart');
        return dep.deploymentView(await dep.createDeployment(tx, app, a, { trigger: 'restart', initiatedBy: who(auth), isRestart: true, reuse: release }));
      }
      if (body?.docker_image && a.source !== 'dockerImage') throw badRequest('docker_image applies only to applications whose source is dockerImage');
      return dep.deploymentView(await dep.createDeployment(tx, app, a, { trigger: 'manual', initiatedBy: who(auth), branch: body?.branch, dockerImage: body?.docker_image }));
    },
  }),
  defineOperation({
    contract: c.getDeploymentContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => {
      await findApp(tx, auth.company.id, params.id);
      await dep.findDeployment(tx, params.id, params.deployment_id);
      await dep.noteRead(app, params.id, params.deployment_id);
      return dep.deploymentView(await dep.findDeployment(tx, params.id, params.deployment_id));
    },
  }),
  defineOperation({
    contract: c.rollbackDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async ({ tx, app, auth, params }) => {
      const a = await findApp(tx, auth.company.id, params.id);
      if (a.is_suspended) throw badRequest('The application is suspended; activate it before deploying');
      return dep.deploymentView(await dep.rollback(tx, app, a, who(auth)));
    },
  }),
  defineOperation({
    contract: c.cancelDeploymentContract,
    permission: 'APP:UPDATE',
    tier: 'deployment',
    handler: async ({ tx, auth, params }) => {
      await findApp(tx, auth.company.id, params.id);
      return dep.cancelDeployment(tx, params.id, params.deployment_id);
    },
  }),
  defineOperation({
    contract: c.getApplicationDeploymentLogsContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async ({ tx, auth, params, query }) => {
      const a = await findApp(tx, auth.company.id, params.id);
      await dep.findDeployment(tx, params.id, params.deployment_id);
      return queryLogs(tx, { appId: params.id, kind: 'build', deploymentId: params.deployment_id, ...query }, a.name);
    },
  }),
  defineOperation({
    contract: o.getApplicationRuntimeLogsContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async ({ tx, auth, params, query }) => {
      const a = await findApp(tx, auth.company.id, params.id);
      return queryLogs(tx, { appId: params.id, kind: 'runtime', ...query }, a.name);
    },
  }),
  defineOperation({
    contract: c.getDeploymentHookContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => hooks.getHook(tx, app, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.enableDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params }) => (await hooks.setHook(tx, app, auth.company.id, params.id, 'enable'))!,
  }),
  defineOperation({
    contract: c.regenerateDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params }) => (await hooks.setHook(tx, app, auth.company.id, params.id, 'regenerate'))!,
  }),
  defineOperation({
    contract: c.disableDeploymentHookContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params }) => {
      await hooks.setHook(tx, app, auth.company.id, params.id, 'disable');
    },
  }),
  ...metricOperations(),
  ...settingsOperations(),
];

function metricOperations() {
  const m = (app: AppContext) => new TrafficMetrics(app);
  type Q = { from: string; to: string; interval_in_seconds?: number; limit?: number };
  const def = <C extends Contract>(contract: C, fn: (t: TrafficMetrics) => (tx: any, a: any, w: Q) => Promise<unknown>) =>
    defineOperation({
      contract,
      permission: 'APP:READ',
      tier: 'read',
      handler: (async ({ tx, app, auth, params, query }: any) => fn(m(app))(tx, await findApp(tx, auth.company.id, params.id), query as Q)) as any,
    });
  return [
    def(o.getApplicationRequestsPerMinuteContract, (t) => t.requestsPerMinute),
    def(o.getApplicationResponseTimeContract, (t) => t.responseTime),
    def(o.getApplicationResponseTimeAvgContract, (t) => t.responseTimeAvg.bind(t)),
    def(o.getApplicationStatusCodesContract, (t) => t.statusCodes.bind(t)),
    def(o.getApplicationTopStatusCodesContract, (t) => t.topStatusCodes.bind(t)),
    def(o.getApplicationTopCountriesContract, (t) => t.topCountries.bind(t)),
    def(o.getApplicationSlowestRequestsContract, (t) => t.slowestRequests.bind(t)),
    def(o.getApplicationTopPagesContract, (t) => t.topPages.bind(t)),
  ];
}

/** Maintenance mode, egress IPs, IP restriction, CDN and cache, access logs, TCP proxies, private ports. */
function settingsOperations() {
  return [
    defineOperation({
      contract: sc.getApplicationMaintenanceModeContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async ({ tx, auth, params }) => st.getMaintenance(tx, auth.company.id, params.id),
    }),
    defineOperation({
      contract: sc.updateApplicationMaintenanceModeContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async ({ tx, auth, params, body }) => st.updateMaintenance(tx, auth.company.id, params.id, body),
    }),
    defineOperation({
      contract: sc.getApplicationEgressIpsContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async ({ tx, auth, params }) => st.getEgressIps(tx, auth.company.id, params.id),
    }),
    defineOperation({
      contract: sc.getApplicationIpRestrictionContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async ({ tx, auth, params }) => st.getIpRestriction(tx, auth.company.id, params.id),
    }),
    defineOperation({
      contract: sc.updateApplicationIpRestrictionContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async ({ tx, auth, params, body }) => st.updateIpRestriction(tx, auth.company.id, params.id, body),
    }),
    defineOperation({
      contract: sc.toggleApplicationCdnContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async ({ tx, auth, params }) => st.toggleCdn(tx, auth.company.id, params.id),
    }),
    defineOperation({
      contract: sc.purgeApplicationCacheContract,
      permission: 'APP:UPDATE',
      tier: 'service_mutation',
      handler: async ({ tx, auth, params }) => st.purgeCache(tx, auth.company.id, params.id),
    }),
    defineOperation({
      contract: sc.getApplicationAccessLogsContract,
      permission: 'APP:READ',
      tier: 'logs',
      handler: async ({ tx, app, auth, params, query }) => st.accessLogs(tx, app, auth.company.id, params.id, query),
    }),
    defineOperation({
      contract: sc.listApplicationTcpProxiesContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async ({ tx, auth, params, query }) => st.listTcpProxies(tx, auth.company.id, params.id, pageOf(query)),
    }),
    defineOperation({
      contract: sc.createApplicationTcpProxyContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async ({ tx, auth, params, body }) => st.createTcpProxy(tx, auth.company.id, params.id, body),
    }),
    defineOperation({
      contract: sc.deleteApplicationTcpProxyContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async ({ tx, auth, params }) => st.deleteTcpProxy(tx, auth.company.id, params.id, params.tcp_proxy_id),
    }),
    defineOperation({
      contract: sc.listApplicationPrivatePortsContract,
      permission: 'APP:READ',
      tier: 'read',
      handler: async ({ tx, auth, params, query }) => st.listPrivatePorts(tx, auth.company.id, params.id, pageOf(query)),
    }),
    defineOperation({
      contract: sc.createApplicationPrivatePortContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async ({ tx, auth, params, body }) => st.createPrivatePort(tx, auth.company.id, params.id, body),
    }),
    defineOperation({
      contract: sc.deleteApplicationPrivatePortContract,
      permission: 'APP:UPDATE',
      tier: 'general_write',
      handler: async ({ tx, auth, params }) => st.deletePrivatePort(tx, auth.company.id, params.id, params.private_port_id),
    }),
  ];
}

export function setup(app: AppContext): void {
  app.jobs.register(dep.ADVANCE, dep.advanceJob(app));
  app.jobs.register('application.delete', svc.deleteJob(app));
  app.services.register({ type: 'app', find: (tx, companyId, id) => svc.appSummary(tx, companyId, id) });
}

export function http(fastify: FastifyInstance, app: AppContext): void {
  hooks.registerHookRoute(fastify, app, app.limiter);
}
