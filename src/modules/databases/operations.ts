// The state machine of a database's long operations: creation, restart, password change, restore
// and deletion. Each runs as one durable job ('database.operation') that asks the runtime driver
// to advance the operation's single phase and reschedules itself until the phase is done or
// failed. The operation in progress is recorded on the database row (operation, op_started_at,
// op_reads, op_payload); every transition is a conditional update on that record, so a step that
// runs twice (after a crash, or from a read in `reads` progression) changes nothing the second time.
//
//   creating        --database_create-->  ready | error
//   updating        --restart-->          ready | error
//   passwordChange  --password_change-->  ready | passwordChangeFailed   (password unchanged on failure)
//   restoring       --restore-->          ready (data replaced) | restoringFailed (incl. incompatible dump)
//   deleting        --database_delete-->  (row removed) | dbDeletionFailed
//
// A database served by a real engine (column `runtime`, see runtime/) runs the same state machine
// through the 'database.runtime.operation' job instead (real.ts): the server does the work, no
// simulation progression or fault rule applies.
//
// Also the rules every request on a database starts from: finding it in the company (404
// otherwise), locking it before a change, refusing changes while it is being deleted.
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { enqueue, type JobKind } from '../../shared/jobs.js';
import { forgetService } from '../projects/index.js';
import { countBackupRead, listPendingBackupIds } from './backups-storage.js';
import { claimFinishedDeletion, countOperationRead, deleteDatabaseRows, markOperationFinished, markOperationStarted } from './operations-storage.js';
import { findDatabaseRow, loadDatabase, lockDatabaseId, type DatabaseOperation, type DatabasesTable, type DatabaseStatus } from './storage.js';

export const OPERATION_JOB = 'database.operation';
export const RUNTIME_OPERATION_JOB = 'database.runtime.operation';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Advances the operation `operation` of the database, started at `startedAt` (see the state machine above). */
    'database.operation': { databaseId: string; operation: DatabaseOperation; startedAt: string };
    /** The same for a database served by a real engine (real.ts). */
    'database.runtime.operation': { databaseId: string; operation: DatabaseOperation; startedAt: string };
  }
}

/** The status a database shows while an operation runs, and after it fails. */
const RUNNING_STATUS: Record<DatabaseOperation, DatabaseStatus> = {
  database_create: 'creating',
  restart: 'updating',
  password_change: 'passwordChange',
  restore: 'restoring',
  database_delete: 'deleting',
};
export const FAILED_STATUS: Record<DatabaseOperation, DatabaseStatus> = {
  database_create: 'error',
  restart: 'error',
  password_change: 'passwordChangeFailed',
  restore: 'restoringFailed',
  database_delete: 'dbDeletionFailed',
};

/** Facts an operation needs when it completes. */
export interface OperationPayload {
  /** password_change: the new password, sealed. */
  password_enc?: string;
  /** restore: what the backup holds, and where it came from. */
  backup?: { id: string; database_id: string; data_version: number; engine_major: number; external: boolean };
}

export const engineMajor = (version: string) => Number.parseInt(version, 10) || 0;

/** The database of the company, or 404. Databases being deleted are still found (status `deleting`). */
export async function findDatabase({ tx, companyId }: CallContext, id: string): Promise<DatabasesTable> {
  const d = await findDatabaseRow(tx, companyId, id);
  if (!d) throw notFound('Database');
  return d;
}

/**
 * Serializes the changes of one database for the rest of the transaction (every limit and "one at
 * a time" rule is a check-then-write), then reads its current row: a change waiting for another
 * sees what that one committed. Every change of a database takes it first.
 */
export async function lockDatabase(ctx: CallContext, id: string): Promise<DatabasesTable> {
  await lockDatabaseId(ctx.tx, id);
  return findDatabase(ctx, id);
}

export function assertNotDeleting(d: DatabasesTable) {
  if (d.status === 'deleting') throw badRequest('The database is being deleted');
}

/** Puts the database into an operation's running status and enqueues its job (same transaction). */
export async function startOperation(tx: Tx, d: DatabasesTable, operation: DatabaseOperation, payload: OperationPayload = {}): Promise<void> {
  const now = new Date().toISOString();
  await markOperationStarted(tx, d.id, operation, RUNNING_STATUS[operation], JSON.stringify(payload), now);
  await enqueue(tx, {
    kind: d.runtime ? RUNTIME_OPERATION_JOB : OPERATION_JOB,
    payload: { databaseId: d.id, operation, startedAt: now },
    subjectId: d.id,
    maxAttempts: 20,
  });
}

/** Ends the operation `d` records with `status` (and `extra` columns) unless another one superseded it; returns whether it ended. */
export async function finish(tx: Tx, d: DatabasesTable, status: DatabaseStatus, extra: Partial<DatabasesTable> = {}): Promise<boolean> {
  return markOperationFinished(tx, d, status, extra, new Date().toISOString());
}

/** Removes a database and everything attached to it. */
export async function remove(tx: Tx, app: AppContext, id: string) {
  const d = await loadDatabase(tx, id);
  if (d) await app.events.emit(tx, 'DATABASE_DELETE', d.company_id, d);
  await deleteDatabaseRows(tx, id);
  await forgetService(tx, id);
}

/** A deletion finished: the row goes, unless the deletion was superseded meanwhile. */
export async function removeDeleted(tx: Tx, app: AppContext, d: DatabasesTable): Promise<void> {
  if (await claimFinishedDeletion(tx, d.id, d.op_started_at)) await remove(tx, app, d.id);
}

/** One step of the operation started at `startedAt`; returns when to look again (undefined: finished or superseded). */
export async function step(tx: Tx, app: AppContext, databaseId: string, operation: DatabaseOperation, startedAt: string): Promise<Date | undefined> {
  const d = await loadDatabase(tx, databaseId);
  if (!d || d.operation !== operation || d.op_started_at !== startedAt) return undefined;
  const now = new Date();
  const result = await app.simulated.advance(tx, {
    operation,
    phase: operation,
    phaseIndex: 0,
    phaseCount: 1,
    targetId: d.id,
    startedAt,
    reads: d.op_reads,
    details: { name: d.name, type: d.type, version: d.version },
  });
  if (result.state === 'running') return new Date(now.getTime() + result.checkAfterMs);
  if (result.state === 'failed') {
    await finish(tx, d, FAILED_STATUS[operation]);
    return undefined;
  }
  const payload = JSON.parse(d.op_payload ?? '{}') as OperationPayload;
  switch (operation) {
    case 'database_delete':
      await removeDeleted(tx, app, d);
      return undefined;
    case 'password_change':
      // A password change is a write: the data version moves on.
      await finish(tx, d, 'ready', payload.password_enc ? { password_enc: payload.password_enc, data_version: d.data_version + 1 } : {});
      return undefined;
    case 'restore': {
      const b = payload.backup;
      // The replay of a dump taken on a newer major version than the destination runs fails.
      if (!b || b.engine_major > engineMajor(d.version)) await finish(tx, d, 'restoringFailed');
      else await finish(tx, d, 'ready', { data_version: b.data_version });
      return undefined;
    }
    default:
      // Creation and restart: data untouched.
      await finish(tx, d, 'ready');
      return undefined;
  }
}

export const operationJob = (app: AppContext): JobKind<'database.operation'> => ({
  async run(tx, job) {
    const at = await step(tx, app, job.payload.databaseId, job.payload.operation, job.payload.startedAt);
    return at ? { rescheduleAt: at } : undefined;
  },
  async onFailure(tx, job) {
    const d = await loadDatabase(tx, job.payload.databaseId);
    if (d && d.operation === job.payload.operation && d.op_started_at === job.payload.startedAt) await finish(tx, d, FAILED_STATUS[job.payload.operation]);
  },
});

/**
 * Counts a client's read of a database. In `reads` progression the read that completes the
 * phase of the running operation (or backup) advances it before answering, so polling loops see
 * deterministic transitions. Resolves to whether it counted (then the database is read again).
 */
export async function noteRead(
  app: AppContext,
  d: DatabasesTable,
  stepBackup: (tx: Tx, databaseId: string, backupId: string) => Promise<Date | undefined>,
): Promise<boolean> {
  const db = app.database.db;
  if (d.runtime) return false; // real engines: the server decides when an operation ends
  let counted = false;
  if (d.operation && d.op_started_at && (await app.simulation.progression(d.operation)).mode === 'reads') {
    const { operation, op_started_at } = d;
    await db.transaction().execute(async (tx) => {
      await countOperationRead(tx, d.id, op_started_at);
      await step(tx, app, d.id, operation, op_started_at);
    });
    counted = true;
  }
  if (d.backup_status === 'inProgress' && (await app.simulation.progression('backup')).mode === 'reads') {
    const pending = await listPendingBackupIds(db, d.id);
    if (!pending.length) return counted;
    await db.transaction().execute(async (tx) => {
      for (const b of pending) {
        await countBackupRead(tx, d.id, b.id);
        await stepBackup(tx, d.id, b.id);
      }
    });
    counted = true;
  }
  return counted;
}
