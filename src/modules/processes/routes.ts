// Operations of the processes area. Processes belong to an application: the permission is the
// application's (APP:READ / APP:UPDATE) and the scoped resource is the application `id`.
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

/** The five metric series share one contract shape (the metric names the series). */
const metric = (contract: typeof c.getProcessCpuUsageContract, name: svc.ProcessMetric) =>
  defineOperation({
    contract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params, query }) => svc.processMetric(tx, app, auth.company.id, params.id, params.process_id, name, query),
  });

export const operations = [
  defineOperation({
    contract: c.listProcessesContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, auth, params, query }) => svc.listProcesses(tx, auth.company.id, params.id, pageOf(query)),
  }),
  defineOperation({
    contract: c.createProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => svc.createProcess(tx, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.getProcessContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.getProcess(tx, auth.company.id, params.id, params.process_id),
  }),
  defineOperation({
    contract: c.updateProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => svc.updateProcess(tx, auth.company.id, params.id, params.process_id, body),
  }),
  defineOperation({
    contract: c.deleteProcessContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteProcess(tx, auth.company.id, params.id, params.process_id),
  }),
  defineOperation({
    contract: c.triggerProcessCronContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.triggerProcess(tx, auth.company.id, params.id, params.process_id),
  }),
  metric(c.getProcessCpuUsageContract, 'cpu-usage'),
  metric(c.getProcessCpuLimitContract, 'cpu-limit'),
  metric(c.getProcessMemoryUsageContract, 'memory-usage'),
  metric(c.getProcessMemoryLimitContract, 'memory-limit'),
  metric(c.getProcessInstanceCountContract, 'instance-count'),
  defineOperation({
    contract: c.getProcessExitCodesContract,
    permission: 'APP:READ',
    tier: 'logs',
    handler: async ({ tx, auth, params, query }) => svc.exitCodes(tx, auth.company.id, params.id, params.process_id, query),
  }),
];

/** Registers the cron job kinds with the job engine. */
export function setup(app: AppContext): void {
  app.jobs.register<svc.TickPayload>(svc.JOB_TICK, { transactional: false, run: (_db, job) => svc.runTick(app, job), onFailure: (tx, job, err) => svc.tickFailed(tx, job, err) });
  app.jobs.register<svc.TriggerPayload>(svc.JOB_TRIGGER, { transactional: false, run: (_db, job) => svc.runTrigger(app, job) });
  app.jobs.register<svc.FinishPayload>(svc.JOB_FINISH, { run: (tx, job) => svc.runFinish(tx, app, job) });
}
