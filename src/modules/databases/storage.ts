// Tables of the databases area (databases, their backups — internal snapshots and external dumps —,
// external backup targets and internal connections), their migrations, and the queries on databases
// and internal connections. Queries on backups and targets are in backups-storage.ts, the
// transitions of long operations in operations-storage.ts.
import type { Kysely, Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';
import type { DATABASE_METRICS, DATABASE_STATUSES, DATABASE_TYPES } from './schemas.js';

export type DatabaseStatus = (typeof DATABASE_STATUSES)[number];
export type DatabaseType = (typeof DATABASE_TYPES)[number];
export type DatabaseMetric = (typeof DATABASE_METRICS)[number];
/** Long operations that run on the database itself (one at a time), each a durable job. */
export type DatabaseOperation = 'database_create' | 'restart' | 'password_change' | 'restore' | 'database_delete';

export interface DatabasesTable {
  id: string;
  company_id: string;
  project_id: string | null;
  cluster_id: string;
  name: string;
  display_name: string;
  type: DatabaseType;
  /** Engine version as given at creation (e.g. `17`, `8.0`); the major is its first number. */
  version: string;
  status: DatabaseStatus;
  is_suspended: number;
  resource_type_id: string;
  db_name: string;
  db_user: string;
  /** Encrypted with the server's secret box; never returned. */
  password_enc: string;
  extensions: string;
  internal_port: string;
  external_enabled: number;
  external_port: string;
  /** `ready`, or `inProgress` while a backup (internal or external) is being taken. */
  backup_status: 'ready' | 'inProgress';
  /** Simulated content: a counter of writes; a restore replaces it with the backup's. */
  data_version: number;
  ip_type: 'allow' | 'deny';
  ip_enabled: number;
  ip_list: string;
  /** The long operation in progress (null when none), when it began, reads since, and its facts. */
  operation: DatabaseOperation | null;
  op_started_at: string | null;
  op_reads: number;
  op_payload: string | null;
  /** Real engines: what the server holds for the database (runtime/state.ts), JSON; null: simulated. */
  runtime: string | null;
  created_at: string;
  updated_at: string;
}

export interface DatabaseBackupsTable {
  /** Internal: `manual-<name>-<hex>`; external: `YYYYMMDD-HHMMSS_<kind>_<engine><major>_<name>.sql.gz`. */
  id: string;
  database_id: string;
  company_id: string;
  external: number;
  target_id: string | null;
  name: string;
  display_name: string;
  type: 'daily' | 'manual';
  status: 'pending' | 'ready' | 'failed';
  /** What the backup holds: the source's data version and engine major at the time it was taken. */
  data_version: number;
  engine_major: number;
  size: number | null;
  started_at: string;
  reads: number;
  created_at: string;
  expires_at: string;
}

export interface DatabaseBackupTargetsTable {
  id: string;
  database_id: string;
  company_id: string;
  object_storage_id: string | null;
  bucket_name: string;
  endpoint: string | null;
  access_key_enc: string | null;
  secret_key_enc: string | null;
  created_at: string;
}

export interface DatabaseInternalConnectionsTable {
  id: string;
  database_id: string;
  company_id: string;
  target_id: string;
  target_type: 'app' | 'database';
  created_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    databases: DatabasesTable;
    database_backups: DatabaseBackupsTable;
    database_backup_targets: DatabaseBackupTargetsTable;
    database_internal_connections: DatabaseInternalConnectionsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '040_databases': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('databases')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('cluster_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('version', 'varchar(16)', (c) => c.notNull())
        .addColumn('status', 'varchar(32)', (c) => c.notNull())
        .addColumn('is_suspended', 'integer', (c) => c.notNull())
        .addColumn('resource_type_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('db_name', 'text', (c) => c.notNull())
        .addColumn('db_user', 'text', (c) => c.notNull())
        .addColumn('password_enc', 'text', (c) => c.notNull())
        .addColumn('extensions', 'text', (c) => c.notNull())
        .addColumn('internal_port', 'varchar(8)', (c) => c.notNull())
        .addColumn('external_enabled', 'integer', (c) => c.notNull())
        .addColumn('external_port', 'varchar(8)', (c) => c.notNull())
        .addColumn('backup_status', 'varchar(16)', (c) => c.notNull())
        .addColumn('data_version', 'integer', (c) => c.notNull())
        .addColumn('ip_type', 'varchar(8)', (c) => c.notNull())
        .addColumn('ip_enabled', 'integer', (c) => c.notNull())
        .addColumn('ip_list', 'text', (c) => c.notNull())
        .addColumn('operation', 'varchar(32)')
        .addColumn('op_started_at', 'varchar(32)')
        .addColumn('op_reads', 'integer', (c) => c.notNull())
        .addColumn('op_payload', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('databases_company').on('databases').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('databases_name').on('databases').columns(['company_id', 'name']).unique().execute();
    },
  },
  '041_database_children': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('database_backup_targets')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('database_id', 'varchar(36)', (c) => c.notNull().references('databases.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('object_storage_id', 'varchar(36)')
        .addColumn('bucket_name', 'text', (c) => c.notNull())
        .addColumn('endpoint', 'text')
        .addColumn('access_key_enc', 'text')
        .addColumn('secret_key_enc', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('database_backup_targets_db').on('database_backup_targets').columns(['database_id', 'created_at']).execute();
      await db.schema
        .createTable('database_backups')
        .addColumn('id', 'varchar(255)', (c) => c.notNull())
        .addColumn('database_id', 'varchar(36)', (c) => c.notNull().references('databases.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('external', 'integer', (c) => c.notNull())
        .addColumn('target_id', 'varchar(36)')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('data_version', 'integer', (c) => c.notNull())
        .addColumn('engine_major', 'integer', (c) => c.notNull())
        .addColumn('size', 'bigint')
        .addColumn('started_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('reads', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('database_backups_pk', ['database_id', 'id'])
        .execute();
      await db.schema
        .createTable('database_internal_connections')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('database_id', 'varchar(36)', (c) => c.notNull().references('databases.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('target_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('target_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('database_internal_connections_db')
        .on('database_internal_connections')
        .columns(['database_id', 'target_id'])
        .unique()
        .execute();
    },
  },
  '150_databases_runtime': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('databases').addColumn('runtime', 'text').execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['database_internal_connections', 'database_backups', 'database_backup_targets', 'databases'] as const;

// ---- Databases ------------------------------------------------------------------------------

/** A database of the company, or undefined. Databases being deleted are still found (status `deleting`). */
export async function findDatabaseRow(tx: Tx, companyId: string, id: string): Promise<DatabasesTable | undefined> {
  return tx.selectFrom('databases').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** A database by id alone (jobs, events), or undefined. */
export async function loadDatabase(tx: Tx, id: string): Promise<DatabasesTable | undefined> {
  return tx.selectFrom('databases').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Serializes the changes of one database for the rest of the transaction (every limit and "one at
 * a time" rule is a check-then-write). Every change of a database takes it first.
 */
export const lockDatabaseId = (tx: Tx, id: string) => lockFor(tx, `database:${id}`);

/** A page of the company's databases (their list columns), limited to `scope` when given. */
export async function listDatabasesPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx
    .selectFrom('databases')
    .select(['id', 'name', 'display_name', 'status', 'type', 'version', 'resource_type_id', 'is_suspended', 'created_at', 'updated_at', 'backup_status'])
    .where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

/** Inserts the row `build` makes for a name derived from the display name, unique in the company (the unique index decides). */
export async function insertNamedDatabase(tx: Tx, companyId: string, displayName: string, build: (name: string) => DatabasesTable): Promise<DatabasesTable> {
  return insertNamed(tx, 'databases', companyId, displayName, build);
}

/** Sets the given columns of a database. */
export async function updateDatabaseColumns(tx: Tx, id: string, set: Partial<Omit<DatabasesTable, 'id'>>): Promise<void> {
  await tx.updateTable('databases').set(set).where('id', '=', id).execute();
}

/** The writers that may give a real server's user name take turns (for the rest of the transaction). */
export const lockServerUser = (tx: Tx, family: string, user: string) => lockFor(tx, `databases:user:${family}:${user}`);

/** The databases on real servers whose user is `user` (their type and runtime record). */
export async function listServerUsers(tx: Tx, user: string) {
  return tx.selectFrom('databases').select(['type', 'runtime']).where('db_user', '=', user).where('runtime', 'is not', null).execute();
}

/** The runtime records of every database on a real server. */
export async function listRuntimeRecords(tx: Tx) {
  return tx.selectFrom('databases').select('runtime').where('runtime', 'is not', null).execute();
}

/** The claims of real-server resources (a Redis port) take turns across the installation. */
export const lockRuntimeClaim = (tx: Tx) => lockFor(tx, 'databases:runtime-claim');

/** The databases on a real server that are not being deleted (of one company when given). */
export async function listServedDatabases(tx: Tx, companyId?: string): Promise<DatabasesTable[]> {
  let q = tx.selectFrom('databases').selectAll().where('runtime', 'is not', null).where('status', '!=', 'deleting');
  if (companyId) q = q.where('company_id', '=', companyId);
  return q.execute();
}

/** Every database's id and status (the daily backup schedule at start). */
export async function listDatabaseStatuses(tx: Tx) {
  return tx.selectFrom('databases').select(['id', 'status']).execute();
}

/** A database's id, status and creation time, or undefined. */
export async function findDatabaseSchedule(tx: Tx, id: string) {
  return tx.selectFrom('databases').select(['id', 'status', 'created_at']).where('id', '=', id).executeTakeFirst();
}

/** The registry's summaries of the company's databases among `ids`. */
export async function listDatabaseSummaries(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx.selectFrom('databases').select(['id', 'name', 'display_name']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
}

// ---- Internal connections ---------------------------------------------------------------------

/** A database of the company as the end of an internal connection (id, names, region), or undefined. */
export async function findDatabaseEndpoint(tx: Tx, companyId: string, id: string) {
  return tx
    .selectFrom('databases')
    .select(['id', 'name', 'display_name', 'cluster_id'])
    .where('id', '=', id)
    .where('company_id', '=', companyId)
    .executeTakeFirst();
}

/** The internal connections of a database, oldest first. */
export async function listConnectionRows(tx: Tx, databaseId: string): Promise<DatabaseInternalConnectionsTable[]> {
  return tx.selectFrom('database_internal_connections').selectAll().where('database_id', '=', databaseId).orderBy('created_at').orderBy('id').execute();
}

/** Whether the database has a connection to `targetId`. */
export async function hasConnectionTo(tx: Tx, databaseId: string, targetId: string): Promise<boolean> {
  return !!(await tx
    .selectFrom('database_internal_connections')
    .select('id')
    .where('database_id', '=', databaseId)
    .where('target_id', '=', targetId)
    .executeTakeFirst());
}

export async function insertConnection(tx: Tx, row: DatabaseInternalConnectionsTable): Promise<void> {
  await tx.insertInto('database_internal_connections').values(row).execute();
}

/** Deletes a connection of the database; returns whether there was one. */
export async function deleteConnectionRow(tx: Tx, databaseId: string, connectionId: string): Promise<boolean> {
  const r = await tx.deleteFrom('database_internal_connections').where('id', '=', connectionId).where('database_id', '=', databaseId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
