// Helpers shared by the process suites: applications to hang processes on, deployments, polling,
// runtime log lines and exit codes of a process.
import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { DEFAULT_CLUSTER, PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';

export const RT = Object.fromEntries(PROCESS_RESOURCE_TYPES.map((t) => [t.name, t])) as Record<string, (typeof PROCESS_RESOURCE_TYPES)[number]>;
export const MANUAL_1 = { type: 'manual', config: { instanceCount: 1 } } as const;

/** The fields of every process representation; cron processes add the two cron-only fields. */
export const PROCESS_FIELDS = [
  'app_id',
  'created_at',
  'cpu_limit',
  'display_name',
  'entrypoint',
  'id',
  'internal_hostname',
  'is_ingress_enabled',
  'ingress_protocol',
  'job_start_policy',
  'key',
  'liveness_probe',
  'memory_limit',
  'port',
  'readiness_probe',
  'resource_type_id',
  'resource_type_name',
  'scaling_strategy',
  'schedule',
  'time_zone',
  'type',
  'updated_at',
].sort();
export const CRON_FIELDS = [...PROCESS_FIELDS, 'concurrency_policy', 'max_run_time_seconds'].sort();

export async function createApp(s: TestServer, token?: string): Promise<string> {
  const r = await s.post(
    '/applications',
    { display_name: uniqueName('proc app'), cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' },
    { token },
  );
  return expectStatus(r, 201).id as string;
}

/** Triggers a deployment and waits until the application runs it. */
export async function deploy(s: TestServer, appId: string): Promise<string> {
  const d = expectStatus(await s.post(`/applications/${appId}/deployments`, {}), 200);
  await waitFor(`deployment ${d.id}`, async () => {
    const r = await s.get(`/applications/${appId}/deployments/${d.id}`);
    assert.notEqual(r.body.status, 'failed', `deployment failed: ${r.text}`);
    return r.body.status === 'success';
  });
  await waitFor('application status deploymentSuccess', async () => (await s.get(`/applications/${appId}`)).body.status === 'deploymentSuccess');
  return d.id as string;
}

export const processesPath = (appId: string) => `/applications/${appId}/processes`;
export const processPath = (appId: string, pid: string) => `/applications/${appId}/processes/${pid}`;

export async function createProcess(s: TestServer, appId: string, body: Record<string, unknown>, token?: string) {
  return expectStatus(await s.post(processesPath(appId), { resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1, ...body }, { token }), 200);
}

export const cron = (display_name: string, extra: Record<string, unknown> = {}) => ({
  display_name,
  type: 'cron',
  resource_type_id: RT.hobby!.id,
  scaling_strategy: MANUAL_1,
  ...extra,
});

const WIDE = 'from=2000-01-01T00:00:00.000Z&to=2100-01-01T00:00:00.000Z';

export interface ExitCode {
  time: string;
  value: string;
  description: string | null;
}

export async function exitCodes(s: TestServer, appId: string, pid: string): Promise<ExitCode[]> {
  return expectStatus(await s.get(`${processPath(appId, pid)}/metrics/exit-codes?${WIDE}`), 200);
}

export interface LogEntry {
  message: string;
  severity: string;
  tags: Record<string, unknown>;
  attributes: Record<string, unknown>;
}

/** Runtime log lines of the application, optionally only those of one process. */
export async function runtimeLogs(s: TestServer, appId: string, pid?: string): Promise<LogEntry[]> {
  const all = expectStatus<LogEntry[]>(await s.get(`/applications/${appId}/runtime-logs?limit=5000`), 200);
  return pid ? all.filter((l) => l.tags.process_id === pid) : all;
}

/** Queued or running jobs of a process (cron ticks, triggers, run ends). */
export async function activeJobs(s: TestServer, pid: string) {
  return s.app.database.db
    .selectFrom('jobs')
    .select(['kind', 'status', 'run_at'])
    .where('subject_id', '=', pid)
    .where('status', 'in', ['queued', 'running'])
    .execute();
}
