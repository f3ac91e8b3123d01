// Processes of an application (web, worker, cron, job) and the runs of cron processes.
//
// Rules: at most one web process per application (the web process cannot be deleted); `key` is
// derived from the display name and unique per application; cron processes need a valid cron
// expression (5 fields, or 6 with seconds first) and an IANA time zone (default UTC).
//
// Cron, on the durable job engine (all state changes are conditional, so a re-run step is harmless):
// - `cron.tick` (subject = process id) fires at the next time of the schedule in the process's time
//   zone, starts a run when the application is live (status deploymentSuccess, not suspended), and
//   reschedules itself. The process's `cron_token` names the live chain; re-arming replaces it and
//   a superseded tick stops. A new cron process is armed when a deployment rolls it out (as the
//   contract says, a new process takes effect on the next deployment); schedule changes of an
//   armed process apply at once.
// - `cron.trigger` starts one manual run (the trigger operation; job processes after a deployment).
// - `cron.finish` ends a run: exit 0 (completed), 1 (a fault rule of operation `cron` fired:
//   failed) or 137 (max run time reached: deadlineExceeded).
// - Concurrency: Forbid skips a start while a run is running (recorded as a skipped run); Replace
//   terminates the running run (exit 143, replaced) and starts a fresh one.
// A run lasts as long as the simulation progression of operation `cron` says (immediate: ends at
// once; duration: that long; reads: the 3000 ms default).
import { Cron } from 'croner';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { ApiError, badRequest } from '../../shared/errors.js';
import { newId, UUID_RE } from '../../shared/ids.js';
import { cancelJobs, enqueue, type Job, type JobOutcome } from '../../shared/jobs.js';
import { uniqueName } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { writeLogs, type LogLine } from '../../shared/runtime/logs.js';
import type { Progression } from '../../shared/runtime/simulation.js';
import { findApp, type ApplicationsTable } from '../applications/storage.js';
import { PROCESS_RESOURCE_TYPE_BY_ID, PROCESS_RESOURCE_TYPES, type ProcessResourceType } from '../resources/catalog.js';
import {
  findProcess,
  type ConcurrencyPolicy,
  type JobStartPolicy,
  type ProcessesTable,
  type ProcessRunsTable,
  type ProcessType,
  type TerminationReason,
} from './storage.js';

export const DEFAULT_RESOURCE_TYPE = PROCESS_RESOURCE_TYPES.find((t) => t.name === 's1')!;
export const DEFAULT_WEB_PORT = 8080;
/** Run length when the `cron` progression is `reads` (runs are not read by clients). */
export const READS_RUN_MS = 3000;
export const EXIT_FAILED = 1;
export const EXIT_DEADLINE = 137;
export const EXIT_TERMINATED = 143;

export const JOB_TICK = 'cron.tick';
export const JOB_TRIGGER = 'cron.trigger';
export const JOB_FINISH = 'cron.finish';

type Json = Record<string, unknown>;
type ScalingStrategy = { type: 'manual'; config: { instanceCount: number } } | { type: 'horizontal'; config: { minInstanceCount: number; maxInstanceCount: number } & Json };
type AppNames = Pick<ApplicationsTable, 'name' | 'namespace'>;

// ---- Schedules and time zones -----------------------------------------------------------------

let zoneNames: Map<string, string> | undefined;

/**
 * The IANA name of a time zone as stored and shown (`utc` -> `UTC`, `europe/paris` -> `Europe/Paris`),
 * or null when the runtime does not know it. Valid aliases (`Asia/Kolkata`, `America/Argentina/Buenos_Aires`)
 * keep the caller's spelling rather than ICU's canonical link target.
 */
export function canonicalTimeZone(tz: string): string | null {
  const name = tz.trim();
  if (!name || /^[+-]?\d/.test(name)) return null;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
  } catch {
    return null;
  }
  zoneNames ??= new Map(['UTC', ...Intl.supportedValuesOf('timeZone')].map((z) => [z.toLowerCase(), z]));
  return zoneNames.get(name.toLowerCase()) ?? name;
}

function cronOf(schedule: string, timeZone: string): Cron {
  return new Cron(schedule, { mode: '5-or-6-parts', timezone: timeZone, paused: true });
}

/** Validates a cron expression (5 fields, or 6 with seconds first; @daily-style nicknames too). */
export function validateSchedule(schedule: string, timeZone: string): void {
  const s = schedule.trim();
  if (!s) throw badRequest('schedule must be a cron expression such as "0 3 * * *" (5 fields, or 6 with seconds first)');
  let next: Date | null;
  try {
    next = cronOf(s, timeZone).nextRun();
  } catch (e) {
    throw badRequest(`schedule "${schedule}" is not a valid cron expression (5 fields, or 6 with seconds first): ${(e as Error).message.replace(/^CronPattern: /, '')}`);
  }
  if (!next) throw badRequest(`schedule "${schedule}" never fires`);
}

/** The first fire of the schedule strictly after `after`, in the process's time zone. */
export function nextFire(schedule: string, timeZone: string, after: Date): Date | null {
  try {
    return cronOf(schedule.trim(), timeZone).nextRun(after);
  } catch {
    return null;
  }
}

// ---- Representation -------------------------------------------------------------------------

function resourceType(id: string): ProcessResourceType | undefined {
  return PROCESS_RESOURCE_TYPE_BY_ID.get(id);
}

export function instanceCount(p: Pick<ProcessesTable, 'scaling_strategy'>): number {
  const s = JSON.parse(p.scaling_strategy) as ScalingStrategy;
  return s.type === 'manual' ? s.config.instanceCount : s.config.minInstanceCount;
}

/** Keeps only the fields the contract's probe has (request bodies are open objects). */
function cleanProbe(p: Json | null | undefined): Json | null {
  if (!p) return null;
  const pick = (o: unknown, keys: string[]) => (o && typeof o === 'object' ? Object.fromEntries(keys.filter((k) => k in (o as Json)).map((k) => [k, (o as Json)[k]])) : o);
  const out = pick(p, ['exec', 'httpGet', 'tcpSocket', 'initialDelaySeconds', 'periodSeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold']) as Json;
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
  const keys = ['minInstanceCount', 'maxInstanceCount', 'targetCpuPercent', 'targetMemoryPercent', 'scaleUpIntervalSeconds', 'scaleUpIncrement', 'scaleDownIntervalSeconds', 'scaleDownIncrement'];
  return { type: 'horizontal', config: Object.fromEntries(keys.filter((k) => k in s.config).map((k) => [k, s.config[k]])) as ScalingStrategy['config'] & { minInstanceCount: number; maxInstanceCount: number } };
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
function applyInput(current: Omit<ProcessesTable, 'id' | 'app_id' | 'company_id' | 'key' | 'cron_token' | 'rolled_out_at' | 'created_at' | 'updated_at'>, input: ProcessInput, creating: boolean) {
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

async function liveApp(tx: Tx, companyId: string, appId: string): Promise<ApplicationsTable> {
  const app = await findApp(tx, companyId, appId);
  if (app.status === 'deleting') throw badRequest('The application is being deleted');
  return app;
}

export async function listProcesses(tx: Tx, companyId: string, appId: string, page: Page) {
  const app = await findApp(tx, companyId, appId);
  const r = await paginate(tx.selectFrom('processes').selectAll().where('app_id', '=', appId), page);
  return { ...r, data: r.data.map((p) => view(p, app)) };
}

export async function getProcess(tx: Tx, companyId: string, appId: string, processId: string) {
  const app = await findApp(tx, companyId, appId);
  return view(await findProcess(tx, appId, processId), app);
}

export async function createProcess(tx: Tx, companyId: string, appId: string, body: ProcessInput & { type: ProcessType; display_name: string; resource_type_id: string; scaling_strategy: ScalingStrategy }) {
  const app = await liveApp(tx, companyId, appId);
  const type = body.type;
  if (type === 'web' && (await tx.selectFrom('processes').select('id').where('app_id', '=', appId).where('type', '=', 'web').executeTakeFirst()))
    throw badRequest('An application can have at most one web process');
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
  // Concurrent creates may take the same key (or the web slot) between check and insert; the unique
  // indexes turn that into "nothing inserted" and the next round decides.
  for (let attempt = 0; attempt < 10; attempt++) {
    const key = await uniqueName(body.display_name, async (k) => !!(await tx.selectFrom('processes').select('id').where('app_id', '=', appId).where('key', '=', k).executeTakeFirst()));
    const row: ProcessesTable = { id: newId(), app_id: appId, company_id: companyId, key, ...fields, cron_token: null, rolled_out_at: null, created_at: now, updated_at: now };
    const inserted = await tx.insertInto('processes').values(row).onConflict((oc) => oc.doNothing()).returning('id').executeTakeFirst();
    if (inserted) return view(row, app);
    if (type === 'web' && (await tx.selectFrom('processes').select('id').where('app_id', '=', appId).where('type', '=', 'web').executeTakeFirst()))
      throw badRequest('An application can have at most one web process');
  }
  throw new Error(`no free process key for "${body.display_name}" after 10 attempts`);
}

export async function updateProcess(tx: Tx, companyId: string, appId: string, processId: string, body: ProcessInput) {
  const appRow = await liveApp(tx, companyId, appId);
  const p = await findProcess(tx, appId, processId);
  const fields = applyInput(p, body, false);
  const updated: ProcessesTable = { ...p, ...fields, updated_at: new Date().toISOString() };
  const { id: _id, ...set } = updated;
  await tx.updateTable('processes').set(set).where('id', '=', p.id).execute();
  // Schedule changes of an armed cron process apply at once (the chain is re-armed).
  if (p.type === 'cron' && p.cron_token && (p.schedule !== updated.schedule || p.time_zone !== updated.time_zone)) {
    updated.cron_token = await armCron(tx, updated);
    await writeLogs(tx, { companyId, appId, kind: 'runtime' }, [{ message: `Cron process ${p.key} rescheduled: "${updated.schedule}" (${updated.time_zone})`, processId: p.id }]);
  }
  return view(updated, appRow);
}

export async function deleteProcess(tx: Tx, companyId: string, appId: string, processId: string) {
  await liveApp(tx, companyId, appId);
  const p = await findProcess(tx, appId, processId);
  if (p.type === 'web') throw badRequest('The web process cannot be deleted');
  await cancelJobs(tx, p.id);
  await tx.deleteFrom('process_runs').where('process_id', '=', p.id).execute();
  await tx.deleteFrom('processes').where('id', '=', p.id).execute();
  await writeLogs(tx, { companyId, appId, kind: 'runtime' }, [{ message: `Process ${p.key} deleted`, processId: p.id }]);
  return { message: 'Process deleted' };
}

/** 400 with `data.issues`: the trigger operation's contract lists no 400 response of its own. */
function triggerRejected(message: string): ApiError {
  return new ApiError(400, message, { issues: [{ path: 'params.process_id', message }] });
}

export async function triggerProcess(tx: Tx, companyId: string, appId: string, processId: string) {
  const app = await findApp(tx, companyId, appId);
  const p = await findProcess(tx, appId, processId);
  if (p.type !== 'cron') throw triggerRejected(`Only cron processes can be triggered; process ${p.key} is a ${p.type} process`);
  if (app.is_suspended) throw triggerRejected('The application is suspended; activate it before triggering a cron run');
  if (app.status !== 'deploymentSuccess') throw triggerRejected('The application has no successful deployment running; deploy it before triggering a cron run');
  if (!p.rolled_out_at) throw triggerRejected(`Cron process ${p.key} was created after the last deployment; deploy the application so it takes effect`);
  await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'manual' }, subjectId: p.id });
  return { message: 'Cron job triggered' };
}

// ---- Metrics ------------------------------------------------------------------------------------

export type ProcessMetric = 'cpu-usage' | 'cpu-limit' | 'memory-usage' | 'memory-limit' | 'instance-count';

function checkRange(fromS: string, toS: string, issues: boolean): { from: Date; to: Date } {
  const from = new Date(fromS);
  const to = new Date(toS);
  if (from.getTime() > to.getTime()) {
    const message = '`from` must not be later than `to`';
    throw issues ? new ApiError(400, message, { issues: [{ path: 'query.from', message }] }) : badRequest(message);
  }
  return { from, to };
}

export async function processMetric(tx: Tx, app: AppContext, companyId: string, appId: string, processId: string, metric: ProcessMetric, q: { from: string; to: string; interval_in_seconds: number }) {
  const appRow = await findApp(tx, companyId, appId);
  const p = await findProcess(tx, appId, processId);
  const { from, to } = checkRange(q.from, q.to, true);
  const rt = resourceType(p.resource_type_id) ?? DEFAULT_RESOURCE_TYPE;
  const now = Date.now();
  const live = appRow.status === 'deploymentSuccess' && !appRow.is_suspended && p.rolled_out_at !== null;
  const since = p.rolled_out_at ? Date.parse(p.rolled_out_at) : Infinity;
  let running = (t: Date) => live && t.getTime() >= since && t.getTime() <= now;
  let instances = instanceCount(p);
  if (p.type === 'cron' || p.type === 'job') {
    // Run-to-completion processes run only while a run does.
    const runs = await tx
      .selectFrom('process_runs')
      .select(['started_at', 'ended_at'])
      .where('process_id', '=', p.id)
      .where('status', '!=', 'skipped')
      .where('started_at', '<=', to.toISOString())
      .where((eb) => eb.or([eb('ended_at', 'is', null), eb('ended_at', '>=', from.toISOString())]))
      .execute();
    const spans = runs.map((r) => [Date.parse(r.started_at), r.ended_at ? Date.parse(r.ended_at) : now] as const);
    running = (t) => live && spans.some(([a, b]) => t.getTime() >= a && t.getTime() <= b);
    instances = 1;
  }
  const cores = rt.cpu_limit / 1000;
  const bytes = rt.memory_limit * 1024 * 1024;
  const shape = {
    'cpu-usage': { base: 0.05 * cores, spread: 0.45 * cores },
    'cpu-limit': { base: cores, spread: 0 },
    'memory-usage': { base: 0.3 * bytes, spread: 0.35 * bytes },
    'memory-limit': { base: bytes, spread: 0 },
    'instance-count': { base: instances, spread: 0 },
  }[metric];
  return app.runtime.series(p.id, metric, from, to, q.interval_in_seconds, { ...shape, running });
}

export async function exitCodes(tx: Tx, companyId: string, appId: string, processId: string, q: { from: string; to: string }) {
  await findApp(tx, companyId, appId);
  const p = await findProcess(tx, appId, processId);
  const { from, to } = checkRange(q.from, q.to, false);
  const rows = await tx
    .selectFrom('process_runs')
    .select(['ended_at', 'exit_code', 'termination_reason'])
    .where('process_id', '=', p.id)
    .where('exit_code', 'is not', null)
    .where('ended_at', '>=', from.toISOString())
    .where('ended_at', '<=', to.toISOString())
    .orderBy('ended_at')
    .orderBy('id')
    .limit(10_000)
    .execute();
  return rows.map((r) => ({ time: r.ended_at!, value: String(r.exit_code), description: r.termination_reason }));
}

// ---- Hooks called by the applications module ----------------------------------------------------

/** How many processes the application has (deployment log lines). */
export async function countProcesses(tx: Tx, appId: string): Promise<number> {
  const r = await tx.selectFrom('processes').select((eb) => eb.fn.countAll().as('n')).where('app_id', '=', appId).executeTakeFirst();
  return Number(r?.n ?? 0);
}

/** The default process of a new application: one web process on port 8080, one instance. */
export async function createDefaultProcesses(tx: Tx, app: ApplicationsTable): Promise<void> {
  const now = new Date().toISOString();
  await tx
    .insertInto('processes')
    .values({
      id: newId(),
      app_id: app.id,
      company_id: app.company_id,
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
    })
    .execute();
}

/** Clone: the same processes under new ids (not armed, not rolled out: the clone's deployment does that). */
export async function copyProcesses(tx: Tx, fromAppId: string, to: ApplicationsTable): Promise<void> {
  const rows = await tx.selectFrom('processes').selectAll().where('app_id', '=', fromAppId).orderBy('created_at').orderBy('id').execute();
  if (!rows.length) return;
  // One millisecond apart, so the clone lists its processes in the source's order.
  const base = Date.now() - rows.length;
  await tx
    .insertInto('processes')
    .values(
      rows.map((p, i) => {
        const at = new Date(base + i + 1).toISOString();
        return { ...p, id: newId(), app_id: to.id, company_id: to.company_id, cron_token: null, rolled_out_at: null, created_at: at, updated_at: at };
      }),
    )
    .execute();
}

/**
 * A deployment of the application succeeded: its processes take effect. Writes a runtime log line
 * per process, arms the schedule of every cron process, starts job processes that run after a
 * successful deployment, and returns the number of processes.
 */
export async function onRollout(tx: Tx, appCtx: AppContext, app: ApplicationsTable, deploymentId: string): Promise<number> {
  // Activation re-runs the rollout of the running deployment without a new one ('activation').
  const deployment = UUID_RE.test(deploymentId) ? deploymentId : null;
  const procs = await tx.selectFrom('processes').selectAll().where('app_id', '=', app.id).orderBy('created_at').orderBy('id').execute();
  const now = new Date().toISOString();
  await tx.updateTable('processes').set({ rolled_out_at: now }).where('app_id', '=', app.id).where('rolled_out_at', 'is', null).execute();
  const lines: LogLine[] = [];
  for (const p of procs) {
    if (p.type === 'cron') {
      await armCron(tx, p);
      lines.push({ message: `Scheduled cron process ${p.key}: "${p.schedule}" (${p.time_zone}, concurrency ${p.concurrency_policy ?? 'Forbid'})`, processId: p.id });
    } else if (p.type === 'job') {
      if (p.job_start_policy === 'afterSuccessDeployment' && deployment) {
        await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'deployment', deploymentId }, subjectId: p.id });
        lines.push({ message: `Starting job process ${p.key} after the deployment`, processId: p.id });
      }
    } else {
      const n = instanceCount(p);
      lines.push({ message: `Started process ${p.key} (${n} instance${n === 1 ? '' : 's'})`, processId: p.id });
    }
  }
  await writeLogs(tx, { companyId: app.company_id, appId: app.id, kind: 'runtime', deploymentId: deployment }, lines);
  appCtx.jobs.wake();
  return procs.length;
}

/**
 * Job processes whose start policy matches a moment of a deployment: `beforeDeployment` when a
 * deployment starts, `afterFailedDeployment` when one fails (`afterSuccessDeployment` is onRollout's).
 */
export async function onDeploymentMoment(tx: Tx, appCtx: AppContext, app: ApplicationsTable, deploymentId: string, moment: 'started' | 'failed'): Promise<void> {
  const policy: JobStartPolicy = moment === 'started' ? 'beforeDeployment' : 'afterFailedDeployment';
  const jobs = await tx.selectFrom('processes').selectAll().where('app_id', '=', app.id).where('type', '=', 'job').where('job_start_policy', '=', policy).execute();
  if (!jobs.length) return;
  for (const p of jobs) await enqueue(tx, { kind: JOB_TRIGGER, payload: { processId: p.id, trigger: 'deployment', deploymentId }, subjectId: p.id });
  const when = moment === 'started' ? 'as the deployment starts' : 'after the failed deployment';
  await writeLogs(tx, { companyId: app.company_id, appId: app.id, kind: 'runtime', deploymentId }, jobs.map((p) => ({ message: `Starting job process ${p.key} ${when}`, processId: p.id })));
  appCtx.jobs.wake();
}

/** The application was suspended: cron stops (queued work cancelled, running runs cancelled). */
export async function onSuspend(tx: Tx, app: ApplicationsTable): Promise<void> {
  const procs = await tx.selectFrom('processes').selectAll().where('app_id', '=', app.id).where('type', 'in', ['cron', 'job']).execute();
  for (const p of procs) {
    await cancelJobs(tx, p.id);
    await tx.updateTable('processes').set({ cron_token: null }).where('id', '=', p.id).execute();
    const running = await tx.selectFrom('process_runs').selectAll().where('process_id', '=', p.id).where('status', '=', 'running').execute();
    for (const r of running) await terminateRun(tx, p, r, 'cancelled', 'the application was suspended');
  }
}

/**
 * The application was activated again: re-arms the cron processes that a deployment had rolled
 * out. (Not needed when activation runs a deployment, whose rollout arms them.)
 */
export async function onResume(tx: Tx, app: ApplicationsTable): Promise<void> {
  const procs = await tx.selectFrom('processes').selectAll().where('app_id', '=', app.id).where('type', '=', 'cron').where('rolled_out_at', 'is not', null).execute();
  for (const p of procs) await armCron(tx, p);
}

/** The application is being deleted: cancel its process jobs, delete runs and processes. */
export async function deleteAppProcesses(tx: Tx, appId: string): Promise<void> {
  const procs = await tx.selectFrom('processes').select('id').where('app_id', '=', appId).execute();
  for (const p of procs) await cancelJobs(tx, p.id);
  await tx.deleteFrom('process_runs').where('app_id', '=', appId).execute();
  await tx.deleteFrom('processes').where('app_id', '=', appId).execute();
}

// ---- Cron engine ----------------------------------------------------------------------------------

/** Starts a new chain of ticks for a cron process (replacing any previous one); returns its token. */
async function armCron(tx: Tx, p: ProcessesTable): Promise<string | null> {
  await cancelJobs(tx, p.id, JOB_TICK);
  const next = p.schedule && p.time_zone ? nextFire(p.schedule, p.time_zone, new Date()) : null;
  const token = next ? newId() : null;
  await tx.updateTable('processes').set({ cron_token: token }).where('id', '=', p.id).execute();
  if (next) await enqueue(tx, { kind: JOB_TICK, payload: { processId: p.id, token, fireAt: next.toISOString() }, runAt: next, subjectId: p.id });
  return token;
}

function runDurationMs(p: Progression): number {
  if (p.mode === 'immediate') return 0;
  if (p.mode === 'duration') return p.ms;
  return READS_RUN_MS;
}

const short = (id: string) => id.slice(0, 8);

function runLog(p: Pick<ProcessesTable, 'id' | 'app_id' | 'company_id'>, message: string, attributes: Json, severity: LogLine['severity'] = 'info'): [{ companyId: string; appId: string; kind: 'runtime' }, LogLine[]] {
  return [{ companyId: p.company_id, appId: p.app_id, kind: 'runtime' }, [{ message, severity, processId: p.id, attributes }]];
}

/** PostgreSQL: lock a row for the rest of the transaction (SQLite has one writer anyway). */
function locking<Q extends { forUpdate(): Q }>(app: AppContext, q: Q): Q {
  return app.database.kind === 'postgres' ? q.forUpdate() : q;
}

async function terminateRun(tx: Tx, p: ProcessesTable, run: ProcessRunsTable, reason: 'replaced' | 'cancelled', why: string): Promise<boolean> {
  const now = new Date().toISOString();
  const r = await tx
    .updateTable('process_runs')
    .set({ status: 'terminated', ended_at: now, exit_code: EXIT_TERMINATED, termination_reason: reason })
    .where('id', '=', run.id)
    .where('status', '=', 'running')
    .executeTakeFirst();
  if (!Number(r.numUpdatedRows)) return false;
  await writeLogs(tx, ...runLog(p, `Cron run ${short(run.id)} of ${p.key} terminated: ${why}; exit code ${EXIT_TERMINATED} (${reason})`, { run_id: run.id, exit_code: EXIT_TERMINATED, termination_reason: reason }, 'warning'));
  return true;
}

interface StartOptions {
  trigger: ProcessRunsTable['trigger'];
  fireKey: string;
  scheduledFor: string | null;
  durationMs: number;
}

/**
 * Starts a run of a cron (or job) process under its concurrency policy. Idempotent per fire key:
 * a step that runs again after its commit finds the run (or the skip) already recorded.
 */
async function startRun(tx: Tx, app: AppContext, p: ProcessesTable, o: StartOptions): Promise<'started' | 'skipped' | 'duplicate'> {
  if (await tx.selectFrom('process_runs').select('id').where('fire_key', '=', o.fireKey).executeTakeFirst()) return 'duplicate';
  const now = new Date();
  const nowIso = now.toISOString();
  const base = { process_id: p.id, app_id: p.app_id, company_id: p.company_id, trigger: o.trigger, fire_key: o.fireKey, scheduled_for: o.scheduledFor, started_at: nowIso, created_at: nowIso };
  const running = await tx.selectFrom('process_runs').selectAll().where('process_id', '=', p.id).where('status', '=', 'running').execute();
  const policy = p.type === 'cron' ? (p.concurrency_policy ?? 'Forbid') : 'Forbid';
  if (running.length && policy === 'Forbid') {
    await tx.insertInto('process_runs').values({ ...base, id: newId(), status: 'skipped', ended_at: nowIso, exit_code: null, termination_reason: null }).execute();
    await writeLogs(tx, ...runLog(p, `Cron run of ${p.key} skipped: previous run still running (run ${short(running[0]!.id)}, concurrency policy Forbid)`, { previous_run_id: running[0]!.id, trigger: o.trigger }, 'warning'));
    return 'skipped';
  }
  for (const r of running) await terminateRun(tx, p, r, 'replaced', 'replaced by a new run (concurrency policy Replace)');

  const runId = newId();
  await tx.insertInto('process_runs').values({ ...base, id: runId, status: 'running', ended_at: null, exit_code: null, termination_reason: null }).execute();
  const limitMs = p.type === 'cron' && p.max_run_time_seconds ? p.max_run_time_seconds * 1000 : 0;
  const deadline = limitMs > 0 && o.durationMs > limitMs;
  const endsIn = deadline ? limitMs : o.durationMs;
  await writeLogs(
    tx,
    ...runLog(p, `Cron run ${short(runId)} of ${p.key} started (${o.trigger}${o.scheduledFor ? ` for ${o.scheduledFor}` : ''}): ${p.entrypoint || 'default entrypoint'}`, { run_id: runId, trigger: o.trigger, ...(limitMs ? { max_run_time_seconds: p.max_run_time_seconds } : {}) }),
  );
  if (endsIn <= 0) await finishRun(tx, app, runId, false);
  else await enqueue(tx, { kind: JOB_FINISH, payload: { runId, deadline }, runAt: new Date(now.getTime() + endsIn), subjectId: p.id });
  return 'started';
}

/** Ends a running run: max run time reached (137), a `cron` fault rule (1), or success (0). */
async function finishRun(tx: Tx, app: AppContext, runId: string, deadline: boolean): Promise<void> {
  const run = await locking(app, tx.selectFrom('process_runs').selectAll().where('id', '=', runId)).executeTakeFirst();
  if (!run || run.status !== 'running') return;
  const p = await tx.selectFrom('processes').selectAll().where('id', '=', run.process_id).executeTakeFirst();
  if (!p) return;
  let exit = 0;
  let reason: TerminationReason = 'completed';
  let status: ProcessRunsTable['status'] = 'completed';
  let detail = '';
  if (deadline) {
    [exit, reason, status] = [EXIT_DEADLINE, 'deadlineExceeded', 'terminated'];
    detail = `: exceeded the maximum run time of ${p.max_run_time_seconds} s and was terminated`;
  } else {
    const fault = await app.simulation.shouldFail(tx, 'cron', p.id, 'run');
    if (fault) [exit, reason, status, detail] = [EXIT_FAILED, 'failed', 'failed', `: ${fault}`];
  }
  const r = await tx
    .updateTable('process_runs')
    .set({ status, ended_at: new Date().toISOString(), exit_code: exit, termination_reason: reason })
    .where('id', '=', run.id)
    .where('status', '=', 'running')
    .executeTakeFirst();
  if (!Number(r.numUpdatedRows)) return;
  await writeLogs(
    tx,
    ...runLog(p, `Cron run ${short(run.id)} of ${p.key} exited with code ${exit} (${reason})${detail}`, { run_id: run.id, exit_code: exit, termination_reason: reason }, exit === 0 ? 'info' : 'error'),
  );
}

/** Whether this worker still owns the (running) job; on PostgreSQL also locks it against a takeover. */
async function ownsJob(tx: Tx, app: AppContext, jobId: string): Promise<boolean> {
  const row = await locking(app, tx.selectFrom('jobs').select('status').where('id', '=', jobId).where('lease_owner', '=', app.jobs.workerId)).executeTakeFirst();
  return row?.status === 'running';
}

async function lockedProcess(tx: Tx, app: AppContext, processId: string): Promise<ProcessesTable | undefined> {
  return locking(app, tx.selectFrom('processes').selectAll().where('id', '=', processId)).executeTakeFirst();
}

const appIsLive = (a: ApplicationsTable | undefined) => !!a && a.status === 'deploymentSuccess' && !a.is_suspended;

export interface TickPayload {
  processId: string;
  token: string;
  fireAt: string;
}

/**
 * `cron.tick`. Not run in the engine's transaction: the run length (simulation settings) is read
 * first, outside any transaction, so a job never holds one connection while asking the pool for
 * another; the state changes then happen in one transaction of our own, which re-checks that this
 * worker still owns the job (and, on PostgreSQL, locks it against a takeover). A crash between
 * that commit and the engine recording the outcome re-runs the tick: the fire key makes the
 * start a no-op and the tick only reschedules.
 */
export async function runTick(app: AppContext, job: Job<TickPayload>): Promise<JobOutcome> {
  const durationMs = runDurationMs(await app.simulation.progression('cron'));
  return app.database.db.transaction().execute(async (tx): Promise<JobOutcome> => {
    if (!(await ownsJob(tx, app, job.id))) return;
    const p = await lockedProcess(tx, app, job.payload.processId);
    if (!p || p.type !== 'cron' || p.cron_token !== job.payload.token || !p.schedule || !p.time_zone) return; // superseded or gone
    const appRow = await tx.selectFrom('applications').selectAll().where('id', '=', p.app_id).executeTakeFirst();
    if (!appRow || appRow.is_suspended || appRow.status === 'deleting') return; // the chain stops; a rollout re-arms it
    // Only fires while a successful deployment is running; during a redeploy the chain waits.
    if (appIsLive(appRow)) await startRun(tx, app, p, { trigger: 'schedule', fireKey: `${p.id}@${job.payload.fireAt}`, scheduledFor: job.payload.fireAt, durationMs });
    const next = nextFire(p.schedule, p.time_zone, new Date(Math.max(Date.now(), Date.parse(job.payload.fireAt))));
    if (!next) return;
    return { rescheduleAt: next, payload: { ...job.payload, fireAt: next.toISOString() } };
  });
}

/** The last attempt of a tick failed: the chain stops; say so in the runtime log (a rollout re-arms it). */
export async function tickFailed(tx: Tx, job: Job<TickPayload>, error: Error): Promise<void> {
  const p = await tx.selectFrom('processes').selectAll().where('id', '=', job.payload.processId).executeTakeFirst();
  if (!p || p.cron_token !== job.payload.token) return;
  await tx.updateTable('processes').set({ cron_token: null }).where('id', '=', p.id).where('cron_token', '=', job.payload.token).execute();
  await writeLogs(tx, ...runLog(p, `Cron schedule of ${p.key} stopped after repeated errors (${error.message}); redeploy the application to re-arm it`, { error: error.message }, 'error'));
}

export interface TriggerPayload {
  processId: string;
  trigger: 'manual' | 'deployment';
  deploymentId?: string;
}

/** `cron.trigger`: one run outside the schedule (not transactional, for the same reason as ticks). */
export async function runTrigger(app: AppContext, job: Job<TriggerPayload>): Promise<JobOutcome> {
  const durationMs = runDurationMs(await app.simulation.progression('cron'));
  await app.database.db.transaction().execute(async (tx) => {
    if (!(await ownsJob(tx, app, job.id))) return;
    const p = await lockedProcess(tx, app, job.payload.processId);
    if (!p || (p.type !== 'cron' && p.type !== 'job')) return;
    const appRow = await tx.selectFrom('applications').selectAll().where('id', '=', p.app_id).executeTakeFirst();
    // Manual runs need the application running; runs started by a deployment (job start
    // policies) happen around it, whatever its outcome, unless the app is suspended or going away.
    const runnable = job.payload.trigger === 'manual' ? appIsLive(appRow) : !!appRow && !appRow.is_suspended && appRow.status !== 'deleting';
    if (!runnable) {
      await writeLogs(tx, ...runLog(p, `Run of ${p.key} not started: the application is not running`, { trigger: job.payload.trigger }, 'warning'));
      return;
    }
    await startRun(tx, app, p, { trigger: job.payload.trigger, fireKey: `job:${job.id}`, scheduledFor: null, durationMs });
  });
}

export interface FinishPayload {
  runId: string;
  deadline: boolean;
}

/** `cron.finish` (in the engine's transaction). */
export async function runFinish(tx: Tx, app: AppContext, job: Job<FinishPayload>): Promise<JobOutcome> {
  await finishRun(tx, app, job.payload.runId, job.payload.deadline);
}
