// How processes follow their application's life: the default web process of a new application,
// copies for a clone, rollout (cron arming, job start policies) when a deployment succeeds or the
// application is activated, jobs around deployments, stopping on suspension or deletion, removal.
// The applications module announces those moments as signals (applications/signals.ts); this
// file subscribes to them in `registerLifecycle`.
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { newId } from '../../shared/ids.js';
import { cancelJobs, enqueue } from '../../shared/jobs.js';
import { writeLogs, type LogLine } from '../../shared/runtime/logs.js';
import type { ApplicationsTable } from '../applications/index.js';
import { armCron, JOB_TRIGGER, terminateRun } from './cron.js';
import { runningRuns } from './runs-storage.js';
import { DEFAULT_RESOURCE_TYPE, DEFAULT_WEB_PORT, instanceCount } from './service.js';
import {
  cronAndJobProcesses,
  deleteAppProcessesAndRuns,
  deploymentJobs,
  insertProcesses,
  markRolledOut,
  processesInOrder,
  processIdsOfApp,
  rolloutProcesses,
  setCronToken,
  type JobStartPolicy,
} from './storage.js';

/** The default process of a new application: one web process on port 8080, one instance. */
async function createDefaultProcesses(tx: Tx, a: ApplicationsTable): Promise<void> {
  const now = new Date().toISOString();
  await insertProcesses(tx, [
    {
      id: newId(),
      app_id: a.id,
      company_id: a.company_id,
      key: 'web',
      type: 'web',
      display_name: 'web',
      entrypoint: '',
      port: DEFAULT_WEB_PORT,
      is_ingress_enabled: 1,
      ingress_protocol: 'http',
      scaling_strategy: JSON.stringify({ type: 'manual', config: { instanceCount: 1 } }),
      resource_type_id: DEFAULT_RESOURCE_TYPE.id,
      schedule: null,
      time_zone: null,
      job_start_policy: null,
      liveness_probe: null,
      readiness_probe: null,
      concurrency_policy: null,
      max_run_time_seconds: null,
      cron_token: null,
      rolled_out_at: null,
      created_at: now,
      updated_at: now,
    },
  ]);
}

/** Clone: the same processes under new ids (not armed, not rolled out: the clone's deployment does that). */
async function copyProcesses(tx: Tx, fromAppId: string, to: ApplicationsTable): Promise<void> {
  const rows = await processesInOrder(tx, fromAppId);
  if (!rows.length) return;
  // One millisecond apart, so the clone lists its processes in the source's order.
  const base = Date.now() - rows.length;
  await insertProcesses(
    tx,
    rows.map((p, i) => {
      const at = new Date(base + i + 1).toISOString();
      return { ...p, id: newId(), app_id: to.id, company_id: to.company_id, cron_token: null, rolled_out_at: null, created_at: at, updated_at: at };
    }),
  );
}

/**
 * A deployment of the application succeeded: its processes take effect. Writes a runtime log line
 * per process, arms the schedule of every cron process, starts job processes that run after a
 * successful deployment, and returns the number of processes.
 */
async function onRollout(tx: Tx, app: AppContext, a: ApplicationsTable, deployment: string | null): Promise<number> {
  // Activation (deployment null) re-runs the rollout of the running deployment without a new one.
  const procs = await rolloutProcesses(tx, a.id);
  await markRolledOut(tx, a.id, new Date().toISOString());
  const lines: LogLine[] = [];
  for (const p of procs) {
    if (p.type === 'cron') {
      await armCron(tx, p);
      lines.push({
        message: `Scheduled cron process ${p.key}: "${p.schedule}" (${p.time_zone}, concurrency ${p.concurrency_policy ?? 'Forbid'})`,
        processId: p.id,
      });
    } else if (p.type === 'job') {
      if (p.job_start_policy === 'afterSuccessDeployment' && deployment) {
        await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'deployment', deploymentId: deployment }, subjectId: p.id });
        lines.push({ message: `Starting job process ${p.key} after the deployment`, processId: p.id });
      }
    } else {
      const n = instanceCount(p);
      lines.push({ message: `Started process ${p.key} (${n} instance${n === 1 ? '' : 's'})`, processId: p.id });
    }
  }
  await writeLogs(tx, { companyId: a.company_id, appId: a.id, kind: 'runtime', deploymentId: deployment }, lines);
  app.jobs.wake();
  return procs.length;
}

/**
 * Job processes whose start policy matches a moment of a deployment: `beforeDeployment` when a
 * deployment starts, `afterFailedDeployment` when one fails (`afterSuccessDeployment` is onRollout's).
 */
async function onDeploymentMoment(tx: Tx, app: AppContext, a: ApplicationsTable, deploymentId: string, moment: 'started' | 'failed'): Promise<void> {
  // A runtime with real processes runs `beforeDeployment` jobs itself, to completion, in the rollout.
  if (moment === 'started' && app.runtimes.applications.runsProcesses) return;
  const policy: JobStartPolicy = moment === 'started' ? 'beforeDeployment' : 'afterFailedDeployment';
  const jobs = await deploymentJobs(tx, a.id, policy);
  if (!jobs.length) return;
  for (const p of jobs) await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'deployment', deploymentId }, subjectId: p.id });
  const when = moment === 'started' ? 'as the deployment starts' : 'after the failed deployment';
  await writeLogs(
    tx,
    { companyId: a.company_id, appId: a.id, kind: 'runtime', deploymentId },
    jobs.map((p) => ({ message: `Starting job process ${p.key} ${when}`, processId: p.id })),
  );
  app.jobs.wake();
}

/** The application was suspended: cron stops (queued work cancelled, running runs cancelled). */
async function onSuspend(tx: Tx, a: ApplicationsTable): Promise<void> {
  const procs = await cronAndJobProcesses(tx, a.id);
  for (const p of procs) {
    await cancelJobs(tx, p.id);
    await setCronToken(tx, p.id, null);
    const running = await runningRuns(tx, p.id);
    for (const r of running) await terminateRun(tx, p, r, 'cancelled', 'the application was suspended');
  }
}

/** The application is being deleted: cancel its process jobs, delete runs and processes. */
async function deleteAppProcesses(tx: Tx, appId: string): Promise<void> {
  const procs = await processIdsOfApp(tx, appId);
  for (const p of procs) await cancelJobs(tx, p.id);
  await deleteAppProcessesAndRuns(tx, appId);
}

/** Subscribes the processes area to the application's moments (called from the module's setup). */
export function registerLifecycle(app: AppContext): void {
  app.events.on('application.created', (tx, { application, clonedFrom }) =>
    clonedFrom ? copyProcesses(tx, clonedFrom.id, application) : createDefaultProcesses(tx, application),
  );
  app.events.on('application.released', async (tx, { application, deploymentId }) => {
    await onRollout(tx, app, application, deploymentId);
  });
  app.events.on('deployment.started', (tx, { application, deploymentId }) => onDeploymentMoment(tx, app, application, deploymentId, 'started'));
  app.events.on('deployment.failed', (tx, { application, deploymentId }) => onDeploymentMoment(tx, app, application, deploymentId, 'failed'));
  app.events.on('application.stopped', (tx, { application }) => onSuspend(tx, application));
  app.events.on('application.removed', (tx, { application }) => deleteAppProcesses(tx, application.id));
}
