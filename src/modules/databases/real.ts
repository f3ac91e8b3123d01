// The job steps of databases served by a real engine (runtime/): the long operations of
// operations.ts (create, restart, password change, restore, deletion), backups, and the
// suspension state. Each job is not transactional: the server is asked first, outside any
// transaction of the control plane's database (a network wait never holds SQLite's one writer),
// then a short transaction of our own checks that this worker still owns the job and that the
// operation is still the one started, and records the outcome. Every server action is idempotent
// (names are derived from the Slipway id, the user name is claimed for the database before it is
// created), so a step re-run after a crash finishes what the crashed run began or fails cleanly.
import { rm } from 'node:fs/promises';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { cancelJobs, enqueue, type Job, type JobKind, type Outcome } from '../../shared/jobs.js';
import { completeBackup, loadBackup } from './backups-storage.js';
import { abandonBackup, endBackup, RUNTIME_BACKUP_JOB, RUNTIME_REMOVE_JOB } from './backups.js';
import { FAILED_STATUS, finish, removeDeleted, RUNTIME_OPERATION_JOB, type OperationPayload } from './operations.js';
import { isTransient, Refused } from './runtime/engine.js';
import { runtimes } from './runtime/index.js';
import { portFree } from './runtime/redis.js';
import { runtimeState, type RuntimeState } from './runtime/state.js';
import { listRuntimeRecords, loadDatabase, lockRuntimeClaim, updateDatabaseColumns, type DatabaseOperation, type DatabasesTable } from './storage.js';

export const RUNTIME_SYNC_JOB = 'database.runtime.sync';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Makes the server match the database's suspension (logins refused or allowed again) and access (external, IP restriction). */
    'database.runtime.sync': { databaseId: string };
  }
}

const RUNTIME_JOBS = [RUNTIME_OPERATION_JOB, RUNTIME_BACKUP_JOB, RUNTIME_SYNC_JOB] as const;

type Result = { ok: true; extra?: Partial<DatabasesTable> } | { ok: false; reason: string };

/** Runs a server action: a refusal (or any non-transient error) is a failed result; a transient error propagates (the job retries). */
async function attempt(fn: () => Promise<Partial<DatabasesTable> | void>): Promise<Result> {
  try {
    return { ok: true, extra: (await fn()) ?? undefined };
  } catch (e) {
    if (isTransient(e)) throw e;
    return { ok: false, reason: (e as Error).message };
  }
}

/** Asks the engine to do the operation. */
async function act(app: AppContext, d: DatabasesTable, state: RuntimeState, operation: DatabaseOperation): Promise<Result> {
  const rt = runtimes(app);
  return attempt(async () => {
    const engine = rt.engine(state.family);
    const target = rt.target(d, state);
    const payload = JSON.parse(d.op_payload ?? '{}') as OperationPayload;
    switch (operation) {
      case 'database_create':
        return void (await engine.create(target));
      case 'restart':
        return void (await engine.restart(target));
      case 'password_change': {
        if (!payload.password_enc) throw new Refused('no new password');
        await engine.setPassword(target, app.secrets.decrypt(payload.password_enc));
        return { password_enc: payload.password_enc, data_version: d.data_version + 1 };
      }
      case 'restore': {
        const b = payload.backup;
        const row = b && (await loadBackup(app.database.db, b.database_id, b.id));
        const store = rt.storeIn(row ? await rt.bucketOf(app.database.db, row) : null);
        const file = b && (await store.fetch(b.database_id, b.id));
        if (!b || !file) throw new Refused('the backup file is missing');
        try {
          await engine.restore(target, file);
        } finally {
          await store.release(file);
        }
        return { data_version: b.data_version };
      }
      case 'database_delete':
        await engine.drop(target, state.claimed);
        await rt.store.removeAll(d.id);
        return;
    }
  });
}

/** Redis: ports of the range not used by another database and free on this host (the first few). */
async function freePorts(app: AppContext, count = 10): Promise<number[]> {
  const r = runtimes(app).settings.redis!;
  const used = await usedPorts(app.database.db);
  const out: number[] = [];
  for (let p = r.ports[0]; p <= r.ports[1] && out.length < count; p++) if (!used.has(p) && (await portFree(r.bind, p))) out.push(p);
  return out;
}

async function usedPorts(tx: Tx): Promise<Set<number>> {
  const rows = await listRuntimeRecords(tx);
  return new Set(
    rows
      .map((x) => runtimeState(x)!)
      .filter((s) => s.family === 'redis' && s.port)
      .map((s) => s.port),
  );
}

const isCurrent = (d: DatabasesTable | undefined, operation: DatabaseOperation, startedAt: string): d is DatabasesTable =>
  !!d && d.operation === operation && d.op_started_at === startedAt;

/**
 * Claims the user name (and, for Redis, a port) for the database before anything is created on
 * the server: committed first, so a re-run after a crash knows what it made. A user that already
 * exists unclaimed belongs to someone else.
 */
async function claim(
  app: AppContext,
  job: Job<typeof RUNTIME_OPERATION_JOB>,
  d: DatabasesTable,
  state: RuntimeState,
): Promise<Result | DatabasesTable | undefined> {
  const rt = runtimes(app);
  const check = await attempt(async () => {
    if (await rt.engine(state.family).userExists(rt.target(d, state))) throw new Refused(`the user ${d.db_user} already exists on the ${state.family} server`);
  });
  if (!check.ok) return check;
  const ports = state.family === 'redis' ? await freePorts(app) : [];
  return app.database.db.transaction().execute(async (tx) => {
    if (!(await app.jobs.owns(tx, job.id))) return undefined;
    await lockRuntimeClaim(tx);
    const cur = await loadDatabase(tx, d.id);
    if (!isCurrent(cur, 'database_create', job.payload.startedAt)) return undefined;
    const next: RuntimeState = { ...state, claimed: true };
    const patch: Partial<DatabasesTable> = {};
    if (state.family === 'redis') {
      const used = await usedPorts(tx);
      const port = ports.find((p) => !used.has(p));
      if (!port) return { ok: false, reason: `no free port left in ${rt.settings.redis!.ports.join('-')}` } as Result;
      next.port = next.externalPort = port;
      patch.internal_port = String(port);
    }
    patch.runtime = JSON.stringify(next);
    await updateDatabaseColumns(tx, d.id, patch);
    return { ...cur, ...patch };
  });
}

async function runOperation(app: AppContext, job: Job<typeof RUNTIME_OPERATION_JOB>): Promise<Outcome<typeof RUNTIME_OPERATION_JOB>> {
  const { databaseId, operation, startedAt } = job.payload;
  let d = await loadDatabase(app.database.db, databaseId);
  if (!isCurrent(d, operation, startedAt)) return;
  // A deletion waits for the work still touching the server (a creation or a dump in flight).
  if (operation === 'database_delete' && (await app.jobs.othersRunning(d.id, RUNTIME_JOBS, job.id))) return { rescheduleAt: new Date(Date.now() + 250) };
  let state = runtimeState(d)!;
  let result: Result | undefined;
  if (operation === 'database_create' && !state.claimed) {
    const c = await claim(app, job, d, state);
    if (!c) return; // superseded, or the job is no longer ours
    if ('ok' in c) result = c;
    else [d, state] = [c, runtimeState(c)!];
  }
  result ??= await act(app, d, state, operation);
  const outcome = result;
  await app.database.db.transaction().execute(async (tx) => {
    if (!(await app.jobs.owns(tx, job.id))) return;
    const cur = await loadDatabase(tx, databaseId);
    if (!isCurrent(cur, operation, startedAt)) return;
    if (!outcome.ok) {
      app.log.warn({ database: databaseId, operation, reason: outcome.reason }, 'database operation failed on the server');
      await finish(tx, cur, FAILED_STATUS[operation]);
    } else if (operation === 'database_delete') await removeDeleted(tx, app, cur);
    else await finish(tx, cur, 'ready', outcome.extra);
  });
}

async function runBackup(app: AppContext, job: Job<typeof RUNTIME_BACKUP_JOB>): Promise<void> {
  const { databaseId, backupId } = job.payload;
  const db = app.database.db;
  const b = await loadBackup(db, databaseId, backupId);
  const d = await loadDatabase(db, databaseId);
  if (!b || b.status !== 'pending' || !d) return;
  const rt = runtimes(app);
  const state = runtimeState(d)!;
  const store = rt.storeIn(await rt.bucketOf(db, b));
  let size: number | null = null;
  const result = await attempt(async () => {
    const file = await store.scratch();
    try {
      await rt.engine(state.family).dump(rt.target(d, state), file);
      size = await store.put(d.id, b.id, file);
    } finally {
      await rm(file, { force: true }); // gone already when kept
    }
  });
  if (!result.ok) app.log.warn({ database: databaseId, backup: backupId, reason: result.reason }, 'database backup failed on the server');
  const recorded = await db.transaction().execute(async (tx) => {
    if (!(await app.jobs.owns(tx, job.id))) return false;
    const completed = await completeBackup(tx, databaseId, backupId, result.ok ? 'ready' : 'failed', size);
    if (completed) await endBackup(tx, databaseId);
    return completed;
  });
  // Abandoned meanwhile (the database is being deleted): the dump is not kept.
  if (!recorded && result.ok) await store.remove(databaseId, backupId);
}

/** What the sync job makes the server match: suspension, external access and IP restriction. */
const wanted = (d: DatabasesTable) => JSON.stringify([d.is_suspended, d.external_enabled, d.ip_enabled, d.ip_type, d.ip_list]);

/** Makes the server match the stored suspension and access; runs again when they changed meanwhile. */
async function runSync(app: AppContext, job: Job<typeof RUNTIME_SYNC_JOB>): Promise<Outcome<typeof RUNTIME_SYNC_JOB>> {
  const d = await loadDatabase(app.database.db, job.payload.databaseId);
  const state = d && runtimeState(d);
  if (!d || !state || d.status === 'deleting') return; // being deleted: moot
  // The creation applies what it read when it began; a change made meanwhile follows once it ends.
  if (d.operation === 'database_create') return { rescheduleAt: new Date(Date.now() + 500) };
  if (!state.claimed) return;
  const rt = runtimes(app);
  const engine = rt.engine(state.family);
  const target = rt.target(d, state);
  const result = await attempt(async () => {
    await engine.setSuspended(target, target.suspended);
    await engine.setAccess(target);
  });
  if (!result.ok) app.log.warn({ database: d.id, reason: result.reason }, 'database suspension or access could not be applied on the server');
  const now = await loadDatabase(app.database.db, d.id);
  if (now && wanted(now) !== wanted(d)) return { rescheduleAt: new Date() };
}

/** After a suspension, activation or access change (same transaction): the server follows once it commits. */
export async function syncServer(tx: Tx, databaseId: string): Promise<void> {
  await cancelJobs(tx, databaseId, RUNTIME_SYNC_JOB);
  await enqueue(tx, { kind: RUNTIME_SYNC_JOB, payload: { databaseId }, subjectId: databaseId, maxAttempts: 20 });
}

/** A database's live usage read from its server (null for simulated databases, or when the server cannot tell). */
export async function serverUsage(app: AppContext, d: DatabasesTable): Promise<{ storage: number; memory: number | null } | null> {
  const state = runtimeState(d);
  if (!state?.claimed || d.status === 'creating' || d.status === 'deleting') return null;
  const rt = runtimes(app);
  try {
    return await rt.engine(state.family).usage(rt.target(d, state));
  } catch (e) {
    app.log.warn({ database: d.id, err: (e as Error).message }, 'database usage could not be read from the server');
    return null;
  }
}

export function registerRuntimeJobs(app: AppContext): void {
  const operation: JobKind<typeof RUNTIME_OPERATION_JOB> = {
    transactional: false,
    run: (_db, job) => runOperation(app, job),
    async onFailure(tx, job) {
      const d = await loadDatabase(tx, job.payload.databaseId);
      if (isCurrent(d, job.payload.operation, job.payload.startedAt)) await finish(tx, d, FAILED_STATUS[job.payload.operation]);
    },
  };
  const backup: JobKind<typeof RUNTIME_BACKUP_JOB> = {
    transactional: false,
    run: (_db, job) => runBackup(app, job),
    onFailure: (tx, job) => abandonBackup(tx, job.payload.databaseId, job.payload.backupId),
  };
  const sync: JobKind<typeof RUNTIME_SYNC_JOB> = { transactional: false, run: (_db, job) => runSync(app, job) };
  app.jobs.register(RUNTIME_OPERATION_JOB, operation);
  app.jobs.register(RUNTIME_BACKUP_JOB, backup);
  app.jobs.register(RUNTIME_SYNC_JOB, sync);
  app.jobs.register(RUNTIME_REMOVE_JOB, {
    transactional: false,
    run: async (_db, job) => runtimes(app).storeIn(job.payload.bucketId).remove(job.payload.databaseId, job.payload.backupId),
  });
}
