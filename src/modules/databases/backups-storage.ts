// Queries on backups (internal snapshots and external dumps) and backup targets: taking and
// completing backups, their lists and limits, restores' look-ups, the retention sweep, and the
// lock that serializes a restore's start with the sweep's removal of the same backup.
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import type { DatabaseBackupsTable, DatabaseBackupTargetsTable } from './storage.js';

// ---- Backups ----------------------------------------------------------------------------------

/** A backup of the database by id, whatever its status, or undefined. */
export async function loadBackup(tx: Tx, databaseId: string, backupId: string): Promise<DatabaseBackupsTable | undefined> {
  return tx.selectFrom('database_backups').selectAll().where('database_id', '=', databaseId).where('id', '=', backupId).executeTakeFirst();
}

/** Whether the database has a backup with this id. */
export async function backupIdTaken(tx: Tx, databaseId: string, id: string): Promise<boolean> {
  return !!(await tx.selectFrom('database_backups').select('id').where('database_id', '=', databaseId).where('id', '=', id).executeTakeFirst());
}

/** An internal or external backup of the database that did not fail, or undefined. */
export async function findBackup(tx: Tx, databaseId: string, id: string, external: boolean): Promise<DatabaseBackupsTable | undefined> {
  return tx
    .selectFrom('database_backups')
    .selectAll()
    .where('database_id', '=', databaseId)
    .where('id', '=', id)
    .where('external', '=', external ? 1 : 0)
    .where('status', '!=', 'failed')
    .executeTakeFirst();
}

export async function insertBackup(tx: Tx, row: DatabaseBackupsTable): Promise<void> {
  await tx.insertInto('database_backups').values(row).execute();
}

/** Sets the database's backup status to inProgress. */
export async function markBackupInProgress(tx: Tx, databaseId: string, at: string): Promise<void> {
  await tx.updateTable('databases').set({ backup_status: 'inProgress', updated_at: at }).where('id', '=', databaseId).execute();
}

/** Sets the database's backup status back to ready. */
export async function markBackupStatusReady(tx: Tx, databaseId: string): Promise<void> {
  await tx.updateTable('databases').set({ backup_status: 'ready' }).where('id', '=', databaseId).execute();
}

/** Whether a backup of the database is pending. */
export async function hasPendingBackup(tx: Tx, databaseId: string): Promise<boolean> {
  return !!(await tx.selectFrom('database_backups').select('id').where('database_id', '=', databaseId).where('status', '=', 'pending').executeTakeFirst());
}

/** The ids of the database's pending backups. */
export async function listPendingBackupIds(tx: Tx, databaseId: string) {
  return tx.selectFrom('database_backups').select('id').where('database_id', '=', databaseId).where('status', '=', 'pending').execute();
}

/** Records a pending backup's outcome (status and size); returns whether it was still pending. */
export async function completeBackup(tx: Tx, databaseId: string, backupId: string, status: 'ready' | 'failed', size: number | null): Promise<boolean> {
  const r = await tx
    .updateTable('database_backups')
    .set({ status, size })
    .where('database_id', '=', databaseId)
    .where('id', '=', backupId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** A pending backup fails (its size untouched). */
export async function failPendingBackup(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await tx
    .updateTable('database_backups')
    .set({ status: 'failed' })
    .where('database_id', '=', databaseId)
    .where('id', '=', backupId)
    .where('status', '=', 'pending')
    .execute();
}

/** Every pending backup of the database fails. */
export async function failPendingBackups(tx: Tx, databaseId: string): Promise<void> {
  await tx.updateTable('database_backups').set({ status: 'failed' }).where('database_id', '=', databaseId).where('status', '=', 'pending').execute();
}

/** Counts a read of a backup being taken. */
export async function countBackupRead(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await tx
    .updateTable('database_backups')
    .set((eb) => ({ reads: eb('reads', '+', 1) }))
    .where('database_id', '=', databaseId)
    .where('id', '=', backupId)
    .execute();
}

/** The database's internal backups that did not fail (of one type when given), newest first. */
export async function listInternalBackups(tx: Tx, databaseId: string, type?: 'daily' | 'manual'): Promise<DatabaseBackupsTable[]> {
  let q = tx.selectFrom('database_backups').selectAll().where('database_id', '=', databaseId).where('external', '=', 0).where('status', '!=', 'failed');
  if (type) q = q.where('type', '=', type);
  return q.orderBy('created_at', 'desc').orderBy('id').execute();
}

/** How many manual internal backups of the database did not fail. */
export async function countManualBackups(tx: Tx, databaseId: string): Promise<number> {
  const count = await tx
    .selectFrom('database_backups')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('database_id', '=', databaseId)
    .where('external', '=', 0)
    .where('type', '=', 'manual')
    .where('status', '!=', 'failed')
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

/** The database's external backups that are ready, newest first. */
export async function listReadyExternalBackups(tx: Tx, databaseId: string): Promise<DatabaseBackupsTable[]> {
  return tx
    .selectFrom('database_backups')
    .selectAll()
    .where('database_id', '=', databaseId)
    .where('external', '=', 1)
    .where('status', '=', 'ready')
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
}

/** How many manual backups written to the target did not fail. */
export async function countManualBackupsOnTarget(tx: Tx, targetId: string): Promise<number> {
  const count = await tx
    .selectFrom('database_backups')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('target_id', '=', targetId)
    .where('type', '=', 'manual')
    .where('status', '!=', 'failed')
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

export async function deleteBackupRow(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await tx.deleteFrom('database_backups').where('database_id', '=', databaseId).where('id', '=', backupId).execute();
}

/**
 * Serializes a restore's start with the retention sweep's removal of the same backup (schedule.ts).
 * Taken after the destination database's lock, before the backup is read.
 */
export const lockBackupId = (tx: Tx, databaseId: string, backupId: string) => lockFor(tx, `database-backup:${databaseId}:${backupId}`);

// ---- Retention ----------------------------------------------------------------------------------

/** Up to `limit` backups expired before `now` and not pending, soonest expired first, with their database's runtime record. */
export async function listExpiredBackups(tx: Tx, now: string, limit: number) {
  return tx
    .selectFrom('database_backups')
    .innerJoin('databases', 'databases.id', 'database_backups.database_id')
    .select([
      'database_backups.id',
      'database_backups.database_id',
      'database_backups.company_id',
      'database_backups.status',
      'database_backups.external',
      'database_backups.target_id',
      'databases.runtime',
    ])
    .where('database_backups.expires_at', '<', now)
    .where('database_backups.status', '!=', 'pending')
    .orderBy('database_backups.expires_at')
    .limit(limit)
    .execute();
}

/** A backup's status and expiry, or undefined. */
export async function findBackupExpiry(tx: Tx, databaseId: string, backupId: string) {
  return tx.selectFrom('database_backups').select(['status', 'expires_at']).where('database_id', '=', databaseId).where('id', '=', backupId).executeTakeFirst();
}

/** Marks a backup failed: no longer listed or restorable. */
export async function hideBackup(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await tx.updateTable('database_backups').set({ status: 'failed' }).where('database_id', '=', databaseId).where('id', '=', backupId).execute();
}

/** Deletes a backup's row if it is failed. */
export async function deleteFailedBackup(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await tx.deleteFrom('database_backups').where('database_id', '=', databaseId).where('id', '=', backupId).where('status', '=', 'failed').execute();
}

/** The writers of the retention chain's job take turns (for the rest of the transaction). */
export const lockRetentionChain = (tx: Tx, subject: string) => lockFor(tx, subject);

// ---- Backup targets -------------------------------------------------------------------------------

/** The database's backup targets, oldest first. */
export async function listTargetRows(tx: Tx, databaseId: string): Promise<DatabaseBackupTargetsTable[]> {
  return tx.selectFrom('database_backup_targets').selectAll().where('database_id', '=', databaseId).orderBy('created_at').orderBy('id').execute();
}

/** The ids of the database's backup targets, oldest first. */
export async function listTargetIds(tx: Tx, databaseId: string) {
  return tx.selectFrom('database_backup_targets').select('id').where('database_id', '=', databaseId).orderBy('created_at').orderBy('id').execute();
}

/** The database's target `targetId` (its oldest one when not given), or undefined. */
export async function firstTarget(tx: Tx, databaseId: string, targetId: string | undefined) {
  let q = tx.selectFrom('database_backup_targets').select('id').where('database_id', '=', databaseId);
  if (targetId) q = q.where('id', '=', targetId);
  return q.orderBy('created_at').orderBy('id').executeTakeFirst();
}

/** The database's target `targetId` (its id), or undefined. */
export async function findTarget(tx: Tx, databaseId: string, targetId: string) {
  return tx.selectFrom('database_backup_targets').select('id').where('id', '=', targetId).where('database_id', '=', databaseId).executeTakeFirst();
}

/** How many backup targets the database has. */
export async function countTargets(tx: Tx, databaseId: string): Promise<number> {
  const count = await tx
    .selectFrom('database_backup_targets')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('database_id', '=', databaseId)
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

export async function insertTarget(tx: Tx, row: DatabaseBackupTargetsTable): Promise<void> {
  await tx.insertInto('database_backup_targets').values(row).execute();
}

/** Whether a backup is being written to the target. */
export async function hasPendingBackupOnTarget(tx: Tx, targetId: string): Promise<boolean> {
  return !!(await tx.selectFrom('database_backups').select('id').where('target_id', '=', targetId).where('status', '=', 'pending').executeTakeFirst());
}

/** Deletes the target and the database's backups written to it. */
export async function deleteTargetRows(tx: Tx, databaseId: string, targetId: string): Promise<void> {
  await tx.deleteFrom('database_backups').where('database_id', '=', databaseId).where('target_id', '=', targetId).execute();
  await tx.deleteFrom('database_backup_targets').where('id', '=', targetId).execute();
}

/** The platform bucket (object storage id) of a backup target, or undefined when it has none or is gone. */
export async function findTargetBucket(tx: Tx, targetId: string): Promise<string | null | undefined> {
  const t = await tx.selectFrom('database_backup_targets').select('object_storage_id').where('id', '=', targetId).executeTakeFirst();
  return t?.object_storage_id;
}
