// Schema migrations, run at start (Kysely's migrator takes a lock, so several processes
// starting together on one PostgreSQL apply each migration once). Append, never edit.
import { countAtCommit, countDeltas, countedTable, createListCounts, type CountedTable } from '../pagination.js';
import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { isPostgres } from './dialect.js';
import { journalMigration } from '../observability/journal-storage.js';

const m001: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('companies')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('users')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('full_name', 'text', (c) => c.notNull())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('users_company').on('users').columns(['company_id', 'created_at', 'id']).execute();
    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('source', 'varchar(16)', (c) => c.notNull())
      .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
      .addColumn('masked_token', 'text', (c) => c.notNull())
      .addColumn('old_token_hash', 'varchar(64)')
      .addColumn('old_token_expired_at', 'varchar(32)')
      .addColumn('is_enabled', 'integer', (c) => c.notNull())
      .addColumn('role_ids', 'text', (c) => c.notNull())
      .addColumn('capabilities', 'text', (c) => c.notNull())
      .addColumn('expired_at', 'varchar(32)')
      .addColumn('last_used_at', 'varchar(32)')
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('deleted_at', 'varchar(32)')
      .execute();
    await db.schema.createIndex('api_keys_old_token').on('api_keys').column('old_token_hash').execute();
    await db.schema.createIndex('api_keys_company').on('api_keys').columns(['company_id', 'created_at', 'id']).execute();
    await db.schema
      .createTable('projects')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('display_name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('projects_company').on('projects').columns(['company_id', 'created_at', 'id']).execute();
    await db.schema.createIndex('projects_name').on('projects').columns(['company_id', 'name']).unique().execute();
    await db.schema
      .createTable('project_services')
      .addColumn('project_id', 'varchar(36)', (c) => c.notNull().references('projects.id').onDelete('cascade'))
      .addColumn('service_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('service_type', 'varchar(32)', (c) => c.notNull())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addPrimaryKeyConstraint('project_services_pk', ['project_id', 'service_id'])
      .execute();
    await db.schema.createIndex('project_services_service').on('project_services').column('service_id').execute();
    await db.schema
      .createTable('device_codes')
      .addColumn('code', 'varchar(32)', (c) => c.primaryKey())
      .addColumn('client_ip', 'text', (c) => c.notNull())
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('company_id', 'varchar(36)')
      .addColumn('api_key_id', 'varchar(36)')
      .addColumn('token_enc', 'text')
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('device_codes_ip').on('device_codes').columns(['client_ip', 'expires_at']).execute();
    await db.schema
      .createTable('rate_counters')
      .addColumn('bucket', 'text', (c) => c.notNull())
      .addColumn('window_start', 'bigint', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('rate_counters_pk', ['bucket', 'window_start'])
      .execute();
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'varchar(64)', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('body', 'text')
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['company_id', 'key'])
      .execute();
    await db.schema
      .createTable('settings')
      .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};

const m002: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('jobs')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('kind', 'varchar(64)', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'varchar(16)', (c) => c.notNull())
      .addColumn('run_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('max_attempts', 'integer', (c) => c.notNull())
      .addColumn('lease_owner', 'varchar(64)')
      .addColumn('lease_expires_at', 'varchar(32)')
      .addColumn('last_error', 'text')
      .addColumn('subject_id', 'varchar(64)')
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('jobs_due').on('jobs').columns(['status', 'run_at']).execute();
    await db.schema.createIndex('jobs_subject').on('jobs').columns(['subject_id', 'status']).execute();
  },
};

const m003: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('sim_progression')
      .addColumn('operation', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('setting', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('sim_faults')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('operation', 'varchar(64)', (c) => c.notNull())
      .addColumn('target_id', 'varchar(64)')
      .addColumn('phase', 'varchar(64)')
      .addColumn('probability', 'varchar(32)', (c) => c.notNull())
      .addColumn('remaining', 'integer')
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('runtime_logs')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('app_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('kind', 'varchar(16)', (c) => c.notNull())
      .addColumn('deployment_id', 'varchar(36)')
      .addColumn('process_id', 'varchar(36)')
      .addColumn('severity', 'varchar(16)', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('ts', 'varchar(32)', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('attributes', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('runtime_logs_app').on('runtime_logs').columns(['app_id', 'kind', 'ts', 'seq']).execute();
    await db.schema.createIndex('runtime_logs_deployment').on('runtime_logs').columns(['deployment_id', 'ts', 'seq']).execute();
  },
};

/** Rate-limit windows that open at a bucket's first request (replaces minute-aligned counters). */
const m090: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('rate_windows')
      .addColumn('bucket', 'varchar(255)', (c) => c.primaryKey())
      .addColumn('window_start', 'bigint', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull())
      .execute();
    await db.schema.dropTable('rate_counters').execute();
  },
};

/** Requests the HTTP edge answered (SLIPWAY_RUNTIME=local): access logs and traffic metrics. */
const m200: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('edge_requests')
      .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
      .addColumn('service_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addColumn('method', 'varchar(16)', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('bytes', 'bigint', (c) => c.notNull())
      .addColumn('duration_ms', 'double precision', (c) => c.notNull())
      .addColumn('client_ip', 'varchar(64)', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('user_agent', 'text', (c) => c.notNull())
      .addColumn('referer', 'text', (c) => c.notNull())
      .addColumn('country', 'varchar(2)')
      .addColumn('cached', 'integer', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('edge_requests_service').on('edge_requests').columns(['service_id', 'at_ms']).execute();
    await db.schema.createIndex('edge_requests_at').on('edge_requests').column('at_ms').execute();
  },
};

/** The key columns whose change must reach every process's key cache at once. */
const KEY_COLUMNS = 'token_hash, old_token_hash, old_token_expired_at, is_enabled, deleted_at, expired_at, role_ids, capabilities, company_id';

/**
 * Changes to API keys and companies announce themselves (src/shared/auth/keycache.ts): on SQLite a
 * generation row that requests compare, on PostgreSQL a NOTIFY (sent at commit) to the processes
 * listening, naming the changing transaction. Rate-limit windows on PostgreSQL become UNLOGGED: counters are rewritten on every
 * request and need no crash safety (a crash forgets at most the open windows).
 */
const m190: Migration = {
  async up(db: Kysely<any>) {
    const pg = isPostgres(db);
    await db.schema
      .createTable('auth_generation')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .execute();
    await db.insertInto('auth_generation').values({ id: 1, n: 0 }).execute();
    if (pg) {
      await sql`CREATE FUNCTION slipway_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('slipway_auth_changed', txid_current()::text); RETURN NULL; END $$`.execute(db);
      await sql
        .raw(`CREATE TRIGGER api_keys_changed AFTER UPDATE OF ${KEY_COLUMNS} OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION slipway_auth_changed()`)
        .execute(db);
      await sql`CREATE TRIGGER companies_changed AFTER UPDATE OR DELETE ON companies FOR EACH STATEMENT EXECUTE FUNCTION slipway_auth_changed()`.execute(db);
      await sql`ALTER TABLE rate_windows SET UNLOGGED`.execute(db);
      return;
    }
    const bump = 'UPDATE auth_generation SET n = n + 1 WHERE id = 1;';
    await sql.raw(`CREATE TRIGGER api_keys_changed AFTER UPDATE OF ${KEY_COLUMNS} ON api_keys BEGIN ${bump} END`).execute(db);
    await sql.raw(`CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys BEGIN ${bump} END`).execute(db);
    await sql.raw(`CREATE TRIGGER companies_changed AFTER UPDATE ON companies BEGIN ${bump} END`).execute(db);
    await sql.raw(`CREATE TRIGGER companies_deleted AFTER DELETE ON companies BEGIN ${bump} END`).execute(db);
  },
};

/** Rows per company and list versions of the counted tables (src/shared/pagination.ts); projects are one. */
const m191: Migration = {
  async up(db: Kysely<any>) {
    await createListCounts(db);
    await countedTable(db, 'projects');
  },
};

/** Due jobs in claim order straight from an index (a batch claim stops after its rows). */
const m193: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('jobs_claim').on('jobs').columns(['status', 'run_at', 'id']).execute();
    await db.schema.dropIndex('jobs_due').execute();
  },
};

/** PostgreSQL: the counting triggers made before 201 become deferred to the commit (`countAtCommit`). */
const m201: Migration = {
  async up(db: Kysely<any>) {
    if (!isPostgres(db)) return;
    for (const table of ['projects', 'applications'] satisfies CountedTable[]) {
      const exists = await sql<{ t: string | null }>`SELECT to_regclass(CAST(${table} AS text))::text AS t`.execute(db);
      if (exists.rows[0]?.t) await countAtCommit(db, table);
    }
  },
};

/** PostgreSQL: list counts kept by appended deltas instead of one row per list (`countDeltas`). */
const m202: Migration = {
  up: (db: Kysely<any>) => countDeltas(db),
};

/**
 * PostgreSQL: `slipway_lease_lost(jobs)`, which raises SQLSTATE SW001. A job's completion
 * (src/shared/job-leases.ts, `held`) calls it when its update changed fewer rows than it holds jobs, so
 * the check runs in the statement and the statement can go with the transaction's COMMIT.
 */
const m203: Migration = {
  async up(db: Kysely<any>) {
    if (!isPostgres(db)) return;
    await sql`CREATE FUNCTION slipway_lease_lost(jobs text) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'job % is no longer this worker''s (lease taken over); its writes were rolled back', jobs USING ERRCODE = 'SW001';
      END $$`.execute(db);
  },
};

/** The trace a job continues (src/shared/observability/trace.ts): the traceparent of the span that queued it. */
const m220: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('jobs').addColumn('traceparent', 'text').execute();
  },
};

/** Foundation migrations; modules contribute theirs through `Module.migrations`. */
export const coreMigrations: Record<string, Migration> = {
  '001_foundation': m001,
  '002_jobs': m002,
  '003_runtime': m003,
  '090_rate_windows': m090,
  '190_auth_changes': m190,
  '191_list_counts': m191,
  '193_jobs_claim': m193,
  '200_edge_traffic': m200,
  '201_list_counts_at_commit': m201,
  '202_list_count_deltas': m202,
  '203_job_lease_check': m203,
  '220_jobs_traceparent': m220,
  /** The request journal (src/shared/observability/journal-storage.ts). */
  '240_request_journal': journalMigration,
};

export function migrationProvider(extra: Record<string, Migration> = {}): MigrationProvider {
  return {
    async getMigrations() {
      return { ...coreMigrations, ...extra };
    },
  };
}
