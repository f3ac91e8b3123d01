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
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { idDigits, newId } from '../../shared/ids.js';
import { cancelJobs, enqueue, type Job, type JobKind, type Outcome } from '../../shared/jobs.js';
import { writeLogs, type LogLine } from '../../shared/runtime/logs.js';
import type { Progression } from '../../shared/runtime/simulation.js';
import { appById, type ApplicationsTable } from '../applications/index.js';
import { nextFire } from './schedule.js';
import { endRunningRun, hasRunWithFireKey, insertRun, lockRun, runningRuns, runningRunsStartedBefore } from './runs-storage.js';
import {
  clearCronToken,
  existingProcess,
  lockProcess,
  processById,
  setCronToken,
  type ProcessesTable,
  type ProcessRunsTable,
  type TerminationReason,
} from './storage.js';

/** Run length when the `cron` progression is `reads` (runs are not read by clients). */
export const READS_RUN_MS = 3000;
export const EXIT_FAILED = 1;
export const EXIT_DEADLINE = 137;
export const EXIT_TERMINATED = 143;

export const JOB_TICK = 'cron.tick';
export const JOB_TRIGGER = 'cron.trigger';
export const JOB_FINISH = 'cron.finish';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** The next fire of a cron process's schedule (one live chain per process, named by its token). */
    'cron.tick': { processId: string; token: string | null; fireAt: string };
    /** One run outside the schedule: the trigger operation, or a job process around a deployment. */
    'cron.trigger': { processId: string; trigger: 'manual' | 'deployment'; deploymentId?: string };
    /** The end of a run (its length, or the maximum run time). */
    'cron.finish': { runId: string; deadline: boolean };
  }
}

type Json = Record<string, unknown>;

/** Starts a new chain of ticks for a cron process (replacing any previous one); returns its token. */
export async function armCron(tx: Tx, p: ProcessesTable): Promise<string | null> {
  await cancelJobs(tx, p.id, JOB_TICK);
  const next = p.schedule && p.time_zone ? nextFire(p.schedule, p.time_zone, new Date()) : null;
  const token = next ? newId() : null;
  await setCronToken(tx, p.id, token);
  if (next) await enqueue(tx, { kind: JOB_TICK, payload: { processId: p.id, token, fireAt: next.toISOString() }, runAt: next, subjectId: p.id });
  return token;
}

function runDurationMs(p: Progression): number {
  if (p.mode === 'immediate') return 0;
  if (p.mode === 'duration') return p.ms;
  return READS_RUN_MS;
}

const short = (id: string) => idDigits(id, 8);

function runLog(
  p: Pick<ProcessesTable, 'id' | 'app_id' | 'company_id'>,
  message: string,
  attributes: Json,
  severity: LogLine['severity'] = 'info',
): [{ companyId: string; appId: string; kind: 'runtime' }, LogLine[]] {
  return [{ companyId: p.company_id, appId: p.app_id, kind: 'runtime' }, [{ message, severity, processId: p.id, attributes }]];
}

export async function terminateRun(tx: Tx, p: ProcessesTable, run: ProcessRunsTable, reason: 'replaced' | 'cancelled', why: string): Promise<boolean> {
  const now = new Date().toISOString();
  if (!(await endRunningRun(tx, run.id, { status: 'terminated', ended_at: now, exit_code: EXIT_TERMINATED, termination_reason: reason }))) return false;
  await writeLogs(
    tx,
    ...runLog(
      p,
      `Cron run ${short(run.id)} of ${p.key} terminated: ${why}; exit code ${EXIT_TERMINATED} (${reason})`,
      { run_id: run.id, exit_code: EXIT_TERMINATED, termination_reason: reason },
      'warning',
    ),
  );
  return true;
}

interface StartOptions {
  trigger: ProcessRunsTable['trigger'];
  fireKey: string;
  scheduledFor: string | null;
  /** Simulated run length; null: a real process runs it (local runtime) and its exit ends the run. */
  durationMs: number | null;
}

interface Started {
  outcome: 'started' | 'skipped' | 'duplicate';
  runId?: string;
  /** Runs this start terminated (concurrency policy Replace): their processes are to be killed. */
  replaced: string[];
}

/**
 * Starts a run of a cron (or job) process under its concurrency policy. Idempotent per fire key:
 * a step that runs again after its commit finds the run (or the skip) already recorded.
 */
async function startRun(tx: Tx, app: AppContext, p: ProcessesTable, o: StartOptions): Promise<Started> {
  if (await hasRunWithFireKey(tx, o.fireKey)) return { outcome: 'duplicate', replaced: [] };
  const now = new Date();
  const nowIso = now.toISOString();
  const base = {
    process_id: p.id,
    app_id: p.app_id,
    company_id: p.company_id,
    trigger: o.trigger,
    fire_key: o.fireKey,
    scheduled_for: o.scheduledFor,
    started_at: nowIso,
    created_at: nowIso,
  };
  const running = await runningRuns(tx, p.id);
  const policy = p.type === 'cron' ? (p.concurrency_policy ?? 'Forbid') : 'Forbid';
  if (running.length && policy === 'Forbid') {
    await insertRun(tx, { ...base, id: newId(), status: 'skipped', ended_at: nowIso, exit_code: null, termination_reason: null });
    await writeLogs(
      tx,
      ...runLog(
        p,
        `Cron run of ${p.key} skipped: previous run still running (run ${short(running[0]!.id)}, concurrency policy Forbid)`,
        { previous_run_id: running[0]!.id, trigger: o.trigger },
        'warning',
      ),
    );
    return { outcome: 'skipped', replaced: [] };
  }
  const replaced: string[] = [];
  for (const r of running) if (await terminateRun(tx, p, r, 'replaced', 'replaced by a new run (concurrency policy Replace)')) replaced.push(r.id);

  const runId = newId();
  await insertRun(tx, { ...base, id: runId, status: 'running', ended_at: null, exit_code: null, termination_reason: null });
  const limitMs = maxRunTimeMs(p);
  await writeLogs(
    tx,
    ...runLog(
      p,
      `Cron run ${short(runId)} of ${p.key} started (${o.trigger}${o.scheduledFor ? ` for ${o.scheduledFor}` : ''}): ${p.entrypoint || 'default entrypoint'}`,
      { run_id: runId, trigger: o.trigger, ...(limitMs ? { max_run_time_seconds: p.max_run_time_seconds } : {}) },
    ),
  );
  if (o.durationMs === null) return { outcome: 'started', runId, replaced };
  const deadline = limitMs > 0 && o.durationMs > limitMs;
  const endsIn = deadline ? limitMs : o.durationMs;
  if (endsIn <= 0) await finishRun(tx, app, runId, false);
  else await enqueue(tx, { kind: JOB_FINISH, payload: { runId, deadline }, runAt: new Date(now.getTime() + endsIn), subjectId: p.id });
  return { outcome: 'started', runId, replaced };
}

/** The maximum run time of a cron process in ms (0: none; job processes have none). */
export const maxRunTimeMs = (p: Pick<ProcessesTable, 'type' | 'max_run_time_seconds'>) =>
  p.type === 'cron' && p.max_run_time_seconds ? p.max_run_time_seconds * 1000 : 0;

/**
 * A runtime with real processes: hands a started run to a real process (after the start committed)
 * and kills the processes of the runs the start replaced. The exit of the process ends the run (`endRealRun`).
 */
function handOver(app: AppContext, p: ProcessesTable, s: Started | undefined, deploymentId?: string): void {
  const rt = app.runtimes.applications;
  if (!rt.runsProcesses || !s) return;
  for (const id of s.replaced) rt.killRun(id);
  if (s.outcome === 'started' && s.runId) {
    const runId = s.runId;
    rt.startRun({ runId, process: p, limitMs: maxRunTimeMs(p), deploymentId }, (exit) => endRealRun(app, runId, exit));
  }
}

/** Ends a run from its real process's exit: 0 completed, the time limit deadlineExceeded (137), else failed with the exit code. */
export async function endRealRun(app: AppContext, runId: string, exit: { code: number; timedOut: boolean; note?: string }): Promise<void> {
  await app.database.db.transaction().execute((tx) =>
    closeRun(tx, runId, async (p) => {
      if (exit.timedOut)
        return {
          exit: EXIT_DEADLINE,
          reason: 'deadlineExceeded',
          status: 'terminated',
          detail: `: exceeded the maximum run time of ${p.max_run_time_seconds} s; its process group was killed`,
        };
      if (exit.code === 0) return { exit: 0, reason: 'completed', status: 'completed', detail: '' };
      return { exit: exit.code, reason: 'failed', status: 'failed', detail: exit.note ? `: ${exit.note}` : '' };
    }),
  );
}

/**
 * The local runtime starts: runs recorded as running had their processes killed with the previous
 * Slipway (or never started); they end as terminated (cancelled), each with a runtime log line.
 */
export async function endInterruptedRuns(app: AppContext, before: string): Promise<number> {
  return app.database.db.transaction().execute(async (tx) => {
    const runs = await runningRunsStartedBefore(tx, before);
    let n = 0;
    for (const r of runs) {
      const p = await processById(tx, r.process_id);
      if (p && (await terminateRun(tx, p, r, 'cancelled', 'Slipway restarted while it ran'))) n++;
    }
    return n;
  });
}

/** A job process run by a deployment itself (the local runtime's `beforeDeployment` jobs): records its start; the caller runs it. */
export async function startDeploymentRun(app: AppContext, processId: string, deploymentId: string): Promise<Started> {
  return app.database.db.transaction().execute(async (tx) => {
    const p = await existingProcess(tx, processId);
    return startRun(tx, app, p, { trigger: 'deployment', fireKey: `deployment:${deploymentId}:${p.id}`, scheduledFor: null, durationMs: null });
  });
}

/** Ends a running run: max run time reached (137), a `cron` fault rule (1), or success (0). */
async function finishRun(tx: Tx, app: AppContext, runId: string, deadline: boolean): Promise<void> {
  await closeRun(tx, runId, async (p) => {
    if (deadline)
      return {
        exit: EXIT_DEADLINE,
        reason: 'deadlineExceeded',
        status: 'terminated',
        detail: `: exceeded the maximum run time of ${p.max_run_time_seconds} s and was terminated`,
      };
    const fault = await app.simulation.shouldFail(tx, 'cron', p.id, 'run');
    return fault
      ? { exit: EXIT_FAILED, reason: 'failed', status: 'failed', detail: `: ${fault}` }
      : { exit: 0, reason: 'completed', status: 'completed', detail: '' };
  });
}

interface RunEnd {
  exit: number;
  reason: TerminationReason;
  status: ProcessRunsTable['status'];
  detail: string;
}

/** Ends a run that is still running with the end `decide` gives, and logs it (nothing when it ended meanwhile). */
async function closeRun(tx: Tx, runId: string, decide: (p: ProcessesTable) => Promise<RunEnd>): Promise<void> {
  const run = await lockRun(tx, runId);
  if (!run || run.status !== 'running') return; // replaced or cancelled meanwhile
  const p = await processById(tx, run.process_id);
  if (!p) return;
  const { exit, reason, status, detail } = await decide(p);
  if (!(await endRunningRun(tx, run.id, { status, ended_at: new Date().toISOString(), exit_code: exit, termination_reason: reason }))) return;
  await writeLogs(
    tx,
    ...runLog(
      p,
      `Cron run ${short(run.id)} of ${p.key} exited with code ${exit} (${reason})${detail}`,
      { run_id: run.id, exit_code: exit, termination_reason: reason },
      exit === 0 ? 'info' : 'error',
    ),
  );
}

const appIsLive = (a: ApplicationsTable | undefined) => !!a && a.status === 'deploymentSuccess' && !a.is_suspended;

/**
 * `cron.tick`. Not run in the engine's transaction: the run length (simulation settings) is read
 * first, outside any transaction, so a job never holds one connection while asking the pool for
 * another; the state changes then happen in one transaction of our own, which re-checks that this
 * worker still owns the job (and, on PostgreSQL, locks it against a takeover). A crash between
 * that commit and the engine recording the outcome re-runs the tick: the fire key makes the
 * start a no-op and the tick only reschedules.
 */
async function runTick(app: AppContext, job: Job<typeof JOB_TICK>): Promise<Outcome<typeof JOB_TICK>> {
  const durationMs = await runLength(app);
  let started: { p: ProcessesTable; s: Started } | undefined;
  const outcome = await app.database.db.transaction().execute(async (tx): Promise<Outcome<typeof JOB_TICK>> => {
    if (!(await app.jobs.owns(tx, job.id))) return;
    const p = await lockProcess(tx, job.payload.processId);
    if (!p || p.type !== 'cron' || p.cron_token !== job.payload.token || !p.schedule || !p.time_zone) return; // superseded or gone
    const appRow = await appById(tx, p.app_id);
    if (!appRow || appRow.is_suspended || appRow.status === 'deleting') return; // the chain stops; a rollout re-arms it
    // Only fires while a successful deployment is running; during a redeploy the chain waits.
    if (appIsLive(appRow))
      started = {
        p,
        s: await startRun(tx, app, p, { trigger: 'schedule', fireKey: `${p.id}@${job.payload.fireAt}`, scheduledFor: job.payload.fireAt, durationMs }),
      };
    const next = nextFire(p.schedule, p.time_zone, new Date(Math.max(Date.now(), Date.parse(job.payload.fireAt))));
    if (!next) return;
    return { rescheduleAt: next, payload: { ...job.payload, fireAt: next.toISOString() } };
  });
  if (started) handOver(app, started.p, started.s);
  return outcome;
}

/** A run's length: simulated from the `cron` progression, or null when the runtime runs real processes. */
async function runLength(app: AppContext): Promise<number | null> {
  return app.runtimes.applications.runsProcesses ? null : runDurationMs(await app.simulation.progression('cron'));
}

/** The last attempt of a tick failed: the chain stops; say so in the runtime log (a rollout re-arms it). */
async function tickFailed(tx: Tx, job: Job<typeof JOB_TICK>, error: Error): Promise<void> {
  const p = await processById(tx, job.payload.processId);
  if (!p || p.cron_token !== job.payload.token) return;
  await clearCronToken(tx, p.id, job.payload.token);
  await writeLogs(
    tx,
    ...runLog(
      p,
      `Cron schedule of ${p.key} stopped after repeated errors (${error.message}); redeploy the application to re-arm it`,
      { error: error.message },
      'error',
    ),
  );
}

/** `cron.trigger`: one run outside the schedule (not transactional, for the same reason as ticks). */
async function runTrigger(app: AppContext, job: Job<typeof JOB_TRIGGER>): Promise<void> {
  const durationMs = await runLength(app);
  const started = await app.database.db.transaction().execute(async (tx) => {
    if (!(await app.jobs.owns(tx, job.id))) return;
    const p = await lockProcess(tx, job.payload.processId);
    if (!p || (p.type !== 'cron' && p.type !== 'job')) return;
    const appRow = await appById(tx, p.app_id);
    // Manual runs need the application running; runs started by a deployment (job start
    // policies) happen around it, whatever its outcome, unless the app is suspended or going away.
    const runnable = job.payload.trigger === 'manual' ? appIsLive(appRow) : !!appRow && !appRow.is_suspended && appRow.status !== 'deleting';
    if (!runnable) {
      await writeLogs(tx, ...runLog(p, `Run of ${p.key} not started: the application is not running`, { trigger: job.payload.trigger }, 'warning'));
      return;
    }
    return { p, s: await startRun(tx, app, p, { trigger: job.payload.trigger, fireKey: `job:${job.id}`, scheduledFor: null, durationMs }) };
  });
  if (started) handOver(app, started.p, started.s, job.payload.deploymentId);
}

/** `cron.finish` (in the engine's transaction). */
async function runFinish(tx: Tx, app: AppContext, job: Job<typeof JOB_FINISH>): Promise<void> {
  await finishRun(tx, app, job.payload.runId, job.payload.deadline);
}

/** Registers the cron job kinds with the job engine. */
export function registerCronJobs(app: AppContext): void {
  const tick: JobKind<typeof JOB_TICK> = { transactional: false, run: (_db, job) => runTick(app, job), onFailure: (tx, job, err) => tickFailed(tx, job, err) };
  const trigger: JobKind<typeof JOB_TRIGGER> = { transactional: false, run: (_db, job) => runTrigger(app, job) };
  const finish: JobKind<typeof JOB_FINISH> = { run: (tx, job) => runFinish(tx, app, job) };
  app.jobs.register(JOB_TICK, tick);
  app.jobs.register(JOB_TRIGGER, trigger);
  app.jobs.register(JOB_FINISH, finish);
}
