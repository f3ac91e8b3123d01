// Scheduled backup work, on the durable job engine:
// - 'database.daily-backup' (subject = the database): one chain per database, armed when the
//   database is created (same transaction) and, at start, for every database without one. Each run
//   takes a `daily` backup through the same path as a manual one (backups.ts; a real engine dumps
//   for real) when the database is ready, not suspended and no other backup runs; otherwise it logs
//   why it skipped. It then reschedules itself one period later. The chain is a single job row that
//   is queued or running at all times (it reschedules in the transaction of its run), so "armed"
//   means such a row exists, and arming checks that under the database's lock: a crash between
//   arming and running never arms twice. A deletion cancels it with the database's other queued
//   jobs, and a run that finds the database gone or being deleted ends the chain.
// - 'database.backup-retention' (one chain per installation): removes backups whose `expires_at`
//   passed (manual 30 days, daily 7 days), their stored dumps too, never one a running restore reads.
//
// Periods (milliseconds, positive integers): SLIPWAY_DB_DAILY_BACKUP_MS (default one day) and
// SLIPWAY_DB_BACKUP_SWEEP_MS (default one hour).
import { intSetting } from '../../shared/config.js';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { enqueue, pendingSubjects, type JobKind, type Outcome } from '../../shared/jobs.js';
import { deleteFailedBackup, findBackupExpiry, hideBackup, listExpiredBackups, lockBackupId, lockRetentionChain } from './backups-storage.js';
import { restoreReading, takeDailyBackup } from './backups.js';
import { runtimes } from './runtime/index.js';
import { findDatabaseSchedule, listDatabaseStatuses, loadDatabase, lockDatabaseId, type DatabasesTable } from './storage.js';

export const DAILY_BACKUP_JOB = 'database.daily-backup';
export const RETENTION_JOB = 'database.backup-retention';
const RETENTION_SUBJECT = 'databases:backup-retention';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** The next daily backup of the database, due at `dueAt`. */
    'database.daily-backup': { databaseId: string; dueAt: string };
    /** The next sweep of expired backups (all databases). */
    'database.backup-retention': { dueAt: string };
  }
}

export interface ScheduleSettings {
  dailyMs: number;
  sweepMs: number;
}

export function scheduleSettings(app: AppContext): ScheduleSettings {
  const env = app.config.databases.env;
  return { dailyMs: intSetting(env, 'SLIPWAY_DB_DAILY_BACKUP_MS', 24 * 3600 * 1000), sweepMs: intSetting(env, 'SLIPWAY_DB_BACKUP_SWEEP_MS', 3600 * 1000) };
}

/** Statuses after which a database takes no more daily backups (its chain ends, and is not re-armed). */
const ENDED = new Set(['deleting', 'dbDeletionFailed']);

/** The first time at `created + n·period` later than now: the database's backups keep its time of day. */
function nextSlot(createdAt: string, periodMs: number, now = Date.now()): Date {
  const created = Date.parse(createdAt);
  return new Date(created + Math.max(1, Math.floor((now - created) / periodMs) + 1) * periodMs);
}

/** Arms the daily backup chain of a database (in the transaction that creates it, or under its lock). */
export async function armDailyBackup(tx: Tx, app: AppContext, d: Pick<DatabasesTable, 'id' | 'created_at'>): Promise<void> {
  const due = nextSlot(d.created_at, scheduleSettings(app).dailyMs);
  await enqueue(tx, { kind: DAILY_BACKUP_JOB, payload: { databaseId: d.id, dueAt: due.toISOString() }, runAt: due, subjectId: d.id, maxAttempts: 20 });
}

/** At start: arms the chain of every database without one, and the retention sweep (idempotent, safe on several instances). */
export async function armSchedules(app: AppContext): Promise<void> {
  const db = app.database.db;
  const armed = await pendingSubjects(db, DAILY_BACKUP_JOB);
  const rows = await listDatabaseStatuses(db);
  for (const r of rows.filter((x) => !armed.has(x.id) && !ENDED.has(x.status))) {
    await db.transaction().execute(async (tx) => {
      await lockDatabaseId(tx, r.id);
      const d = await findDatabaseSchedule(tx, r.id);
      if (!d || ENDED.has(d.status) || (await pendingSubjects(tx, DAILY_BACKUP_JOB, d.id)).size) return;
      await armDailyBackup(tx, app, d);
    });
  }
  await db.transaction().execute(async (tx) => {
    await lockRetentionChain(tx, RETENTION_SUBJECT);
    if ((await pendingSubjects(tx, RETENTION_JOB, RETENTION_SUBJECT)).size) return;
    await enqueue(tx, { kind: RETENTION_JOB, payload: { dueAt: new Date().toISOString() }, subjectId: RETENTION_SUBJECT, maxAttempts: 1000 });
  });
}

/** One daily backup, then the next one period later (a late run does not catch up on missed ones). */
async function runDaily(tx: Tx, app: AppContext, databaseId: string, dueAt: string): Promise<Outcome<typeof DAILY_BACKUP_JOB>> {
  await lockDatabaseId(tx, databaseId);
  const d = await loadDatabase(tx, databaseId);
  if (!d || ENDED.has(d.status)) return; // the chain ends with the database
  const taken = await takeDailyBackup(tx, d);
  if ('skipped' in taken) app.log.info({ database: d.id, reason: taken.skipped }, 'daily database backup skipped');
  else app.log.info({ database: d.id, backup: taken.id }, 'daily database backup started');
  const { dailyMs } = scheduleSettings(app);
  let next = Date.parse(dueAt) + dailyMs;
  if (next <= Date.now()) next = Date.now() + dailyMs;
  return { rescheduleAt: new Date(next), payload: { databaseId, dueAt: new Date(next).toISOString() } };
}

/** Removes the expired backups (a batch of at most `limit` per call); returns how many it removed. */
const SWEEP_BATCH = 200;

export async function sweepExpiredBackups(app: AppContext, limit = SWEEP_BATCH): Promise<number> {
  const db = app.database.db;
  const now = new Date().toISOString();
  const expired = await listExpiredBackups(db, now, limit);
  let removed = 0;
  for (const b of expired) {
    // First the backup leaves the list and can no longer be restored (status failed), unless a
    // restore reads it; then its dump goes, then the row. A crash in between leaves a failed,
    // expired row that the next sweep finishes.
    const hidden = await db.transaction().execute(async (tx) => {
      await lockBackupId(tx, b.database_id, b.id);
      const cur = await findBackupExpiry(tx, b.database_id, b.id);
      if (!cur || cur.status === 'pending' || cur.expires_at >= now) return false;
      if (cur.status === 'failed') return true;
      if (await restoreReading(tx, b)) return false;
      await hideBackup(tx, b.database_id, b.id);
      return true;
    });
    if (!hidden) continue;
    if (b.runtime)
      await runtimes(app)
        .storeIn(await runtimes(app).bucketOf(db, b))
        .remove(b.database_id, b.id);
    await deleteFailedBackup(db, b.database_id, b.id);
    removed++;
  }
  if (removed) app.log.info({ removed }, 'expired database backups removed');
  return removed;
}

export function registerScheduleJobs(app: AppContext): void {
  scheduleSettings(app); // a bad setting stops the start
  const daily: JobKind<typeof DAILY_BACKUP_JOB> = {
    run: (tx, job) => runDaily(tx, app, job.payload.databaseId, job.payload.dueAt),
    async onFailure(_tx, job, err) {
      app.log.error(
        { database: job.payload.databaseId, err: err.message },
        'daily backups of the database stopped after repeated errors; they are armed again at the next start',
      );
    },
  };
  const retention: JobKind<typeof RETENTION_JOB> = {
    transactional: false,
    async run() {
      const removed = await sweepExpiredBackups(app, SWEEP_BATCH);
      // A full batch: more may be waiting.
      const next = new Date(Date.now() + (removed >= SWEEP_BATCH ? 0 : scheduleSettings(app).sweepMs));
      return { rescheduleAt: next, payload: { dueAt: next.toISOString() } };
    },
  };
  app.jobs.register(DAILY_BACKUP_JOB, daily);
  app.jobs.register(RETENTION_JOB, retention);
}
