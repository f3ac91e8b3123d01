// Queries of a database's long operations (operations.ts, real.ts): the operation recorded on the
// database row, its conditional transitions, and the removal of a deleted database's rows.
import type { Tx } from '../../shared/db/index.js';
import type { DatabaseOperation, DatabasesTable, DatabaseStatus } from './storage.js';

/** Records the operation started at `at` (reads and payload reset) and the status it shows meanwhile. */
export async function markOperationStarted(
  tx: Tx,
  id: string,
  operation: DatabaseOperation,
  status: DatabaseStatus,
  payload: string,
  at: string,
): Promise<void> {
  await tx
    .updateTable('databases')
    .set({ status, operation, op_started_at: at, op_reads: 0, op_payload: payload, updated_at: at })
    .where('id', '=', id)
    .execute();
}

/**
 * Ends the operation `d` records with `status` (and `extra` columns), only if it is still the one
 * recorded; returns whether it was.
 */
export async function markOperationFinished(
  tx: Tx,
  d: Pick<DatabasesTable, 'id' | 'operation' | 'op_started_at'>,
  status: DatabaseStatus,
  extra: Partial<DatabasesTable>,
  at: string,
): Promise<boolean> {
  const r = await tx
    .updateTable('databases')
    .set({ ...extra, status, operation: null, op_started_at: null, op_reads: 0, op_payload: null, updated_at: at })
    .where('id', '=', d.id)
    .where('operation', '=', d.operation)
    .where('op_started_at', '=', d.op_started_at)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Clears the deletion started at `startedAt`, only if it is still the one recorded; returns whether it was. */
export async function claimFinishedDeletion(tx: Tx, id: string, startedAt: string | null): Promise<boolean> {
  const r = await tx
    .updateTable('databases')
    .set({ operation: null })
    .where('id', '=', id)
    .where('operation', '=', 'database_delete')
    .where('op_started_at', '=', startedAt)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Deletes a database's row and everything attached to it: its connections (both ways), backups and targets. */
export async function deleteDatabaseRows(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('database_internal_connections').where('database_id', '=', id).execute();
  await tx.deleteFrom('database_internal_connections').where('target_type', '=', 'database').where('target_id', '=', id).execute();
  await tx.deleteFrom('database_backups').where('database_id', '=', id).execute();
  await tx.deleteFrom('database_backup_targets').where('database_id', '=', id).execute();
  await tx.deleteFrom('databases').where('id', '=', id).execute();
}

/** Counts a read of the operation started at `startedAt` (nothing if another one runs now). */
export async function countOperationRead(tx: Tx, id: string, startedAt: string): Promise<void> {
  await tx
    .updateTable('databases')
    .set((eb) => ({ op_reads: eb('op_reads', '+', 1) }))
    .where('id', '=', id)
    .where('op_started_at', '=', startedAt)
    .execute();
}

/** The payloads of the company's running restores. */
export async function listRestorePayloads(tx: Tx, companyId: string) {
  return tx.selectFrom('databases').select('op_payload').where('company_id', '=', companyId).where('operation', '=', 'restore').execute();
}
