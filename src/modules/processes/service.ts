// Processes of an application (web, worker, cron, job): representation, validation and the
// operations on them. Rules: at most one web process per application (the web process cannot be
// deleted); `key` is derived from the display name and unique per application; cron processes
// need a valid cron expression (5 fields, or 6 with seconds first) and an IANA time zone (default
// UTC). Cron runs: cron.ts; schedules: schedule.ts; metrics: metrics.ts; how processes follow the
// application's life: lifecycle.ts.
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { ApiError, badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { cancelJobs, enqueue } from '../../shared/jobs.js';
import { refuseIfTaken } from '../../shared/naming.js';
import type { Page } from '../../shared/pagination.js';
import { writeLogs } from '../../shared/runtime/logs.js';
import { findApp, findLiveApp, type ApplicationsTable, type ServingProcess } from '../applications/index.js';
import { PROCESS_RESOURCE_TYPE_BY_ID, PROCESS_RESOURCE_TYPES, type ProcessResourceType } from '../resources/index.js';
import { armCron, JOB_TRIGGER } from './cron.js';
import { canonicalTimeZone, validateSchedule } from './schedule.js';
import {
  deleteProcessAndRuns,
  hasWebProcess,
  insertNamedProcess,
  listProcessesPage,
  processRow,
  updateProcessRow,
  webAndWorkerProcesses,
  type ConcurrencyPolicy,
  type JobStartPolicy,
  type ProcessesTable,
  type ProcessType,
} from './storage.js';

export const DEFAULT_RESOURCE_TYPE = PROCESS_RESOURCE_TYPES.find((t) => t.name === 's1')!;
export const DEFAULT_WEB_PORT = 8080;

type Json = Record<string, unknown>;
type ScalingStrategy =
  { type: 'manual'; config: { instanceCount: number } } | { type: 'horizontal'; config: { minInstanceCount: number; maxInstanceCount: number } & Json };
type AppNames = Pick<ApplicationsTable, 'name' | 'namespace'>;

// ---- Representation -------------------------------------------------------------------------

export function resourceType(id: string): ProcessResourceType | undefined {
  return PROCESS_RESOURCE_TYPE_BY_ID.get(id);
}

export function instanceCount(p: Pick<ProcessesTable, 'scaling_strategy'>): number {
  const s = JSON.parse(p.scaling_strategy) as ScalingStrategy;
  return s.type === 'manual' ? s.config.instanceCount : s.config.minInstanceCount;
}

/** Keeps only the fields the contract's probe has (request bodies are open objects). */
function cleanProbe(p: Json | null | undefined): Json | null {
  if (!p) return null;
  const pick = (o: unknown, keys: string[]) =>
    o && typeof o === 'object' ? Object.fromEntries(keys.filter((k) => k in (o as Json)).map((k) => [k, (o as Json)[k]])) : o;
  const out = pick(p, [
    'exec',
    'httpGet',
    'tcpSocket',
    'initialDelaySeconds',
    'periodSeconds',
    'timeoutSeconds',
    'successThreshold',
    'failureThreshold',
  ]) as Json;
  if (out.exec) out.exec = pick(out.exec, ['command']);
  if (out.tcpSocket) out.tcpSocket = pick(out.tcpSocket, ['host', 'port']);
  if (out.httpGet) {
    const h = pick(out.httpGet, ['path', 'port', 'host', 'scheme', 'httpHeaders']) as Json;
    if (Array.isArray(h.httpHeaders)) h.httpHeaders = h.httpHeaders.map((x) => pick(x, ['name', 'value']));
    out.httpGet = h;
  }
  return out;
}

function cleanScaling(s: ScalingStrategy): ScalingStrategy {
  if (s.type === 'manual') return { type: 'manual', config: { instanceCount: s.config.instanceCount } };
  const keys = [
    'minInstanceCount',
    'maxInstanceCount',
    'targetCpuPercent',
    'targetMemoryPercent',
    'scaleUpIntervalSeconds',
    'scaleUpIncrement',
    'scaleDownIntervalSeconds',
    'scaleDownIncrement',
  ];
  return {
    type: 'horizontal',
    config: Object.fromEntries(keys.filter((k) => k in s.config).map((k) => [k, s.config[k]])) as ScalingStrategy['config'] & {
      minInstanceCount: number;
      maxInstanceCount: number;
    },
  };
}

export function view(p: ProcessesTable, app: AppNames) {
  const rt = resourceType(p.resource_type_id);
  const cron = p.type === 'cron';
  return {
    id: p.id,
    app_id: p.app_id,
    key: p.key,
    type: p.type,
    display_name: p.display_name,
    entrypoint: p.entrypoint,
    port: p.port,
    is_ingress_enabled: !!p.is_ingress_enabled,
    ingress_protocol: p.ingress_protocol,
    scaling_strategy: JSON.parse(p.scaling_strategy) as ScalingStrategy,
    resource_type_id: p.resource_type_id,
    resource_type_name: rt?.name ?? null,
    cpu_limit: rt?.cpu_limit ?? null,
    memory_limit: rt?.memory_limit ?? null,
    schedule: cron ? p.schedule : null,
    time_zone: cron ? p.time_zone : null,
    job_start_policy: p.type === 'job' ? p.job_start_policy : null,
    liveness_probe: p.liveness_probe ? (JSON.parse(p.liveness_probe) as Json) : null,
    readiness_probe: p.readiness_probe ? (JSON.parse(p.readiness_probe) as Json) : null,
    internal_hostname: p.port !== null ? `${app.name}-${p.key}.${app.namespace}.svc.cluster.local` : null,
    created_at: p.created_at,
    updated_at: p.updated_at,
    ...(cron ? { concurrency_policy: p.concurrency_policy ?? 'Forbid', max_run_time_seconds: p.max_run_time_seconds } : {}),
  };
}

// ---- Validation of create/update input --------------------------------------------------------

export interface ProcessInput {
  display_name?: string;
  entrypoint?: string;
  type?: ProcessType;
  resource_type_id?: string;
  scaling_strategy?: ScalingStrategy;
  port?: number;
  is_ingress_enabled?: boolean;
  ingress_protocol?: 'http' | 'grpc';
  schedule?: string;
  time_zone?: string;
  job_start_policy?: JobStartPolicy;
  liveness_probe?: Json;
  readiness_probe?: Json;
  concurrency_policy?: ConcurrencyPolicy;
  max_run_time_seconds?: number | null;
}

/** A process resource type by id, or by name (`s1`) for convenience. */
function resolveResourceType(idOrName: string): ProcessResourceType {
  const rt = PROCESS_RESOURCE_TYPE_BY_ID.get(idOrName) ?? PROCESS_RESOURCE_TYPES.find((t) => t.name === idOrName.toLowerCase());
  if (!rt) throw badRequest(`resource_type_id "${idOrName}" is not a process resource type; list them with GET /resources/process-resource-types`);
  return rt;
}

function checkScaling(type: ProcessType, s: ScalingStrategy): ScalingStrategy {
  if (s.type === 'horizontal') {
    if (type === 'cron' || type === 'job') throw badRequest(`${type} processes run to completion and scale manually; use scaling_strategy {"type":"manual"}`);
    if (s.config.minInstanceCount > s.config.maxInstanceCount) throw badRequest('scaling_strategy.config.minInstanceCount must not exceed maxInstanceCount');
  }
  return cleanScaling(s);
}

const onlyFor = (field: string, types: string) => badRequest(`${field} applies to ${types} processes only`);

/**
 * Applies `input` on top of `current` (create: a blank web-less row) and returns the columns to
 * store, after checking the per-type rules. `creating` distinguishes the create body (whose
 * concurrency_policy carries the contract default) from a partial update.
 */
function applyInput(
  current: Omit<ProcessesTable, 'id' | 'app_id' | 'company_id' | 'key' | 'cron_token' | 'rolled_out_at' | 'created_at' | 'updated_at'>,
  input: ProcessInput,
  creating: boolean,
) {
  const type = current.type;
  const next = { ...current };
  if (input.display_name !== undefined) next.display_name = input.display_name;
  if (input.entrypoint !== undefined) next.entrypoint = input.entrypoint;
  if (input.resource_type_id !== undefined) next.resource_type_id = resolveResourceType(input.resource_type_id).id;
  if (input.scaling_strategy !== undefined) next.scaling_strategy = JSON.stringify(checkScaling(type, input.scaling_strategy));
  if (input.liveness_probe !== undefined) next.liveness_probe = JSON.stringify(cleanProbe(input.liveness_probe));
  if (input.readiness_probe !== undefined) next.readiness_probe = JSON.stringify(cleanProbe(input.readiness_probe));

  if (input.port !== undefined) {
    if (type === 'cron' || type === 'job') throw onlyFor('port', 'web and worker');
    next.port = input.port;
  }
  if (input.is_ingress_enabled !== undefined) {
    if (type !== 'web' && input.is_ingress_enabled) throw onlyFor('is_ingress_enabled', 'web');
    next.is_ingress_enabled = input.is_ingress_enabled ? 1 : 0;
  }
  if (input.ingress_protocol !== undefined) {
    if (type !== 'web') throw onlyFor('ingress_protocol', 'web');
    next.ingress_protocol = input.ingress_protocol;
  }
  if (input.job_start_policy !== undefined) {
    if (type !== 'job') throw onlyFor('job_start_policy', 'job');
    next.job_start_policy = input.job_start_policy;
  }

  if (type === 'cron') {
    if (input.time_zone !== undefined) {
      const tz = canonicalTimeZone(input.time_zone);
      if (!tz) throw badRequest(`time_zone "${input.time_zone}" is not an IANA time zone (for example "UTC" or "Europe/Paris")`);
      next.time_zone = tz;
    }
    next.time_zone ??= 'UTC';
    if (input.schedule !== undefined) next.schedule = input.schedule.trim();
    if (!next.schedule) throw badRequest('schedule is required for cron processes (a cron expression such as "0 3 * * *")');
    validateSchedule(next.schedule, next.time_zone);
    if (input.concurrency_policy !== undefined) next.concurrency_policy = input.concurrency_policy;
    next.concurrency_policy ??= 'Forbid';
    if (input.max_run_time_seconds !== undefined) next.max_run_time_seconds = input.max_run_time_seconds;
  } else {
    if (input.schedule !== undefined) throw onlyFor('schedule', 'cron');
    if (input.time_zone !== undefined) throw onlyFor('time_zone', 'cron');
    if (input.max_run_time_seconds !== undefined && input.max_run_time_seconds !== null) throw onlyFor('max_run_time_seconds', 'cron');
    // The create body's schema default fills in Forbid for every type; only an explicit choice is an error.
    if (input.concurrency_policy !== undefined && !(creating && input.concurrency_policy === 'Forbid')) throw onlyFor('concurrency_policy', 'cron');
  }
  return next;
}

// ---- Operations -------------------------------------------------------------------------------

/** The process of the application, or 404. */
export async function findProcess(tx: Tx, appId: string, processId: string): Promise<ProcessesTable> {
  const p = await processRow(tx, appId, processId);
  if (!p) throw notFound('Process');
  return p;
}

export async function listProcesses(ctx: CallContext, appId: string, page: Page) {
  const { tx } = ctx;
  const app = await findApp(ctx, appId);
  const r = await listProcessesPage(tx, appId, page);
  return { ...r, data: r.data.map((p) => view(p, app)) };
}

export async function getProcess(ctx: CallContext, appId: string, processId: string) {
  const { tx } = ctx;
  const app = await findApp(ctx, appId);
  return view(await findProcess(tx, appId, processId), app);
}

export async function createProcess(
  ctx: CallContext,
  appId: string,
  body: ProcessInput & { type: ProcessType; display_name: string; resource_type_id: string; scaling_strategy: ScalingStrategy },
) {
  const { tx, companyId } = ctx;
  const app = await findLiveApp(ctx, appId);
  const type = body.type;
  if (type === 'web')
    await refuseIfTaken(
      tx,
      `processes-web:${appId}`,
      () => hasWebProcess(tx, appId),
      () => badRequest('An application can have at most one web process'),
    );
  const fields = applyInput(
    {
      type,
      display_name: body.display_name,
      entrypoint: '',
      port: type === 'web' ? DEFAULT_WEB_PORT : null,
      is_ingress_enabled: type === 'web' ? 1 : 0,
      ingress_protocol: type === 'web' ? 'http' : null,
      scaling_strategy: '',
      resource_type_id: '',
      schedule: null,
      time_zone: null,
      job_start_policy: type === 'job' ? 'afterSuccessDeployment' : null,
      liveness_probe: null,
      readiness_probe: null,
      concurrency_policy: null,
      max_run_time_seconds: null,
    },
    body,
    true,
  );
  const now = new Date().toISOString();
  // The key is unique in the application even under concurrent creates: the unique index decides.
  const row = await insertNamedProcess(tx, appId, body.display_name, (key): ProcessesTable => ({
    id: newId(),
    app_id: appId,
    company_id: companyId,
    key,
    ...fields,
    cron_token: null,
    rolled_out_at: null,
    created_at: now,
    updated_at: now,
  }));
  return view(row, app);
}

export async function updateProcess(ctx: CallContext, appId: string, processId: string, body: ProcessInput) {
  const { tx, companyId } = ctx;
  const appRow = await findLiveApp(ctx, appId);
  const p = await findProcess(tx, appId, processId);
  const fields = applyInput(p, body, false);
  // Only the columns an update sets: the cron chain's token and the rollout time have writers of
  // their own, and the copy read above must not overwrite what one of them committed meanwhile
  // (PostgreSQL runs them concurrently).
  const { id: _id, cron_token: _t, rolled_out_at: _r, ...set } = { ...p, ...fields, updated_at: new Date().toISOString() };
  const updated = await updateProcessRow(tx, p.id, set);
  // Schedule changes of an armed cron process apply at once (the chain is re-armed).
  if (updated.type === 'cron' && updated.cron_token && (p.schedule !== updated.schedule || p.time_zone !== updated.time_zone)) {
    updated.cron_token = await armCron(tx, updated);
    await writeLogs(tx, { companyId, appId, kind: 'runtime' }, [
      { message: `Cron process ${p.key} rescheduled: "${updated.schedule}" (${updated.time_zone})`, processId: p.id },
    ]);
  }
  return view(updated, appRow);
}

export async function deleteProcess(ctx: CallContext, appId: string, processId: string) {
  const { tx, companyId } = ctx;
  await findLiveApp(ctx, appId);
  const p = await findProcess(tx, appId, processId);
  if (p.type === 'web') throw badRequest('The web process cannot be deleted');
  await cancelJobs(tx, p.id);
  await deleteProcessAndRuns(tx, p.id);
  await writeLogs(tx, { companyId, appId, kind: 'runtime' }, [{ message: `Process ${p.key} deleted`, processId: p.id }]);
  return { message: 'Process deleted' };
}

/** 400 with `data.issues`: the trigger operation's contract lists no 400 response of its own. */
function triggerRejected(message: string): ApiError {
  return new ApiError(400, message, { issues: [{ path: 'params.process_id', message }] });
}

export async function triggerProcess(ctx: CallContext, appId: string, processId: string) {
  const { tx } = ctx;
  const app = await findApp(ctx, appId);
  const p = await findProcess(tx, appId, processId);
  if (p.type !== 'cron') throw triggerRejected(`Only cron processes can be triggered; process ${p.key} is a ${p.type} process`);
  if (app.is_suspended) throw triggerRejected('The application is suspended; activate it before triggering a cron run');
  if (app.status !== 'deploymentSuccess') throw triggerRejected('The application has no successful deployment running; deploy it before triggering a cron run');
  if (!p.rolled_out_at) throw triggerRejected(`Cron process ${p.key} was created after the last deployment; deploy the application so it takes effect`);
  await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'manual' }, subjectId: p.id });
  return { message: 'Cron job triggered' };
}

/** What a real runtime starts of an application: its web and worker processes with their command and instance count. */
export async function runnableProcesses(tx: Tx, appId: string): Promise<ServingProcess[]> {
  const rows = await webAndWorkerProcesses(tx, appId);
  return rows.map((p) => {
    const probe = p.readiness_probe ? (JSON.parse(p.readiness_probe) as { httpGet?: { path?: string } }) : null;
    return {
      id: p.id,
      key: p.key,
      type: p.type as 'web' | 'worker',
      entrypoint: p.entrypoint,
      instances: instanceCount(p),
      readinessPath: probe?.httpGet?.path ?? null,
      resourceTypeId: p.resource_type_id,
    };
  });
}
