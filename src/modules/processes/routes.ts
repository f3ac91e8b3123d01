// Operations of the processes area. Processes belong to an application: the permission is the
// application's (APP:READ / APP:UPDATE) and the scoped resource is the application `id`.
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import { exitCodes, processMetric, type ProcessMetric } from './metrics.js';
import { endInterruptedRuns, endRealRun, registerCronJobs, startDeploymentRun } from './cron.js';
import { registerLifecycle } from './lifecycle.js';
import { checkTerminal, openTerminal } from './terminal.js';

import { countProcesses, deploymentJobs, processOf } from './storage.js';

export { migrations, tables } from './storage.js';

/** The five metric series share one contract shape (the metric names the series). */
const metric = (contract: typeof c.getProcessCpuUsageContract, name: ProcessMetric) =>
  defineOperation({
    contract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => processMetric(r, r.params.id, r.params.process_id, name, r.query),
  });

export const operations = [
  defineOperation({
    contract: c.listProcessesContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.listProcesses(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.createProcess(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.getProcessContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.getProcess(r, r.params.id, r.params.process_id),
  }),
  defineOperation({
    contract: c.updateProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateProcess(r, r.params.id, r.params.process_id, r.body),
  }),
  defineOperation({
    contract: c.deleteProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteProcess(r, r.params.id, r.params.process_id),
  }),
  defineOperation({
    contract: c.triggerProcessCronContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.triggerProcess(r, r.params.id, r.params.process_id),
  }),
  metric(c.getProcessCpuUsageContract, 'cpu-usage'),
  metric(c.getProcessCpuLimitContract, 'cpu-limit'),
  metric(c.getProcessMemoryUsageContract, 'memory-usage'),
  metric(c.getProcessMemoryLimitContract, 'memory-limit'),
  metric(c.getProcessInstanceCountContract, 'instance-count'),
  defineOperation({
    contract: c.openTerminalContract,
    // A shell can change the running instance: it needs APP:UPDATE and counts like running a command.
    permission: 'APP:UPDATE',
    tier: 'service_mutation',
    upgrade: 'websocket',
    handler: async (r) => checkTerminal(r, r.params.id, r.params.process_id),
    websocket: async (socket, r) => openTerminal(socket, r, r.params.id, r.params.process_id, r.query.shell),
  }),
  defineOperation({
    contract: c.getProcessExitCodesContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async (r) => exitCodes(r, r.params.id, r.params.process_id, r.query),
  }),
];

/** Cron job kinds, and the subscriptions to the application's moments. */
export function setup(app: AppContext): void {
  registerCronJobs(app);
  registerLifecycle(app);
  app.ports.processes = {
    count: countProcesses,
    find: processOf,
    serving: svc.runnableProcesses,
    beforeDeployment: (tx, appId) => deploymentJobs(tx, appId, 'beforeDeployment'),
    startDeploymentRun: (processId, deploymentId) => startDeploymentRun(app, processId, deploymentId),
    endRun: (runId, exit) => endRealRun(app, runId, exit),
    endInterruptedRuns: (before) => endInterruptedRuns(app, before),
  };
}
