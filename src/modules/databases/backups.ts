// Backups of databases: internal snapshots (`/backups`), external dumps written to backup target
// buckets (`/external-backups`, `/backup-targets`) and restores from either. Taking a backup sets
// the database's backup status to inProgress until the durable 'database.backup' job finishes; a
// backup records the data version and engine major of its source, and a restore (an operation of
// the destination database, see operations.ts) replaces the destination's data with them.
import { randomBytes } from 'node:crypto';
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { ApiError, badRequest, notFound } from '../../shared/errors.js';
import { newId, slugify } from '../../shared/ids.js';
import { enqueue, type JobKind } from '../../shared/jobs.js';
import {
  backupIdTaken,
  completeBackup,
  countManualBackups,
  countManualBackupsOnTarget,
  countTargets,
  deleteBackupRow,
  deleteTargetRows,
  failPendingBackup,
  findBackup,
  findTarget,
  firstTarget,
  hasPendingBackup,
  hasPendingBackupOnTarget,
  insertBackup,
  insertTarget,
  listInternalBackups,
  listReadyExternalBackups,
  listTargetIds,
  listTargetRows,
  loadBackup,
  lockBackupId,
  markBackupInProgress,
  markBackupStatusReady,
} from './backups-storage.js';
import { listRestorePayloads } from './operations-storage.js';
import { assertNotDeleting, engineMajor, findDatabase, lockDatabase, startOperation, type OperationPayload } from './operations.js';
import { runtimes } from './runtime/index.js';
import { findDatabaseRow, lockDatabaseId, type DatabaseBackupsTable, type DatabasesTable, type DatabaseType } from './storage.js';

export const BACKUP_JOB = 'database.backup';
export const RUNTIME_BACKUP_JOB = 'database.runtime.backup';
export const RUNTIME_REMOVE_JOB = 'database.runtime.remove-dump';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Advances the pending backup `backupId` of the database. */
    'database.backup': { databaseId: string; backupId: string };
    /** Takes the pending backup `backupId` of a database served by a real engine (real.ts). */
    'database.runtime.backup': { databaseId: string; backupId: string };
    /** Removes the dump of a deleted backup from the platform bucket it was written to (after the commit). */
    'database.runtime.remove-dump': { databaseId: string; backupId: string; bucketId: string };
  }
}

const MAX_TARGETS_PER_DATABASE = 5;
const MAX_MANUAL_BACKUPS_PER_TARGET = 5;
const DAY = 24 * 3600 * 1000;
/** Manual internal backups are kept 30 days, daily ones 7 days. */
export const RETENTION = { manual: 30 * DAY, daily: 7 * DAY };

/** Engines whose data can be dumped to (and replayed from) an external backup target. Key-value stores cannot. */
const EXTERNAL_BACKUP_ENGINES: Partial<Record<DatabaseType, string>> = { postgresql: 'pg', mysql: 'mysql', mariadb: 'mariadb' };

function assertExternalBackups(d: DatabasesTable) {
  if (!EXTERNAL_BACKUP_ENGINES[d.type]) throw badRequest(`Databases of type ${d.type} do not support external backups (supported: postgresql, mysql, mariadb)`);
}

/** `YYYYMMDD-HHMMSS` in UTC. */
const stamp = (t: Date) => t.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

/** The external backup id: `YYYYMMDD-HHMMSS_<kind>_<engine><major>_<name>.sql.gz`. */
function externalBackupId(at: Date, kind: 'manual' | 'daily', d: Pick<DatabasesTable, 'type' | 'version'>, name: string) {
  return `${stamp(at)}_${kind}_${EXTERNAL_BACKUP_ENGINES[d.type]}${engineMajor(d.version)}_${slugify(name, 60)}.sql.gz`;
}

/** An external backup id not yet used by the database: two dumps with one name in one second take the next second. */
async function freeExternalId(tx: Tx, d: DatabasesTable, at: Date, kind: 'manual' | 'daily', name: string): Promise<string> {
  let id = externalBackupId(at, kind, d, name);
  for (let i = 1; await backupIdTaken(tx, d.id, id); i++) id = externalBackupId(new Date(at.getTime() + i * 1000), kind, d, name);
  return id;
}

/** Starts a dump of the database to the backup target: manual ones are kept until deleted, daily ones 7 days. */
async function startExternalBackup(tx: Tx, d: DatabasesTable, targetId: string, type: 'manual' | 'daily', name: string, at: Date) {
  await startBackup(tx, d, {
    id: await freeExternalId(tx, d, at, type, name),
    external: 1,
    target_id: targetId,
    name,
    display_name: name,
    type,
    created_at: at.toISOString(),
    expires_at: new Date(at.getTime() + (type === 'daily' ? RETENTION.daily : 3650 * DAY)).toISOString(),
  });
}

function assertCanBackUp(d: DatabasesTable) {
  if (d.is_suspended) throw badRequest('The database is suspended; activate it before taking a backup');
  if (d.status !== 'ready') throw badRequest(`Backups can be taken only when the database is ready (it is ${d.status})`);
  if (d.backup_status !== 'ready') throw badRequest('Another backup of the database is in progress');
}

async function startBackup(
  tx: Tx,
  d: DatabasesTable,
  row: Omit<DatabaseBackupsTable, 'status' | 'data_version' | 'engine_major' | 'size' | 'started_at' | 'reads' | 'database_id' | 'company_id'>,
) {
  const now = new Date().toISOString();
  await insertBackup(tx, {
    ...row,
    database_id: d.id,
    company_id: d.company_id,
    status: 'pending',
    data_version: d.data_version,
    engine_major: engineMajor(d.version),
    size: null,
    started_at: now,
    reads: 0,
  });
  await markBackupInProgress(tx, d.id, now);
  await enqueue(tx, { kind: d.runtime ? RUNTIME_BACKUP_JOB : BACKUP_JOB, payload: { databaseId: d.id, backupId: row.id }, subjectId: d.id, maxAttempts: 20 });
}

/** A backup ended: the database's backup status is ready again once no other backup is pending. */
export async function endBackup(tx: Tx, databaseId: string) {
  if (!(await hasPendingBackup(tx, databaseId))) await markBackupStatusReady(tx, databaseId);
}

/** One step of a pending backup; returns when to look again. */
export async function stepBackup(tx: Tx, app: AppContext, databaseId: string, backupId: string): Promise<Date | undefined> {
  const b = await loadBackup(tx, databaseId, backupId);
  if (!b || b.status !== 'pending') return undefined;
  const now = new Date();
  const result = await app.simulated.advance(tx, {
    operation: 'backup',
    phase: 'dump',
    phaseIndex: 0,
    phaseCount: 1,
    targetId: databaseId,
    startedAt: b.started_at,
    reads: b.reads,
  });
  if (result.state === 'running') return new Date(now.getTime() + result.checkAfterMs);
  const ok = result.state === 'done';
  if (await completeBackup(tx, databaseId, backupId, ok ? 'ready' : 'failed', ok ? 4096 + b.data_version * 1024 + randomBytes(1)[0]! : null))
    await endBackup(tx, databaseId);
  return undefined;
}

export const backupJob = (app: AppContext): JobKind<'database.backup'> => ({
  async run(tx, job) {
    const at = await stepBackup(tx, app, job.payload.databaseId, job.payload.backupId);
    return at ? { rescheduleAt: at } : undefined;
  },
  onFailure: (tx, job) => abandonBackup(tx, job.payload.databaseId, job.payload.backupId),
});

/** The backup's job gave up: the backup failed. */
export async function abandonBackup(tx: Tx, databaseId: string, backupId: string): Promise<void> {
  await failPendingBackup(tx, databaseId, backupId);
  await endBackup(tx, databaseId);
}

/** An internal or external backup of the database that did not fail, or 404. */
async function existingBackup(tx: Tx, databaseId: string, id: string, external: boolean) {
  const b = await findBackup(tx, databaseId, id, external);
  if (!b) throw notFound(external ? 'External backup' : 'Backup');
  return b;
}

/** Whether a restore that reads this backup is running (on its database or on another destination). */
export async function restoreReading(tx: Tx, b: Pick<DatabaseBackupsTable, 'company_id' | 'database_id' | 'id'>): Promise<boolean> {
  const rows = await listRestorePayloads(tx, b.company_id);
  return rows.some((r) => {
    const backup = (JSON.parse(r.op_payload ?? '{}') as OperationPayload).backup;
    return backup?.database_id === b.database_id && backup.id === b.id;
  });
}

// --- Restore ----------------------------------------------------------------------------------

/** Checks that the destination can take a restore now (400 otherwise). */
function assertRestorable(dest: DatabasesTable) {
  if (dest.status === 'restoring') throw badRequest('Another restore is in progress on the destination database');
  if (dest.is_suspended) throw badRequest('The destination database is suspended; activate it before restoring');
  if (!['ready', 'error', 'passwordChangeFailed', 'restoringFailed'].includes(dest.status))
    throw badRequest(`The destination database cannot be restored while its status is ${dest.status}`);
  if (dest.backup_status !== 'ready') throw badRequest('A backup of the destination database is in progress; restore once it finishes');
}

/** The database a restore writes to (the source itself by default), locked like every change of it. */
async function destination(tx: Tx, source: DatabasesTable, targetId: string | undefined, sameVersion: boolean) {
  const id = targetId ?? source.id;
  await lockDatabaseId(tx, id);
  const t = await findDatabaseRow(tx, source.company_id, id);
  if (!t) throw new ApiError(404, 'Target database not found');
  if (t.id === source.id) return t;
  if (t.cluster_id !== source.cluster_id) throw badRequest('The target database must be in the same cluster (region) as the source database');
  if (t.type !== source.type) throw badRequest(`The target database must be of the same type as the source (${source.type}, not ${t.type})`);
  if (sameVersion && engineMajor(t.version) !== engineMajor(source.version))
    throw badRequest(`The target database must run the same major version as the source (${engineMajor(source.version)}, not ${engineMajor(t.version)})`);
  return t;
}

async function restore(tx: Tx, source: DatabasesTable, backupId: string, targetId: string | undefined, external: boolean) {
  // Locks in the order every writer takes them: the destination database, then the backup (which
  // the retention sweep may be removing: read once the lock is held).
  await lockDatabaseId(tx, targetId ?? source.id);
  await lockBackupId(tx, source.id, backupId);
  const b = await existingBackup(tx, source.id, backupId, external);
  if (b.status !== 'ready') throw badRequest('The backup is still being taken; restore it once it is complete');
  // Internal snapshots need the same major version up front; external dumps are replayed
  // regardless, and a dump from a newer major makes the restore end in restoringFailed.
  const dest = await destination(tx, source, targetId, !external);
  assertRestorable(dest);
  await startOperation(tx, dest, 'restore', {
    backup: { id: b.id, database_id: source.id, data_version: b.data_version, engine_major: b.engine_major, external },
  });
}

// --- Internal backups -------------------------------------------------------------------------

/** The internal backups, those being taken (inProgress) among them: a failed one is not listed. */
export async function listBackups(ctx: CallContext, id: string, type?: 'daily' | 'manual') {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  const rows = await listInternalBackups(tx, d.id, type);
  return rows.map((b) => ({
    id: b.id,
    name: b.name,
    display_name: b.display_name,
    type: b.type,
    created_at: b.created_at,
    expires_at: b.expires_at,
    status: b.status === 'pending' ? ('inProgress' as const) : ('ready' as const),
  }));
}

export async function createBackup(ctx: CallContext, id: string, displayName: string) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  assertCanBackUp(d);
  if ((await countManualBackups(tx, d.id)) >= 50) throw badRequest('The database already has 50 manual backups; delete some first');
  const now = new Date();
  const name = `manual-${slugify(displayName, 40)}-${randomBytes(3).toString('hex')}`;
  await startBackup(tx, d, {
    id: name,
    external: 0,
    target_id: null,
    name,
    display_name: displayName,
    type: 'manual',
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + RETENTION.manual).toISOString(),
  });
  return { message: 'Database backup started' };
}

/**
 * The scheduled daily backup of a database (schedule.ts), taken the way a manual one is (a real
 * engine dumps for real), and a daily external dump to each of its backup targets (kept 7 days
 * like daily backups; the 5-backup limit of a target counts manual ones only). Answers why it was
 * skipped when the database cannot be backed up now.
 */
export async function takeDailyBackup(tx: Tx, d: DatabasesTable): Promise<{ id: string } | { skipped: string }> {
  try {
    assertCanBackUp(d);
  } catch (e) {
    if (e instanceof ApiError) return { skipped: e.message };
    throw e;
  }
  const now = new Date();
  const id = `daily-${stamp(now).toLowerCase()}-${randomBytes(3).toString('hex')}`;
  const displayName = `Daily backup ${now.toISOString().slice(0, 10)}`;
  await startBackup(tx, d, {
    id,
    external: 0,
    target_id: null,
    name: id,
    display_name: displayName,
    type: 'daily',
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + RETENTION.daily).toISOString(),
  });
  if (!EXTERNAL_BACKUP_ENGINES[d.type]) return { id };
  const targets = await listTargetIds(tx, d.id);
  for (const t of targets) await startExternalBackup(tx, d, t.id, 'daily', d.name, now);
  return { id };
}

export async function deleteBackup(ctx: CallContext, id: string, backupId: string, external: boolean) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  if (external) assertExternalBackups(d);
  const b = await existingBackup(tx, d.id, backupId, external);
  if (b.status === 'pending') throw badRequest('The backup is still being taken; delete it once it is complete');
  const rt = runtimes(ctx.app);
  const bucketId = d.runtime ? await rt.bucketOf(tx, b) : null;
  await deleteBackupRow(tx, d.id, b.id);
  // A bucket is written in transactions of its own: its dump goes once this one commits.
  if (bucketId) await enqueue(tx, { kind: RUNTIME_REMOVE_JOB, payload: { databaseId: d.id, backupId: b.id, bucketId }, subjectId: bucketId, maxAttempts: 20 });
  else if (d.runtime) await rt.store.remove(d.id, b.id);
  return { message: external ? 'External database backup deleted' : 'Database backup deleted' };
}

export async function restoreBackup(ctx: CallContext, id: string, backupId: string, targetId: string | undefined) {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  await restore(tx, d, backupId, targetId, false);
  return { message: 'Database backup restore started' };
}

// --- External backups -------------------------------------------------------------------------

export async function listExternalBackups(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  assertExternalBackups(d);
  const rows = await listReadyExternalBackups(tx, d.id);
  return rows.map((b) => ({
    id: b.id,
    name: b.name,
    type: b.type,
    backup_target_id: b.target_id!,
    size: b.size === null ? null : Number(b.size),
    created_at: b.created_at,
  }));
}

export async function createExternalBackup(ctx: CallContext, id: string, input: { name: string; backup_target_id?: string }) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  assertExternalBackups(d);
  const target = await firstTarget(tx, d.id, input.backup_target_id);
  if (!target)
    throw badRequest(
      input.backup_target_id
        ? `Unknown backup_target_id ${input.backup_target_id} for this database`
        : 'The database has no backup target; attach one with POST /databases/{id}/backup-targets',
    );
  assertCanBackUp(d);
  if ((await countManualBackupsOnTarget(tx, target.id)) >= MAX_MANUAL_BACKUPS_PER_TARGET)
    throw badRequest(`The backup target already holds ${MAX_MANUAL_BACKUPS_PER_TARGET} manual backups (the maximum); delete one first`);
  await startExternalBackup(tx, d, target.id, 'manual', input.name, new Date());
  return { message: 'External database backup started' };
}

export async function restoreExternalBackup(ctx: CallContext, id: string, backupId: string, targetId: string | undefined) {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  assertExternalBackups(d);
  await restore(tx, d, backupId, targetId, true);
  return { message: 'External database backup restore started' };
}

// --- Backup targets ---------------------------------------------------------------------------

export async function listTargets(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  assertExternalBackups(d);
  const rows = await listTargetRows(tx, d.id);
  return rows.map((t) => ({ id: t.id, object_storage_id: t.object_storage_id, bucket_name: t.bucket_name, endpoint: t.endpoint, created_at: t.created_at }));
}

export async function createTarget(
  ctx: CallContext,
  id: string,
  input: { object_storage_id?: string; bucket_name?: string; access_key?: string; secret_key?: string; endpoint?: string },
) {
  const { tx, app, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  assertExternalBackups(d);
  assertNotDeleting(d);
  let bucket = input.bucket_name;
  if (input.object_storage_id) {
    const s = await app.services.get('object-storage')?.find(ctx, input.object_storage_id);
    if (!s) throw badRequest(`Unknown object_storage_id ${input.object_storage_id}`);
    bucket ??= s.name;
  } else {
    if (!bucket) throw badRequest('Give object_storage_id, or bucket_name with access_key and secret_key');
    if (!input.access_key || !input.secret_key) throw badRequest('access_key and secret_key are required with bucket_name');
  }
  if (input.endpoint !== undefined && !/^https?:\/\/\S+$/.test(input.endpoint)) throw badRequest('endpoint must be an http(s) URL');
  if ((await countTargets(tx, d.id)) >= MAX_TARGETS_PER_DATABASE)
    throw badRequest(`The database already has ${MAX_TARGETS_PER_DATABASE} backup targets (the maximum)`);
  await insertTarget(tx, {
    id: newId(),
    database_id: d.id,
    company_id: companyId,
    object_storage_id: input.object_storage_id ?? null,
    bucket_name: bucket!,
    endpoint: input.endpoint ?? null,
    access_key_enc: input.access_key ? app.secrets.encrypt(input.access_key) : null,
    secret_key_enc: input.secret_key ? app.secrets.encrypt(input.secret_key) : null,
    created_at: new Date().toISOString(),
  });
  return { message: 'Backup target attached' };
}

export async function deleteTarget(ctx: CallContext, id: string, targetId: string) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  assertExternalBackups(d);
  const t = await findTarget(tx, d.id, targetId);
  if (!t) throw notFound('Backup target');
  if (await hasPendingBackupOnTarget(tx, t.id)) throw badRequest('A backup is being written to this target; detach it once the backup finishes');
  // The dumps stay in the bucket, but the database no longer lists or restores them.
  await deleteTargetRows(tx, d.id, t.id);
  return { message: 'Backup target detached' };
}
