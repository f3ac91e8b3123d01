// The phase machine shared by the kinds of deployment (applications, static sites). Each module
// keeps its own table and rules (queues, lanes, superseding, signals, status of the owner); the
// machinery here is the same for all: a row is `waiting`, then `inProgress` through the phases
// listed in its `steps`, then final. One durable job per row runs one step per execution on the
// runtime driver and reschedules itself; in `reads` progression a client's read can run the step.
// Every transition is a conditional update on the state it expects, so a step that runs twice
// (after a crash, or from a read) changes nothing the second time.
import type { CompiledQuery, Kysely } from 'kysely';
import { systemCall, type AppContext, type CallContext } from '../context.js';
import { together, type Tx } from '../db/index.js';
import { first, reusableBy } from '../db/reusable.js';
import { badRequest, notFound } from '../errors.js';
import { cancelJobs, type JobKind, type JobMap, type JobName } from '../jobs.js';
import type { PhaseRequest, PhaseResult } from './driver.js';
import { queryLogs, writeLogs, type LogLine, type LogQuery } from './logs.js';

/** The tables of phased operations (one per module; they are never merged). */
export type PhasedTable = 'deployments' | 'static_site_deployments';
/** The column naming a row's owner (an application or a static site). */
export type OwnerColumn = 'app_id' | 'static_site_id';
/** The owners' tables. */
export type OwnerTable = 'applications' | 'static_sites';
/** Job kinds that drive one phased row. */
export type PhaseJobName = { [K in JobName]: JobMap[K] extends { deploymentId: string } ? K : never }[JobName];
export type FinalStatus = 'success' | 'failed' | 'cancelled' | 'skipped';

/** What the machinery reads of a row. */
export interface PhasedRow {
  id: string;
  company_id: string;
  status: string;
  /** JSON list of the phases. */
  steps: string;
  phase: string | null;
  phase_started_at: string | null;
  reads: number;
  created_at: string;
}

/**
 * What runs the phases of a module's rows: the module's runtime driver (simulated, local, ...),
 * chosen at start. A step reads `phaseReads` with its own reads in one round trip and hands their
 * rows to `advance`.
 */
export interface PhaseRuntime<R, O> {
  phaseReads(tx: Tx): CompiledQuery[];
  advance(ctx: CallContext, row: R, owner: O, req: PhaseRequest, read: unknown[][]): Promise<PhaseResult>;
}

/** Phases decided by the simulated runtime's progression and fault rules (the simulated drivers' phases). */
export const simulatedPhases = <R, O>(app: AppContext): PhaseRuntime<R, O> => ({
  phaseReads: (tx) => app.simulated.phaseReads(tx),
  advance: (ctx, _row, _owner, req, read) => app.simulated.advance(ctx.tx, req, read),
});

/** How one module's table runs: where its rows are, and the module's own rules as hooks. */
export interface PhaseMachine<R extends PhasedRow, O, K extends PhaseJobName = PhaseJobName> {
  table: PhasedTable;
  ownerColumn: OwnerColumn;
  /** The job kind that drives a row. */
  kind: K;
  /** The simulated runtime's operation name (progression and fault rules). */
  operation: string;
  final: ReadonlySet<string>;
  /** The owners' table: a step reads a row's owner (none: nothing more to do) with the row, in one round trip. */
  ownerTable: OwnerTable;
  /** A waiting row: starts it (see `beginPhases`) when its turn has come, else when to look again. */
  start(ctx: CallContext, d: R, owner: O): Promise<Date | undefined>;
  /** What the runtime is told of the current phase (`phase`): the target (fault rules) and facts for its lines. */
  request(ctx: CallContext, d: R, owner: O, phase: string): Promise<{ targetId: string; details: Record<string, unknown> }>;
  /** The driver that advances the phases (the module's slot of `app.runtimes`). */
  runtime(app: AppContext): PhaseRuntime<R, O>;
  /** Lines added at the end of a completed phase (e.g. the environment the phase used). */
  phaseLines?(ctx: CallContext, d: R, owner: O, phase: string): Promise<LogLine[]>;
  /** Moves an active row to a final status (see `endPhases`); true when this call moved it. */
  finish(ctx: CallContext, d: R, status: FinalStatus, lines: LogLine[], reason?: string): Promise<boolean>;
  /** After this step ended the row as failed, or as a success. */
  failed?(ctx: CallContext, d: R, owner: O): Promise<void>;
  succeeded?(ctx: CallContext, d: R, owner: O): Promise<void>;
}

/** The columns the phased tables share (the owner column is the machine's own). */
type Columns = {
  id: string;
  company_id: string;
  status: string;
  steps: string;
  phase: string | null;
  phase_started_at: string | null;
  reads: number;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
} & Record<OwnerColumn, string>;

/** The transaction seen through the shared columns, so one query serves every phased table. */
const shared = (tx: Tx) => tx as unknown as Kysely<Record<PhasedTable, Columns>>;

const ownerOf = <R extends PhasedRow>(m: PhaseMachine<R, unknown, PhaseJobName>, d: R) => (d as unknown as Columns)[m.ownerColumn];

/** Writes build log lines of a row (under its owner). */
export function logPhased<R extends PhasedRow>(tx: Tx, m: PhaseMachine<R, unknown, PhaseJobName>, d: R, lines: LogLine[]): Promise<void> {
  return writeLogs(tx, { companyId: d.company_id, appId: ownerOf(m, d), kind: 'build', deploymentId: d.id }, lines);
}

// The machines' statements, one shape per table (and owner column, or extra columns set).
const byId = reusableBy((db, [table]: [PhasedTable], p: { id: string }) => shared(db).selectFrom(table).selectAll().where('id', '=', p.id));
/** The owner of the row with id `id`, by the row's owner column in a subquery (so it is read with the row, see stepPhases). */
const ownerOfRow = reusableBy((db, [table, ownerColumn, ownerTable]: [PhasedTable, OwnerColumn, OwnerTable], p: { id: string }) =>
  (db as unknown as Kysely<Record<OwnerTable, { id: string }>>)
    .selectFrom(ownerTable)
    .selectAll()
    .where('id', '=', shared(db).selectFrom(table).select(ownerColumn).where('id', '=', p.id)),
);
const ownersById = reusableBy((db, [table, ownerColumn]: [PhasedTable, OwnerColumn], p: { id: string; ownerId: string }) =>
  shared(db).selectFrom(table).selectAll().where('id', '=', p.id).where(ownerColumn, '=', p.ownerId),
);
const begin = reusableBy((db, [table]: [PhasedTable], p: { id: string; phase: string; at: string }) =>
  shared(db)
    .updateTable(table)
    .set({ status: 'inProgress', phase: p.phase, phase_started_at: p.at, reads: 0, started_at: p.at, updated_at: p.at })
    .where('id', '=', p.id)
    .where('status', '=', 'waiting'),
);
/** Keyed by the table and the extra columns it sets (a machine sets the same ones each time). */
const end = reusableBy((db, [table, ...extra]: [PhasedTable, ...string[]], p: Record<string, string | null>) =>
  shared(db)
    .updateTable(table)
    .set({ ...Object.fromEntries(extra.map((c) => [c, p[c]])), status: p.status!, finished_at: p.now!, updated_at: p.now!, phase: null })
    .where('id', '=', p.id!)
    .where('status', '=', p.was!),
);
const advanceTo = reusableBy((db, [table]: [PhasedTable], p: { id: string; phase: string; next: string; now: string }) =>
  shared(db)
    .updateTable(table)
    .set({ phase: p.next, phase_started_at: p.now, reads: 0, updated_at: p.now })
    .where('id', '=', p.id)
    .where('status', '=', 'inProgress')
    .where('phase', '=', p.phase),
);

/** A row by id (any owner), or undefined. */
async function rowById<R extends PhasedRow>(tx: Tx, m: PhaseMachine<R, unknown, PhaseJobName>, id: string): Promise<R | undefined> {
  return (await first(tx, byId(tx, [m.table], { id }))) as R | undefined;
}

/** A row of the owner, or 404. */
export async function findPhased<R extends PhasedRow>(tx: Tx, m: PhaseMachine<R, unknown, PhaseJobName>, ownerId: string, id: string): Promise<R> {
  const d = await first(tx, ownersById(tx, [m.table, m.ownerColumn], { id, ownerId }));
  if (!d) throw notFound('Deployment');
  return d as unknown as R;
}

/**
 * GET of one of the owner's rows (404 when it is not the owner's). `note` is the module's read
 * counter: in `reads` progression the read counts (and may advance the row) before the answer,
 * which is then read again; a read that did not count answers with the row as first read.
 */
export async function readPhased<R extends PhasedRow>(
  ctx: CallContext,
  m: PhaseMachine<R, unknown, PhaseJobName>,
  ownerId: string,
  id: string,
  note: (app: AppContext, ownerId: string, row: R) => Promise<boolean>,
): Promise<R> {
  const row = await findPhased(ctx.tx, m, ownerId, id);
  return (await note(ctx.app, ownerId, row)) ? findPhased(ctx.tx, m, ownerId, id) : row;
}

/** The build log of one of the owner's rows (404 when it is not the owner's); `service` names the owner. */
export async function phasedLogs<R extends PhasedRow>(
  ctx: CallContext,
  m: PhaseMachine<R, unknown, PhaseJobName>,
  ownerId: string,
  id: string,
  service: string,
  query: Omit<LogQuery, 'appId' | 'kind' | 'deploymentId'>,
) {
  await findPhased(ctx.tx, m, ownerId, id);
  return queryLogs(ctx.tx, { appId: ownerId, kind: 'build', deploymentId: id, ...query }, service);
}

/** How long a waiting row waits before it looks again; the end of the row ahead wakes it sooner. */
export const WAIT_RECHECK_MS = 2000;

/** Starts a waiting row at its first phase (conditional on `waiting`) and logs `lines`; false when it was not waiting. */
export async function beginPhases<R extends PhasedRow>(tx: Tx, m: PhaseMachine<R, unknown, PhaseJobName>, d: R, at: Date, lines: LogLine[]): Promise<boolean> {
  const steps = JSON.parse(d.steps) as string[];
  const ts = at.toISOString();
  const r = await tx.executeQuery(begin(tx, [m.table], { id: d.id, phase: steps[0]!, at: ts }));
  if (!Number(r.numAffectedRows)) return false;
  await logPhased(tx, m, d, lines);
  return true;
}

/**
 * Ends an active row (conditional on the status it was read with): sets the final status (and
 * `extra` columns of the module's table), stops its job and logs `lines` with the closing line.
 * False when the row had moved meanwhile; the caller then does nothing more.
 */
export async function endPhases<R extends PhasedRow>(
  tx: Tx,
  m: PhaseMachine<R, unknown, PhaseJobName>,
  d: R,
  status: FinalStatus,
  lines: LogLine[],
  extra: Record<string, string | null> = {},
): Promise<boolean> {
  const now = new Date().toISOString();
  const r = await tx.executeQuery(end(tx, [m.table, ...Object.keys(extra)], { ...extra, id: d.id, status, now, was: d.status }));
  if (!Number(r.numAffectedRows)) return false;
  await cancelJobs(tx, d.id, m.kind);
  await logPhased(tx, m, d, [
    ...lines,
    { message: `Deployment ${status}`, severity: status === 'success' || status === 'skipped' ? 'info' : status === 'failed' ? 'error' : 'warning' },
  ]);
  return true;
}

/** The lines of a phase's environment: its problems, then how many variables it has. */
export function environmentLines(env: { problems: string[]; vars: Record<string, unknown> }, label: 'Build' | 'Runtime', phase: string): LogLine[] {
  return [
    ...env.problems.map((p): LogLine => ({ message: `Environment: ${p}`, severity: 'warning', attributes: { phase } })),
    { message: `${label} environment: ${Object.keys(env.vars).length} variables`, attributes: { phase } },
  ];
}

/**
 * One step of a row. Returns when to look again (undefined: nothing more to do). Called by the
 * job and, in `reads` progression, by the read that completes a phase.
 */
export async function stepPhases<R extends PhasedRow, O>(app: AppContext, tx: Tx, m: PhaseMachine<R, O, PhaseJobName>, id: string): Promise<Date | undefined> {
  // The row, its owner and what the runtime reads to judge a phase, in one round trip.
  const runtime = m.runtime(app);
  const [rows, owners, ...runtimeRead] = await together(tx, [
    byId(tx, [m.table], { id }),
    ownerOfRow(tx, [m.table, m.ownerColumn, m.ownerTable], { id }),
    ...runtime.phaseReads(tx),
  ]);
  const d = rows![0] as R | undefined;
  if (!d || m.final.has(d.status)) return undefined;
  const owner = owners![0] as O | undefined;
  if (!owner) return undefined;
  const ctx = systemCall(app, tx, d.company_id);
  if (d.status === 'waiting') return m.start(ctx, d, owner);
  const now = new Date();
  const steps = JSON.parse(d.steps) as string[];
  const phase = d.phase ?? steps[0]!;
  const index = Math.max(0, steps.indexOf(phase));
  const { targetId, details } = await m.request(ctx, d, owner, phase);
  const req: PhaseRequest = {
    operation: m.operation,
    phase,
    phaseIndex: index,
    phaseCount: steps.length,
    targetId,
    startedAt: d.phase_started_at ?? d.created_at,
    reads: d.reads,
    details,
  };
  const result = await runtime.advance(ctx, d, owner, req, runtimeRead as unknown[][]);
  if (result.state === 'running') return new Date(now.getTime() + result.checkAfterMs);
  const lines: LogLine[] = result.lines.map((l) => ({ ...l, attributes: { phase } }));
  if (result.state === 'failed') {
    if (await m.finish(ctx, d, 'failed', lines, result.reason)) await m.failed?.(ctx, d, owner);
    return undefined;
  }
  if (result.state === 'skipped') {
    await m.finish(ctx, d, 'skipped', lines);
    return undefined;
  }
  if (m.phaseLines) lines.push(...(await m.phaseLines(ctx, d, owner, phase)));
  const next = steps[index + 1];
  if (!next) {
    if (await m.finish(ctx, d, 'success', lines)) await m.succeeded?.(ctx, d, owner);
    return undefined;
  }
  const r = await tx.executeQuery(advanceTo(tx, [m.table], { id: d.id, phase, next, now: now.toISOString() }));
  if (!Number(r.numAffectedRows)) return undefined;
  await logPhased(tx, m, d, lines);
  return now;
}

/** The job kind of a machine: steps until the row is final; a job that fails for good fails its row. */
export function phaseJob<R extends PhasedRow, O, K extends PhaseJobName>(app: AppContext, m: PhaseMachine<R, O, K>): JobKind<K> {
  const id = (payload: JobMap[K]) => (payload as { deploymentId: string }).deploymentId;
  return {
    async run(tx, job) {
      const at = await stepPhases(app, tx, m, id(job.payload));
      return at ? { rescheduleAt: at } : undefined;
    },
    async onFailure(tx, job, error) {
      const d = await rowById(tx, m, id(job.payload));
      if (d && !m.final.has(d.status))
        await m.finish(systemCall(app, tx, d.company_id), d, 'failed', [{ message: `Internal error: ${error.message}`, severity: 'error' }], 'Internal error');
    },
  };
}

/**
 * Counts a client's read of an in-progress row (`d`, read by the module). In `reads` progression
 * the read that completes a phase advances the row before answering, so polling loops see
 * deterministic transitions. `lock` takes the module's lock on the row's queue first. Resolves to
 * whether the read counted (the row, and what follows it, may have changed: read them again).
 */
export async function countRead<R extends PhasedRow, O, D extends { id: string; status: string }>(
  app: AppContext,
  m: PhaseMachine<R, O, PhaseJobName>,
  d: D | undefined,
  lock: (tx: Tx, d: D) => Promise<void>,
): Promise<boolean> {
  if (!d || d.status !== 'inProgress') return false;
  const p = await app.simulation.progression(m.operation);
  if (p.mode !== 'reads') return false;
  await app.database.db.transaction().execute(async (tx) => {
    await lock(tx, d);
    await shared(tx)
      .updateTable(m.table)
      .set((eb) => ({ reads: eb('reads', '+', 1) }))
      .where('id', '=', d.id)
      .execute();
    let at = await stepPhases(app, tx, m, d.id);
    // Follow-up steps that need no reads (e.g. the start of the next phase) happen at once.
    for (let i = 0; at && at.getTime() <= Date.now() && i < 3; i++) at = await stepPhases(app, tx, m, d.id);
  });
  return true;
}

/** Cancels an active row on request (400 when it is, or has just become, final). */
export async function cancelOnRequest<R extends PhasedRow>(ctx: CallContext, m: PhaseMachine<R, unknown, PhaseJobName>, d: R, reason: string) {
  if (m.final.has(d.status)) throw badRequest(`The deployment is already ${d.status} and cannot be cancelled`);
  if (!(await m.finish(ctx, d, 'cancelled', [{ message: reason, severity: 'warning' }])))
    throw badRequest('The deployment finished before it could be cancelled');
  return { message: 'Deployment cancelled' };
}

/**
 * One step of the one-phase teardown of a service being deleted (`operation`: its progression and
 * fault rules on the runtime). Running: when to look again. Failed: `failed` marks the service,
 * then the reason goes to its runtime log. Done: `remove` deletes the service and what it owns.
 */
export async function teardownStep(
  app: AppContext,
  tx: Tx,
  service: { id: string; company_id: string },
  operation: string,
  startedAt: string,
  hooks: { failed(): Promise<void>; remove(): Promise<void> },
): Promise<{ rescheduleAt: Date } | undefined> {
  const r = await app.simulated.advance(tx, { operation, phase: 'teardown', phaseIndex: 0, phaseCount: 1, targetId: service.id, startedAt, reads: 0 });
  if (r.state === 'running') return { rescheduleAt: new Date(Date.now() + r.checkAfterMs) };
  if (r.state === 'failed') {
    await hooks.failed();
    await writeLogs(tx, { companyId: service.company_id, appId: service.id, kind: 'runtime' }, [
      { message: `Deletion failed: ${r.reason}`, severity: 'error' },
    ]);
    return undefined;
  }
  await hooks.remove();
  return undefined;
}
