// Tables of the processes area (an application's processes and the runs of its cron and job
// processes; JSON-valued settings such as the scaling strategy and probes are stored as text), their
// migrations, and the queries on processes. The queries on runs are in runs-storage.ts.
import { sql, type Kysely, type Migration } from 'kysely';
import { later, type Tx } from '../../shared/db/index.js';
import { isPostgres } from '../../shared/db/dialect.js';
import { all, first, reusable } from '../../shared/db/reusable.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';

export type ProcessType = 'web' | 'worker' | 'cron' | 'job';
export type ConcurrencyPolicy = 'Forbid' | 'Replace';
export type JobStartPolicy = 'beforeDeployment' | 'afterSuccessDeployment' | 'afterFailedDeployment';

export interface ProcessesTable {
  id: string;
  app_id: string;
  company_id: string;
  /** Unique per application; derived from the display name (`web` for the default process). */
  key: string;
  type: ProcessType;
  display_name: string;
  entrypoint: string;
  port: number | null;
  is_ingress_enabled: number;
  ingress_protocol: 'http' | 'grpc' | null;
  /** JSON of the contract's scaling_strategy. */
  scaling_strategy: string;
  resource_type_id: string;
  schedule: string | null;
  time_zone: string | null;
  job_start_policy: JobStartPolicy | null;
  /** JSON of the probe, or null. */
  liveness_probe: string | null;
  readiness_probe: string | null;
  concurrency_policy: ConcurrencyPolicy | null;
  max_run_time_seconds: number | null;
  /**
   * Identifies the live chain of `cron.tick` jobs of a cron process; a tick whose token differs
   * was superseded (schedule changed, re-armed, suspended) and stops. Null = not armed.
   */
  cron_token: string | null;
  /** When a successful deployment first rolled this process out; null until then. */
  rolled_out_at: string | null;
  created_at: string;
  updated_at: string;
}

export type RunStatus = 'running' | 'completed' | 'failed' | 'terminated' | 'skipped';
export type TerminationReason = 'completed' | 'failed' | 'deadlineExceeded' | 'replaced' | 'cancelled';

export interface ProcessRunsTable {
  id: string;
  process_id: string;
  app_id: string;
  company_id: string;
  /** `schedule` (a cron fire), `manual` (the trigger operation) or `deployment` (a job process). */
  trigger: 'schedule' | 'manual' | 'deployment';
  /** Makes starting a run idempotent: the fire (`<process>@<time>`) or the trigger job. */
  fire_key: string;
  scheduled_for: string | null;
  status: RunStatus;
  started_at: string;
  ended_at: string | null;
  exit_code: number | null;
  termination_reason: TerminationReason | null;
  created_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    processes: ProcessesTable;
    process_runs: ProcessRunsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '020_processes': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('processes')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('app_id', 'varchar(36)', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('key', 'varchar(64)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('entrypoint', 'text', (c) => c.notNull())
        .addColumn('port', 'integer')
        .addColumn('is_ingress_enabled', 'integer', (c) => c.notNull())
        .addColumn('ingress_protocol', 'varchar(8)')
        .addColumn('scaling_strategy', 'text', (c) => c.notNull())
        .addColumn('resource_type_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('schedule', 'varchar(100)')
        .addColumn('time_zone', 'varchar(100)')
        .addColumn('job_start_policy', 'varchar(32)')
        .addColumn('liveness_probe', 'text')
        .addColumn('readiness_probe', 'text')
        .addColumn('concurrency_policy', 'varchar(16)')
        .addColumn('max_run_time_seconds', 'integer')
        .addColumn('cron_token', 'varchar(36)')
        .addColumn('rolled_out_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('processes_app').on('processes').columns(['app_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('processes_key').on('processes').columns(['app_id', 'key']).unique().execute();
      // At most one web process per application, also under concurrent creates.
      await db.schema.createIndex('processes_one_web').on('processes').column('app_id').unique().where(sql.ref('type'), '=', sql.lit('web')).execute();
    },
  },
  '021_process_runs': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('process_runs')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('process_id', 'varchar(36)', (c) => c.notNull().references('processes.id').onDelete('cascade'))
        .addColumn('app_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('trigger', 'varchar(16)', (c) => c.notNull())
        .addColumn('fire_key', 'varchar(128)', (c) => c.notNull().unique())
        .addColumn('scheduled_for', 'varchar(32)')
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('started_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('ended_at', 'varchar(32)')
        .addColumn('exit_code', 'integer')
        .addColumn('termination_reason', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('process_runs_status').on('process_runs').columns(['process_id', 'status']).execute();
      await db.schema.createIndex('process_runs_ended').on('process_runs').columns(['process_id', 'ended_at']).execute();
      await db.schema.createIndex('process_runs_app').on('process_runs').column('app_id').execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['process_runs', 'processes'] as const;

// ---- Queries on processes ---------------------------------------------------------------------

/** A process of the application, or undefined. */
export async function processRow(tx: Tx, appId: string, processId: string): Promise<ProcessesTable | undefined> {
  return tx.selectFrom('processes').selectAll().where('id', '=', processId).where('app_id', '=', appId).executeTakeFirst();
}

/** A process by id alone, or undefined. */
export async function processById(tx: Tx, processId: string): Promise<ProcessesTable | undefined> {
  return tx.selectFrom('processes').selectAll().where('id', '=', processId).executeTakeFirst();
}

/** A process by id that must exist (Kysely's NoResultError otherwise). */
export async function existingProcess(tx: Tx, processId: string): Promise<ProcessesTable> {
  return tx.selectFrom('processes').selectAll().where('id', '=', processId).executeTakeFirstOrThrow();
}

/** A process by id, locked for the rest of the transaction on PostgreSQL (SQLite has one writer anyway). */
export async function lockProcess(tx: Tx, processId: string): Promise<ProcessesTable | undefined> {
  const q = tx.selectFrom('processes').selectAll().where('id', '=', processId);
  return (isPostgres(tx) ? q.forUpdate() : q).executeTakeFirst();
}

/** A process of the application (its id and type), or undefined (ports and proxies name one). */
export async function processOf(tx: Tx, appId: string, processId: string): Promise<Pick<ProcessesTable, 'id' | 'type'> | undefined> {
  return tx.selectFrom('processes').select(['id', 'type']).where('id', '=', processId).where('app_id', '=', appId).executeTakeFirst();
}

/** A page of the application's processes. */
export async function listProcessesPage(tx: Tx, appId: string, page: Page) {
  return paginate(tx.selectFrom('processes').selectAll().where('app_id', '=', appId), page);
}

/** Whether the application has a web process. */
export async function hasWebProcess(tx: Tx, appId: string): Promise<boolean> {
  return !!(await tx.selectFrom('processes').select('id').where('app_id', '=', appId).where('type', '=', 'web').executeTakeFirst());
}

/** Inserts the row `build` makes for a key derived from the display name, unique in the application (the unique index decides). */
export async function insertNamedProcess(tx: Tx, appId: string, displayName: string, build: (key: string) => ProcessesTable): Promise<ProcessesTable> {
  return insertNamed(tx, 'processes', appId, displayName, build);
}

/** Inserts processes (the default one of a new application, the copies of a clone). */
export async function insertProcesses(tx: Tx, rows: ProcessesTable[]): Promise<void> {
  await tx.insertInto('processes').values(rows).execute();
}

/** Sets the given columns of a process; returns the updated row. */
export async function updateProcessRow(tx: Tx, processId: string, set: Partial<Omit<ProcessesTable, 'id'>>): Promise<ProcessesTable> {
  return tx.updateTable('processes').set(set).where('id', '=', processId).returningAll().executeTakeFirstOrThrow();
}

/** Deletes a process and its runs. */
export async function deleteProcessAndRuns(tx: Tx, processId: string): Promise<void> {
  await tx.deleteFrom('process_runs').where('process_id', '=', processId).execute();
  await tx.deleteFrom('processes').where('id', '=', processId).execute();
}

/** Deletes every run and process of an application. */
export async function deleteAppProcessesAndRuns(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('process_runs').where('app_id', '=', appId).execute();
  await tx.deleteFrom('processes').where('app_id', '=', appId).execute();
}

const processCount = reusable((db, p: { appId: string }) =>
  db
    .selectFrom('processes')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('app_id', '=', p.appId),
);

/** How many processes the application has. */
export async function countProcesses(tx: Tx, appId: string): Promise<number> {
  const r = await first(tx, processCount(tx, { appId }));
  return Number(r?.n ?? 0);
}

const jobsWithPolicy = reusable((db, p: { appId: string; policy: JobStartPolicy }) =>
  db
    .selectFrom('processes')
    .selectAll()
    .where('app_id', '=', p.appId)
    .where('type', '=', 'job')
    .where('job_start_policy', '=', p.policy)
    .orderBy('created_at')
    .orderBy('id'),
);

/** The job processes of an application with a start policy, oldest first. */
export async function deploymentJobs(tx: Tx, appId: string, policy: JobStartPolicy): Promise<ProcessesTable[]> {
  return all(tx, jobsWithPolicy(tx, { appId, policy }));
}

const processesOf = reusable((db, p: { appId: string }) =>
  db.selectFrom('processes').selectAll().where('app_id', '=', p.appId).orderBy('created_at').orderBy('id'),
);

/** The application's processes, oldest first (a rollout). */
export async function rolloutProcesses(tx: Tx, appId: string): Promise<ProcessesTable[]> {
  return all(tx, processesOf(tx, { appId }));
}

/** The application's processes, oldest first (the source of a clone). */
export async function processesInOrder(tx: Tx, appId: string): Promise<ProcessesTable[]> {
  return tx.selectFrom('processes').selectAll().where('app_id', '=', appId).orderBy('created_at').orderBy('id').execute();
}

/** The application's web and worker processes, oldest first. */
export async function webAndWorkerProcesses(tx: Tx, appId: string): Promise<ProcessesTable[]> {
  return tx
    .selectFrom('processes')
    .selectAll()
    .where('app_id', '=', appId)
    .where('type', 'in', ['web', 'worker'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The application's cron and job processes. */
export async function cronAndJobProcesses(tx: Tx, appId: string): Promise<ProcessesTable[]> {
  return tx.selectFrom('processes').selectAll().where('app_id', '=', appId).where('type', 'in', ['cron', 'job']).execute();
}

/** The ids of the application's processes. */
export async function processIdsOfApp(tx: Tx, appId: string): Promise<{ id: string }[]> {
  return tx.selectFrom('processes').select('id').where('app_id', '=', appId).execute();
}

const rollOut = reusable((db, p: { appId: string; now: string }) =>
  db.updateTable('processes').set({ rolled_out_at: p.now }).where('app_id', '=', p.appId).where('rolled_out_at', 'is', null),
);

/** Marks the processes not yet rolled out as rolled out at `now` (sent with the transaction's next statement: `later`). */
export async function markRolledOut(tx: Tx, appId: string, now: string): Promise<void> {
  await later(tx, rollOut(tx, { appId, now }));
}

/** Names the live chain of a cron process's ticks (null: not armed). */
export async function setCronToken(tx: Tx, processId: string, token: string | null): Promise<void> {
  await tx.updateTable('processes').set({ cron_token: token }).where('id', '=', processId).execute();
}

/** Disarms a cron process whose live chain is still `token`. */
export async function clearCronToken(tx: Tx, processId: string, token: string | null): Promise<void> {
  await tx.updateTable('processes').set({ cron_token: null }).where('id', '=', processId).where('cron_token', '=', token).execute();
}
