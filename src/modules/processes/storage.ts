// Tables of the processes area: an application's processes and the runs of its cron (and job)
// processes. JSON-valued settings (scaling strategy, probes) are stored as text.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { notFound } from '../../shared/errors.js';

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

/** The process of the application, or 404. */
export async function findProcess(tx: Tx, appId: string, processId: string): Promise<ProcessesTable> {
  const p = await tx.selectFrom('processes').selectAll().where('id', '=', processId).where('app_id', '=', appId).executeTakeFirst();
  if (!p) throw notFound('Process');
  return p;
}
