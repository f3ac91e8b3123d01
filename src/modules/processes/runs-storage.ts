// Queries on the runs of cron and job processes (`process_runs`, whose table is declared in
// storage.ts): starts, ends, the running ones, and the spans and exit codes the metrics read.
import type { Tx } from '../../shared/db/index.js';
import { isPostgres } from '../../shared/db/dialect.js';
import type { ProcessRunsTable } from './storage.js';

/** Whether a run was already recorded for the fire key. */
export async function hasRunWithFireKey(tx: Tx, fireKey: string): Promise<boolean> {
  return !!(await tx.selectFrom('process_runs').select('id').where('fire_key', '=', fireKey).executeTakeFirst());
}

/** The running runs of a process. */
export async function runningRuns(tx: Tx, processId: string): Promise<ProcessRunsTable[]> {
  return tx.selectFrom('process_runs').selectAll().where('process_id', '=', processId).where('status', '=', 'running').execute();
}

/** The runs recorded as running that started before `before`. */
export async function runningRunsStartedBefore(tx: Tx, before: string): Promise<ProcessRunsTable[]> {
  return tx.selectFrom('process_runs').selectAll().where('status', '=', 'running').where('started_at', '<', before).execute();
}

/** A run, locked for the rest of the transaction on PostgreSQL (SQLite has one writer anyway), or undefined. */
export async function lockRun(tx: Tx, runId: string): Promise<ProcessRunsTable | undefined> {
  const q = tx.selectFrom('process_runs').selectAll().where('id', '=', runId);
  return (isPostgres(tx) ? q.forUpdate() : q).executeTakeFirst();
}

export async function insertRun(tx: Tx, row: ProcessRunsTable): Promise<void> {
  await tx.insertInto('process_runs').values(row).execute();
}

/** Ends a run that is still running; false when it ended meanwhile. */
export async function endRunningRun(
  tx: Tx,
  runId: string,
  end: Pick<ProcessRunsTable, 'status' | 'ended_at' | 'exit_code' | 'termination_reason'>,
): Promise<boolean> {
  const r = await tx
    .updateTable('process_runs')
    .set({ status: end.status, ended_at: end.ended_at, exit_code: end.exit_code, termination_reason: end.termination_reason })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return !!Number(r.numUpdatedRows);
}

/** The start and end of a process's runs (not skipped) that overlap [from, to]. */
export async function runSpans(tx: Tx, processId: string, from: string, to: string): Promise<Pick<ProcessRunsTable, 'started_at' | 'ended_at'>[]> {
  return tx
    .selectFrom('process_runs')
    .select(['started_at', 'ended_at'])
    .where('process_id', '=', processId)
    .where('status', '!=', 'skipped')
    .where('started_at', '<=', to)
    .where((eb) => eb.or([eb('ended_at', 'is', null), eb('ended_at', '>=', from)]))
    .execute();
}

/** The ends of a process's runs with an exit code in [from, to], oldest first (at most 10,000). */
export async function runExits(
  tx: Tx,
  processId: string,
  from: string,
  to: string,
): Promise<Pick<ProcessRunsTable, 'ended_at' | 'exit_code' | 'termination_reason'>[]> {
  return tx
    .selectFrom('process_runs')
    .select(['ended_at', 'exit_code', 'termination_reason'])
    .where('process_id', '=', processId)
    .where('exit_code', 'is not', null)
    .where('ended_at', '>=', from)
    .where('ended_at', '<=', to)
    .orderBy('ended_at')
    .orderBy('id')
    .limit(10_000)
    .execute();
}
